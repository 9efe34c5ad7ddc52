"""The Python side of the playground's worker (static/worker.js loads it as the module `playground`).

Starts the engine, reports memory and stats, clears the namespace, and runs the image classifier. The page's code
runs in playground_run.py; what the page shows of its results comes from playground_display.py.
"""

import asyncio
import importlib
import time

import numpy as np
import playground_run

import py_engine as pe
from py_engine.image_classifier import ImageClassifier, load_outline


def backend_info():
    info = pe.backend_info()
    adapter = None
    if pe.ENGINE.active().is_gpu:
        adapter = {k: info.get(k, "") for k in ("vendor", "architecture", "device", "description", "adapter_type")}
    return {"backend": info["name"], "adapter": adapter, "fallback_reason": info["fallback_reason"], "details": info}


async def first_op():
    """Check the backend with one op: on a GPU it compiles a pipeline, records, submits and reads back. The op is the
    classifier's first, the pixels' unpacking: the first of the pipelines compiled while the page boots
    (app/classifier_pipelines.py), so it waits for no other compile."""
    with pe.scope():
        got = await pe.browser.unpack_pixels(pe.tensor([[0x04030201]], dtype="int32")).data()
    if got.reshape(-1).tolist() != [1, 2, 3]:
        raise RuntimeError(f"the first op read back {got.reshape(-1).tolist()} for the pixel (1, 2, 3)")


async def start(backend):
    """Make `backend` active and time a first small op on it; numpy, with the reason, if either fails."""
    began = time.perf_counter()
    await pe.set_backend(backend)
    started = time.perf_counter()
    try:
        await first_op()
    except Exception as e:
        if pe.get_backend() == "numpy":
            raise
        failed = pe.get_backend()
        await pe.set_backend("numpy")
        pe.ENGINE.fallback_reason = f"backend {failed!r} failed its first op: {type(e).__name__}: {str(e)[:2000]}"
        await first_op()
    done = time.perf_counter()
    return {**backend_info(), "backend_start_ms": (started - began) * 1e3, "warmup_ms": (done - started) * 1e3}


def memory():
    return pe.memory().to_dict()


def stats():
    return pe.stats()


def clear_namespace():
    """Forget the names the page's code defined and dispose every tensor and variable still alive, except the
    classifier's: memory goes back to what the page itself holds. Returns {names, tensors}: how many went."""
    names = playground_run.clear_names()
    kept = _classifier.tensor_ids if _classifier is not None and not _classifier.is_disposed else set()
    doomed = [t for t in pe.ENGINE.live.values() if t.id not in kept]
    pe.dispose(doomed)
    return {"names": names, "tensors": len(doomed)}


# ---- image classification (the Classify panel and playground.classify) ---------------------------

# the server's default classifier folder (app/models_router.py, DEFAULT_CLASSIFIER): /config.json's `classifier`, which the
# worker passes to use_default_classifier at boot; None when the server has none
CLASSIFIER_URL = None
TOP_K = 5
_classifier = None


def use_default_classifier(url):
    global CLASSIFIER_URL
    CLASSIFIER_URL = url


class Classifier(ImageClassifier):
    """EfficientNet-Lite0 with its labels, loaded once per worker (its GPU path: py_engine's ImageClassifier).

    The GPU's part ends at the logits: softmax and top-k run on the host, where they compile no pipeline, and a
    readback of 1000 logits costs what one of the top 5 does (the round trip, not the 4 KB, is the cost)."""

    def __init__(self, model, labels, metadata):
        super().__init__(model, metadata)
        self.labels = labels or [f"class {i}" for i in range(model.outputs[0].shape[-1])]
        self.tensor_ids = set()  # every tensor the classifier holds (set once it is loaded), kept by clear_namespace

    @property
    def is_lost(self):
        """Its tensors lived on a GPU device that was lost: their data is gone (the constants move with the weights)."""
        return getattr(self.scale._buf.backend, "lost", False)


