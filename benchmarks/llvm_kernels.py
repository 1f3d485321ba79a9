"""
Throughput of kernels compiled by the LLVM target, against torch eager and
against a plain copy of the same amount of memory.

    python benchmarks/llvm_kernels.py [--threads N] [--repeat R]

Bytes are counted as each input read once and each output written once; the
fraction is of the bandwidth of `dst.copy_(src)` on a large tensor, the best a
memory-bound kernel can hope for. Medians are the headline; the best times are
printed beside them because a shared machine makes medians noisy (the "best"
fraction compares best with best).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from permalloy.targets.llvm import LLVMTarget
from permalloy.targets.llvm.testing import layout, parse_kernel, pointwise_kernel, tensor

N = 1 << 24  # elements of the large pointwise benchmarks
ROWS, COLS = 4096, 4096


def timings(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median, best) seconds of `repeat` calls after a warm-up."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def reduce_kernel(kind: str, shape: str, over: str, result: str, body: str, index: str) -> str:
    return f"""
buffer.kernel @r(%t: {tensor(shape, "f32")}) -> ({tensor(result, "f32")}) {{
  %r = loop.reduce {kind} ins(%x = %t : {tensor(shape, "f32")}) over {over} -> {tensor(result, "f32")} {{
    %v = loop.load %x{index} : f32
{body}
  }}
  buffer.yield %r : {tensor(result, "f32")}
}}"""


SOFTMAX = f"""
buffer.kernel @softmax(%t: {tensor(f"[{ROWS}, {COLS}]", "f32")}) -> ({tensor(f"[{ROWS}, {COLS}]", "f32")}) {{
  %m = loop.reduce max ins(%x = %t : {tensor(f"[{ROWS}, {COLS}]", "f32")}) over [{COLS}] -> {tensor(f"[{ROWS}]", "f32")} {{
    %v = loop.load %x[d0, r0] : f32
    loop.yield %v : f32
  }}
  %s = loop.reduce sum ins(%x = %t : {tensor(f"[{ROWS}, {COLS}]", "f32")}, %mx = %m : {tensor(f"[{ROWS}]", "f32")}) over [{COLS}] -> {tensor(f"[{ROWS}]", "f32")} {{
    %v = loop.load %x[d0, r0] : f32
    %mv = loop.load %mx[d0] : f32
    %d = arith.subf %v, %mv : f32
    %e = math.exp %d : f32
    loop.yield %e : f32
  }}
  %y = loop.pointwise ins(%x = %t : {tensor(f"[{ROWS}, {COLS}]", "f32")}, %mx = %m : {tensor(f"[{ROWS}]", "f32")}, %sx = %s : {tensor(f"[{ROWS}]", "f32")}) -> {tensor(f"[{ROWS}, {COLS}]", "f32")} {{
    %v = loop.load %x[d0, d1] : f32
    %mv = loop.load %mx[d0] : f32
    %sv = loop.load %sx[d0] : f32
    %d = arith.subf %v, %mv : f32
    %e = math.exp %d : f32
    %q = arith.divf %e, %sv : f32
    loop.yield %q : f32
  }}
  buffer.yield %y : {tensor(f"[{ROWS}, {COLS}]", "f32")}
}}"""


def cases() -> list[tuple[str, str, list[torch.Tensor], list[torch.Tensor], Callable[..., torch.Tensor]]]:
    x, y = torch.randn(N), torch.randn(N)
    m = torch.randn(ROWS, COLS)
    shape = f"[{N}]"
    axpy = pointwise_kernel(shape, ["f32", "f32"], "f32", """
    %c = arith.constant 2.0 : f32
    %p = arith.mulf %a0, %c : f32
    %y = arith.addf %p, %a1 : f32""")
    exp = pointwise_kernel(shape, ["f32"], "f32", "    %y = math.exp %a0 : f32")
    sigmoid = pointwise_kernel(shape, ["f32"], "f32", """
    %one = arith.constant 1.0 : f32
    %n = arith.negf %a0 : f32
    %e = math.exp %n : f32
    %d = arith.addf %e, %one : f32
    %y = arith.divf %one, %d : f32""")
    rowsum = reduce_kernel("sum", f"[{ROWS}, {COLS}]", f"[{COLS}]", f"[{ROWS}]", "    loop.yield %v : f32", "[d0, r0]")
    colsum = reduce_kernel("sum", f"[{ROWS}, {COLS}]", f"[{ROWS}]", f"[{COLS}]", "    loop.yield %v : f32", "[r0, d0]")
    # Eager writes into preallocated outputs where torch allows it (`out=`), so
    # that both sides are measured without allocation.
    identity = pointwise_kernel(shape, ["f32"], "f32", "", result="%a0")
    return [
        ("copy kernel (16M f32)", identity, [x], [torch.empty(N)], lambda a, out: out.copy_(a)),
        ("x*2+y (16M f32)", axpy, [x, y], [torch.empty(N)], lambda a, b, out: torch.add(b, a, alpha=2, out=out)),
        ("exp (16M f32)", exp, [x], [torch.empty(N)], lambda a, out: torch.exp(a, out=out)),
        ("sigmoid 1/(1+exp(-x))", sigmoid, [x], [torch.empty(N)], lambda a, out: torch.sigmoid(a, out=out)),
        ("row sum [4096,4096]", rowsum, [m], [torch.empty(ROWS)], lambda a, out: torch.sum(a, 1, out=out)),
        ("column sum [4096,4096]", colsum, [m], [torch.empty(COLS)], lambda a, out: torch.sum(a, 0, out=out)),
        ("row softmax [4096,4096]", SOFTMAX, [m], [torch.empty(ROWS, COLS)], lambda a, out: torch.softmax(a, 1)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--repeat", type=int, default=30)
    options = parser.parse_args()
    torch.set_num_threads(options.threads)
    target = LLVMTarget()
    src, dst = torch.randn(N), torch.empty(N)
    copy, copy_best = timings(lambda: dst.copy_(src), options.repeat)
    copy_bandwidth, copy_best_bandwidth = 2 * src.nbytes / copy, 2 * src.nbytes / copy_best
    print(f"threads={options.threads}  host={target.host.cpu} ({target.host.vector_bits}-bit vectors)")
    print(
        f"copy 16M f32: median {copy * 1e3:.2f} ms ({copy_bandwidth / 1e9:.1f} GB/s), "
        f"best {copy_best * 1e3:.2f} ms ({copy_best_bandwidth / 1e9:.1f} GB/s)"
    )
    print(
        f"{'kernel':26s} {'median':>9s} {'GB/s':>6s} {'of copy':>8s} | {'best':>8s} {'of copy':>8s} | "
        f"{'eager med':>9s} {'speedup':>8s}"
    )
    for name, text, inputs, outputs, eager in cases():
        kernel = parse_kernel(text)
        start = time.perf_counter()
        compiled = target.compile_kernel(kernel, [layout(t) for t in (*inputs, *outputs)])
        compile_ms = (time.perf_counter() - start) * 1e3
        tensors = [*inputs, *outputs]
        ours, ours_best = timings(lambda: compiled(tensors, []), options.repeat)
        reference = torch.empty_like(outputs[0])
        theirs, _ = timings(lambda: eager(*inputs, reference), options.repeat)
        expected = eager(*inputs, reference)
        error = float((outputs[0] - expected).norm() / expected.norm())
        nbytes = sum(t.nbytes for t in tensors)
        print(
            f"{name:26s} {ours * 1e3:7.2f}ms {nbytes / ours / 1e9:6.1f} {nbytes / ours / copy_bandwidth:8.0%} | "
            f"{ours_best * 1e3:6.2f}ms {nbytes / ours_best / copy_best_bandwidth:8.0%} | "
            f"{theirs * 1e3:7.2f}ms {theirs / ours:7.2f}x"
            f"   (compile {compile_ms:.0f} ms, rel. error {error:.1e})"
        )


if __name__ == "__main__":
    main()
