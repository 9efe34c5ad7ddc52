// Models described by layer specs, built and run with the real TensorFlow.js (pure JS, cpu backend).
//
// node tests/tfjs/layer_specs.mjs build SPECS_JSON OUTDIR
//   SPECS_JSON: [{name, inputs: [{name, shape, data: {shape, data}}], layers: [{class_name, config, inbound}],
//   outputs, seed}]: config in Keras's snake_case (converted as TF.js converts a saved model's), inbound and outputs
//   index the nodes (the inputs, then one per layer). Each model gets seeded weights (uniform in [-0.8, 0.8]) and is
//   written to OUTDIR/<name>/ as model.json + model.weights.bin (as tf.io.browserDownloads lays them out), with
//   io.json: {"outputs": [{shape, data}]}, TF.js's predictions on the spec's input data.
// node tests/tfjs/layer_specs.mjs predict DIR
//   For each DIR/<model>/ holding model.json (+ shards) and inputs.json ([{shape, data}], one per model input):
//   loads the model as TF.js loads a saved one, predicts, and writes outputs.json ([{shape, data}] per output).
// node tests/tfjs/layer_specs.mjs fit SPECS_JSON OUTDIR
//   As build (one output per spec), then also trains the model: spec.fit = {target: {shape, data}, learningRate,
//   batchSize, epochs}, mean squared error with plain SGD, no shuffling. OUTDIR/<name>/ gets the untrained model
//   (model.json + shard) and result.json: {loss: [per epoch], weights: {name: {shape, data}}}.
// node tests/tfjs/layer_specs.mjs apply SPECS_JSON OUT_JSON
//   For layers TF.js cannot run inside a model (Resizing; CenterCrop onto a larger size): SPECS_JSON is
//   [{class_name, config, input: {shape, data}}]; each layer is called on its input tensor, and OUT_JSON gets
//   [{shape, data}], one per spec.
import fs from 'node:fs';
import path from 'node:path';
import tf from '@tensorflow/tfjs';
import {writeModel} from './write_model.mjs';

const [mode, ...args] = process.argv.slice(2);
await tf.setBackend('cpu');

const camel = (s) => s.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
// What TF.js's convertPythonicToTs does to a saved config: camelCase keys, and string values but names.
function tsConfig(value, key) {
  if (value === null || value === undefined) return value;
  if (typeof value === 'string') return key === 'name' ? value : camel(value);
  if (Array.isArray(value)) return value.map((v) => tsConfig(v, key));
  if (typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [camel(k), tsConfig(v, k)]));
  }
  return value;
}

const tensorOf = (entry) => tf.tensor(entry.data, entry.shape);
const entryOf = async (t) => ({shape: t.shape, data: Array.from(await t.data())});

const layerClasses = tf.serialization.SerializationMap.getMap().classNameMap;
function layerOf(className, config) {
  if (!(className in layerClasses)) throw new Error(`TF.js has no layer class ${className}`);
  const [cls] = layerClasses[className];
  return new cls(tsConfig(config));
}

// The spec's model with seeded weights, saved into OUTDIR/<name>/ before anything else happens to it.
async function builtAndSaved(spec, outDir) {
  const nodes = spec.inputs.map((input) => tf.input({shape: input.shape, name: input.name}));
  for (const {class_name: className, config, inbound} of spec.layers) {
    const layer = layerOf(className, config);
    const inputs = inbound.map((k) => nodes[k]);
    nodes.push(layer.apply(inputs.length === 1 ? inputs[0] : inputs));
  }
  const model = tf.model({inputs: nodes.slice(0, spec.inputs.length), outputs: spec.outputs.map((k) => nodes[k]),
                          name: spec.name});
  model.setWeights(model.weights.map((w, k) => tf.randomUniform(w.shape, -0.8, 0.8, 'float32', spec.seed + k)));
  await writeModel(model, path.join(outDir, spec.name));
  return model;
}

async function build(specsJson, outDir) {
  for (const spec of JSON.parse(fs.readFileSync(specsJson, 'utf8'))) {
    const model = await builtAndSaved(spec, outDir);
    const outputs = [model.predict(spec.inputs.map((input) => tensorOf(input.data)))].flat();
    fs.writeFileSync(path.join(outDir, spec.name, 'io.json'),
                     JSON.stringify({outputs: await Promise.all(outputs.map(entryOf))}));
  }
}

async function fit(specsJson, outDir) {
  for (const spec of JSON.parse(fs.readFileSync(specsJson, 'utf8'))) {
    const model = await builtAndSaved(spec, outDir);
    const {target, learningRate, batchSize, epochs} = spec.fit;
    model.compile({optimizer: tf.train.sgd(learningRate), loss: 'meanSquaredError'});
    const history = await model.fit(spec.inputs.map((input) => tensorOf(input.data)), tensorOf(target),
                                    {batchSize, epochs, shuffle: false, verbose: 0});
    const weights = {};
    for (const w of model.weights) weights[w.originalName] = await entryOf(w.read());
    fs.writeFileSync(path.join(outDir, spec.name, 'result.json'),
                     JSON.stringify({loss: history.history.loss, weights}));
  }
}

async function predict(dir) {
  for (const name of fs.readdirSync(dir)) {
    const folder = path.join(dir, name);
    if (!fs.existsSync(path.join(folder, 'inputs.json'))) continue;
    const modelJson = JSON.parse(fs.readFileSync(path.join(folder, 'model.json'), 'utf8'));
    const weightSpecs = modelJson.weightsManifest.flatMap((group) => group.weights);
    const shards = modelJson.weightsManifest.flatMap((group) => group.paths)
      .map((p) => fs.readFileSync(path.join(folder, p)));
    const model = await tf.loadLayersModel(tf.io.fromMemory({
      modelTopology: modelJson.modelTopology, weightSpecs, weightData: new Uint8Array(Buffer.concat(shards)).buffer,
    }));
    const inputs = JSON.parse(fs.readFileSync(path.join(folder, 'inputs.json'), 'utf8')).map(tensorOf);
    const outputs = [model.predict(inputs.length === 1 ? inputs[0] : inputs)].flat();
    fs.writeFileSync(path.join(folder, 'outputs.json'), JSON.stringify(await Promise.all(outputs.map(entryOf))));
  }
}

async function apply(specsJson, outJson) {
  const outputs = JSON.parse(fs.readFileSync(specsJson, 'utf8'))
    .map(({class_name: className, config, input}) => layerOf(className, config).apply(tensorOf(input)));
  fs.writeFileSync(outJson, JSON.stringify(await Promise.all(outputs.map(entryOf))));
}

if (mode === 'build' && args.length === 2) await build(...args);
else if (mode === 'predict' && args.length === 1) await predict(...args);
else if (mode === 'fit' && args.length === 2) await fit(...args);
else if (mode === 'apply' && args.length === 2) await apply(...args);
else {
  throw new Error(
    'usage: node layer_specs.mjs build SPECS_JSON OUTDIR | predict DIR | fit SPECS_JSON OUTDIR | apply SPECS_JSON OUT_JSON');
}
