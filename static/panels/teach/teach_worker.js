// The Teach panel's requests in the Pyodide worker, {id, op: "teach.ACTION", ...}: static/worker.js loads this script
// with the first and hands each to the handler registered here, which calls static/panels/teach/teach.py.
//
//   {op: "teach.setKind", kind: "image"|"pose"}  -> {kind, counts}: another kind forgets the examples and the head
//   {op: "teach.addExample", classIndex, pixels: ArrayBuffer (RGBA, transferred), width, height}
//                                               -> {counts, features: [numbers]} (the page keeps them across reloads)
//   {op: "teach.addFeatures", classIndex, features} -> {counts}: an example kept from an earlier visit
//   {op: "teach.embed", pixels, width, height}  -> Float32Array: the features the head takes (1280 for images, 51 for
//                                                  poses)
//   {op: "teach.removeClass", classIndex}       -> {counts}
//   {op: "teach.train", classes: [names], epochs} -> {classes, examples, history}; "training" events meanwhile
//   {op: "teach.predict", pixels, width, height} -> [{index, label, probability}], every class, best first
//   {op: "teach.export"}                        -> {files: [{name, blob}]}: the head's model.json, then its weight
//                                                  shard(s), as model.save wrote them into Pyodide's file system
//   {op: "teach.exportFull"}                    -> {files}: the same for the full model of images (EfficientNet-Lite0
//                                                  and the head, taking a 224x224 image; teach_full_model.py)
//   {op: "teach.load", files: [{name, blob}]}   -> {classes, kind}: a head saved by "export", loaded back
//   {op: "teach.reset"}                         -> {counts}
"use strict";

(() => {
  const SAVE_DIR = "/tmp/teach-head";
  const LOAD_DIR = "/tmp/teach-load";
  const TYPES = { json: "application/json", bin: "application/octet-stream" };
  let module = null;
  const teachPy = (pyodide) => (module ??= pyodide.pyimport("teach"));
  const pixels = (message) => new Uint8Array(message.pixels);

  function emptyFolder(pyodide, folder) {
    const fs = pyodide.FS;
    if (!fs.analyzePath(folder).exists) fs.mkdirTree(folder);
    for (const name of fs.readdir(folder)) if (name !== "." && name !== "..") fs.unlink(`${folder}/${name}`);
  }

  // A handler of the message, teach.py and the worker's tools.
  const withTeach = (handler) => (message, tools) => handler(message, teachPy(tools.pyodide), tools);

  handleRequest("teach.setKind", withTeach((message, teach, { plain }) => plain(teach.set_kind(message.kind))));
  handleRequest("teach.addFeatures", withTeach((message, teach, { plain }) =>
    plain(teach.add_features(message.classIndex, message.features))));
  handleRequest("teach.addExample", withTeach(async (message, teach, { plain, progress }) =>
    plain(await teach.add_example(message.classIndex, pixels(message), message.height, message.width, progress))));
  handleRequest("teach.embed", withTeach(async (message, teach, { plain, progress }) =>
    new Float32Array(plain(await teach.features(pixels(message), message.height, message.width, progress)))));
  handleRequest("teach.removeClass", withTeach((message, teach, { plain }) =>
    plain(teach.remove_class(message.classIndex))));
  handleRequest("teach.train", withTeach(async (message, teach, { plain }) =>
    plain(await teach.train(message.classes, message.epochs))));
  handleRequest("teach.predict", withTeach(async (message, teach, { plain, progress }) =>
    plain(await teach.predict(pixels(message), message.height, message.width, progress))));

  async function save(pyodide, plain, saving) {
    emptyFolder(pyodide, SAVE_DIR);
    const names = plain(await saving(SAVE_DIR));
    const files = names.map((name) => ({
      name,
      blob: new Blob([pyodide.FS.readFile(`${SAVE_DIR}/${name}`)], { type: TYPES[name.split(".").pop()] }),
    }));
    return { files };
  }
  handleRequest("teach.export", withTeach((message, teach, { pyodide, plain }) =>
    save(pyodide, plain, (folder) => teach.save(folder))));
  handleRequest("teach.exportFull", withTeach((message, teach, { pyodide, plain }) =>
    save(pyodide, plain, (folder) => teach.save_full(folder))));

  handleRequest("teach.load", withTeach(async (message, teach, { pyodide, plain }) => {
    emptyFolder(pyodide, LOAD_DIR);
    for (const { name, blob } of message.files) {
      if (!/^[\w.-]+$/.test(name)) throw new Error(`teach: ${JSON.stringify(name)} is not a plain file name`);
      pyodide.FS.writeFile(`${LOAD_DIR}/${name}`, new Uint8Array(await blob.arrayBuffer()));
    }
    return plain(await teach.load(LOAD_DIR));
  }));
  handleRequest("teach.reset", withTeach((message, teach, { plain }) => plain(teach.reset())));
})();
