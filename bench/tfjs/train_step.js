// TF.js's side of bench/train_step.py: the same two models, batch 64, SGD or Adam, synthetic data, timed as ours.
// window.tfjsTrainStep({kind, backend, batches, warmup, steps, epochs, optimizer: "sgd" | "adam"}) -> {step_ms,
// loop_ms, fit_ms, shuffled_fit_ms, leftover_tensors, simd, threads (wasm)}, or {error, ...} when TF.js cannot train
// that model on that backend (4.22's wasm backend has no Conv2DBackpropFilter kernel):
// interleaved in `epochs` rounds:
//   step_ms          median of `steps` optimizer.minimize steps, each synced by reading its loss back
//   loop_ms          median of the rounds' `batches` minimize steps with one readback at the end, per step
//   fit_ms           median of the rounds' model.fit epoch of `batches` batches in order (shuffle off), per step
//   shuffled_fit_ms  the same, shuffled (fit's default)
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

async function measure({ kind, batches, warmup, steps, epochs, optimizer: rule }) {
  const n = BATCH * batches;
  const shape = kind === "mlp" ? [784] : [28, 28, 1];
  const x = tf.randomNormal([n, ...shape], 0, 1, "float32", 1);
  const y = tf.tidy(() => tf.oneHot(tf.randomUniform([n], 0, 10, "int32", 2), 10).toFloat());
  const model = buildModel(kind);
  const optimizer = rule === "adam" ? tf.train.adam(0.001) : tf.train.sgd(0.01);
  model.compile({ optimizer, loss: "categoricalCrossentropy" });
  const minimize = (b) => tf.tidy(() => { // batch b sliced from the data, as fit does without shuffling
    const xb = x.slice(b * BATCH, BATCH), yb = y.slice(b * BATCH, BATCH);
    return optimizer.minimize(
      () => tf.mean(tf.metrics.categoricalCrossentropy(yb, model.apply(xb, { training: true }))), true);
  });

  async function syncedStep(b) {
    const start = performance.now();
    const cost = minimize(b);
    await cost.data();
    cost.dispose();
    return performance.now() - start;
  }
  async function syncedLoop() {
    const start = performance.now();
    for (let b = 0; b < batches - 1; b++) minimize(b).dispose();
    const cost = minimize(batches - 1);
    await cost.data();
    cost.dispose();
    return (performance.now() - start) / batches;
  }

  // yieldEvery "never": fit does not wait for animation frames between batches, so only training is timed
  const fitArgs = { batchSize: BATCH, epochs: 1, shuffle: false, verbose: 0, yieldEvery: "never" };
  const epochTimer = (times) => {
    let start = 0;
    return {
      onEpochBegin: async () => { start = performance.now(); },
      onEpochEnd: async () => { times.push((performance.now() - start) / batches); },
    };
  };
  const fitTimes = [], shuffledFitTimes = [];

  for (let i = 0; i < warmup; i++) await syncedStep(i % batches);
  await model.fit(x, y, fitArgs);
  const stepTimes = [], loopTimes = [];
  for (let round = 0; round < epochs; round++) { // interleaved, as ours
    for (let i = 0; i < Math.max(1, Math.floor(steps / epochs)); i++) stepTimes.push(await syncedStep(i % batches));
    loopTimes.push(await syncedLoop());
    await model.fit(x, y, { ...fitArgs, callbacks: epochTimer(fitTimes) });
    await model.fit(x, y, { ...fitArgs, shuffle: true, callbacks: epochTimer(shuffledFitTimes) });
  }

  model.dispose();
  optimizer.dispose();
  tf.dispose([x, y]);
  return {
    step_ms: median(stepTimes),
    loop_ms: median(loopTimes),
    fit_ms: median(fitTimes),
    shuffled_fit_ms: median(shuffledFitTimes),
  };
}
