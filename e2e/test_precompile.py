"""The classifier's pipelines compile while the page boots: the worker reads the list /config.json names
(app/classifier_pipelines.py) and starts every compile before the engine asks (static/worker/precompile.js); a
classification then uses exactly the listed pipelines, each compiled once; the worker picks the list (CPU or GPU
adapter) by the rule the engine picks its kernels by. The server's side: tests/test_server_pipelines.py."""

import json
import urllib.request

from test_classify import classify


def listed_keys(server_url):
    """The keys the server lists for a CPU adapter (SwiftShader, these machines' WebGPU)."""
    with urllib.request.urlopen(server_url + "config.json") as r:
        url = json.load(r)["pipelines"]["url"]
    with urllib.request.urlopen(server_url + url.lstrip("/")) as r:
        return {entry[0] for entry in json.load(r)["adapters"]["cpu"]}


ENGINE_KEYS = """
import js
device = pe.ENGINE.active().device
{"keys": sorted(device._pipelines), "precompiled": js.peBridge.precompiled().to_py()}
"""


def test_the_listed_pipelines_compile_at_boot_and_are_what_a_classification_uses(fresh_gpu_page, server_url):
    page = fresh_gpu_page
    listed = listed_keys(server_url)
    assert [r.url for r in page.requests if "/pipelines/" in r.url]  # the worker fetched the list
    before = page.run(ENGINE_KEYS)
    assert before["keys"] == ["UnpackRGBA"]  # the page's first op: the list's first pipeline
    # every listed compile was started by the list, during the boot: none was known to the device before
    ahead = {"model": "/models/efficientnet-lite0/", "listed": len(listed), "started": len(listed), "settled": True}
    assert before["precompiled"] == ahead
    top = classify(page, "samples/chelsea.png")
    assert top[0]["label"] in ("tabby", "tiger cat", "Egyptian cat"), top
    after = page.run(ENGINE_KEYS)
    assert set(after["keys"]) == listed  # the page has used exactly the listed pipelines...
    assert page.stats()["pipeline_compiles"] == len(listed)  # ...each compiled once: the engine shared them


REHEARSED = """
import playground

calls = []
start_warmup = playground._start_warmup


async def counted(url, metadata):
    calls.append(url)
    return await start_warmup(url, metadata)


playground._compiled_ahead = lambda url: False  # as for a model the list does not cover
playground._start_warmup = counted
load = await playground.load_classifier()
{"calls": calls, "cached": load["cached"], "labels": len(playground._classifier.labels)}
"""


def test_a_model_the_list_does_not_cover_is_warmed_up_on_its_outline(fresh_gpu_page):
    page = fresh_gpu_page
    compiled = page.stats()["pipeline_compiles"]
    got = page.run(REHEARSED)
    assert got == {"calls": ["/models/efficientnet-lite0/"], "cached": False, "labels": 1000}
    top = classify(page, "samples/chelsea.png")
    assert top[0]["label"] in ("tabby", "tiger cat", "Egyptian cat"), top
    assert page.stats()["pipeline_compiles"] == compiled  # the rehearsal's pipelines are the list's, compiled once


ADAPTER_RULES = """
import js
from pyodide.ffi import to_js
from py_engine.backends.webgpu.backend import on_cpu_adapter

infos = [
    {"adapter_type": "CPU (fallback adapter)", "architecture": "swiftshader"},
    {"adapter_type": "", "architecture": "swiftshader"},
    {"adapter_type": "cpu", "architecture": "llvmpipe"},
    {"adapter_type": "", "architecture": "ampere"},
    {"adapter_type": "discrete GPU", "architecture": "rdna-3"},
    {"architecture": "gen-12lp"},
    {},
    pe.ENGINE.active().device.info,
]
[[on_cpu_adapter(info), js.peBridge.onCpuAdapter(to_js(info, dict_converter=js.Object.fromEntries))] for info in infos]
"""


def test_the_page_picks_the_list_by_the_rule_the_engine_picks_its_kernels_by(gpu_page):
    # bridge.js chooses which list to compile before any Python runs, so it keeps its own copy of the engine's
    # rule: if they drifted, a page would compile the other adapter's pipelines and warm up as if it had no list
    answers = gpu_page.run(ADAPTER_RULES)
    assert all(python == js for python, js in answers), answers
    assert [python for python, _ in answers] == [True, True, True, False, False, False, False, True]
