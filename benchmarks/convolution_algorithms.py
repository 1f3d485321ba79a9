"""
cuDNN's algorithm search against its heuristics, for eager, Inductor and
permalloy, on the models suite's convolutional networks: each backend and
setting runs in a process of its own, since torch keeps the algorithm it
first picked for a convolution's sizes, whichever way it picked it, for the
rest of the process (a backend timed after another would inherit its
choices). Per model and configuration: the median time of an inference call
and of a training step (forward, a fixed loss, backward; dropout off), the
first calls' seconds, and the compiled outputs' and gradients' largest
relative error against eager's (computed after the timing, in the same
process, so that eager's convolutions do not pick the algorithms first).
Each process starts with empty on-disk caches (permalloy's compiled graphs,
Inductor's, Triton's), so that its first calls are a cold compile
(`--warm-caches` keeps them).

    python benchmarks/convolution_algorithms.py --cases small_cnn,regnet --json out.jsonl

Configurations: `eager`, `eager-search` (torch.backends.cudnn.benchmark on),
`inductor`, `inductor-search`, `permalloy` (its default: the search on for
its convolutions) and `permalloy-heuristics` (its `convolution_algorithms`
option set to "torch", the benchmark setting off). Float32 with TF32 off,
at the GPU sizes (`--size`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import torch

CONFIGS = ("eager", "eager-search", "inductor", "inductor-search", "permalloy", "permalloy-heuristics")
"""Backend and setting of each process; a configuration may add `-limitN`,
trying cuDNN's N first algorithms only (`torch.backends.cudnn.benchmark_limit`,
10 by default)."""


def _compiled(model: torch.nn.Module, config: str):
    if config.startswith("eager"):
        return model
    if config.startswith("inductor"):
        return torch.compile(model)
    from permalloy.tools.backend import permalloy_backend

    options = {"convolution_algorithms": "torch"} if config == "permalloy-heuristics" else {}
    return torch.compile(model, backend=permalloy_backend, options=options)


def _relative_error(got: torch.Tensor, expected: torch.Tensor) -> float:
    return float((got.double() - expected.double()).norm() / expected.double().norm().clamp_min(1e-30))


def run_one(case_name: str, config: str, size: str, rounds: int) -> dict:
    """Time one model under one configuration in this process."""
    from permalloy.tools.bench.timing import back_to_back_ms, synchronizer
    from permalloy.tools.bench.training import without_dropout
    from permalloy.tools.models import first_output, make_model

    config, _, limit = config.partition("-limit")
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = config.endswith("-search")
    if limit:
        torch.backends.cudnn.benchmark_limit = int(limit)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    sync = synchronizer(device)
    case = make_model(case_name, size)
    model = case.model.to(device)
    without_dropout(model)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in case.inputs]
    initial = {name: value.clone() for name, value in model.state_dict().items()}
    record: dict = {
        "case": case_name,
        "config": config + (f"-limit{limit}" if limit else ""),
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
    }

    model.eval()
    compiled = _compiled(model, config)
    with torch.no_grad():
        started = time.perf_counter()
        out = first_output(compiled(*inputs))
        sync()
        record["first_inference_s"] = time.perf_counter() - started
        record["inference_ms"] = back_to_back_ms({"call": lambda: compiled(*inputs)}, rounds, 5, sync)["call"]

    model.train()
    compiled_train = _compiled(model, config)

    def step(module) -> None:
        model.zero_grad(set_to_none=True)
        first_output(module(*inputs)).float().square().mean().backward()

    started = time.perf_counter()
    step(compiled_train)
    sync()
    record["first_step_s"] = time.perf_counter() - started
    record["train_ms"] = back_to_back_ms({"step": lambda: step(compiled_train)}, rounds, 2, sync)["step"]
    gradients = [p.grad.clone() for p in model.parameters() if p.grad is not None]

    if config.startswith("permalloy"):
        import permalloy

        graphs = permalloy.stats()
        record["graphs"] = len(graphs)
        record["graphs_run_eagerly"] = [g["reason"] for g in graphs if not g["compiled"]]
        record["graph_cache"] = [g.get("cache") for g in graphs]
    if not config.startswith("eager"):  # eager's results last, after every timing
        model.load_state_dict(initial)  # the batch norms' statistics the compiled inference saw
        model.eval()
        with torch.no_grad():
            record["inference_error"] = _relative_error(out, first_output(model(*inputs)))
        model.train()
        step(model)
        expected = [p.grad for p in model.parameters() if p.grad is not None]
        record["gradient_error"] = max(_relative_error(g, e) for g, e in zip(gradients, expected, strict=True))
    return record


def _cold_caches(warm: bool, directory: str) -> dict[str, str]:
    """The environment of one configuration's process: empty caches of
    permalloy, Inductor and Triton under `directory` (so that its first calls
    compile everything, the search included), unless `warm`."""
    environment = dict(os.environ)
    if not warm:
        for variable in ("PERMALLOY_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
            environment[variable] = os.path.join(directory, variable.lower())
    return environment


def _in_own_process(case: str, config: str, args: argparse.Namespace) -> dict:
    """`run_one` in a new process: its record, or the error it ended with."""
    command = [sys.executable, __file__, "--one", case, config, "--size", args.size, "--rounds", str(args.rounds)]
    with tempfile.TemporaryDirectory() as caches:
        environment = _cold_caches(args.warm_caches, caches)
        done = subprocess.run(command, capture_output=True, text=True, check=False, env=environment)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"case": case, "config": config, "error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(lines[-1])


def _row(record: dict) -> str:
    """One record as a line of the table."""
    case, config = record["case"], record["config"]
    if "error" in record:
        return f"{case:<14} {config:<22} failed: {record['error']}"
    first = record["first_inference_s"] + record["first_step_s"]
    errors = " ".join(
        f"{record[k]:9.1e}" if k in record else f"{'-':>9}" for k in ("inference_error", "gradient_error")
    )
    eagerly = " (graphs run eagerly!)" if record.get("graphs_run_eagerly") else ""
    return f"{case:<14} {config:<22} {record['inference_ms']:9.3f} {record['train_ms']:9.3f} {first:8.1f} {errors}{eagerly}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="small_cnn,regnet,unet,resnet")
    parser.add_argument("--configs", default=",".join(CONFIGS), help=f"among {', '.join(CONFIGS)}")
    parser.add_argument("--size", default="cuda")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", help="append each record to this JSON-lines file")
    parser.add_argument(
        "--warm-caches", action="store_true", help="keep the compilers' on-disk caches between processes"
    )
    parser.add_argument("--one", nargs=2, metavar=("CASE", "CONFIG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(*args.one, args.size, args.rounds)))
        return 0
    unknown = sorted({c.partition("-limit")[0] for c in args.configs.split(",")} - set(CONFIGS))
    if unknown:
        parser.error(f"unknown configurations {', '.join(unknown)}; valid: {', '.join(CONFIGS)}")
    print(f"{'case':<14} {'config':<22} {'infer ms':>9} {'train ms':>9} {'first s':>8} {'err infer':>9} {'err grad':>9}")
    for case in args.cases.split(","):
        for config in args.configs.split(","):
            record = _in_own_process(case, config, args)
            print(_row(record))
            if args.json:
                with open(args.json, "a") as out:
                    out.write(json.dumps(record) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
