"""
The two ways permalloy runs a matrix product, forced in turn and timed beside
eager and Inductor: the library's product (with a flat epilogue kernel), the
template's first tiles, and the default choice. Explains a GEMM sweep's row.

    python benchmarks/matmul_paths.py --dtype bf16 --sizes 4096x4096x4096 --epilogues none,bias_gelu
"""

from __future__ import annotations

import argparse
import sys

import torch

from permalloy.targets.triton import matmul

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from matmul_templates import DTYPES, EPILOGUES, compiled  # noqa: E402


def main(argv=None) -> int:
    from triton.testing import do_bench

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", choices=list(DTYPES), default="bf16")
    parser.add_argument("--sizes", default="4096x4096x4096,4096x768x3072")
    parser.add_argument("--epilogues", default="none,bias_gelu")
    args = parser.parse_args(argv)
    dtype = DTYPES[args.dtype]
    chosen = matmul.matmul_candidates
    paths = {
        "library": lambda plan, sizes, mode, interpret: [matmul.LIBRARY_CONFIG],
        "template0": lambda plan, sizes, mode, interpret: [c for c in chosen(plan, sizes, "max-autotune", interpret) if not c.LIBRARY][:1],
        "template1": lambda plan, sizes, mode, interpret: [c for c in chosen(plan, sizes, "max-autotune", interpret) if not c.LIBRARY][1:2],
        "default": chosen,
    }
    for size in args.sizes.split(","):
        m, n, k = (int(v) for v in size.split("x"))
        for epilogue in args.epilogues.split(","):
            torch.manual_seed(0)
            x = torch.randn(m, k, device="cuda", dtype=dtype)
            w = torch.randn(k, n, device="cuda", dtype=dtype) / k**0.5
            b, r = torch.randn(n, device="cuda", dtype=dtype), torch.randn(m, n, device="cuda", dtype=dtype)
            fn = EPILOGUES[epilogue]
            times = {}
            for backend in ("eager", "inductor"):
                run = compiled(fn, backend)
                run(x, w, b, r)
                times[backend] = do_bench(lambda: run(x, w, b, r), warmup=25, rep=100, return_mode="median")
            for name, candidates in paths.items():
                matmul.matmul_candidates = candidates
                run = compiled(fn, "permalloy")
                run(x, w, b, r)
                times[name] = do_bench(lambda: run(x, w, b, r), warmup=25, rep=100, return_mode="median")
            matmul.matmul_candidates = chosen
            print(args.dtype, size, epilogue, "  ".join(f"{k} {v * 1000:.1f}us" for k, v in times.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
