"""
permalloy's depthwise weight-gradient kernel
(`targets/triton/depthwise_weight_gradient.py`) against cuDNN on the
depthwise layers of ConvNeXt-atto, ConvNeXt-tiny, EfficientNet-B0 and
MobileNetV2 at 32 images (ConvNeXt-atto's and those of
`depthwise_kernels.py`): each channel block of a sweep (the candidates and
more), its relative error against cuDNN's gradient (TF32 off) recorded, and the best beside
cuDNN's time for the weight gradient alone and the bandwidth floor (the
output gradient's and the input's bytes over the measured copy rate).

    python benchmarks/depthwise_weight_gradients.py --json out.jsonl [--layouts channels_last,nchw] [--dtypes float32]

Medians of `triton.testing.do_bench`; one JSON line per layer, layout and
type, printed as a table as it goes.
"""

from __future__ import annotations

import sys

import torch
from depthwise_kernels import LAYERS as FORWARD_LAYERS
from depthwise_kernels import run_layers
from triton.testing import do_bench

from permalloy.targets.triton.depthwise_convolution import Geometry
from permalloy.targets.triton.depthwise_weight_gradient import (
    WeightGradientConfig,
    candidate_configs,
    depthwise_weight_gradient,
    library_weight_gradient,
)

IMAGES = 32
LAYERS = [  # model, channels, image size, window, stride: ConvNeXt-atto's, then the forward benchmark's
    ("convnext_atto", 40, 56, 7, 1),
    ("convnext_atto", 80, 28, 7, 1),
    ("convnext_atto", 160, 14, 7, 1),
    ("convnext_atto", 320, 7, 7, 1),
    *FORWARD_LAYERS,
]
SWEEP = {
    "channels_last": tuple(WeightGradientConfig(c, w) for c, w in ((16, 2), (32, 2), (32, 4), (64, 4), (64, 8), (128, 4), (128, 8))),
    "nchw": tuple(WeightGradientConfig(c, w) for c, w in ((16, 2), (32, 4), (64, 4))),
}
"""Channel blocks and warps timed per layout: the candidates and their neighbours."""


def _layer(layer: tuple, layout: str, dtype: torch.dtype, rate: float) -> tuple[dict, str]:
    model, channels, size, window, stride = layer
    padding = window // 2
    memory = torch.channels_last if layout == "channels_last" else torch.contiguous_format
    x = torch.randn(IMAGES, channels, size, size, device="cuda", dtype=dtype).contiguous(memory_format=memory)
    weight = torch.randn(channels, 1, window, window, device="cuda", dtype=dtype).contiguous(memory_format=memory)
    geometry = Geometry([stride] * 2, [padding] * 2, [1, 1])
    out_size = geometry.output_size(0, size, window)
    grad = torch.randn(IMAGES, channels, out_size, out_size, device="cuda", dtype=dtype).contiguous(memory_format=memory)
    expected = library_weight_gradient(grad, x, weight, geometry)
    library = do_bench(lambda: library_weight_gradient(grad, x, weight, geometry), warmup=5, rep=25, return_mode="median")
    row = {
        "model": model, "channels": channels, "size": size, "window": window, "stride": stride,
        "layout": layout, "dtype": str(dtype).removeprefix("torch."), "cudnn_ms": library,
        "floor_ms": (x.numel() + grad.numel()) * x.element_size() / rate * 1e3, "blocks": [],
        "candidates": [[c.block_c, c.num_warps] for c in candidate_configs(x)],
    }  # fmt: skip
    for config in SWEEP[layout]:
        out = depthwise_weight_gradient(grad, x, weight, geometry, config)
        error = ((out.float() - expected.float()).norm() / expected.float().norm()).item()
        row.setdefault("strides", {"kernel": list(out.stride()), "cudnn": list(expected.stride())})
        ms = do_bench(lambda config=config: depthwise_weight_gradient(grad, x, weight, geometry, config), warmup=5, rep=25, return_mode="median")
        row["blocks"].append({"block": [config.block_c, config.num_warps], "ms": ms, "error": error})
    best = min(row["blocks"], key=lambda t: t["ms"])
    row.update(best_ms=best["ms"], best_block=best["block"], speedup=library / best["ms"])
    errors = max(b["error"] for b in row["blocks"])
    return row, f"block {row['best_block']} error {errors:.1e}"


def main(argv: list[str] | None = None) -> int:
    torch.backends.cudnn.allow_tf32 = False  # float32 sums as float32, as the bench runs them
    return run_layers("depthwise_weight_gradients", LAYERS, _layer, argv)


if __name__ == "__main__":
    sys.exit(main())
