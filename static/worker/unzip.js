// The files of a zip archive (the engine wheel), read in JS: the boot unzips the wheel while Pyodide boots, so that
// installing it after the boot is only writing its files (Pyodide's unpackArchive unzipped it in Python after the
// boot: 70-100 ms of this thread on a first visit). Entries stored or deflated (what wheels use); the browser's
// DecompressionStream inflates them. Adds self.unzip(buffer) -> Promise<[[path, Uint8Array], ...]> (folders left out).
"use strict";

self.unzip = (() => {
  const END_OF_DIRECTORY = 0x06054b50, DIRECTORY_ENTRY = 0x02014b50, LOCAL_HEADER = 0x04034b50;
  const STORED = 0, DEFLATED = 8;
  const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
    for (let k = 0; k < 8; k++) n = n & 1 ? 0xedb88320 ^ (n >>> 1) : n >>> 1;
    return n >>> 0;
  });

  function crc32(bytes) {
    let crc = 0xffffffff;
    for (let i = 0; i < bytes.length; i++) crc = CRC_TABLE[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
    return (crc ^ 0xffffffff) >>> 0;
  }

  function entries(bytes) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let end = bytes.length - 22; // the end-of-directory record, followed by a comment of up to 64 KiB
    while (end >= 0 && view.getUint32(end, true) !== END_OF_DIRECTORY) end--;
    if (end < 0) throw new Error("not a zip archive (no end of central directory)");
    const found = [];
    let at = view.getUint32(end + 16, true);
    for (let i = view.getUint16(end + 10, true); i > 0; i--) {
      if (view.getUint32(at, true) !== DIRECTORY_ENTRY) throw new Error("the zip archive's directory is corrupt");
      const nameLength = view.getUint16(at + 28, true);
      const local = view.getUint32(at + 42, true);
      if (view.getUint32(local, true) !== LOCAL_HEADER) throw new Error("the zip archive's directory is corrupt");
      const start = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
      found.push({
        name: new TextDecoder().decode(bytes.subarray(at + 46, at + 46 + nameLength)),
        method: view.getUint16(at + 10, true),
        crc: view.getUint32(at + 16, true),
        size: view.getUint32(at + 24, true),
        data: bytes.subarray(start, start + view.getUint32(at + 20, true)),
      });
      at += 46 + nameLength + view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
    }
    return found.filter(({ name }) => !name.endsWith("/"));
  }

  // An entry's bytes, inflated into an array of the size its directory entry gives (a stream's reader and writer:
  // a Blob's stream piped into a Response took 3x as long for a wheel's 200 small files).
  async function inflate({ name, size, data }) {
    const stream = new DecompressionStream("deflate-raw");
    const writer = stream.writable.getWriter();
    writer.write(data).catch(() => {}); // an error reaches the reader
    writer.close().catch(() => {});
    const reader = stream.readable.getReader();
    const bytes = new Uint8Array(size);
    let length = 0;
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      if (length + chunk.value.length > size) break;
      bytes.set(chunk.value, length);
      length += chunk.value.length;
    }
    if (length !== size) throw new Error(`not the ${size} bytes its directory entry gives`);
    return bytes;
  }

  // [name, bytes], checked against the entry's CRC-32 as Python's zipfile checks them.
  async function content(entry) {
    const { name, method, size, crc, data } = entry;
    let bytes;
    if (method === STORED && data.length === size) bytes = data;
    else if (method === DEFLATED) {
      bytes = await inflate(entry).catch((error) => { throw new Error(`${name}: ${error.message || error}`); });
    }
    else throw new Error(`${name}: compression method ${method} (only stored and deflated entries are read)`);
    if (crc32(bytes) !== crc) throw new Error(`${name}: its bytes do not match their CRC-32 (a corrupt archive)`);
    return [name, bytes];
  }

  return async (buffer) => Promise.all(entries(new Uint8Array(buffer)).map(content));
})();
