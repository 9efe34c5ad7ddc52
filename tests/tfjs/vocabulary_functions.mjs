// node tests/tfjs/vocabulary_functions.mjs OUTFILE
// What TF.js's training vocabulary computes, for tests/test_tfjs_vocabulary.py to compare with py_engine's:
// - activations: each of tf.layers.activation's names on fixed inputs, and the gradient of sum(f(x) * w);
// - losses: each name compile() takes, per example and the gradient of sum(loss * w) with respect to y_pred
//   (the functions compile() resolves, model.lossFunctions);
// - metrics: each tf.metrics function, and each name compile() takes (model.metricsTensors);
// - regularizers: tf.regularizers' penalties; constraints: tf.constraints' projections;
// - initializers: each tf.initializers one's draws on a large shape, as moments (the draws themselves are TF.js's
//   generator's), and the deterministic ones in full.
// Each entry is {shape, data}. The file is written last, so its presence means the run finished.
import fs from 'node:fs';
import tf from '@tensorflow/tfjs';

const outFile = process.argv[2];
if (!outFile) throw new Error('usage: node vocabulary_functions.mjs OUTFILE');
await tf.setBackend('cpu');

const entry = (t) => ({shape: t.shape, data: Array.from(t.dataSync())});
const seeded = (shape, lo, hi, seed) => tf.randomUniform(shape, lo, hi, 'float32', seed);

// ---- activations -------------------------------------------------------------------------------------------
const ACTIVATIONS = ['elu', 'hardSigmoid', 'linear', 'relu', 'relu6', 'selu', 'sigmoid', 'softmax', 'softplus',
                     'softsign', 'tanh', 'swish', 'mish', 'gelu', 'gelu_new', 'logSoftmax'];
const special = [-6, -3, -2.5, -1, -0.5, -1e-3, 0, 1e-3, 0.5, 1, 2.5, 3, 6, 9];
const x = tf.concat([tf.tensor1d(special), seeded([26], -5, 5, 1)]).reshape([5, 8]);
const w = seeded([5, 8], -1, 1, 2);
const activations = {x: entry(x), w: entry(w)};
for (const name of ACTIVATIONS) {
  const layer = tf.layers.activation({activation: name});
  const y = layer.apply(x);
  const g = tf.grad((t) => layer.apply(t).mul(w).sum())(x);
  activations[name] = {y: entry(y), grad: entry(g)};
}

// ---- losses ----------------------------------------------------------------------------------------------
const probs = (shape, seed) => tf.softmax(seeded(shape, -2, 2, seed));
const LOSS_DATA = {
  // name: [y_true, y_pred]
  meanSquaredError: [seeded([6, 4], -2, 2, 10), seeded([6, 4], -2, 2, 11)],
  meanAbsoluteError: [seeded([6, 4], -2, 2, 12), seeded([6, 4], -2, 2, 13)],
  meanAbsolutePercentageError: [tf.tensor2d([[0, 1, -2, 1e-9], [3, -0.5, 2, 4]]), seeded([2, 4], -2, 2, 14)],
  meanSquaredLogarithmicError: [seeded([6, 4], 0, 3, 15), seeded([6, 4], -0.5, 3, 16)],
  squaredHinge: [seeded([6, 4], -1, 1, 17).sign(), seeded([6, 4], -2, 2, 18)],
  hinge: [seeded([6, 4], -1, 1, 19).sign(), seeded([6, 4], -2, 2, 20)],
  categoricalHinge: [tf.oneHot(tf.tensor1d([0, 2, 1, 3, 3, 0], 'int32'), 4).cast('float32'),
                     seeded([6, 4], -2, 2, 21)],
  logcosh: [seeded([6, 4], -3, 3, 22), seeded([6, 4], -3, 3, 23)],
  categoricalCrossentropy: [probs([6, 4], 24), probs([6, 4], 25)],
  sparseCategoricalCrossentropy: [tf.tensor2d([[0], [2], [1], [3], [3], [0]]), probs([6, 4], 26)],
  binaryCrossentropy: [seeded([6, 4], 0, 1, 27).round(), seeded([6, 4], 0.01, 0.99, 28)],
  kullbackLeiblerDivergence: [probs([6, 4], 29), probs([6, 4], 30)],
  poisson: [seeded([6, 4], 0, 4, 31).round(), seeded([6, 4], 0.1, 3, 32)],
  cosineProximity: [seeded([6, 4], -2, 2, 33), seeded([6, 4], -2, 2, 34)],
};
const identity = () => {
  const input = tf.input({shape: [4]});
  return tf.model({inputs: input, outputs: tf.layers.activation({activation: 'linear'}).apply(input)});
};
const losses = {};
for (const [name, [yTrue, yPred]] of Object.entries(LOSS_DATA)) {
  const model = identity();
  model.compile({optimizer: 'sgd', loss: name});
  const fn = model.lossFunctions[0];
  const value = fn(yTrue, yPred);
  const weights = seeded(value.shape, 0.5, 1.5, 40);
  const grad = tf.grad((p) => fn(yTrue, p).mul(weights).sum())(yPred);
  losses[name] = {y_true: entry(yTrue), y_pred: entry(yPred), value: entry(value), w: entry(weights),
                  grad: entry(grad)};
}

