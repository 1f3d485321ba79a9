"""
Count the ops that run through eager torch when permalloy compiles the OpInfo
samples of the op families that lower natively (scans, sorts, scatters,
indexed accumulation, interpolation and sampling, unfold, searches).

    python benchmarks/opinfo_fallbacks.py [--target llvm] [--samples 8] [--json FILE]

Each sample is compiled on its own (`torch.compile(..., backend="permalloy")`,
fallback as by default) on the CPU, in float32; a sample counts as falling
back when its graph holds a fallback op or is run eagerly whole, and the
table lists the ops that fell back. Results are checked against eager.
"""

from __future__ import annotations

import argparse
import collections
import json
import warnings

import torch
from torch.testing._internal.common_methods_invocations import op_db

import permalloy

FAMILIES = {
    "scans": ["cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"],
    "sorts": ["sort", "argsort", "msort", "topk", "kthvalue"],
    "scatters": ["scatter_reduce", "scatter_add", "scatter", "index_put", "index_add", "index_reduce",
                 "nn.functional.embedding_bag", "bincount"],
    "sampling": ["nn.functional.interpolate", "nn.functional.grid_sample", "nn.functional.unfold",
                 "nn.functional.fold", "as_strided", "bucketize", "searchsorted"],
}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="llvm")
    parser.add_argument("--samples", type=int, default=8, help="samples per OpInfo entry")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = []
    for family, names in FAMILIES.items():
        for info in [o for o in op_db if o.name in names]:
            samples = list(info.sample_inputs("cpu", torch.float32))[: args.samples]
            for index, sample in enumerate(samples):
                rows.append(_run(family, info, index, sample, args.target))
    fell_back = collections.Counter(op for row in rows for op in row["fallback_ops"])
    print(f"{'family':10s} {'op':40s} {'samples':>7s} {'native':>7s} {'wrong':>6s}")
    for (family, name), group in _grouped(rows).items():
        native = sum(1 for r in group if r["compiled"] and not r["fallback_ops"])
        wrong = sum(1 for r in group if r["mismatch"])
        print(f"{family:10s} {name:40s} {len(group):7d} {native:7d} {wrong:6d}")
    print(f"samples: {len(rows)}, with no fallback op: {sum(1 for r in rows if r['compiled'] and not r['fallback_ops'])}")
    for op, count in fell_back.most_common():
        print(f"  fallback {op}: {count}")
    if args.json:
        with open(args.json, "w") as file:
            json.dump(rows, file, indent=1)


def _grouped(rows):
    groups = collections.defaultdict(list)
    for row in rows:
        groups[(row["family"], row["op"])].append(row)
    return groups


def _run(family, info, index, sample, target) -> dict:
    def fn(x, *rest):
        return info.op(x, *sample.args, **sample.kwargs)

    torch._dynamo.reset()
    permalloy.reset_stats()
    row = {"family": family, "op": info.variant_test_name and f"{info.name}.{info.variant_test_name}" or info.name,
           "sample": index, "compiled": False, "fallback_ops": [], "mismatch": False, "error": None}  # fmt: skip
    try:
        expected = fn(sample.input)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            actual = torch.compile(fn, backend="permalloy", options={"target": target})(sample.input)
        records = permalloy.stats()
        row["compiled"] = bool(records) and all(r["compiled"] for r in records)
        row["fallback_ops"] = [op for r in records for op in r["fallback_ops"]]
        row["mismatch"] = not _close(actual, expected)
    except Exception as error:  # noqa: BLE001 - a sample eager rejects, or a failure, is recorded
        row["error"] = f"{type(error).__name__}: {error}"[:200]
    return row


def _close(actual, expected) -> bool:
    if isinstance(expected, tuple | list):
        return len(actual) == len(expected) and all(_close(a, e) for a, e in zip(actual, expected))
    if isinstance(expected, torch.Tensor):
        if not expected.is_floating_point():
            return torch.equal(actual, expected)
        return torch.allclose(actual, expected, rtol=1e-4, atol=1e-5, equal_nan=True)
    return actual == expected


if __name__ == "__main__":
    main()
