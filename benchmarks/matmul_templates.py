"""
A GEMM sweep: `x @ w` alone, with a bias and GELU, and with a residual add,
timed under eager PyTorch, Inductor (default, and max-autotune where asked)
and permalloy (default and max-autotune) side by side, in float32 and bf16.

Each case is compiled by each backend, checked against eager (float32:
relative error 1e-4 without TF32, bf16: 2e-2), and timed in interleaved
rounds of back-to-back calls (`interleaved_times`, medians). The floor of
a product is its FLOPs at the device's dense peak, of an epilogue the bytes
it moves at the copy bandwidth measured here.

    python benchmarks/matmul_templates.py --dtype bf16 --json out.json
    python benchmarks/matmul_templates.py --dtype fp32 --sizes 1024x1024x1024 --backends eager,inductor,permalloy
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

SIZES = ["256x256x256", "1024x1024x1024", "4096x4096x4096", "8192x8192x8192", "4096x3072x768", "4096x768x3072"]
"""M x N x K: squares, and a transformer's MLP products (tokens x hidden)."""
EPILOGUES = {
    "none": lambda x, w, b, r: x @ w,
    "bias_gelu": lambda x, w, b, r: F.gelu(x @ w + b),
    "residual": lambda x, w, b, r: x @ w + r,
}
BACKENDS = ["eager", "inductor", "inductor-max", "permalloy", "permalloy-max", "permalloy-library"]
"""`permalloy` and `permalloy-max` compile with the `matmul_templates` option
(template or library, timed); `permalloy-library`, without it."""
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
TOLERANCE = {torch.float32: 1e-4, torch.bfloat16: 2e-2}


def compiled(fn, backend: str):
    torch._dynamo.reset()  # noqa: SLF001
    if backend == "eager":
        return fn
    if backend.startswith("inductor"):
        mode = "max-autotune-no-cudagraphs" if backend.endswith("-max") else None
        return torch.compile(fn, backend="inductor", mode=mode)
    options = {} if backend == "permalloy-library" else {"matmul_templates": True}
    if backend.endswith("-max"):
        options["mode"] = "max-autotune"  # torch takes mode= or options=, not both
    return torch.compile(fn, backend="permalloy", options=options)


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    return ((actual.double() - expected.double()).norm() / expected.double().norm().clamp_min(1e-30)).item()


def copy_bandwidth() -> float:
    """Bytes per second of a device-to-device copy of 256 MiB (read and write)."""
    from triton.testing import do_bench

    source = torch.empty(1 << 26, device="cuda")
    target = torch.empty_like(source)
    ms = do_bench(lambda: target.copy_(source), warmup=25, rep=100, return_mode="median")
    return 2 * source.numel() * 4 / (ms * 1e-3)


def interleaved_times(runs: dict, arguments: tuple, rounds: int = 15, calls: int = 20) -> dict[str, float]:
    """Median milliseconds per call of each backend: rounds of back-to-back
    calls ended by a device synchronization, the backends taking turns, so
    that every backend sees the same machine (a GPU-bound product's time is
    its kernels'; a small one's includes the host's launches)."""
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for name, run_fn in runs.items():
        for _ in range(3):
            run_fn(*arguments)
    for _ in range(rounds):
        for name, run_fn in runs.items():
            torch.cuda.synchronize()
            begin = time.perf_counter()
            for _ in range(calls):
                run_fn(*arguments)
            torch.cuda.synchronize()
            samples[name].append((time.perf_counter() - begin) * 1e3 / calls)
    return {name: statistics.median(values) for name, values in samples.items()}


def run(args) -> list[dict]:

    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    dtype = DTYPES[args.dtype]
    bandwidth = copy_bandwidth()
    started = time.perf_counter()
    rows = []
    for size in args.sizes.split(","):
        m, n, k = (int(v) for v in size.split("x"))
        for epilogue in args.epilogues.split(","):
            if time.perf_counter() - started > args.budget:
                print(f"time budget spent: stopping before {size} {epilogue}", file=sys.stderr)
                return rows
            torch.manual_seed(0)
            x = torch.randn(m, k, device="cuda", dtype=dtype)
            w = torch.randn(k, n, device="cuda", dtype=dtype) / k**0.5
            b = torch.randn(n, device="cuda", dtype=dtype)
            r = torch.randn(m, n, device="cuda", dtype=dtype)
            fn = EPILOGUES[epilogue]
            expected = fn(x, w, b, r)
            element = x.element_size()
            epilogue_bytes = {"none": 0, "bias_gelu": 2 * m * n * element, "residual": 3 * m * n * element}[epilogue]
            row = {"size": size, "epilogue": epilogue, "dtype": args.dtype, "tf32": args.tf32,
                   "epilogue_floor_ms": epilogue_bytes / bandwidth * 1e3, "results": {}}  # fmt: skip
            runs = {}
            for backend in args.backends.split(","):
                try:
                    run_fn = compiled(fn, backend)
                    begin = time.perf_counter()
                    actual = run_fn(x, w, b, r)
                    torch.cuda.synchronize()
                    compile_s = time.perf_counter() - begin
                    error = relative_error(actual, expected)
                    runs[backend] = run_fn
                    row["results"][backend] = {"compile_s": compile_s, "relative_error": error,
                                               "accurate": error <= TOLERANCE[dtype] or (args.tf32 and error <= 1e-2)}  # fmt: skip
                except Exception as exc:  # noqa: BLE001 - a backend's failure is a row, not the end of the sweep
                    row["results"][backend] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            for backend, ms in interleaved_times(runs, (x, w, b, r)).items():
                row["results"][backend].update(ms=ms, tflops=2 * m * n * k / (ms * 1e-3) / 1e12)
            rows.append(row)
            print(_line(row), flush=True)
            if args.json:
                with open(args.json, "w") as out:
                    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                               "copy_bandwidth_gbs": bandwidth / 1e9, "rows": rows}, out, indent=1)  # fmt: skip
    return rows


def _line(row: dict) -> str:
    parts = [f"{row['dtype']} {row['size']:>16} {row['epilogue']:>9}"]
    results = row["results"]
    for backend, result in results.items():
        parts.append(f"{backend} {result['ms']:.4f}ms" if "ms" in result else f"{backend} FAILED")
    if "ms" in results.get("permalloy", {}) and "ms" in results.get("inductor", {}):
        parts.append(f"permalloy/inductor speedup {results['inductor']['ms'] / results['permalloy']['ms']:.3f}x")
    if "ms" in results.get("permalloy-max", {}) and "ms" in results.get("inductor", {}):
        parts.append(f"max {results['inductor']['ms'] / results['permalloy-max']['ms']:.3f}x")
    bad = [b for b, res in results.items() if not res.get("accurate", True)]
    if bad:
        parts.append(f"INACCURATE: {','.join(bad)}")
    return "  ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", choices=list(DTYPES), default="bf16")
    parser.add_argument("--sizes", default=",".join(SIZES), help="comma-separated MxNxK")
    parser.add_argument("--epilogues", default=",".join(EPILOGUES), help=f"among {', '.join(EPILOGUES)}")
    parser.add_argument(
        "--backends", default="eager,inductor,permalloy,permalloy-max,permalloy-library", help=f"among {', '.join(BACKENDS)}"
    )
    parser.add_argument("--tf32", action="store_true", help="allow TF32 for float32 products")
    parser.add_argument("--budget", type=float, default=480.0, help="seconds after which no new case starts")
    parser.add_argument("--json", help="write the rows to this file")
    run(parser.parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
