// node tests/tfjs/save_layer_models.mjs OUTDIR NAME...
// Builds the named models (MODELS below) with the real TensorFlow.js (pure JS, cpu backend), one per layer family
// of issue 39 (Conv1D, Conv2DTranspose, SeparableConv2D, ...), gives every weight a seeded value, and writes one
// folder per model into OUTDIR, each holding:
// - model.json and model.weights.bin, laid out as tf.io.browserDownloads writes them (one shard, './' path);
// - io.json: {"cases": [{"inputs": [{shape, data}], "outputs": [{shape, data}]}]}, TF.js's predictions on inputs of
//   several shapes (where the model leaves a dimension free) and seeds.
import fs from 'node:fs';
import path from 'node:path';
import tf from '@tensorflow/tfjs';
import {writeModel} from './write_model.mjs';

const [outDir, ...names] = process.argv.slice(2);
if (!outDir || names.length === 0) throw new Error('usage: node save_layer_models.mjs OUTDIR NAME...');
await tf.setBackend('cpu');
const L = tf.layers;

const normal = (shape, seed) => tf.randomNormal(shape, 0, 1, 'float32', seed);

// name -> () => [model, [input, ...]]
const MODELS = {
  conv1d() {
    const x = tf.input({shape: [null, 3], name: 'x'});
    const a = L.conv1d({filters: 4, kernelSize: 3, padding: 'same', activation: 'relu', name: 'same'}).apply(x);
    const b = L.conv1d({filters: 5, kernelSize: 2, dilationRate: 2, name: 'dilated'}).apply(a);
    const c = L.conv1d({filters: 2, kernelSize: 3, strides: 2, activation: 'tanh', useBias: false, name: 'strided'})
      .apply(b);
    return [tf.model({inputs: x, outputs: [b, c], name: 'conv1d'}), [normal([2, 9, 3], 1), normal([3, 12, 3], 2)]];
  },
  conv2d_transpose() {
    const x = tf.input({shape: [null, null, 3], name: 'x'});
    const a = L.conv2dTranspose({filters: 4, kernelSize: 3, strides: 2, padding: 'same', activation: 'relu', name: 'up'})
      .apply(x);
    const b = L.conv2dTranspose({filters: 2, kernelSize: [2, 3], strides: [1, 2], name: 'valid'}).apply(a);
    const c = L.conv2dTranspose({filters: 3, kernelSize: 1, strides: 3, useBias: false, activation: 'sigmoid',
      name: 'sparse'}).apply(b);
    return [tf.model({inputs: x, outputs: [a, c], name: 'conv2d_transpose'}),
      [normal([2, 4, 5, 3], 1), normal([1, 3, 3, 3], 2)]];
  },
  separable_conv2d() {
    const x = tf.input({shape: [null, null, 3], name: 'x'});
    const a = L.separableConv2d({filters: 4, kernelSize: 3, padding: 'same', depthMultiplier: 2, activation: 'relu',
      name: 'sep'}).apply(x);
    const b = L.separableConv2d({filters: 2, kernelSize: [3, 2], strides: 2, useBias: false, name: 'strided'})
      .apply(a);
    const c = L.separableConv2d({filters: 3, kernelSize: 2, dilationRate: 2, activation: 'tanh', name: 'dilated'})
      .apply(a);
    return [tf.model({inputs: x, outputs: [b, c], name: 'separable_conv2d'}),
      [normal([2, 7, 6, 3], 1), normal([1, 9, 8, 3], 2)]];
  },
  rnn_cells() {
    // padded ids (0 = padding): lengths 6, 3, 1, a pre-padded row, a gap in the middle, so masks decide outputs
    const ids = tf.input({shape: [6], name: 'ids'});
    const x = L.embedding({inputDim: 10, outputDim: 4, maskZero: true, name: 'emb'}).apply(ids);
    const stacked = L.rnn({cell: [L.lstmCell({units: 3, name: 'c0'}), L.gruCell({units: 4, name: 'c1'}),
      L.simpleRNNCell({units: 2, activation: 'relu', name: 'c2'})], returnSequences: true, returnState: true,
    name: 'stack'}).apply(x);
    const single = L.rnn({cell: L.gruCell({units: 3, recurrentActivation: 'sigmoid'}), goBackwards: true,
      name: 'single'}).apply(stacked[0]);
    const lstm = L.rnn({cell: L.lstmCell({units: 2, unitForgetBias: true}), returnState: true, name: 'lstm'})
      .apply(x);
    return [tf.model({inputs: ids, outputs: [...stacked, single, ...lstm], name: 'rnn_cells'}),
      [tf.tensor([[3, 1, 4, 1, 5, 9], [6, 5, 3, 0, 0, 0], [8, 0, 0, 0, 0, 0], [0, 0, 7, 2, 9, 4], [2, 7, 0, 0, 1, 8]]),
        tf.tensor([[1, 2, 3, 4, 5, 6], [0, 9, 0, 9, 0, 9]])]];
  },
  rnn_activations() {
    // the recurrent layers with every activation whose derivative is a function of its output (issue 39: a
    // softsign LSTM)
    const x = tf.input({shape: [5, 3], name: 'x'});
    const a = L.lstm({units: 3, activation: 'softsign', recurrentActivation: 'hardSigmoid', returnSequences: true,
      name: 'softsign_lstm'}).apply(x);
    const b = L.gru({units: 2, activation: 'elu', recurrentActivation: 'softsign', returnSequences: true,
      name: 'elu_gru'}).apply(a);
    const c = L.simpleRNN({units: 4, activation: 'selu', name: 'selu_rnn'}).apply(b);
    const d = L.simpleRNN({units: 2, activation: 'softplus', name: 'softplus_rnn'}).apply(a);
    const e = L.lstm({units: 2, activation: 'relu6', name: 'relu6_lstm'}).apply(x);
    return [tf.model({inputs: x, outputs: [c, d, e], name: 'rnn_activations'}),
      [normal([2, 5, 3], 1), normal([3, 5, 3], 2)]];
  },
  time_distributed() {
    const ids = tf.input({shape: [5], name: 'ids'});
    const x = L.embedding({inputDim: 10, outputDim: 4, maskZero: true, name: 'emb'}).apply(ids);
    const dense = L.timeDistributed({layer: L.dense({units: 3, activation: 'tanh', name: 'inner'}), name: 'td'})
      .apply(x);
    const last = L.lstm({units: 2, name: 'lstm'}).apply(dense);  // the mask passes through TimeDistributed
    const frames = tf.input({shape: [null, 6, 5, 2], name: 'frames'});
    const conv = L.timeDistributed({layer: L.conv2d({filters: 3, kernelSize: 3, activation: 'relu'}),
      name: 'td_conv'}).apply(frames);
    const flat = L.timeDistributed({layer: L.flatten(), name: 'td_flat'})
      .apply(L.timeDistributed({layer: L.maxPooling2d({poolSize: 2}), name: 'td_pool'}).apply(conv));
    const pooled = L.timeDistributed({layer: L.globalAveragePooling2d({}), name: 'td_gap'}).apply(conv);
    return [tf.model({inputs: [ids, frames], outputs: [dense, last, pooled, flat], name: 'time_distributed'}),
      [[tf.tensor([[3, 1, 4, 0, 0], [0, 0, 7, 2, 9], [2, 7, 0, 1, 8]]), normal([3, 3, 6, 5, 2], 1)],
        [tf.tensor([[5, 0, 0, 0, 0], [1, 2, 3, 4, 5]]), normal([2, 4, 6, 5, 2], 2)]]];
  },
  conv3d() {
    const x = tf.input({shape: [null, null, null, 2], name: 'x'});
    const a = L.conv3d({filters: 3, kernelSize: 3, padding: 'same', activation: 'relu', name: 'same'}).apply(x);
    const b = L.conv3d({filters: 2, kernelSize: [2, 3, 2], strides: [2, 1, 2], name: 'strided'}).apply(a);
    const c = L.conv3d({filters: 2, kernelSize: 2, dilationRate: 2, useBias: false, activation: 'tanh',
      name: 'dilated'}).apply(a);
    return [tf.model({inputs: x, outputs: [b, c], name: 'conv3d'}),
      [normal([2, 5, 6, 5, 2], 1), normal([1, 6, 5, 7, 2], 2)]];
  },
  conv3d_transpose() {
    const x = tf.input({shape: [null, null, null, 2], name: 'x'});
    const a = L.conv3dTranspose({filters: 3, kernelSize: 3, strides: 2, padding: 'same', activation: 'relu',
      name: 'same'}).apply(x);
    const b = L.conv3dTranspose({filters: 2, kernelSize: [2, 3, 1], strides: [1, 2, 3], name: 'valid'}).apply(a);
    const c = L.conv3dTranspose({filters: 2, kernelSize: [1, 2, 2], strides: 3, useBias: false, name: 'sparse'})
      .apply(x);
    return [tf.model({inputs: x, outputs: [b, c], name: 'conv3d_transpose'}),
      [normal([2, 3, 2, 3, 2], 1), normal([1, 2, 3, 2, 2], 2)]];
  },
  pooling3d() {
    const x = tf.input({shape: [null, null, null, 3], name: 'x'});
    const a = L.maxPooling3d({poolSize: 2, name: 'max'}).apply(x);
    const b = L.maxPooling3d({poolSize: [3, 2, 3], strides: [2, 1, 2], padding: 'same', name: 'max_same'}).apply(x);
    const c = L.averagePooling3d({poolSize: [2, 3, 2], strides: 1, name: 'avg'}).apply(x);
    const d = L.averagePooling3d({poolSize: 3, strides: [2, 2, 1], padding: 'same', name: 'avg_same'}).apply(x);
    return [tf.model({inputs: x, outputs: [a, b, c, d], name: 'pooling3d'}),
      [normal([2, 5, 6, 7, 3], 1), normal([1, 4, 4, 5, 3], 2)]];
  },
  conv_lstm2d() {
    const x = tf.input({shape: [null, 6, 5, 2], name: 'x'});
    const a = L.convLstm2d({filters: 3, kernelSize: 3, padding: 'same', returnSequences: true, name: 'same'})
      .apply(x);
    const b = L.convLstm2d({filters: 2, kernelSize: [2, 3], strides: [2, 1], activation: 'relu',
      recurrentActivation: 'sigmoid', goBackwards: true, returnState: true, name: 'strided'}).apply(a);
    const c = L.convLstm2d({filters: 2, kernelSize: 2, dilationRate: 2, useBias: false, name: 'dilated'}).apply(x);
    return [tf.model({inputs: x, outputs: [a, ...b, c], name: 'conv_lstm2d'}),
      [normal([2, 4, 6, 5, 2], 1), normal([1, 2, 6, 5, 2], 2)]];
  },
};

async function arrayOf(t) {
  return {shape: t.shape, data: Array.from(await t.data())};
}

for (const name of names) {
  if (!MODELS[name]) throw new Error(`unknown model ${name}; known: ${Object.keys(MODELS).join(', ')}`);
  const [model, inputs] = MODELS[name]();
  model.setWeights(model.weights.map((w, seed) => tf.randomUniform(w.shape, -0.6, 0.6, 'float32', seed + 1)));
  const folder = path.join(outDir, name);
  await writeModel(model, folder);
  const cases = [];
  for (const input of inputs) {
    const outputs = [model.predict(input)].flat();
    cases.push({inputs: await Promise.all([input].flat().map(arrayOf)), outputs: await Promise.all(outputs.map(arrayOf))});
  }
  fs.writeFileSync(path.join(folder, 'io.json'), JSON.stringify({cases}));
}