// ---- metrics ---------------------------------------------------------------------------------------------
const binary = (shape, seed) => seeded(shape, 0, 1, seed).round();
const METRIC_DATA = {
  // tf.metrics functions
  binaryAccuracy: [binary([6, 4], 50), seeded([6, 4], 0, 1, 51)],
  binaryCrossentropy: [binary([6, 4], 52), seeded([6, 4], 0.01, 0.99, 53)],
  categoricalAccuracy: [tf.oneHot(tf.tensor1d([0, 2, 1, 3, 3, 0], 'int32'), 4).cast('float32'),
                        probs([6, 4], 54)],
  categoricalCrossentropy: [probs([6, 4], 55), probs([6, 4], 56)],
  sparseCategoricalAccuracy: [tf.tensor2d([[0], [2], [1], [3], [3], [0]]), probs([6, 4], 57)],
  precision: [binary([6, 4], 58), binary([6, 4], 59)],
  recall: [binary([6, 4], 60), binary([6, 4], 61)],
  cosineProximity: [seeded([6, 4], -2, 2, 62), seeded([6, 4], -2, 2, 63)],
  meanAbsoluteError: [seeded([6, 4], -2, 2, 64), seeded([6, 4], -2, 2, 65)],
  meanAbsolutePercentageError: [seeded([6, 4], -2, 2, 66), seeded([6, 4], -2, 2, 67)],
  MAPE: [seeded([6, 4], -2, 2, 68), seeded([6, 4], -2, 2, 69)],
  mape: [seeded([6, 4], -2, 2, 70), seeded([6, 4], -2, 2, 71)],
  meanSquaredError: [seeded([6, 4], -2, 2, 72), seeded([6, 4], -2, 2, 73)],
  MSE: [seeded([6, 4], -2, 2, 74), seeded([6, 4], -2, 2, 75)],
  mse: [seeded([6, 4], -2, 2, 76), seeded([6, 4], -2, 2, 77)],
  r2Score: [seeded([6, 4], -2, 2, 78), seeded([6, 4], -2, 2, 79)],
};
const metrics = {};
for (const [name, [yTrue, yPred]] of Object.entries(METRIC_DATA)) {
  metrics[name] = {y_true: entry(yTrue), y_pred: entry(yPred), value: entry(tf.metrics[name](yTrue, yPred))};
}
// Precision and recall edge cases: no positive prediction / label (0), and predictions that are not 0/1.
metrics['precision/none-predicted'] = {y_true: entry(tf.ones([2, 3])), y_pred: entry(tf.zeros([2, 3])),
                                       value: entry(tf.metrics.precision(tf.ones([2, 3]), tf.zeros([2, 3])))};
const soft = tf.tensor2d([[1, 0.7, 0], [1, 1, 0.2]]);
const labels = tf.tensor2d([[1, 1, 0], [0, 1, 1]]);
metrics['precision/soft'] = {y_true: entry(labels), y_pred: entry(soft), value: entry(tf.metrics.precision(labels, soft))};
metrics['recall/soft'] = {y_true: entry(labels), y_pred: entry(soft), value: entry(tf.metrics.recall(labels, soft))};
// The names compile() takes, resolved as compile resolves them.
const COMPILE_METRICS = ['binaryAccuracy', 'categoricalAccuracy', 'precision', 'categoricalCrossentropy',
                         'sparseCategoricalCrossentropy', 'mse', 'MSE', 'mae', 'MAE', 'mape', 'MAPE', 'cosine'];
const compiled = {};
for (const name of COMPILE_METRICS) {
  const [yTrue, yPred] = name.startsWith('sparse') ? METRIC_DATA.sparseCategoricalAccuracy :
                         name === 'precision' ? METRIC_DATA.precision : METRIC_DATA.categoricalCrossentropy;
  const model = identity();
  model.compile({optimizer: 'sgd', loss: 'meanSquaredError', metrics: [name]});
  const fn = model.metricsTensors[0][0];
  compiled[name] = {y_true: entry(yTrue), y_pred: entry(yPred), value: entry(fn(yTrue, yPred))};
}

