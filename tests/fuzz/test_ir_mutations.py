"""`permalloy-opt` on mutated IR never ends in a traceback, and unit tests of the
malformed-IR fuzzer itself (mutations, classification, shrinking).

A fixed set of runs (`SEED`, `RUNS`) is split into slices, one test each; a
failing slice lists each failing run with the command replaying it.
"""

from __future__ import annotations

import random

import pytest

from . import ir_mutations
from .ir_mutations import MUTATIONS, Outcome, classify, corpus, execute, make_run, run_tool, shrink

SEED = 0
RUNS = 2000
SLICE = 250


@pytest.mark.parametrize("start", range(0, RUNS, SLICE))
def test_mutated_ir_gives_messages_not_tracebacks(start: int) -> None:
    failing = []
    for run in ir_mutations.iterate_runs(SEED, SLICE, start):
        outcome = execute(run)
        if outcome.failure:
            failing.append(f"{outcome.failure}: {run.describe()}\n    {run.replay_command()}")
    assert not failing, "\n".join(failing)


# The fuzzer


def test_corpus_holds_every_level():
    levels = {source.level for source in corpus()}
    assert levels == {"ptensor", "loop", "buffer"}
    assert all(not line.lstrip().startswith("//") for source in corpus() for line in source.lines)


@pytest.mark.parametrize("index", range(0, 400, 37))
def test_runs_are_deterministic(index: int):
    assert make_run(SEED, index) == make_run(SEED, index)


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_each_mutation_changes_some_input(name: str):
    rng = random.Random(name)
    changed = 0
    for source in corpus()[:60]:
        mutated = MUTATIONS[name](list(source.lines), rng)
        changed += mutated is not None and mutated != list(source.lines)
    assert changed > 0


def test_every_mutation_is_used():
    used = {make_run(SEED, index).mutation for index in range(300)}
    assert used >= set(MUTATIONS)


def test_a_valid_input_passes_with_status_zero():
    outcome = run_tool("func.func @f() {\n  func.return\n}\n", ())
    assert outcome.passed and outcome.status == 0


def test_bad_input_passes_with_a_message():
    outcome = run_tool("func.func @f( {\n", ())
    assert outcome.passed and outcome.status == 1
    assert "error:" in outcome.output


def test_an_escaping_exception_is_a_failure_named_after_its_frame():
    try:
        {}["missing"]
    except KeyError as error:
        outcome = classify(Outcome(None, "", error))
    assert outcome.failure is not None and outcome.failure.startswith("KeyError at ")


def test_a_printed_traceback_is_a_failure():
    outcome = classify(Outcome(1, "Traceback (most recent call last):\n  ...\n"))
    assert outcome.failure == "printed-traceback"


def test_shrink_keeps_the_failure_and_puts_unmutated_lines_back(monkeypatch):
    run = next(r for r in ir_mutations.iterate_runs(SEED, 200) if r.mutation == "rename-ssa")

    def fake_tool(text: str, options: tuple[str, ...]) -> Outcome:
        failing = text != "\n".join(run.source.lines) + "\n"
        return Outcome(1, "", failure="fake" if failing else None)

    monkeypatch.setattr(ir_mutations, "run_tool", fake_tool)
    shrunk = shrink(run, "fake")
    assert fake_tool(shrunk, run.options).failure == "fake"
    assert len(shrunk.splitlines()) <= len(run.text.splitlines())
