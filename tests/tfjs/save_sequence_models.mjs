// node tests/tfjs/save_sequence_models.mjs OUTDIR
// Builds small sequence models with the real TensorFlow.js (pure JS, cpu backend): Embedding (mask_zero), LSTM,
// GRU, SimpleRNN, Bidirectional, LayerNormalization, GlobalAveragePooling1D; gives every weight a seeded value, and
// writes one folder per model into OUTDIR, each holding:
// - model.json and model.weights.bin, laid out as tf.io.browserDownloads writes them (one shard, './' path);
// - io.json: {"input": {shape, data}, "outputs": [{name, shape, data}]}, TF.js's predictions on a padded batch
//   (id 0 is padding: post-padded rows, a pre-padded row and a row with a gap, so masks decide the outputs).
import fs from 'node:fs';
import path from 'node:path';
import tf from '@tensorflow/tfjs';
import {writeModel} from './write_model.mjs';

const outDir = process.argv[2];
if (!outDir) throw new Error('usage: node save_sequence_models.mjs OUTDIR');
await tf.setBackend('cpu');
const L = tf.layers;

// Padded ids: lengths 7, 4, 1, a pre-padded row, a gap in the middle, all padding but the first step.
const IDS = [
  [3, 1, 4, 1, 5, 9, 2],
  [6, 5, 3, 5, 0, 0, 0],
  [8, 0, 0, 0, 0, 0, 0],
  [0, 0, 7, 2, 9, 4, 4],
  [2, 7, 0, 0, 1, 8, 3],
];

function maskedLstmGru() {
  const ids = tf.input({shape: [7], name: 'ids'});
  const x = L.embedding({inputDim: 10, outputDim: 5, maskZero: true, name: 'emb'}).apply(ids);
  const s = L.lstm({units: 6, returnSequences: true, name: 'lstm'}).apply(x);
  const g = L.gru({units: 4, returnSequences: true, name: 'gru'}).apply(s);
  const last = L.simpleRNN({units: 5, name: 'rnn'}).apply(g);
  const probabilities = L.dense({units: 3, activation: 'softmax', name: 'fc'}).apply(last);
  return [tf.model({inputs: ids, outputs: [g, probabilities], name: 'masked_lstm_gru'}), tf.tensor(IDS)];
}

function bidirectional() {
  const ids = tf.input({shape: [7], name: 'ids'});
  const x = L.embedding({inputDim: 10, outputDim: 4, maskZero: true, name: 'emb'}).apply(ids);
  const both = L.bidirectional({layer: L.lstm({units: 3, returnSequences: true, name: 'lstm'}), name: 'bi_lstm'})
    .apply(x);
  const summary = L.bidirectional({
    layer: L.gru({units: 2, activation: 'relu', recurrentActivation: 'sigmoid', name: 'gru'}),
    mergeMode: 'ave', name: 'bi_gru',
  }).apply(both);
  const out = L.dense({units: 2, name: 'fc'}).apply(summary);
  return [tf.model({inputs: ids, outputs: [both, out], name: 'bidirectional'}), tf.tensor(IDS)];
}

function unmasked() {
  const features = tf.input({shape: [6, 3], name: 'features'});
  const r = L.simpleRNN({units: 4, activation: 'relu', returnSequences: true, goBackwards: true, name: 'rnn'})
    .apply(features);
  const s = L.lstm({units: 3, returnSequences: true, recurrentActivation: 'sigmoid', name: 'lstm'}).apply(r);
  const n = L.layerNormalization({name: 'norm'}).apply(s);
  const pooled = L.globalAveragePooling1d({name: 'gap'}).apply(n);
  const backwards = L.bidirectional({
    layer: L.gru({units: 2, returnSequences: true, goBackwards: true, name: 'gru'}), mergeMode: 'mul', name: 'bi',
  }).apply(features);
  const out = L.dense({units: 2, activation: 'tanh', name: 'fc'}).apply(pooled);
  return [
    tf.model({inputs: features, outputs: [out, backwards], name: 'unmasked'}),
    tf.randomNormal([4, 6, 3], 0, 1, 'float32', 7),
  ];
}

function sequential() {
  const model = tf.sequential({name: 'sequential_gru'});
  model.add(L.embedding({inputDim: 10, outputDim: 3, maskZero: true, inputLength: 7, name: 'emb'}));
  model.add(L.gru({units: 3, name: 'gru'}));
  return [model, tf.tensor(IDS)];
}

async function save(model, input, folder) {
  model.setWeights(model.weights.map((w, seed) => {
    const bound = w.name.endsWith('embeddings') ? 1 : 0.6;
    return tf.randomUniform(w.shape, -bound, bound, 'float32', seed + 1);
  }));
  await writeModel(model, folder);
  const outputs = [model.predict(input)].flat();
  const io = {
    input: {shape: input.shape, data: Array.from(await input.data())},
    outputs: await Promise.all(outputs.map(async (t, k) => ({
      name: model.outputNames[k], shape: t.shape, data: Array.from(await t.data()),
    }))),
  };
  fs.writeFileSync(path.join(folder, 'io.json'), JSON.stringify(io));
}

for (const build of [maskedLstmGru, bidirectional, unmasked, sequential]) {
  const [model, input] = build();
  await save(model, input, path.join(outDir, model.name));
}