// ---- regularizers and constraints --------------------------------------------------------------------------
const weight = seeded([5, 3], -2, 2, 80);
const kernel = seeded([2, 2, 3, 4], -1, 1, 81);
const regularizers = {
  l1: entry(tf.regularizers.l1({l1: 0.03}).apply(weight)),
  l2: entry(tf.regularizers.l2({l2: 0.07}).apply(weight)),
  l1l2: entry(tf.regularizers.l1l2({l1: 0.02, l2: 0.05}).apply(weight)),
  l1l2_default: entry(tf.regularizers.l1l2().apply(weight)),
  l1l2_config: tf.regularizers.l1l2({l1: 0.02, l2: 0.05}).getConfig(),
  l1_config: tf.regularizers.l1({l1: 0.03}).getConfig(),
};
const CONSTRAINTS = {
  maxNorm: [tf.constraints.maxNorm({maxValue: 1.5, axis: 0}), weight],
  maxNorm_axis1: [tf.constraints.maxNorm({maxValue: 0.8, axis: 1}), weight],
  maxNorm_conv: [tf.constraints.maxNorm({maxValue: 1.2, axis: [0, 1, 2]}), kernel],
  minMaxNorm: [tf.constraints.minMaxNorm({minValue: 1.0, maxValue: 2.0, rate: 0.6, axis: 0}), weight],
  minMaxNorm_default: [tf.constraints.minMaxNorm({}), weight],
  nonNeg: [tf.constraints.nonNeg(), weight],
  unitNorm: [tf.constraints.unitNorm({axis: 0}), weight],
  unitNorm_conv: [tf.constraints.unitNorm({axis: [0, 1, 2]}), kernel],
};
const constraints = {weight: entry(weight), kernel: entry(kernel)};
for (const [name, [constraint, w]] of Object.entries(CONSTRAINTS)) {
  constraints[name] = {class_name: constraint.getClassName(), config: constraint.getConfig(),
                       value: entry(constraint.apply(w))};
}

// ---- initializers ----------------------------------------------------------------------------------------
const moments = (t) => ({mean: t.mean().dataSync()[0], std: tf.moments(t).variance.sqrt().dataSync()[0],
                         min: t.min().dataSync()[0], max: t.max().dataSync()[0]});
const I = tf.initializers;
const INITIALIZERS = {
  zeros: [I.zeros(), [3, 4]],
  ones: [I.ones(), [3, 4]],
  constant: [I.constant({value: 2.5}), [3, 4]],
  identity: [I.identity({gain: 3}), [4, 4]],
  randomUniform: [I.randomUniform({minval: -0.3, maxval: 0.2, seed: 1}), [80, 120]],
  randomNormal: [I.randomNormal({mean: 0.1, stddev: 0.3, seed: 2}), [80, 120]],
  truncatedNormal: [I.truncatedNormal({mean: 0.1, stddev: 0.3, seed: 3}), [80, 120]],
  glorotUniform: [I.glorotUniform({seed: 4}), [80, 120]],
  glorotNormal: [I.glorotNormal({seed: 5}), [80, 120]],
  heUniform: [I.heUniform({seed: 6}), [3, 3, 16, 24]],
  heNormal: [I.heNormal({seed: 7}), [3, 3, 16, 24]],
  leCunUniform: [I.leCunUniform({seed: 8}), [80, 120]],
  leCunNormal: [I.leCunNormal({seed: 9}), [80, 120]],
  orthogonal: [I.orthogonal({gain: 2, seed: 10}), [60, 40]],
  orthogonal_wide: [I.orthogonal({gain: 1, seed: 11}), [3, 3, 4, 40]],
};
for (const mode of ['fanIn', 'fanOut', 'fanAvg']) {
  for (const distribution of ['normal', 'uniform']) {
    INITIALIZERS[`varianceScaling_${mode}_${distribution}`] =
        [I.varianceScaling({scale: 2, mode, distribution, seed: 12}), [3, 3, 16, 24]];
  }
}
const initializers = {};
for (const [name, [initializer, shape]] of Object.entries(INITIALIZERS)) {
  const value = initializer.apply(shape, 'float32');
  const config = initializer.getConfig();
  initializers[name] = {class_name: initializer.getClassName(), config, shape, moments: moments(value),
                        value: shape.reduce((a, b) => a * b, 1) <= 16 ? entry(value) : null};
}

// ---- TF.js's own Adadelta, one step: its update divides by the accumulator from before the step ---------------
const adadeltaGradient = tf.tensor1d([0.5, -2, 3]);
const adadeltaVariable = tf.variable(tf.zeros([3]), true, 'adadelta_check');
tf.train.adadelta(1.0, 0.9, 1e-6).applyGradients({adadelta_check: adadeltaGradient});
const optimizers = {adadelta_first_step: {gradient: entry(adadeltaGradient), value: entry(adadeltaVariable)}};

fs.writeFileSync(outFile, JSON.stringify({activations, losses, metrics, compiled, regularizers, constraints,
                                          initializers, optimizers}));
