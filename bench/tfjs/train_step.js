// TF.js's side of bench/train_step.py: the same two models, batch 64, SGD, synthetic data, timed as ours.
// window.tfjsTrainStep({kind, backend, batches, warmup, steps, epochs}) -> {step_ms, loop_ms, fit_ms,
// leftover_tensors, simd, threads (wasm)}, or {error, ...} when TF.js cannot train that model on that backend
// (4.22's wasm backend has no Conv2DBackpropFilter kernel):
//   step_ms  median of `steps` optimizer.minimize steps, each synced by reading its loss back
//   loop_ms  median over `epochs` rounds of `batches` minimize steps with one readback at the end, per step
//   fit_ms   median over `epochs` model.fit epochs of `batches` batches (shuffled, fit's default), per step
"use strict";

const BATCH = 64;

function buildModel(kind) {
  const model = tf.sequential();
  if (kind === "mlp") {
    model.add(tf.layers.dense({ units: 128, activation: "relu", inputShape: [784] }));
  } else {
    model.add(tf.layers.conv2d({ filters: 8, kernelSize: 3, activation: "relu", inputShape: [28, 28, 1] }));
    model.add(tf.layers.maxPooling2d({ poolSize: 2 }));
    model.add(tf.layers.conv2d({ filters: 16, kernelSize: 3, activation: "relu" }));
    model.add(tf.layers.flatten());
  }
  model.add(tf.layers.dense({ units: 10, activation: "softmax" }));
  return model;
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function useBackend(backend) {
  if (backend === "wasm") {
    tf.wasm.setWasmPaths(new URL("node_modules/@tensorflow/tfjs-backend-wasm/dist/", location.href).href);
  }
  if (!(await tf.setBackend(backend))) throw new Error(`TF.js could not start its ${backend} backend`);
  await tf.ready();
  const env = tf.env();
  return backend === "wasm"
    ? { simd: await env.getAsync("WASM_HAS_SIMD_SUPPORT"), threads: await env.getAsync("WASM_HAS_MULTITHREAD_SUPPORT") }
    : {};
}

window.tfjsTrainStep = async (settings) => {
  const features = await useBackend(settings.backend);
  const before = tf.memory().numTensors;
  try {
    return { ...(await measure(settings)), ...features, leftover_tensors: tf.memory().numTensors - before };
  } catch (error) {
    return { error: error.message, ...features };
  }
};

async function measure({ kind, batches, warmup, steps, epochs }) {
  const n = BATCH * batches;
  const shape = kind === "mlp" ? [784] : [28, 28, 1];
  const x = tf.randomNormal([n, ...shape], 0, 1, "float32", 1);
  const y = tf.tidy(() => tf.oneHot(tf.randomUniform([n], 0, 10, "int32", 2), 10).toFloat());
  const xs = [], ys = [];
  for (let b = 0; b < batches; b++) {
    xs.push(x.slice(b * BATCH, BATCH));
    ys.push(y.slice(b * BATCH, BATCH));
  }
  const model = buildModel(kind);
  const optimizer = tf.train.sgd(0.01);
  model.compile({ optimizer, loss: "categoricalCrossentropy" });
  const minimize = (b) => optimizer.minimize(
    () => tf.mean(tf.metrics.categoricalCrossentropy(ys[b], model.apply(xs[b], { training: true }))), true);

  async function syncedStep(b) {
    const start = performance.now();
    const cost = minimize(b);
    await cost.data();
    cost.dispose();
    return performance.now() - start;
  }
  for (let i = 0; i < warmup; i++) await syncedStep(i % batches);
  const stepTimes = [];
  for (let i = 0; i < steps; i++) stepTimes.push(await syncedStep(i % batches));

  const loopTimes = [];
  for (let round = 0; round < epochs; round++) {
    const start = performance.now();
    for (let b = 0; b < batches - 1; b++) minimize(b).dispose();
    const cost = minimize(batches - 1);
    await cost.data();
    cost.dispose();
    loopTimes.push((performance.now() - start) / batches);
  }

  // yieldEvery "never": fit does not wait for animation frames between batches, so only training is timed
  const fitArgs = { batchSize: BATCH, epochs: 1, shuffle: true, verbose: 0, yieldEvery: "never" };
  await model.fit(x, y, fitArgs);
  const fitTimes = [];
  let epochStart = 0;
  await model.fit(x, y, {
    ...fitArgs,
    epochs,
    callbacks: {
      onEpochBegin: async () => { epochStart = performance.now(); },
      onEpochEnd: async () => { fitTimes.push((performance.now() - epochStart) / batches); },
    },
  });

  model.dispose();
  optimizer.dispose();
  tf.dispose([x, y, xs, ys]);
  return { step_ms: median(stepTimes), loop_ms: median(loopTimes), fit_ms: median(fitTimes) };
}
