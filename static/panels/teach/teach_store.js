// The Teach panel's classes kept across reloads, in this browser's IndexedDB (database "teach", one record): what
// the classes are of, their names, and each example's features (what the head trains on, so a reload embeds
// nothing again) with its thumbnail (a Blob, or a sample's URL). Nothing leaves the browser; Clear forgets it.
//   load()       -> Promise<{kind, classes: [{name, samples: [{features: Float32Array, thumb: Blob|string}]}]} | null>
//   save(state)  -> Promise (the same shape)
//   clear()      -> Promise

const DB = "teach", STORE = "state", KEY = "classes";

function open() {
  return new Promise((resolve, reject) => {
    const opening = indexedDB.open(DB, 1);
    opening.onupgradeneeded = () => opening.result.createObjectStore(STORE);
    opening.onsuccess = () => resolve(opening.result);
    opening.onerror = () => reject(opening.error);
  });
}

async function transact(mode, work) {
  const db = await open();
  try {
    return await new Promise((resolve, reject) => {
      const transaction = db.transaction(STORE, mode);
      const asked = work(transaction.objectStore(STORE));
      transaction.oncomplete = () => resolve(asked.result);
      transaction.onerror = () => reject(transaction.error);
      transaction.onabort = () => reject(transaction.error ?? new Error("the IndexedDB transaction was aborted"));
    });
  } finally {
    db.close();
  }
}

export const load = () => transact("readonly", (store) => store.get(KEY)).then((state) => state ?? null);
export const save = (state) => transact("readwrite", (store) => store.put(state, KEY));
export const clear = () => transact("readwrite", (store) => store.delete(KEY));
