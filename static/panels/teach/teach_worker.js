// The Teach panel's request in the Pyodide worker, {id, op: "teach", action, ...}: static/worker.js loads this script
// with the first and hands each to the handler registered here, which calls static/panels/teach/teach.py.
//
//   {action: "setKind", kind: "image"|"pose"}  -> {kind, counts}: another kind forgets the examples and the head
//   {action: "addExample", classIndex, pixels: ArrayBuffer (RGBA, transferred), width, height}
//                                             -> {counts, features: [numbers]} (the page keeps them across reloads)
//   {action: "addFeatures", classIndex, features} -> {counts}: an example kept from an earlier visit
//   {action: "embed", pixels, width, height}  -> Float32Array: the features the head takes (1280 for images, 51 for
//                                                poses)
//   {action: "removeClass", classIndex}       -> {counts}
//   {action: "train", classes: [names], epochs} -> {classes, examples, history}; "training" events meanwhile
//   {action: "predict", pixels, width, height} -> [{index, label, probability}], every class, best first
//   {action: "export"}                        -> {files: [{name, blob}]}: the head's model.json, then its weight
//                                                shard(s), as model.save wrote them into Pyodide's file system
//   {action: "exportFull"}                    -> {files}: the same for the full model of images (EfficientNet-Lite0
//                                                and the head, taking a 224x224 image; teach_full_model.py)
//   {action: "load", files: [{name, blob}]}   -> {classes, kind}: a head saved by "export", loaded back
//   {action: "reset"}                         -> {counts}
"use strict";

handleRequest("teach", (() => {
  const SAVE_DIR = "/tmp/teach-head";
  const LOAD_DIR = "/tmp/teach-load";
  const TYPES = { json: "application/json", bin: "application/octet-stream" };
  let teach = null;

  function emptyFolder(pyodide, folder) {
    const fs = pyodide.FS;
    if (!fs.analyzePath(folder).exists) fs.mkdirTree(folder);
    for (const name of fs.readdir(folder)) if (name !== "." && name !== "..") fs.unlink(`${folder}/${name}`);
  }

  return async function teachRequest(message, { pyodide, plain, progress }) {
    teach ??= pyodide.pyimport("teach");
    const pixels = () => new Uint8Array(message.pixels);
    switch (message.action) {
      case "setKind": return plain(teach.set_kind(message.kind));
      case "addFeatures": return plain(teach.add_features(message.classIndex, message.features));
      case "addExample":
        return plain(await teach.add_example(message.classIndex, pixels(), message.height, message.width, progress));
      case "embed": return new Float32Array(plain(await teach.features(pixels(), message.height, message.width, progress)));
      case "removeClass": return plain(teach.remove_class(message.classIndex));
      case "train": return plain(await teach.train(message.classes, message.epochs));
      case "predict": return plain(await teach.predict(pixels(), message.height, message.width, progress));
      case "export": case "exportFull": {
        emptyFolder(pyodide, SAVE_DIR);
        const names = plain(await (message.action === "export" ? teach.save(SAVE_DIR) : teach.save_full(SAVE_DIR)));
        const files = names.map((name) => ({
          name,
          blob: new Blob([pyodide.FS.readFile(`${SAVE_DIR}/${name}`)], { type: TYPES[name.split(".").pop()] }),
        }));
        return { files };
      }
      case "load": {
        emptyFolder(pyodide, LOAD_DIR);
        for (const { name, blob } of message.files) {
          if (!/^[\w.-]+$/.test(name)) throw new Error(`teach: ${JSON.stringify(name)} is not a plain file name`);
          pyodide.FS.writeFile(`${LOAD_DIR}/${name}`, new Uint8Array(await blob.arrayBuffer()));
        }
        return plain(await teach.load(LOAD_DIR));
      }
      case "reset": return plain(teach.reset());
      default: throw new Error(`teach: unknown action ${JSON.stringify(message.action)}`);
    }
  };
})());
