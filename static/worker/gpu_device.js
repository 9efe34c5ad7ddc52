// The webgpu backend's device on the browser's WebGPU (loaded into the Pyodide worker; static/worker/bridge.js hands
// it to the engine).
// Same semantics as py_engine/backends/webgpu/wgpu_device.py; the Python side is bridge_device.py.
// Small and dumb on purpose: buffers, a pipeline cache, one command encoder + compute pass per
// batch, readback. Shader choice and dispatch math stay in Python. Every function takes numbers
// only (ids, byte counts, addresses in wasm memory read through `peBridge.heap()`), so a call from
// Python converts no lists. What both sides must agree on (the uniform block and ring sizes, the counters' names) is
// stated once, in py_engine/backends/webgpu/device.py (BRIDGE_CONSTANTS): BridgeDevice hands it to peBridge.open,
// which gives it to the device's useConstants() before Python makes any call.
"use strict";

self.peGpuDevice = (() => {
  const MAX_BIND_GROUPS = 4096;
  const STAGING_KEEP = 16 << 20; // larger readback buffers are not kept for reuse
  const hostLostListeners = [];

  function noGpuReason() {
    if (!self.isSecureContext) return "the page is not a secure context (serve it from localhost or https)";
    return "navigator.gpu is missing: this browser has no WebGPU";
  }

  const requestAdapter = () => navigator.gpu.requestAdapter({ powerPreference: "high-performance" });

  async function open() {
    if (!self.navigator || !navigator.gpu) throw new Error(noGpuReason());
    const adapter = await requestAdapter();
    if (!adapter) {
      throw new Error("navigator.gpu.requestAdapter() found no WebGPU adapter (no usable GPU, or WebGPU is "
        + "disabled; headless Chromium without a GPU needs --enable-unsafe-webgpu)");
    }
    // The adapter's own maxima, so large weights fit in one storage binding where the GPU allows it; every other
    // limit (workgroup sizes and memory) stays WebGPU's default, as CPython asks for it too
    // (py_engine/backends/webgpu/limits.py): a kernel that runs on one visitor's GPU runs on every other's.
    const requiredLimits = {};
    for (const name of ["maxBufferSize", "maxStorageBufferBindingSize", "maxStorageBuffersPerShaderStage"]) {
      requiredLimits[name] = adapter.limits[name];
    }
    const device = await adapter.requestDevice({ requiredLimits });
    return makeDevice(adapter, device);
  }

  function adapterInfo(adapter) {
    const ai = adapter.info || {};
    const fallback = ai.isFallbackAdapter || adapter.isFallbackAdapter; // older browsers: on the adapter itself
    return {
      vendor: ai.vendor || "", architecture: ai.architecture || "", device: ai.device || "",
      description: ai.description || "", adapter_type: fallback ? "CPU (fallback adapter)" : "",
    };
  }

  // The device's parts, by concern, each made by a function below from what it needs: `gpu` is what they share
  // ({device, queue, count, scoped, lost(), heap(), uniformBlock}).
  function makeDevice(adapter, device) {
    const counters = makeCounters();
    const errors = makeErrors(device);
    const loss = watchLoss(device);
    const gpu = {
      device, queue: device.queue, count: counters.count, scoped: errors.scoped, lost: loss.lost,
      heap: () => self.peBridge.heap(), // re-read each call: wasm memory can grow
      uniformBlock: 0, // set by useConstants (a device opened ahead waits for them)
    };
    const buffers = makeBuffers(gpu);
    const pipelines = makePipelines(gpu);
    const batch = makeBatch(gpu, buffers, pipelines);
    const programs = makePrograms(gpu, buffers, pipelines);
    const read = makeReadback(gpu, buffers, errors);

    const info = { ...adapterInfo(adapter), backend_type: "WebGPU", runtime: "browser WebGPU: " + navigator.userAgent };
    const limits = {};
    for (const name in device.limits) limits[name] = device.limits[name];

    // The Python side's constants (device.py's BRIDGE_CONSTANTS), given before its first call: until then the device
    // only compiles (pipelines listed ahead, counted under their names).
    function useConstants(constants) {
      gpu.uniformBlock = constants.uniformBlock;
      counters.report(constants.statFields);
      batch.makeUniforms(constants.uniformRing);
    }

    return {
      info, limits, useConstants,
      createBuffer: buffers.create,
      destroyBuffer: (id) => { batch.forgetBuffer(id); buffers.destroy(id); },
      writeBuffer: buffers.write,
      compile: pipelines.compile, compileAsync: pipelines.compileAsync, knows: pipelines.knows,
      compiledId: pipelines.compiledId,
      dispatch: batch.dispatch, flush: batch.flush, read,
      createProgram: programs.create, runProgram: programs.run, destroyProgram: programs.destroy,
      stats: counters.stats,
      nativeBuffer: buffers.get,
      onLost: loss.onLost,
      destroy: () => device.destroy(),
    };
  }

  // The counters: name -> count; stats() reports Python's fields (DeviceStats.FIELDS), in its order.
  function makeCounters() {
    const counters = {};
    let fields = [];
    return {
      count: (field, n = 1) => { counters[field] = (counters[field] || 0) + n; },
      report: (statFields) => { fields = statFields; },
      stats: () => Object.fromEntries(fields.map((f) => [f, counters[f] || 0])),
    };
  }

  // A device call's errors arrive asynchronously. Error scopes catch those of the calls that can fail
  // (creating buffers, pipelines, bind groups: rare, as all of them are cached) and name the call in
  // the message the next readback raises. Python validates what it can foresee before calling.
  function makeErrors(device) {
    const errors = []; // validation errors since the last readback
    device.addEventListener("uncapturederror", (event) => {
      console.error("WebGPU:", event.error.message);
      if (errors.length < 8) errors.push(event.error.message);
    });

    function scoped(what, fn, onError) {
      device.pushErrorScope("out-of-memory");
      device.pushErrorScope("validation");
      try {
        return fn();
      } finally {
        for (let i = 0; i < 2; i++) {
          device.popErrorScope().then((error) => {
            if (error && onError) onError();
            if (error && errors.length < 8) errors.push(`${what}: ${error.message}`);
          }, () => {}); // a lost device rejects: its loss is reported on its own
        }
      }
    }

    return { scoped, any: () => errors.length > 0, take: () => errors.splice(0) };
  }

  // The device's loss: lost() is null until then, then the reason; its listeners and the host's are told once.
  function watchLoss(device) {
    const listeners = [];
    let lost = null;
    device.lost.then((info) => {
      lost = info.message || `the device was lost (${info.reason})`;
      for (const fn of [...listeners, ...hostLostListeners]) {
        try { fn(lost); } catch (e) { console.error(e); }
      }
    });
    return { lost: () => lost, onLost: (fn) => { listeners.push(fn); } };
  }

  // The buffers, by id (Python's handles).
  function makeBuffers({ device, queue, count, scoped, lost, heap }) {
    const U = GPUBufferUsage;
    const buffers = new Map(); // id -> GPUBuffer
    let nextBuffer = 1;

    function create(nbytes) {
      const size = Math.max(4, (nbytes + 3) & ~3);
      const buffer = scoped(`creating a buffer of ${size} bytes`,
        () => device.createBuffer({ size, usage: U.STORAGE | U.COPY_SRC | U.COPY_DST }));
      const id = nextBuffer++;
      buffers.set(id, buffer);
      count("buffers_created");
      return id;
    }

    function destroy(id) {
      const buffer = buffers.get(id);
      buffers.delete(id);
      count("buffers_destroyed");
      if (!lost()) buffer.destroy();
    }

    function write(id, offset, address, nbytes) {
      const buffer = buffers.get(id);
      if (nbytes & 3) { // WebGPU copies whole words: pad the tail with zeros
        const padded = new Uint8Array((nbytes + 3) & ~3);
        padded.set(heap().subarray(address, address + nbytes));
        queue.writeBuffer(buffer, offset, padded);
      } else {
        queue.writeBuffer(buffer, offset, heap(), address, nbytes);
      }
      count("uploads");
      count("upload_bytes", nbytes);
    }

    return { create, destroy, write, get: (id) => buffers.get(id) };
  }

  // The pipelines, by id, compiled once per shader key; their layouts, by number of inputs and outputs.
  function makePipelines({ device, count, scoped }) {
    const list = []; // id -> {key, pipeline, layout, nBindings}
    const ids = new Map(); // shader key -> id
    const compiling = new Map(); // shader key -> Promise<id> (compileAsync in flight)
    const layouts = new Map(); // "nIn,nOut" -> {key, group, pipeline}

    function layout(nIn, nOut) {
      const key = nIn + "," + nOut;
      let entry = layouts.get(key);
      if (entry === undefined) {
        const stage = GPUShaderStage.COMPUTE;
        const entries = [{ binding: 0, visibility: stage, buffer: { type: "uniform", hasDynamicOffset: true } }];
        for (let i = 0; i < nIn + nOut; i++) {
          entries.push({ binding: i + 1, visibility: stage, buffer: { type: i < nIn ? "read-only-storage" : "storage" } });
        }
        const group = device.createBindGroupLayout({ entries });
        entry = { key, group, pipeline: device.createPipelineLayout({ bindGroupLayouts: [group] }) };
        layouts.set(key, entry);
      }
      return entry;
    }

    function add(key, pipeline, nIn, nOut, start) {
      const id = list.length;
      list.push({ key, pipeline, layout: layout(nIn, nOut), nBindings: nIn + nOut });
      ids.set(key, id);
      count("pipeline_compiles");
      count("compile_ms", performance.now() - start);
      return id;
    }

    function compile(key, source, nIn, nOut) {
      const known = ids.get(key);
      if (known !== undefined) return known;
      const start = performance.now();
      // A shader the compiler rejects shows in the next readback's error, with its lines (compileAsync: at once),
      // and is forgotten: its next use compiles it again (bridge_device.py forgets it too) and fails again.
      const pipeline = scoped(`compiling shader ${key}`, () => device.createComputePipeline({
        label: key, layout: layout(nIn, nOut).pipeline,
        compute: { module: device.createShaderModule({ code: source, label: key }), entryPoint: "main" },
      }), () => ids.delete(key));
      return add(key, pipeline, nIn, nOut, start);
    }

    // The compiler's errors, "\nline:column error: text" each (bridge_device.py quotes each line's source).
    async function compilerErrors(module) {
      const { messages } = await module.getCompilationInfo();
      return messages.filter((m) => m.type === "error").map((m) => `\n${m.lineNum}:${m.linePos} error: ${m.message}`).join("");
    }

    function compileAsync(key, source, nIn, nOut) {
      const known = ids.get(key);
      if (known !== undefined) return Promise.resolve(known);
      if (!compiling.has(key)) {
        const start = performance.now();
        device.pushErrorScope("validation"); // a rejected shader is reported by the promise, with the compiler's lines
        const module = device.createShaderModule({ code: source, label: key });
        device.popErrorScope().catch(() => {});
        const done = device.createComputePipelineAsync({
          label: key, layout: layout(nIn, nOut).pipeline, compute: { module, entryPoint: "main" },
        }).then(
          (pipeline) => add(key, pipeline, nIn, nOut, start),
          async (error) => {
            throw new Error(`cannot compile shader ${key}: ${error.message}${await compilerErrors(module)}`);
          },
        ).finally(() => compiling.delete(key));
        compiling.set(key, done);
      }
      return compiling.get(key);
    }

    return {
      list, compile, compileAsync,
      knows: (key) => ids.has(key) || compiling.has(key), // compiled, or compiling
      compiledId: (key) => ids.get(key) ?? -1, // -1: not compiled (yet)
    };
  }

  // The batch: dispatches recorded into one command encoder and compute pass, submitted whole by flush; their bind
  // groups cached by pipeline layout and buffers, their uniforms one block each of a ring written at the submit.
  function makeBatch(gpu, buffers, pipelines) {
    const { device, queue, count, scoped, heap } = gpu;
    const list = pipelines.list;
    const bindGroups = new Map(); // "layout|ids" -> {group, ids}
    const dynamicOffset = new Uint32Array(1);
    let uniforms = null;
    let encoder = null, pass = null, passPipeline = null;

    function makeUniforms(ring) {
      uniforms = device.createBuffer({ size: ring, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    }

    function forgetBuffer(id) { // a destroyed buffer's bind groups go with it
      for (const [key, entry] of bindGroups) if (entry.ids.includes(id)) bindGroups.delete(key);
    }

    // dispatch(pipelineId, uniformOffset, ...workgroups (1-3), ...bufferIds (one per binding 1..n))
    function dispatch(pipelineId, uniformOffset) {
      const p = list[pipelineId];
      const nArgs = arguments.length, firstId = nArgs - p.nBindings;
      let key = p.layout.key;
      for (let i = firstId; i < nArgs; i++) key += "|" + arguments[i];
      let entry = bindGroups.get(key);
      if (entry === undefined) {
        const ids = [];
        const entries = [{ binding: 0, resource: { buffer: uniforms, offset: 0, size: gpu.uniformBlock } }];
        for (let i = firstId; i < nArgs; i++) {
          const id = arguments[i], buffer = buffers.get(id);
          if (buffer === undefined) throw new Error(`dispatch: buffer ${id} does not exist`);
          ids.push(id);
          entries.push({ binding: ids.length, resource: { buffer } });
        }
        if (bindGroups.size >= MAX_BIND_GROUPS) bindGroups.clear();
        const group = scoped(`binding buffers ${ids} for shader ${p.key}`,
          () => device.createBindGroup({ layout: p.layout.group, entries, label: p.key }));
        entry = { group, ids };
        bindGroups.set(key, entry);
      }
      if (pass === null) {
        encoder = device.createCommandEncoder();
        pass = encoder.beginComputePass();
        passPipeline = null;
      }
      if (p.pipeline !== passPipeline) { // a loop of one op sets its pipeline once per pass
        pass.setPipeline(p.pipeline);
        passPipeline = p.pipeline;
      }
      dynamicOffset[0] = uniformOffset;
      pass.setBindGroup(0, entry.group, dynamicOffset, 0, 1);
      pass.dispatchWorkgroups(arguments[2], firstId > 3 ? arguments[3] : 1, firstId > 4 ? arguments[4] : 1);
      count("dispatches");
    }

    // Write the uniforms of the recorded dispatches (queue order puts them before the submit) and submit.
    function flush(address, nbytes) {
      if (pass === null) return;
      pass.end();
      if (nbytes) queue.writeBuffer(uniforms, 0, heap(), address, nbytes);
      queue.submit([encoder.finish()]);
      pass = encoder = passPipeline = null;
      count("submits");
    }

    return { makeUniforms, forgetBuffer, dispatch, flush };
  }

  // Captured programs (backends/webgpu/capture.py): dispatches recorded once, replayed whole by run.
  function makePrograms(gpu, buffers, pipelines) {
    const { device, queue, count, scoped, lost, heap } = gpu;
    const programs = new Map(); // id -> {uniforms, steps: [{pipeline, group, offset, x, y, z}]}
    let nextProgram = 1;

    // create(address, nWords, uniformAddress, uniformBytes): at `address` in wasm memory, nWords int32 words, per
    // dispatch [pipelineId, x, y, z, nBuffers, ...bufferIds]; the uniforms hold one 256-byte block per dispatch, in
    // order, written once into the program's own uniform buffer. Returns the program's id.
    function create(address, nWords, uniformAddress, uniformBytes) {
      const words = new Int32Array(heap().buffer, address, nWords).slice(); // a copy: wasm memory can grow
      const programUniforms = scoped("creating a program's uniforms", () => device.createBuffer({
        size: Math.max(uniformBytes, gpu.uniformBlock), usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
      }));
      if (uniformBytes) queue.writeBuffer(programUniforms, 0, heap(), uniformAddress, uniformBytes);
      const groups = new Map(); // "layout|ids" -> bind group: dispatches on the same buffers share one
      const steps = [];
      for (let at = 0; at < nWords;) {
        const p = pipelines.list[words[at]], n = words[at + 4];
        const ids = Array.from(words.subarray(at + 5, at + 5 + n));
        const key = p.layout.key + "|" + ids.join("|");
        let group = groups.get(key);
        if (group === undefined) {
          const entries = [{ binding: 0, resource: { buffer: programUniforms, offset: 0, size: gpu.uniformBlock } }];
          ids.forEach((id, i) => {
            const buffer = buffers.get(id);
            if (buffer === undefined) throw new Error(`createProgram: buffer ${id} does not exist`);
            entries.push({ binding: i + 1, resource: { buffer } });
          });
          group = scoped(`binding buffers ${ids} for shader ${p.key} in a program`,
            () => device.createBindGroup({ layout: p.layout.group, entries, label: p.key }));
          groups.set(key, group);
        }
        steps.push({ pipeline: p.pipeline, group, offset: new Uint32Array([steps.length * gpu.uniformBlock]),
          x: words[at + 1], y: words[at + 2], z: words[at + 3] });
        at += 5 + n;
      }
      const id = nextProgram++;
      programs.set(id, { uniforms: programUniforms, steps });
      return id;
    }

    // run(id, nCopiesIn, ...[src, dst, nbytes] copies in, then copies out): the copies in, every dispatch in one
    // compute pass, the copies out, in one submit. Python flushes recorded dispatches first.
    function run(id, nCopiesIn) {
      const program = programs.get(id);
      if (program === undefined) throw new Error(`runProgram: program ${id} does not exist`);
      const enc = device.createCommandEncoder();
      const copy = (at) => enc.copyBufferToBuffer(buffers.get(arguments[at]), 0, buffers.get(arguments[at + 1]), 0,
        arguments[at + 2]);
      const outAt = 2 + 3 * nCopiesIn;
      for (let at = 2; at < outAt; at += 3) copy(at);
      if (program.steps.length) {
        const p = enc.beginComputePass();
        let current = null;
        for (const step of program.steps) {
          if (step.pipeline !== current) {
            p.setPipeline(step.pipeline);
            current = step.pipeline;
          }
          p.setBindGroup(0, step.group, step.offset, 0, 1);
          p.dispatchWorkgroups(step.x, step.y, step.z);
        }
        p.end();
      }
      for (let at = outAt; at < arguments.length; at += 3) copy(at);
      queue.submit([enc.finish()]);
      count("dispatches", program.steps.length);
      count("submits");
    }

    function destroy(id) {
      const program = programs.get(id);
      programs.delete(id);
      if (!lost()) program.uniforms.destroy();
    }

    return { create, run, destroy };
  }

  // Readback: read(id, nbytes, address) copies nbytes of buffer `id` into wasm memory at `address` once the submitted
  // work is done, through staging buffers reused by size class; it raises the errors WebGPU reported meanwhile.
  function makeReadback({ device, queue, count, lost, heap }, buffers, errors) {
    const staging = new Map(); // size class -> [GPUBuffer] free for readback

    return async function read(id, nbytes, address) {
      if (lost()) throw new Error(`the GPU device was lost (${lost()})`);
      const size = Math.max(4, (nbytes + 3) & ~3);
      const cls = Math.max(256, 2 ** Math.ceil(Math.log2(size))); // staging buffers are reused by size class
      const free = staging.get(cls);
      const stage = (free && free.pop())
        || device.createBuffer({ size: cls, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      const enc = device.createCommandEncoder();
      enc.copyBufferToBuffer(buffers.get(id), 0, stage, 0, size);
      queue.submit([enc.finish()]);
      try {
        await stage.mapAsync(GPUMapMode.READ, 0, size);
      } catch (e) {
        // mapAsync of a lost device can reject before device.lost resolves: give it a moment
        await Promise.race([device.lost, new Promise((resolve) => setTimeout(resolve, 50))]);
        throw new Error(lost() ? `the GPU device was lost (${lost()})` : `readback failed: ${e.message}`);
      }
      heap().set(new Uint8Array(stage.getMappedRange(0, size), 0, nbytes), address);
      stage.unmap();
      if (cls > STAGING_KEEP) stage.destroy();
      else if (staging.has(cls)) staging.get(cls).push(stage);
      else staging.set(cls, [stage]);
      count("readbacks");
      count("readback_bytes", nbytes);
      if (errors.any()) {
        // the errors an invalid object causes later (a rejected shader's dispatches, their submit) arrive after
        // it: wait for them, so that they are reported with their cause and not by the next readback
        await new Promise((resolve) => setTimeout(resolve, 50));
        throw new Error("WebGPU reported errors since the last readback: " + errors.take().join("; "));
      }
    };
  }

  return {
    open, adapterInfo, requestAdapter, noGpuReason,
    onLost: (fn) => { hostLostListeners.push(fn); }, // the host's notice of any device loss
  };
})();
