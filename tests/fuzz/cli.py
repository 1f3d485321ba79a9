"""The fuzzer's command line: `python -m tests.fuzz --seeds 0:1000 ...`.

Runs every seed of a range, prints a summary of failures by class and, for
each class, the first failing graph as a pytest test (shrunk first with
`--shrink`). Exits with status 1 if any seed failed.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import os
import sys
import time
from collections.abc import Iterator

from .compare import BACKENDS, TARGETS, Outcome, run_case
from .graphs import generate


def parse_seeds(text: str) -> list[int]:
    """`A:B` (A to B-1) or a comma-separated list of seeds."""
    if ":" in text:
        start, stop = text.split(":")
        return list(range(int(start), int(stop)))
    return [int(seed) for seed in text.split(",")]


def prepare_target(target: str) -> None:
    """The Triton target on a machine without a GPU runs under Triton's interpreter."""
    if target == "triton":
        import torch

        if not torch.cuda.is_available():
            os.environ["TRITON_INTERPRET"] = "1"


def run_seed(job: tuple[int, str, str]) -> tuple[int, Outcome, float]:
    seed, backend, target = job
    prepare_target(target)
    start = time.perf_counter()
    try:
        outcome = run_case(generate(seed), backend, target)
    except Exception as error:  # noqa: BLE001 - a broken case must not end the run
        outcome = Outcome(f"fuzzer-error:{type(error).__name__}", str(error)[:2000])
    return seed, outcome, time.perf_counter() - start


def run_seeds(seeds: list[int], backend: str, target: str, jobs: int) -> Iterator[tuple[int, Outcome, float]]:
    """Each seed's outcome, in a pool of `jobs` worker processes (or in this one)."""
    work = [(seed, backend, target) for seed in seeds]
    if jobs <= 1:
        yield from map(run_seed, work)
        return
    context = multiprocessing.get_context("spawn")
    with context.Pool(jobs, maxtasksperchild=100) as pool:
        yield from pool.imap_unordered(run_seed, work)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--seeds", default="0:100", help="A:B or a comma-separated list (default 0:100)")
    parser.add_argument("--target", choices=TARGETS, default="llvm")
    parser.add_argument("--backend", choices=BACKENDS, default="permalloy")
    parser.add_argument("--shrink", action="store_true", help="shrink the first failure of each class")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--log", help="append one JSON line per seed to this file")
    parser.add_argument("--quiet", action="store_true", help="print no line per failing seed")
    args = parser.parse_args(argv)
    prepare_target(args.target)

    seeds = parse_seeds(args.seeds)
    by_class: dict[str, list[int]] = collections.defaultdict(list)
    first_detail: dict[str, str] = {}
    log = open(args.log, "a") if args.log else None  # noqa: SIM115
    started = time.perf_counter()
    for done, (seed, outcome, seconds) in enumerate(run_seeds(seeds, args.backend, args.target, args.jobs), 1):
        if log:
            record = {"seed": seed, "backend": args.backend, "target": args.target,
                      "failure": outcome.failure, "detail": outcome.detail[:500], "seconds": round(seconds, 2)}
            log.write(json.dumps(record) + "\n")
            log.flush()
        if outcome.failure:
            by_class[outcome.failure].append(seed)
            first_detail.setdefault(outcome.failure, outcome.detail)
            if not args.quiet:
                print(f"[{done}/{len(seeds)}] seed {seed}: {outcome.failure}", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - started
    if log:
        log.close()

    failed = sum(len(s) for s in by_class.values())
    name = args.backend if args.backend == "inductor" else f"{args.backend}-{args.target}"
    print(f"\n{name}: {len(seeds)} seeds, {len(seeds) - failed} passed, {failed} failed, {elapsed:.0f} s")
    for failure, failing in sorted(by_class.items(), key=lambda item: -len(item[1])):
        print(f"  {len(failing):5d}  {failure}  (seeds {', '.join(map(str, sorted(failing)[:12]))}{' ...' if len(failing) > 12 else ''})")
    for failure, failing in sorted(by_class.items()):
        print(f"\n== {failure}: first reproduction ==")
        print(reproduction(min(failing), failure, args.backend, args.target, args.shrink, first_detail[failure]))
    return 1 if failed else 0


def reproduction(seed: int, failure: str, backend: str, target: str, shrink: bool, detail: str) -> str:
    """The failing graph of `seed` as a pytest test, shrunk if asked."""
    from .repro import render_test
    from .shrink import shrink as shrink_graph

    graph = generate(seed)
    if shrink:
        graph = shrink_graph(graph, failure, backend, target)
    return f"# {detail.splitlines()[0] if detail else failure}\n" + render_test(graph, failure, backend, target)
