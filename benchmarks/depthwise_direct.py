"""
A direct channels-last depthwise convolution in Triton (one output element
per lane, a loop over the window's taps) against cuDNN's kernel, on the
depthwise convolutions of the suite's models at the GPU sizes: what the
simplest generated form of a depthwise convolution would run at.

    python benchmarks/depthwise_direct.py convnext,timm_convnext_atto --json out.json

Float32, TF32 off; `triton.testing.do_bench` medians; the best of five block
sizes for the direct kernel, checked against cuDNN's result; `floor_us` is
the input and output bytes over 4.1 TB/s (the H200's measured copy rate).
"""
from __future__ import annotations

import json
import sys

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

from permalloy.tools.models import make_model

torch.backends.cudnn.allow_tf32 = False


@triton.jit
def dw_kernel(x, w, y, total, C, H, W, OH, OW, S: tl.constexpr, K: tl.constexpr, P: tl.constexpr, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < total
    c = idx % C
    t = idx // C
    ow = t % OW
    t = t // OW
    oh = t % OH
    n = t // OH
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for kh in tl.static_range(K):
        ih = oh * S + kh - P
        okh = (ih >= 0) & (ih < H)
        for kw in tl.static_range(K):
            iw = ow * S + kw - P
            ok = okh & (iw >= 0) & (iw < W) & mask
            xv = tl.load(x + ((n * H + ih) * W + iw) * C + c, mask=ok, other=0.0)
            wv = tl.load(w + c * (K * K) + kh * K + kw, mask=mask, other=0.0)
            acc += xv * wv
    tl.store(y + idx, acc, mask=mask)


def run(x, wt, stride, pad, block, warps):
    n, c, h, w_ = x.shape
    k = wt.shape[-1]
    oh = (h + 2 * pad - k) // stride + 1
    ow = (w_ + 2 * pad - k) // stride + 1
    y = torch.empty((n, c, oh, ow), device=x.device).to(memory_format=torch.channels_last)
    total = y.numel()
    grid = (triton.cdiv(total, block),)
    return lambda: dw_kernel[grid](x, wt, y, total, c, h, w_, oh, ow, stride, k, pad, block, num_warps=warps), y


def _depthwise_geometries(name: str) -> list[tuple]:
    """(input shape, window, stride, padding) of every depthwise convolution model `name` runs."""
    case = make_model(name, "cuda")
    model = case.model.cuda().eval()
    found = []

    def hook(module, args, _):
        if module.groups == module.in_channels == module.out_channels and module.groups > 1:
            padding = module.padding[0] if isinstance(module.padding, tuple) else 0
            found.append((tuple(args[0].shape), module.kernel_size[0], module.stride[0], padding))

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    with torch.no_grad():
        model(*[t.cuda() for t in case.inputs])
    for handle in handles:
        handle.remove()
    return found


def _measure(name: str, shape: tuple, k: int, s: int, p: int) -> dict:
    x = torch.randn(shape, device="cuda").to(memory_format=torch.channels_last)
    wt = torch.randn(shape[1], 1, k, k, device="cuda")
    wcl = wt.to(memory_format=torch.channels_last)
    ref = torch.nn.functional.conv2d(x, wcl, stride=s, padding=p, groups=shape[1])
    cudnn = do_bench(lambda: torch.nn.functional.conv2d(x, wcl, stride=s, padding=p, groups=shape[1]), warmup=5, rep=30)
    best = None
    for block, warps in ((256, 2), (512, 4), (1024, 4), (1024, 8), (2048, 8)):
        fn, y = run(x, wt, s, p, block, warps)
        fn()
        torch.cuda.synchronize()
        error = (y - ref).abs().max().item()
        t = do_bench(fn, warmup=5, rep=30)
        if best is None or t < best[0]:
            best = (t, block, warps, error)
    floor_bytes = 4 * (x.numel() + ref.numel())
    return {
        "model": name, "x": shape, "k": k, "stride": s,
        "cudnn_us": cudnn * 1e3, "direct_us": best[0] * 1e3, "block": best[1], "warps": best[2],
        "max_err": best[3], "floor_us": floor_bytes / 4.1e12 * 1e6,
    }  # fmt: skip


def main() -> None:
    names = sys.argv[1].split(",")
    out_path = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--json" else None
    rows, seen = [], set()
    for name in names:
        totals = {"cudnn_cl": 0.0, "direct": 0.0}
        geometries = _depthwise_geometries(name)
        for shape, k, s, p in geometries:
            row = _measure(name, shape, k, s, p)
            totals["cudnn_cl"] += row["cudnn_us"] / 1e3
            totals["direct"] += row["direct_us"] / 1e3
            if (shape, k, s) not in seen:
                seen.add((shape, k, s))
                rows.append(row)
                print(row, flush=True)
        print(name, len(geometries), "depthwise; total ms", totals, flush=True)
    if out_path:
        with open(out_path, "w") as out:
            json.dump(rows, out, indent=1)


if __name__ == "__main__":
    main()
