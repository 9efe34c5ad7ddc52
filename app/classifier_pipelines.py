"""The classifier's pipelines, planned ahead, so that a page compiles them while Pyodide boots.

A first classification used to wait for its shaders: on a CPU adapter (SwiftShader) the compiles take a second or
more, one after another, and they could start only once the engine had started and the model's outline had come.
Which shaders the classifier compiles is known before any of that: app/pipeline_planner.py lists them (key, WGSL,
bindings) for a CPU adapter and for a GPU by running the classifier's path on a device that runs nothing. The page's
worker downloads the list named by /config.json while Pyodide boots, then opens the GPU device and starts every
compile; the engine finds them compiled, or in flight, when it asks (static/worker/precompile.js).

The list is kept on disk under a key of what it is made from (the engine wheel, the model's model.json and
metadata.json, the planner); `serve` makes it before it serves, /config.json makes it in the background after an edit
and names it once made. Without the model there is none, and the page compiles at its first classification as before.
"""

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from app.builds import KeyedBuilds
from app.engine_wheel import Wheel
from app.http_files import ContentAddressed, file_sha256
from app.models_router import DEFAULT_CLASSIFIER as CLASSIFIER

PLANNER = Path(__file__).with_name("pipeline_planner.py")
CLASSIFIER_URL = f"/models/{CLASSIFIER}/"
PLAN_TIMEOUT_S = 120  # about a second of CPU here


@dataclass(frozen=True)
class Pipelines(ContentAddressed):
    ROUTE = "pipelines"

    def config(self) -> dict:
        return {"url": self.url, "model": CLASSIFIER_URL}


class ClassifierPipelines:
    """The pipeline list for the current engine wheel and the classifier's model files, kept by key."""

    def __init__(self, models_dir: Path, cache_dir: Path):
        self.model_dir = models_dir / CLASSIFIER
        failed = "classifier pipelines not planned ({error}); pages compile them when they classify"
        self.builds = KeyedBuilds(cache_dir, Pipelines, ".json", PLAN_TIMEOUT_S, failed)

    def classifier_url(self) -> str | None:
        """The default classifier's folder URL, None when the models folder lacks it."""
        return CLASSIFIER_URL if (self.model_dir / "model.json").is_file() else None

    def current(self, wheel: Wheel, *, wait: bool = False) -> Pipelines | None:
        """The list for `wheel` and the model as they are now; None without the model, while it is made (in the
        background, unless `wait`), or when it cannot be (the reason is printed once)."""
        sources = [self.model_dir / "model.json", self.model_dir / "metadata.json", PLANNER]
        if not all(source.is_file() for source in sources):
            return None
        key = hashlib.sha256(json.dumps([wheel.sha256, *map(file_sha256, sources)]).encode()).hexdigest()[:16]
        env = {**os.environ, "PYTHONPATH": str(wheel.path)}  # the page's engine, ahead of the server's

        def command(stage):
            return [sys.executable, str(PLANNER), str(self.model_dir), stage]

        return self.builds.built(key, command, wait=wait, env=env)

    def find(self, digest: str, filename: str) -> Pipelines | None:
        return self.builds.find(digest, filename)