def top_k(logits, k=TOP_K):
    """(probabilities, class indices) of the k likeliest classes of one image's logits (numpy, as data() reads
    them): softmax, then the k largest, ties to the lower index as in tf.math.top_k."""
    logits = logits.reshape(-1)
    z = np.exp(logits - logits.max())
    probabilities = z / z.sum()
    indices = np.argsort(-probabilities, kind="stable")[:k]
    return probabilities[indices], indices


# What models/efficientnet-lite0/metadata.json says, for a server that serves only model.json and shards.
DEFAULT_METADATA = {"input": {"shape": [1, 224, 224, 3], "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}
SIDECARS = (("metadata.json", DEFAULT_METADATA), ("labels.json", None))  # a model folder's files and their defaults


async def _fetch_json(url, default):
    from pyodide.http import pyfetch  # the classifier only runs in the browser

    response = await pyfetch(url)
    if response.status == 404:
        return default
    if not response.ok:
        raise RuntimeError(f"{url}: HTTP {response.status}")
    return await response.json()


async def load_classifier(on_progress=None, url=None):
    """Load, fold and warm up the classifier once; returns its load timings (zeros once loaded).

    url: the model folder (model.json, shards, labels.json, metadata.json); None keeps the loaded one, else
    CLASSIFIER_URL. Another url replaces the loaded classifier.

    On a GPU the pipelines are compiled before the weights arrive: the server's list (app/classifier_pipelines.py) was
    compiled while Pyodide booted, else the whole path is warmed up on an outline of the model while the weights
    download (model.json alone, zero weights on the host, so only shapes reach the GPU). The model itself is loaded
    and folded on the host: the GPU runs no folding, never holds the unfolded weights, and receives each folded
    weight once, at the first classification.

    download_ms: from the first shard request to the last shard's bytes; load_ms: all of loading (model.json,
    shards, checks, folding, tensors, labels); warmup_ms: how long the compiles outlasted the load."""
    global _classifier
    url = url or (_classifier.url if _classifier is not None else CLASSIFIER_URL)
    if url is None:
        raise RuntimeError(
            "the server has no default classifier (its /config.json names none): convert one there with "
            "`python -m app convert efficientnet-lite0`, or load a model folder by its URL"
        )
    if _classifier is not None and (_classifier.is_disposed or _classifier.is_lost or _classifier.url != url):
        _classifier.dispose()
        _classifier = None
    if _classifier is not None:
        return {"download_ms": 0.0, "download_bytes": 0, "load_ms": 0.0, "warmup_ms": 0.0, "cached": True}
    began = time.perf_counter()
    shards = []  # (seconds, bytes loaded): the first call comes before any shard, the last after all

    def progress(loaded, total):
        shards.append((time.perf_counter(), loaded))
        return None if on_progress is None else on_progress(loaded, total)

    before = set(pe.ENGINE.live)
    # the small files come while the weights download
    sidecars = [asyncio.ensure_future(_fetch_json(url + name, default)) for name, default in SIDECARS]
    warmup, classifier = None, None
    try:
        if pe.ENGINE.active().is_gpu and not _compiled_ahead(url):
            warmup = await _start_warmup(url, sidecars[0])
        with pe.on_backend("numpy"):
            model = await pe.load_layers_model(url + "model.json", on_progress=progress)
            try:
                model.fold_batch_norms(release_unfolded=True)  # inference only: memory stays at the model's size
                metadata, labels = await asyncio.gather(*sidecars)
            except BaseException:
                model.dispose()
                raise
        classifier = Classifier(model, labels, metadata)
        loaded = time.perf_counter()
        if warmup is not None:
            await warmup[0]
    except BaseException:
        if classifier is not None:
            classifier.dispose()
        raise
    finally:
        for sidecar in sidecars:  # after a failed load: not left running, nor its error unread
            sidecar.cancel()
            await asyncio.gather(sidecar, return_exceptions=True)
        if warmup is not None:
            await _end_warmup(*warmup)
    # requests run one at a time, so every tensor that appeared while loading is the classifier's
    classifier.tensor_ids = set(pe.ENGINE.live) - before
    pe.ENGINE.name_site(classifier.tensor_ids, f"the page's classifier ({url}model.json)")
    classifier.url = url
    _classifier = classifier
    return {
        "download_ms": (shards[-1][0] - shards[0][0]) * 1e3,
        "download_bytes": shards[-1][1],
        "load_ms": (loaded - began) * 1e3,
        "warmup_ms": (time.perf_counter() - loaded) * 1e3,
        "cached": False,
    }


def _compiled_ahead(url):
    """Whether this GPU device compiled the pipelines of the model at `url` while the page booted (static/worker/precompile.js,
    precompile): then a warm-up would only repeat the list (a dry run of about 0.3 s and the outline's download)."""
    import js

    ahead = js.peBridge.precompiled().to_py()
    return ahead["listed"] > 0 and ahead["model"] == url


async def _start_warmup(url, metadata):
    """(a task compiling the pipelines of the whole path from the pixels' unpacking on for the model at `url`, what it
    uses); metadata: a future of the model's metadata. It warms up on the model's outline, so no weight is downloaded
    for it, and the outline is fetched beside the metadata, one round trip fewer before the compiles start."""
    metadata, outline = await asyncio.gather(metadata, load_outline(url + "model.json"), return_exceptions=True)
    for result in (metadata, outline):
        if isinstance(result, BaseException):
            if not isinstance(outline, BaseException):
                outline.dispose()
            raise result
    with pe.on_backend("numpy"):
        dummy = pe.zeros(tuple(metadata["input"]["shape"][1:3]), dtype="int32")
    rehearsal = Classifier(outline, None, metadata)
    task = asyncio.ensure_future(pe.warmup(rehearsal.run, dummy))  # a task of its own: outside on_backend
    return task, rehearsal, dummy


async def _end_warmup(task, rehearsal, dummy):
    await asyncio.gather(task, return_exceptions=True)  # after a failed load: its dry run reads the outline
    rehearsal.dispose()
    dummy.dispose()


async def classifier(on_progress=None, url=None):
    """The classifier of `url` (None: the loaded one, else CLASSIFIER_URL), loading it first: the Teach panel
    (teach.py) embeds its images with EfficientNet-Lite0's body this way."""
    await load_classifier(on_progress, url)
    return _classifier


async def classify(pixels, height, width):
    """Top-5 [{index, label, probability}] for RGBA pixels (a JS Uint8Array), with the latency split.

    A GPU device lost under the classifier takes its weights with it: it is loaded again on the backend the engine
    fell back to (from the browser's cache) and the image classified there."""
    try:
        return await _classify(pixels, height, width)
    except pe.DeviceLostError:
        return await _classify(pixels, height, width)


async def _classify(pixels, height, width):
    await load_classifier()
    c = _classifier
    with pe.scope():
        t0 = time.perf_counter()
        x = c.preprocess(pe.browser.from_pixels(pixels, int(height), int(width)))
        t1 = time.perf_counter()
        logits = c.forward(x)
        t2 = time.perf_counter()
        probabilities, indices = top_k(await logits.data())
        t3 = time.perf_counter()
    results = [
        {"index": int(i), "label": c.labels[int(i)], "probability": float(p)} for p, i in zip(probabilities, indices)
    ]
    timings = {"preprocess_ms": (t1 - t0) * 1e3, "forward_ms": (t2 - t1) * 1e3, "readback_ms": (t3 - t2) * 1e3}
    return {"top": results, "timings": timings, "backend": pe.get_backend()}


# py_engine imports these on first use so that "ready" comes sooner; the worker imports them right after "ready".
ENGINE_REST = ("py_engine.browser", "py_engine.models.loading")


def import_engine_rest():
    for name in ENGINE_REST:
        importlib.import_module(name)


def import_numpy_random():
    """numpy.random's wasm modules, which a boot from stored site-packages leaves to its first import."""
    importlib.import_module("numpy.random")
