"""
Half-precision matrix products with sizes that are not multiples of 8 (a
50,257-word vocabulary, 197 image tokens, a 1,001-class head): the library's
product as eager calls it, against the same product with its unaligned sizes
padded to multiples of 8 (zeros in the padded rows or columns), against
Inductor's compiled product. Each padded form is timed on operands already
padded, and the copies that padding costs (an operand's pad, the result's
slice made dense) are timed apart, so the break-even is visible.

    python benchmarks/padded_products.py --dtype bfloat16 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F

SHAPES = [
    ("mm", 1, 4096, 768, 50257),
    ("mm", 1, 4096, 768, 30522),
    ("mm", 1, 4096, 768, 1001),
    ("mm", 1, 4096, 1001, 1024),
    ("mm", 1, 4097, 1024, 1024),
    ("mm", 1, 197, 768, 2304),
    ("mm", 1, 3152, 768, 2304),
    ("bmm", 192, 197, 64, 197),
    ("bmm", 192, 197, 197, 64),
]
"""(kind, batch, M, K, N): `mm` multiplies `x [M, K]` by a linear layer's
weight `[N, K]` transposed; `bmm` multiplies `[batch, M, K]` by `[batch, K, N]`."""


def _time_ms(run, rounds: int = 7, calls: int = 20) -> float:
    """Median over `rounds` of the mean time of `calls` back-to-back calls."""
    for _ in range(3):
        run()
    torch.cuda.synchronize()
    samples = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            run()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) / calls)
    return statistics.median(samples)


def _rounded(n: int) -> int:
    return -(-n // 8) * 8


def _operands(kind: str, batch: int, m: int, k: int, n: int, dtype: torch.dtype):
    if kind == "mm":
        return torch.randn(m, k, device="cuda", dtype=dtype), torch.randn(n, k, device="cuda", dtype=dtype)
    return (torch.randn(batch, m, k, device="cuda", dtype=dtype), torch.randn(batch, k, n, device="cuda", dtype=dtype))


def _product(kind: str):
    if kind == "mm":
        return lambda a, b: torch.mm(a, b.t())
    return torch.bmm


def _pad(kind: str, a, b, pad_m: int, pad_k: int, pad_n: int):
    """The operands with zero rows/columns added: `a` in M and K, `b` in K and N."""
    if kind == "mm":
        return F.pad(a, (0, pad_k, 0, pad_m)), F.pad(b, (0, pad_k, 0, pad_n))
    return F.pad(a, (0, pad_k, 0, pad_m)), F.pad(b, (0, pad_n, 0, pad_k))


def _split_into_dense(a, b, aligned: int) -> dict:
    """The product written into a dense result by two library calls: the
    aligned leading columns (with the result's unaligned row length), then
    the last few."""
    out = torch.empty(a.shape[0], b.shape[0], device=a.device, dtype=a.dtype)

    def run():
        torch.mm(a, b[:aligned].t(), out=out[:, :aligned])
        torch.mm(a, b[aligned:].t(), out=out[:, aligned:])

    run()
    expected = torch.mm(a, b.t()).float()
    return {
        "ms": _time_ms(run),
        "leading_ms": _time_ms(lambda: torch.mm(a, b[:aligned].t(), out=out[:, :aligned])),
        "relative_difference": ((out.float() - expected).norm() / expected.norm()).item(),
    }


def measure(kind: str, batch: int, m: int, k: int, n: int, dtype: torch.dtype) -> dict:
    a, b = _operands(kind, batch, m, k, n, dtype)
    product = _product(kind)
    row = {"kind": kind, "batch": batch, "m": m, "k": k, "n": n, "library_ms": _time_ms(lambda: product(a, b))}
    sizes = {"m": m, "k": k, "n": n}
    unaligned = [d for d, v in sizes.items() if v % 8]
    variants = {f"pad_{d}": {d} for d in unaligned}
    if len(unaligned) > 1:
        variants["pad_all"] = set(unaligned)
    expected = product(a, b).float()
    for name, dims in variants.items():
        pads = {d: (_rounded(sizes[d]) - sizes[d] if d in dims else 0) for d in sizes}
        pa, pb = _pad(kind, a, b, pads["m"], pads["k"], pads["n"])
        result = product(pa, pb)
        sliced = result[..., :m, :n]
        error = ((sliced.float() - expected).norm() / expected.norm()).item()
        row[name] = {
            "product_ms": _time_ms(lambda: product(pa, pb)),
            "pad_operands_ms": _time_ms(lambda: _pad(kind, a, b, pads["m"], pads["k"], pads["n"])),
            "dense_slice_ms": _time_ms(lambda: sliced.contiguous()) if pads["m"] or pads["n"] else 0.0,
            "relative_difference": error,
        }
    if kind == "mm" and n % 8:
        row["split_into_dense"] = _split_into_dense(a, b, n - n % 8)
    compiled = torch.compile(product, backend="inductor", dynamic=False)
    out = compiled(a, b)
    row["inductor_ms"] = _time_ms(lambda: compiled(a, b))
    row["inductor_result_strides"] = list(out.stride())
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args(argv)
    dtype = getattr(torch, args.dtype)
    rows = []
    for shape in SHAPES:
        row = measure(*shape, dtype)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        device = torch.cuda.get_device_name()
        with open(args.json, "w") as out:
            json.dump({"device": device, "torch": torch.__version__, "dtype": args.dtype, "rows": rows}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
