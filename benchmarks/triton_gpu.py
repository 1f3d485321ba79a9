"""
The model zoo on a GPU: eager PyTorch, Inductor and permalloy's Triton
target side by side, with medians from `triton.testing.do_bench`; and the
bandwidth of memory-bound permalloy kernels against a device-to-device copy.

    python benchmarks/triton_gpu.py [--cases a,b] [--dtypes float32,bfloat16]
                                    [--bf16-cases a,b] [--json out.json]
                                    [--skip-bandwidth] [--latency-only]

Speedups are eager's median over the backend's. Kernel counts are
permalloy's kernels and extern calls, and Inductor's generated kernels.
Bandwidth counts each input read once and each output written once.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

import torch
from triton.testing import do_bench

import permalloy
from permalloy.tools.backend import permalloy_backend
from permalloy.tools.zoo import CASES, ZooSize, make_case

SIZE = ZooSize(batch=16, seq=256, hidden=768, heads=12, channels=64, image=64)


def median_ms(fn: Callable[[], object]) -> float:
    return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))


def wall_us(fn: Callable[[], object], calls: int = 2000, rounds: int = 5) -> float:
    """Host microseconds per call: `calls` back-to-back calls between two
    synchronizations, the best of `rounds` (small kernels keep the GPU ahead,
    so this is the host's time; `do_bench` clears the L2 cache between calls,
    which can hide host time behind the clearing)."""
    fn()
    best = float("inf")
    for _ in range(rounds):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def _inference(fn):
    def run(*args):
        with torch.no_grad():
            return fn(*args)

    return run


def bench_case(name: str, dtype: torch.dtype) -> dict:
    case = make_case(name, SIZE)
    model = case.model.to("cuda", dtype)
    inputs = [x.to("cuda", dtype) if x.is_floating_point() else x.to("cuda") for x in case.inputs]
    row: dict = {"case": name, "dtype": str(dtype).removeprefix("torch.")}
    eager = _inference(model)
    row["eager_ms"] = median_ms(lambda: eager(*inputs))
    torch._dynamo.reset()
    from torch._inductor import metrics

    metrics.reset()
    inductor = _inference(torch.compile(model))
    start = time.perf_counter()
    expected = inductor(*inputs)
    row["inductor_compile_s"] = time.perf_counter() - start
    row["inductor_ms"] = median_ms(lambda: inductor(*inputs))
    row["inductor_kernels"] = metrics.generated_kernel_count
    for mode in ("default", "reduce-overhead"):
        torch._dynamo.reset()
        permalloy.reset_stats()
        compiled = _inference(torch.compile(model, backend=permalloy_backend, mode=mode))
        start = time.perf_counter()
        for _ in range(3):  # warm-up: autotuning, and the CUDA graph capture
            out = compiled(*inputs)
        key = "permalloy" if mode == "default" else "permalloy_graphs"
        row[f"{key}_first_calls_s"] = time.perf_counter() - start
        row[f"{key}_ms"] = median_ms(lambda: compiled(*inputs))
        records = permalloy.stats()
        row[f"{key}_targets"] = sorted({r["target"] for r in records})
        row[f"{key}_kernels"] = sum(r["kernels"] for r in records)
        row[f"{key}_externs"] = sum(r["extern_calls"] for r in records)
        row[f"{key}_fell_back"] = [r["reason"] for r in records if not r["compiled"]]
        if mode == "default":
            row["max_abs_diff_vs_inductor"] = _difference(out, expected)
    row["speedup_vs_eager"] = row["eager_ms"] / row["permalloy_ms"]
    row["speedup_vs_inductor"] = row["inductor_ms"] / row["permalloy_ms"]
    row["graphs_speedup_vs_eager"] = row["eager_ms"] / row["permalloy_graphs_ms"]
    return row


def _difference(a, b) -> float:
    from torch.utils._pytree import tree_leaves

    return max(float((x.float() - y.float()).abs().max()) for x, y in zip(tree_leaves(a), tree_leaves(b)))


def bandwidth() -> dict:
    """GB/s of a copy, and of permalloy kernels that are memory-bound."""
    n = 1 << 28  # 1 GiB of float32
    src, dst = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    result = {"copy_GBps": 2 * 4 * n / median_ms(lambda: dst.copy_(src)) / 1e6}
    torch._dynamo.reset()
    pointwise = torch.compile(lambda x: x * 2.0 + 1.0, backend=permalloy_backend)
    pointwise(src)
    result["permalloy_pointwise_GBps"] = 2 * 4 * n / median_ms(lambda: pointwise(src)) / 1e6
    rows = src.view(1 << 16, 1 << 12)
    for name, fn in (
        ("softmax", lambda x: torch.softmax(x, -1)),
        ("layer_norm", lambda x: torch.nn.functional.layer_norm(x, (x.shape[-1],))),
        ("row_sum", lambda x: x.sum(-1)),
        ("column_sum", lambda x: x.sum(0)),
    ):
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend=permalloy_backend)
        out = compiled(rows)
        result[f"permalloy_{name}_max_abs_diff"] = float((out - fn(rows)).abs().max())
        moved = 4 * (rows.numel() + out.numel())
        result[f"permalloy_{name}_GBps"] = moved / median_ms(lambda: compiled(rows)) / 1e6
        torch._dynamo.reset()
        inductor = torch.compile(fn)
        inductor(rows)
        result[f"inductor_{name}_GBps"] = moved / median_ms(lambda: inductor(rows)) / 1e6
    return result


def latency() -> dict:
    """Host microseconds per call (`wall_us`) of a tiny pointwise function
    (1024 elements), where the time is all overhead: eager, Inductor, permalloy with and without CUDA
    graphs; permalloy's host program alone (no Dynamo), its compiled kernel
    called as the host program calls it, the kernel module's launch through
    Triton's JIT and its direct launcher; a bare JIT launch; and the
    allocation of an output."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from permalloy.compiler import CompileOptions, compile_graph
    from permalloy.dialects.buffer import BufferType
    from permalloy.dtypes import element_type
    from permalloy.targets.llvm.testing import parse_kernel, pointwise_kernel
    from permalloy.targets.triton import TritonTarget

    x = torch.randn(1024, device="cuda")
    fn = lambda x: x * 2.0 + 1.0  # noqa: E731
    result = {"eager_us": wall_us(lambda: fn(x))}
    torch._dynamo.reset()
    inductor = torch.compile(fn)
    inductor(x)
    result["inductor_us"] = wall_us(lambda: inductor(x))
    for mode in ("default", "reduce-overhead"):
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend=permalloy_backend, mode=mode)
        for _ in range(3):
            compiled(x)
        result[f"permalloy_{mode}_us"] = wall_us(lambda: compiled(x))
        if mode == "default":
            result["permalloy_default_do_bench_us"] = 1000 * median_ms(lambda: compiled(x))
            result["inductor_do_bench_us"] = 1000 * median_ms(lambda: inductor(x))
    program = compile_graph(make_fx(lambda x: (fn(x),))(x), CompileOptions(target="triton")).program
    for _ in range(3):
        program(x)
    result["host_program_us"] = wall_us(lambda: program(x))
    body = "    %c = arith.constant 2.0 : f32\n    %y = arith.mulf %a0, %c : f32"
    kernel = parse_kernel(pointwise_kernel("[1024]", ["f32"], "f32", body))
    out = torch.empty_like(x)
    layout = BufferType([1024], element_type(torch.float32))
    compiled_kernel = TritonTarget().compile_kernel(kernel, [layout, layout])
    for _ in range(2):
        compiled_kernel((x, out), ())
    result["kernel_call_us"] = wall_us(lambda: compiled_kernel((x, out), ()))
    config = next(iter(compiled_kernel.chosen.values()))
    result["jit_launch_us"] = wall_us(lambda: compiled_kernel.module.launch((x, out), (), config))
    launchers = getattr(compiled_kernel, "launchers", {})
    if launchers:
        run = next(iter(launchers.values()))
        stream = torch.cuda.current_stream().cuda_stream
        result["direct_launcher_us"] = wall_us(lambda: run((x, out), stream))
    function = getattr(compiled_kernel.module, compiled_kernel.plan.name)
    result["bare_triton_launch_us"] = wall_us(
        lambda: function[(1,)](x, out, XBLOCK=1024, num_warps=4, num_stages=1)
    )
    result["empty_strided_us"] = wall_us(
        lambda: torch.empty_strided((1024,), (1,), dtype=torch.float32, device=x.device)
    )
    empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda  # noqa: SLF001
    result["empty_strided_cuda_us"] = wall_us(lambda: empty_strided_cuda((1024,), (1,), torch.float32))
    return result


