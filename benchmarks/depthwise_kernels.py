"""
permalloy's depthwise-convolution kernel (`targets/triton/depthwise_convolution.py`)
against cuDNN on the depthwise layers of ConvNeXt-tiny, EfficientNet-B0 and
MobileNetV2 at 32 images: each of the kernel's candidate tiles for the
layout, checked against cuDNN's result, and the best beside cuDNN's time and
the bandwidth floor (input and output bytes over the measured copy rate).

    python benchmarks/depthwise_kernels.py --json out.jsonl [--dtypes float32,bfloat16] [--layouts channels_last,nchw]

Medians of `triton.testing.do_bench`; one JSON line per layer, layout and
type, printed as a table as it goes.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

import torch
import torch.nn.functional as F
from triton.testing import do_bench

from permalloy.targets.triton.depthwise_convolution import Geometry, candidate_configs, depthwise_convolution

IMAGES = 32
LAYERS = [  # model, channels, image size, window, stride
    ("convnext_tiny", 96, 56, 7, 1),
    ("convnext_tiny", 192, 28, 7, 1),
    ("convnext_tiny", 384, 14, 7, 1),
    ("convnext_tiny", 768, 7, 7, 1),
    ("efficientnet_b0", 32, 112, 3, 1),
    ("efficientnet_b0", 96, 112, 3, 2),
    ("efficientnet_b0", 144, 56, 3, 1),
    ("efficientnet_b0", 144, 56, 5, 2),
    ("efficientnet_b0", 240, 28, 5, 1),
    ("efficientnet_b0", 240, 28, 3, 2),
    ("efficientnet_b0", 480, 14, 3, 1),
    ("efficientnet_b0", 672, 14, 5, 1),
    ("efficientnet_b0", 672, 14, 5, 2),
    ("efficientnet_b0", 1152, 7, 5, 1),
    ("mobilenet_v2", 960, 7, 3, 1),
    ("mobilenet_v2", 384, 14, 3, 1),
]


def copy_rate() -> float:
    """Bytes per second of a large device-to-device copy (read and written)."""
    source = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    target = torch.empty_like(source)
    ms = do_bench(lambda: target.copy_(source), warmup=10, rep=50, return_mode="median")
    return 2 * source.numel() / (ms * 1e-3)


def run_layers(name: str, layers: list, measure: Callable[[tuple, str, torch.dtype, float], tuple[dict, str]], argv: list[str] | None) -> int:
    """The command line of a layer benchmark: `measure(layer, layout, dtype,
    copy rate)` gives each layer's JSON row (with `model`, `channels`, `size`,
    `window`, `stride`, `dtype`, `cudnn_ms`, `best_ms`, `speedup` and
    `floor_ms`) and the end of its printed line."""
    module = sys.modules["__main__"]
    parser = argparse.ArgumentParser(description=(module.__doc__ or name).split("\n\n")[0])
    parser.add_argument("--json", default=None, help="write one JSON line per layer here")
    parser.add_argument("--dtypes", default="float32", help="comma-separated: float32, float16, bfloat16")
    parser.add_argument("--layouts", default="channels_last,nchw", help="comma-separated: channels_last, nchw")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print(f"{name}: needs a CUDA GPU", file=sys.stderr)
        return 2
    rate = copy_rate()
    print(f"{torch.cuda.get_device_name()}: copy {rate / 1e9:.0f} GB/s")
    out = open(args.json, "w") if args.json else None
    for dtype in (getattr(torch, name) for name in args.dtypes.split(",")):
        for layout in args.layouts.split(","):
            for layer in layers:
                row, note = measure(layer, layout, dtype, rate)
                print(
                    f"{row['model']:16s} {row['channels']:5d} x {row['size']:3d}^2 k{row['window']} s{row['stride']} "
                    f"{layout:13s} {row['dtype']:8s} cuDNN {row['cudnn_ms']:.4f} kernel {row['best_ms']:.4f} "
                    f"({row['speedup']:.2f}x) floor {row['floor_ms']:.4f} {note}",
                    flush=True,
                )
                if out is not None:
                    out.write(json.dumps(row) + "\n")
                    out.flush()
    return 0


def _layer(layer: tuple, layout: str, dtype: torch.dtype, rate: float) -> tuple[dict, str]:
    model, channels, size, window, stride = layer
    channels_last = layout == "channels_last"
    padding = window // 2
    memory = torch.channels_last if channels_last else torch.contiguous_format
    x = torch.randn(IMAGES, channels, size, size, device="cuda", dtype=dtype).contiguous(memory_format=memory)
    weight = torch.randn(channels, 1, window, window, device="cuda", dtype=dtype).contiguous(memory_format=memory)
    bias = torch.randn(channels, device="cuda", dtype=dtype)
    geometry = Geometry([stride] * 2, [padding] * 2, [1, 1])
    expected = F.conv2d(x, weight, bias, stride, padding, 1, channels)
    library = do_bench(lambda: F.conv2d(x, weight, bias, stride, padding, 1, channels), warmup=5, rep=25, return_mode="median")
    row = {
        "model": model, "channels": channels, "size": size, "window": window, "stride": stride,
        "channels_last": channels_last, "dtype": str(dtype).removeprefix("torch."), "cudnn_ms": library,
        "floor_ms": (x.numel() + expected.numel()) * x.element_size() / rate * 1e3, "tiles": [],
    }  # fmt: skip
    for config in candidate_configs(x):
        out = depthwise_convolution(x, weight, bias, geometry, config)
        error = ((out.float() - expected.float()).abs().max() / expected.float().abs().max()).item()
        ms = do_bench(lambda config=config: depthwise_convolution(x, weight, bias, geometry, config), warmup=5, rep=25, return_mode="median")
        row["tiles"].append({"tile": [config.tile_h, config.tile_w, config.block_c, config.num_warps], "ms": ms, "error": error})
        assert out.stride() == expected.stride(), (out.stride(), expected.stride())
    best = min(row["tiles"], key=lambda t: t["ms"])
    row.update(best_ms=best["ms"], best_tile=best["tile"], speedup=library / best["ms"])
    return row, f"tile {row['best_tile']}"


def main(argv: list[str] | None = None) -> int:
    return run_layers("depthwise_kernels", LAYERS, _layer, argv)


if __name__ == "__main__":
    sys.exit(main())
