"""
How each pass's compile time grows with the graph: one model family at
several depths (layers), each compiled once in this process with the
compiled-graph cache off, on the CPU (the pipeline is the same work on any
target). For every pass it prints the seconds at each depth and the growth
exponent: the slope of log(seconds) over log(layers) between the two
deepest models, 1.0 for a pass linear in the graph, 2.0 for a quadratic one.

    python benchmarks/pass_scaling.py --model bert --layers 2,4,8,16 [--json out.json]

`--model bert` is a BERT encoder from a `transformers` config (hidden size
64, sequence 32); `--model mlp` a stack of residual MLP blocks in plain
`torch.nn` (no `transformers` needed). A timing, not a test.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from typing import Any

import torch

import permalloy


class _MlpBlock(torch.nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 4 * width)
        self.down = torch.nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def _model(name: str, layers: int) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    if name == "mlp":
        model = torch.nn.Sequential(*[_MlpBlock(64) for _ in range(layers)])
        return model.eval(), (torch.randn(4, 32, 64),)
    from transformers import BertConfig, BertModel

    config = BertConfig(
        hidden_size=64, num_hidden_layers=layers, num_attention_heads=4, intermediate_size=256, vocab_size=512
    )
    model = BertModel(config).eval()
    return model, (torch.randint(0, 512, (2, 32)),)


def _compile_times(name: str, layers: int) -> dict[str, Any]:
    """One compile of the model at `layers`: each pass's seconds, the
    import's, and the whole compile's."""
    model, inputs = _model(name, layers)
    torch._dynamo.reset()  # noqa: SLF001
    permalloy.reset_stats()
    compiled = torch.compile(model, backend="permalloy", options={"cache": False, "target": "llvm"})
    started = time.perf_counter()
    with torch.no_grad():
        compiled(*inputs)
    first_call = time.perf_counter() - started
    records = permalloy.stats()
    passes: dict[str, float] = {}
    for record in records:
        for pass_name, seconds in record["compile_times"]["passes"].items():
            passes[pass_name] = passes.get(pass_name, 0.0) + seconds
    return {
        "layers": layers,
        "graphs": len(records),
        "first_call_s": first_call,
        "permalloy_s": sum(r["compile_seconds"] for r in records),
        "import_s": sum(r["compile_times"]["import_fx"] for r in records),
        "aot_autograd_s": sum(r["compile_times"]["aot_autograd"] or 0.0 for r in records),
        "passes": passes,
    }


def _exponent(shallow: tuple[int, float], deep: tuple[int, float]) -> float | None:
    (n0, t0), (n1, t1) = shallow, deep
    if t0 <= 0 or t1 <= 0 or n0 == n1:
        return None
    return math.log(t1 / t0) / math.log(n1 / n0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=("bert", "mlp"), default="mlp")
    parser.add_argument("--layers", default="2,4,8,16", help="comma-separated depths")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", default=None, help="write the results to this file")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    torch.set_num_threads(args.threads)
    depths = [int(n) for n in args.layers.split(",")]
    _compile_times(args.model, depths[0])  # the process's one-time costs
    runs = [_compile_times(args.model, n) for n in depths]
    stages = sorted({p for run in runs for p in run["passes"]}, key=lambda p: -runs[-1]["passes"].get(p, 0.0))
    rows = [("aot_autograd", [r["aot_autograd_s"] for r in runs]), ("import", [r["import_s"] for r in runs])]
    rows += [(p, [r["passes"].get(p, 0.0) for r in runs]) for p in stages]
    rows.append(("permalloy (all)", [r["permalloy_s"] for r in runs]))
    header = f"{'stage':<34}" + "".join(f"{n:>9}" for n in depths) + f"{'exponent':>10}"
    print(f"{args.model}, seconds by number of layers (CPU, {args.threads} thread(s)); exponent between the two deepest")
    print(header)
    exponents = {}
    for name, seconds in rows:
        exponent = _exponent((depths[-2], seconds[-2]), (depths[-1], seconds[-1]))
        exponents[name] = exponent
        shown = "-" if exponent is None else f"{exponent:.2f}"
        print(f"{name:<34}" + "".join(f"{s:>9.3f}" for s in seconds) + f"{shown:>10}")
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"model": args.model, "threads": args.threads, "runs": runs, "exponents": exponents}, file, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
