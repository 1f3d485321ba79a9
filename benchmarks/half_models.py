"""
The models suite's transformers in bf16 (or `--dtype`) on a GPU: eager, Inductor, permalloy,
permalloy with the `matmul_templates` option (products as contractions,
template or library timed per size), and permalloy with the `attention` option
(attention written as its math kept as the math, run by torch's fused kernels, by
permalloy's flash kernel, or by the faster of the two at each size) in one
process. Each compiled model is
checked against eager (relative error of the output), timed in interleaved
rounds of back-to-back calls (medians), and profiled (`--profile`: host and
kernel time per call, as `permalloy-bench --profile` reports them); the
permalloy runs record each graph's host program (native or Python) and how
many of its steps call back into Python.

    python benchmarks/half_models.py --cases bert,gpt2,llama,t5 --profile --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch

import permalloy
from permalloy.tools.bench.kernel_profile import ProfileSettings, profile_backend
from permalloy.tools.bench.timing import back_to_back_ms
from permalloy.tools.models import first_output, make_model

BACKENDS = (
    "eager",
    "inductor",
    "permalloy",
    "permalloy-templates",
    "permalloy-math-attention",
    "permalloy-torch-attention",
    "permalloy-flash-attention",
    "permalloy-measured-attention",
)
PERMALLOY_OPTIONS = {
    "permalloy": {},
    "permalloy-templates": {"matmul_templates": True},
    "permalloy-math-attention": {"attention": "math"},
    "permalloy-torch-attention": {"attention": "torch"},
    "permalloy-flash-attention": {"attention": "triton"},
    "permalloy-measured-attention": {"attention": "measured"},
}
"""The options of each permalloy backend."""
GRAPH_FACTS = ("host", "kernels", "extern_calls", "host_callbacks")
"""What each permalloy graph's stats record is reduced to here."""


def _compiled(model, backend: str):
    if backend == "eager":
        return model
    if backend == "inductor":
        return torch.compile(model, backend="inductor")
    from permalloy.tools.backend import permalloy_backend

    return torch.compile(model, backend=permalloy_backend, options=PERMALLOY_OPTIONS[backend])


DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def _case(
    name: str, size: str, rounds: int, profile: bool, backends: tuple[str, ...] = BACKENDS, dtype: str = "bf16"
) -> dict:
    torch.manual_seed(0)
    case = make_model(name, size)
    model = case.model.eval().to("cuda", DTYPES[dtype])
    inputs = [t.to("cuda", DTYPES[dtype]) if t.is_floating_point() else t.to("cuda") for t in case.inputs]
    row: dict = {"case": name, "results": {}}
    runs = {}
    with torch.no_grad():
        expected = first_output(model(*inputs)).float()
        for backend in backends:
            torch._dynamo.reset()  # noqa: SLF001
            permalloy.reset_stats()
            run = _compiled(model, backend)
            begin = time.perf_counter()
            try:
                actual = first_output(run(*inputs)).float()
            except Exception as error:  # noqa: BLE001 - reported in the row
                row["results"][backend] = {"error": f"{type(error).__name__}: {error}"[:500]}
                continue
            torch.cuda.synchronize()
            result = {
                "compile_s": time.perf_counter() - begin,
                "relative_error": ((actual - expected).norm() / expected.norm()).item(),
            }
            if backend.startswith("permalloy"):
                run(*inputs)  # the native host program is built on the first call and runs from the second
                result["graphs"] = [{k: g.get(k) for k in GRAPH_FACTS} for g in permalloy.stats()]
            row["results"][backend] = result
            runs[backend] = run
        calls = {backend: (lambda run=run: run(*inputs)) for backend, run in runs.items()}
        medians = back_to_back_ms(calls, rounds, 5, torch.cuda.synchronize)
        for backend, run in runs.items():
            row["results"][backend]["ms"] = medians[backend]
            if profile:
                settings = ProfileSettings(back_to_back_calls=30, profiled_calls=5)
                row["results"][backend]["profile"] = profile_backend(lambda i, run=run: run(*inputs), "cuda", settings)
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="bert,gpt2,llama,t5")
    parser.add_argument("--size", default="cuda")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--profile", action="store_true", help="also profile each backend (host and kernel time per call)")
    parser.add_argument("--backends", default=",".join(BACKENDS[:4]), help=f"comma-separated, among {', '.join(BACKENDS)}")
    parser.add_argument("--dtype", default="bf16", choices=sorted(DTYPES), help="the models' float type (default bf16)")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    backends = tuple(args.backends.split(","))
    unknown = sorted(set(backends) - set(BACKENDS))
    if unknown:
        parser.error(f"unknown backends {', '.join(unknown)}; valid: {', '.join(BACKENDS)}")
    rows = []
    for name in args.cases.split(","):
        row = _case(name, args.size, args.rounds, args.profile, backends, args.dtype)
        res = row["results"]
        cells = [f"{b} {r['ms']:.3f}ms" if "ms" in r else f"{b} failed" for b, r in res.items()]
        ratios = [f"{b}/inductor {res['inductor']['ms'] / res[b]['ms']:.3f}x" for b in BACKENDS[2:] if "ms" in res.get(b, {}) and "ms" in res.get("inductor", {})]
        print(name, "  ".join(cells), " ", "  ".join(ratios), flush=True)
        rows.append(row)
        if args.json:
            with open(args.json, "w") as out:
                json.dump({"device": torch.cuda.get_device_name(), "dtype": args.dtype, "rows": rows}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
