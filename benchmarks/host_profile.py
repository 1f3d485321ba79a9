"""
Where the host's time goes in a compiled model's call: Python's profile of
back-to-back calls under Inductor and permalloy, side by side, for models
of the suite at a size where the host decides (`quick` on a GPU).

    python benchmarks/host_profile.py --device cuda --size quick bert gpt2

`permalloy-python` is permalloy with its Python host program
(`options={"host": "python"}`) where `permalloy` runs the native one where
the target has it. For each model it compiles every backend in one process, then prints each
backend's median time per back-to-back call (no synchronization between
calls) over `--rounds` rounds of 200 calls taken in turn, and writes the profiler's 30 most
expensive functions by own time to `--out/<backend>.txt`, every model's in one file.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time
from functools import partial
from pathlib import Path

import torch

from permalloy.tools.backend import permalloy_backend
from permalloy.tools.models import make_model

BACKENDS = {
    "inductor": "inductor",
    "permalloy": permalloy_backend,
    "permalloy-python": partial(permalloy_backend, options={"host": "python"}),
}


def per_call_us(fn, inputs, device: str, calls: int = 200, rounds: int = 7) -> float:
    """The median over `rounds` of the time per call of `calls` back-to-back calls."""
    times = []
    for _ in range(rounds):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn(*inputs)
        if device == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def profile_text(fn, inputs, calls: int = 300) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn(*inputs)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(30)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--size", default="quick")
    parser.add_argument("--out", default="host-profiles")
    parser.add_argument("--backends", default="eager,inductor,permalloy", help="among eager and " + ", ".join(BACKENDS))
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds of back-to-back calls")
    args = parser.parse_args()
    backends = args.backends.split(",")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"{'model':24s} " + " ".join(f"{b + ' us':>21s}" for b in backends) + "  perm/ind")
    for name in args.models:
        case = make_model(name, args.size, 0)
        model = case.model.to(args.device)
        inputs = tuple(i.to(args.device) if isinstance(i, torch.Tensor) else i for i in case.inputs)
        with torch.no_grad():
            torch._dynamo.reset()
            compiled = {}
            for backend in backends:
                fn = model if backend == "eager" else torch.compile(model, backend=BACKENDS[backend])
                for _ in range(3):
                    fn(*inputs)
                compiled[backend] = fn
            samples: dict[str, list[float]] = {backend: [] for backend in backends}
            for _ in range(args.rounds):  # interleaved, so that a slow spell of the machine hits every backend
                for backend, fn in compiled.items():
                    samples[backend].append(per_call_us(fn, inputs, args.device, rounds=1))
            row = {backend: statistics.median(times) for backend, times in samples.items()}
            for backend, fn in compiled.items():
                if backend != "eager":
                    with open(out / f"{backend}.txt", "a") as log:
                        log.write(f"==== {name}\n{profile_text(fn, inputs)}\n")
            torch._dynamo.reset()
        ratio = f"{row['inductor'] / row['permalloy']:.2f}x" if "inductor" in row and "permalloy" in row else "-"
        print(f"{name:24s} " + " ".join(f"{row[b]:21.1f}" for b in backends) + f"  {ratio}", flush=True)


if __name__ == "__main__":
    main()
