// node tests/tfjs/predict_saved_model.mjs MODELDIR INPUT_JSON OUTPUT_JSON
// Loads a layers model that py_engine saved into MODELDIR (model.json and its weight shards, read from disk as a
// browser would fetch them) with the real TensorFlow.js (pure JS, cpu backend), predicts on the input in
// INPUT_JSON ({shape, data}) and writes [{shape, data}] per output into OUTPUT_JSON.
import fs from 'node:fs';
import path from 'node:path';
import tf from '@tensorflow/tfjs';

const [modelDir, inputJson, outputJson] = process.argv.slice(2);
if (!outputJson) throw new Error('usage: node predict_saved_model.mjs MODELDIR INPUT_JSON OUTPUT_JSON');
await tf.setBackend('cpu');

const modelJson = JSON.parse(fs.readFileSync(path.join(modelDir, 'model.json'), 'utf8'));
const weightSpecs = modelJson.weightsManifest.flatMap((group) => group.weights);
const shards = modelJson.weightsManifest.flatMap((group) => group.paths)
  .map((p) => fs.readFileSync(path.join(modelDir, p)));
const weightData = new Uint8Array(Buffer.concat(shards)).buffer;
const model = await tf.loadLayersModel(tf.io.fromMemory({
  modelTopology: modelJson.modelTopology, weightSpecs, weightData,
}));

const input = JSON.parse(fs.readFileSync(inputJson, 'utf8'));
const outputs = [model.predict(tf.tensor(input.data, input.shape))].flat();
const result = await Promise.all(outputs.map(async (t) => ({shape: t.shape, data: Array.from(await t.data())})));
fs.writeFileSync(outputJson, JSON.stringify(result));