def persistent_limit_comparison() -> dict:
    """Softmax and layer norm over rows of 4096 with the inner axis looped
    (the default limit) and held in one block."""
    from permalloy.targets.triton import plan

    rows = torch.randn(1 << 16, 1 << 12, device="cuda")
    result = {}
    default = plan.PERSISTENT_LIMIT
    for limit in (default, 8192):
        plan.PERSISTENT_LIMIT = limit
        try:
            for name, fn in (
                ("softmax", lambda x: torch.softmax(x, -1)),
                ("layer_norm", lambda x: torch.nn.functional.layer_norm(x, (x.shape[-1],))),
            ):
                torch._dynamo.reset()
                compiled = torch.compile(fn, backend=permalloy_backend)
                compiled(rows)
                result[f"{name}_limit{limit}_GBps"] = 2 * 4 * rows.numel() / median_ms(lambda: compiled(rows)) / 1e6
        finally:
            plan.PERSISTENT_LIMIT = default
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--dtypes", default="float32")
    parser.add_argument("--bf16-cases", default="layer_norm,masked_softmax,mlp,gpt2_block")
    parser.add_argument("--json", default=None)
    parser.add_argument("--skip-bandwidth", action="store_true")
    parser.add_argument("--latency-only", action="store_true")
    args = parser.parse_args()
    if args.latency_only:
        print(json.dumps(latency()), flush=True)
        return 0
    report: dict = {"device": torch.cuda.get_device_name(), "size": SIZE.__dict__, "cases": []}
    if not args.skip_bandwidth:
        report["bandwidth"] = bandwidth()
        print(json.dumps(report["bandwidth"]), flush=True)
        report["latency"] = latency()
        print(json.dumps(report["latency"]), flush=True)
        report["persistent"] = persistent_limit_comparison()
        print(json.dumps(report["persistent"]), flush=True)
    plan = [(c, torch.float32) for c in args.cases.split(",") if "float32" in args.dtypes]
    plan += [(c, torch.bfloat16) for c in args.bf16_cases.split(",") if c]
    for name, dtype in plan:
        try:
            row = bench_case(name, dtype)
        except Exception as error:  # noqa: BLE001 - one failing case is reported, not fatal
            row = {"case": name, "dtype": str(dtype), "error": f"{type(error).__name__}: {error}"[:2000]}
        report["cases"].append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(report, handle, indent=1)
    print(format_table(report))
    return 0


def format_table(report: dict) -> str:
    lines = [f"{report['device']}", "case dtype eager_ms inductor_ms permalloy_ms graphs_ms x_eager x_inductor kernels(p/i)"]
    for r in report["cases"]:
        if "error" in r:
            lines.append(f"{r['case']} {r['dtype']} ERROR {r['error'][:200]}")
            continue
        lines.append(
            f"{r['case']} {r['dtype']} {r['eager_ms']:.3f} {r['inductor_ms']:.3f} {r['permalloy_ms']:.3f} "
            f"{r['permalloy_graphs_ms']:.3f} {r['speedup_vs_eager']:.2f} {r['speedup_vs_inductor']:.2f} "
            f"{r['permalloy_kernels']}+{r['permalloy_externs']}e/{r['inductor_kernels']}"
        )
    for section in ("bandwidth", "latency", "persistent"):
        if section in report:
            lines.append(" ".join(f"{k}={v:.4g}" for k, v in report[section].items()))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
