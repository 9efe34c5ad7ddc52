// node tests/tfjs/save_model.mjs OUTDIR
// Builds a small functional conv model with the real TensorFlow.js (pure JS, cpu backend), gives every weight a
// seeded value, and writes into OUTDIR what TF.js saves plus the data to check a loader against:
// - model.json and model.weights.bin, laid out as tf.io.browserDownloads writes them (one shard, './' path);
// - io.json: {"input": {shape, data}, "outputs": [{name, shape, data}]}, TF.js's predictions on a seeded batch.
import fs from 'node:fs';
import path from 'node:path';
import tf from '@tensorflow/tfjs';
import {writeModel} from './write_model.mjs';

const outDir = process.argv[2];
if (!outDir) throw new Error('usage: node save_model.mjs OUTDIR');
await tf.setBackend('cpu');

const L = tf.layers;
const input = tf.input({shape: [13, 13, 3], name: 'image'});
let x = L.zeroPadding2d({padding: [[1, 2], [2, 1]], name: 'pad'}).apply(input);
x = L.conv2d({filters: 8, kernelSize: 3, strides: 2, activation: 'relu', name: 'stem'}).apply(x);
const stem = L.batchNormalization({name: 'stem_bn'}).apply(x); // after the relu: must not be folded
let y = L.depthwiseConv2d({kernelSize: 3, padding: 'same', useBias: false, name: 'dw'}).apply(stem);
y = L.batchNormalization({name: 'dw_bn'}).apply(y);
y = L.reLU({maxValue: 6, name: 'dw_relu6'}).apply(y);
const residual = L.add({name: 'residual'}).apply([stem, y]);
let p = L.conv2d({filters: 4, kernelSize: 1, name: 'project'}).apply(residual);
p = L.batchNormalization({epsilon: 0.01, name: 'project_bn'}).apply(p);
const blocks = L.concatenate({name: 'blocks'}).apply([residual, p]); // 7x7x12
// Odd sizes with 'same' pooling: the last window hangs over the edge (average pools must not count the padding).
const maxPooled = L.maxPooling2d({poolSize: 2, padding: 'same', name: 'max_pool'}).apply(blocks);
const avgPooled = L.averagePooling2d({poolSize: 3, strides: 2, padding: 'same', name: 'avg_pool'}).apply(blocks);
const features = L.concatenate({name: 'features'}).apply([
  L.flatten({name: 'flatten'}).apply(maxPooled),
  L.reshape({targetShape: [4 * 4 * 12], name: 'reshape'}).apply(avgPooled),
  L.globalAveragePooling2d({name: 'gap'}).apply(blocks),
]);
const dropped = L.dropout({rate: 0.3, name: 'drop'}).apply(features);
const probabilities = L.dense({units: 10, activation: 'softmax', name: 'fc'}).apply(dropped);
const model = tf.model({inputs: input, outputs: [features, probabilities], name: 'tfjs_interop'});

// Seeded weights: kernels scaled by their fan-in (so the softmax does not saturate), non-trivial batch norms.
model.setWeights(model.weights.map((w, seed) => {
  const name = w.name;
  const [dims, size] = [w.shape, w.shape.reduce((a, b) => a * b, 1)];
  if (name.endsWith('moving_variance')) return tf.randomUniform(dims, 0.5, 2, 'float32', seed);
  if (name.endsWith('gamma')) return tf.randomUniform(dims, 0.5, 1.5, 'float32', seed);
  if (!name.endsWith('kernel')) return tf.randomUniform(dims, -0.5, 0.5, 'float32', seed); // beta, mean, bias
  const fanIn = name.endsWith('depthwise_kernel') ? dims[0] * dims[1] : size / dims[dims.length - 1];
  return tf.randomNormal(dims, 0, 1 / Math.sqrt(fanIn), 'float32', seed);
}));

await writeModel(model, outDir);

const batch = tf.randomNormal([3, 13, 13, 3], 0, 1, 'float32', 42);
const outputs = model.predict(batch);
const io = {
  input: {shape: batch.shape, data: Array.from(await batch.data())},
  outputs: await Promise.all(outputs.map(async (t, k) => ({
    name: model.outputNames[k], shape: t.shape, data: Array.from(await t.data()),
  }))),
};
fs.writeFileSync(path.join(outDir, 'io.json'), JSON.stringify(io));
