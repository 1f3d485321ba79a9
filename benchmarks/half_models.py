"""
The models suite's transformers in bf16 on a GPU: eager, Inductor and
permalloy in one process, each compiled model checked against eager (relative
error of the output) and timed in interleaved rounds of back-to-back calls.

    python benchmarks/half_models.py --cases bert,gpt2,llama,t5 --templates --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch

from permalloy.tools.models import make_model


def _first(value):
    while isinstance(value, tuple | list):
        value = value[0]
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="bert,gpt2,llama,t5")
    parser.add_argument("--size", default="cuda")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--templates", action="store_true", help="compile with the matmul_templates option")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    rows = []
    for name in args.cases.split(","):
        torch.manual_seed(0)
        case = make_model(name, args.size)
        model = case.model.eval().to("cuda", torch.bfloat16)
        inputs = [t.to("cuda", torch.bfloat16) if t.is_floating_point() else t.to("cuda") for t in case.inputs]
        runs, row = {}, {"case": name, "results": {}}
        with torch.no_grad():
            expected = _first(model(*inputs)).float()
            for backend in ("eager", "inductor", "permalloy"):
                torch._dynamo.reset()  # noqa: SLF001
                options = {"matmul_templates": True} if backend == "permalloy" and args.templates else None
                run = model if backend == "eager" else torch.compile(model, backend=backend, options=options)
                begin = time.perf_counter()
                actual = _first(run(*inputs)).float()
                torch.cuda.synchronize()
                error = ((actual - expected).norm() / expected.norm()).item()
                row["results"][backend] = {"compile_s": time.perf_counter() - begin, "relative_error": error}
                runs[backend] = run
            samples = {b: [] for b in runs}
            for _ in range(args.rounds):
                for backend, run in runs.items():
                    torch.cuda.synchronize()
                    begin = time.perf_counter()
                    for _ in range(5):
                        run(*inputs)
                    torch.cuda.synchronize()
                    samples[backend].append((time.perf_counter() - begin) * 200)
        for backend, values in samples.items():
            row["results"][backend]["ms"] = statistics.median(values)
        res = row["results"]
        print(name, "  ".join(f"{b} {r['ms']:.3f}ms err {r['relative_error']:.1e}" for b, r in res.items()),
              f" permalloy/inductor {res['inductor']['ms'] / res['permalloy']['ms']:.3f}x", flush=True)  # fmt: skip
        rows.append(row)
        if args.json:
            with open(args.json, "w") as out:
                json.dump({"device": torch.cuda.get_device_name(), "dtype": "bf16", "rows": rows}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
