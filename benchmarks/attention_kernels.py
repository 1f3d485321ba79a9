"""
Attention's kernels alone on a GPU, at the sizes of the models suite's
attention written as its math: the math as eager runs it (two products and a
softmax of the masked scores), torch's fused attention with the mask (and,
for scale, without it, and with `is_causal` where the mask is causal), and
permalloy's flash kernel at its default configuration and at each of a sweep
of configurations (the sweep `default_config` was chosen from). Medians of
CUDA event timings of single calls, which include the host's time where it
is the longer (`*_ms`), and of calls replayed from a CUDA graph, the GPU's
time alone (`*_gpu_ms`); each checked against the math; the achieved
TFLOPS of the kernel's two products on the GPU alone.

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
    "t5_bias": (8, 8, 512, 512, 64, "bias_full"),
    "causal_2048": (4, 16, 2048, 2048, 64, "causal_boolean"),
    "causal_padding_2048": (4, 16, 2048, 2048, 64, "causal_padding"),
    "causal_4096": (2, 16, 4096, 4096, 64, "causal_boolean"),
    "alibi_4096_d128": (1, 32, 4096, 4096, 128, "alibi"),
}
HALF_CONFIGS = [
    (64, 64, 4, 2), (64, 64, 4, 3), (128, 64, 4, 3), (128, 64, 8, 3), (128, 32, 4, 3), (128, 128, 8, 2),
    (64, 32, 4, 3), (64, 128, 4, 2), (128, 64, 8, 2), (64, 64, 8, 3), (128, 128, 8, 3),
]  # fmt: skip
FLOAT32_CONFIGS = [
    (64, 64, 4, 2), (64, 32, 4, 2), (32, 32, 4, 2), (32, 64, 4, 2), (64, 32, 8, 2), (128, 32, 8, 2),
    (16, 64, 4, 2), (32, 32, 2, 2), (64, 64, 8, 2), (32, 64, 4, 3),
]  # fmt: skip


def _mask(kind: str, batch: int, heads: int, queries: int, keys: int, dtype: torch.dtype) -> torch.Tensor:
    if kind == "bias_over_heads":
        return torch.randn(heads, queries, keys, dtype=dtype, device="cuda")
    if kind == "bias_full":
        return torch.randn(1, heads, queries, keys, dtype=dtype, device="cuda")
    causal_keep = torch.ones(queries, keys, dtype=torch.bool, device="cuda").tril()
    if kind == "causal_boolean":
        return causal_keep
    if kind == "alibi":
        slopes = torch.tensor([2 ** (-8 * (h + 1) / heads) for h in range(heads)], device="cuda")
        positions = torch.arange(keys, device="cuda")
        distance = (positions[None, :] - positions[:, None]).float()
        return (slopes[:, None, None] * distance).masked_fill(~causal_keep, float("-inf")).to(dtype)[None]
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


def _gpu_ms(fn, calls: int = 10) -> float:
    """Median milliseconds of one call replayed from a CUDA graph of
    `calls` calls: the GPU's time, without the host's."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    return _median_ms(graph.replay, 30) / calls


def _flash_row(q, k, v, mask, scale, expected, configs, flops: int) -> dict:
    """The flash kernel at its default configuration and at each of `configs`."""
    row: dict = {}
    best = None
    for config in (None, *configs):
        label = "flash_default" if config is None else f"flash{list(config)}"
        try:
            out = flash_attention(q, k, v, mask, scale, config).float()
            error = ((out - expected).norm() / expected.norm()).item()
            call = lambda config=config: flash_attention(q, k, v, mask, scale, config)  # noqa: E731
            ms, gpu_ms = _median_ms(call), _gpu_ms(call)
        except Exception as failure:  # noqa: BLE001 - a configuration that does not compile
            row[label] = f"{type(failure).__name__}"
            continue
        row[label] = [round(ms, 4), round(gpu_ms, 4), f"{error:.1e}", round(flops / gpu_ms / 1e9)]
        if config is not None and (best is None or gpu_ms < best[0]):
            best = (gpu_ms, list(config))
    if best is not None:
        row["flash_best_gpu"] = [round(best[0], 4), best[1]]
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtypes", default="bf16,fp32")
    parser.add_argument("--cases", default=",".join(SHAPES), help=f"comma-separated, among {', '.join(SHAPES)}")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
    rows = []
    for dtype_name in args.dtypes.split(","):
        dtype = dtypes[dtype_name]
        for name in args.cases.split(","):
            batch, heads, queries, keys, features, kind = SHAPES[name]
            torch.manual_seed(0)
            q, k, v = (torch.randn(batch, heads, n, features, dtype=dtype, device="cuda") for n in (queries, keys, keys))
            mask = _mask(kind, batch, heads, queries, keys, dtype)
            additive = mask if mask.dtype != torch.bool else torch.zeros(mask.shape, device="cuda").masked_fill(~mask, float("-inf"))
            scale = features**-0.5

            def math():
                scores = (q @ k.transpose(-2, -1)).float() * scale + additive.float()
                return torch.softmax(scores, -1).to(dtype) @ v

            expected = math().float()
            row = {"case": name, "dtype": dtype_name}
            forms = {
                "math": math,
                "torch_fused": lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale),
                "torch_unmasked": lambda: F.scaled_dot_product_attention(q, k, v, scale=scale),
            }
            if kind in ("causal_boolean", "alibi"):
                forms["torch_is_causal"] = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
            for form, call in forms.items():
                row[f"{form}_ms"], row[f"{form}_gpu_ms"] = _median_ms(call), _gpu_ms(call)
            configs = FLOAT32_CONFIGS if dtype == torch.float32 else HALF_CONFIGS
            row.update(_flash_row(q, k, v, mask, scale, expected, configs, 4 * batch * heads * queries * keys * features))
            rows.append(row)
            print(json.dumps({key: value for key, value in row.items() if not key.startswith("flash[")}), flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
