"""
Attention's kernels alone on a GPU, at the sizes of the models suite's
attention written as its math: the math as eager runs it (two products and a
softmax of the masked scores), torch's fused attention with the mask, and
permalloy's flash kernel at several block configurations. Medians of CUDA
event timings, each checked against the math.

    python benchmarks/attention_kernels.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
import torch.nn.functional as F

from permalloy.targets.triton.flash_attention import flash_attention

SHAPES = {
    # batch, heads, queries, keys, features, mask
    "bert": (8, 16, 512, 512, 64, "padding"),
    "gpt2": (8, 16, 512, 512, 64, "causal_padding"),
    "swin_window": (1024, 3, 49, 49, 32, "bias_over_heads"),
}
CONFIGS = [(64, 64, 4, 2), (64, 32, 4, 3), (128, 64, 8, 2), (128, 32, 4, 3), (32, 32, 4, 2), (64, 64, 4, 3)]


def _mask(kind: str, batch: int, heads: int, queries: int, keys: int, dtype: torch.dtype) -> torch.Tensor:
    if kind == "bias_over_heads":
        return torch.randn(heads, queries, keys, dtype=dtype, device="cuda")
    padding = torch.zeros(batch, 1, 1, keys, dtype=dtype, device="cuda")
    padding[0, ..., keys // 2 :] = torch.finfo(dtype).min
    if kind == "padding":
        return padding
    causal = torch.full((queries, keys), torch.finfo(dtype).min, dtype=dtype, device="cuda").triu(1)
    return (padding + causal).clamp_min(torch.finfo(dtype).min)


def _median_ms(fn, runs: int = 50) -> float:
    for _ in range(5):
        fn()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtypes", default="bf16,fp32")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
    rows = []
    for dtype_name in args.dtypes.split(","):
        dtype = dtypes[dtype_name]
        for name, (batch, heads, queries, keys, features, kind) in SHAPES.items():
            torch.manual_seed(0)
            q, k, v = (torch.randn(batch, heads, n, features, dtype=dtype, device="cuda") for n in (queries, keys, keys))
            mask = _mask(kind, batch, heads, queries, keys, dtype)
            scale = features**-0.5

            def math():
                scores = (q @ k.transpose(-2, -1)).float() * scale + mask.float()
                return torch.softmax(scores, -1).to(dtype) @ v

            expected = math().float()
            row = {"case": name, "dtype": dtype_name, "math_ms": _median_ms(math)}
            row["torch_fused_ms"] = _median_ms(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale))
            for config in CONFIGS:
                try:
                    out = flash_attention(q, k, v, mask, scale, config).float()
                    error = ((out - expected).norm() / expected.norm()).item()
                    ms = _median_ms(lambda config=config: flash_attention(q, k, v, mask, scale, config))
                    row[f"flash{config}"] = (round(ms, 4), f"{error:.1e}")
                except Exception as failure:  # noqa: BLE001 - a configuration that does not compile
                    row[f"flash{config}"] = f"{type(failure).__name__}"
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
