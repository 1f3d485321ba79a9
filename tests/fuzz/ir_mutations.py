"""A malformed-IR fuzzer for `permalloy-opt`.

Every `.mlir` file under `tests/filecheck/` (split on `// -----`) is a seed
input. A run takes one input, applies one seeded random mutation (a line
deleted, duplicated or swapped, an integer or a size changed, a type or dtype
changed, an SSA value or a symbol renamed, an attribute dropped, an op renamed
to another op of its dialect, the text truncated) and runs `permalloy-opt` on
it in this process with one command line: no pipeline, one pass alone, a
default pipeline, or a kernel target on buffer-level input.

`permalloy-opt` must never end in a Python traceback: a run passes when the
tool exits 0, or exits non-zero after printing a message; it fails when an
exception escapes the tool or a traceback is printed. A failure is classified
by the exception and the innermost permalloy frame that raised it.

    python -m tests.fuzz.ir_mutations --runs 2000 --seed 0
    python -m tests.fuzz.ir_mutations --replay 1234 --seed 0

A run is fully determined by (seed, run index): `--replay` rebuilds it, prints
the mutated input and the command line, and runs it again with the traceback
shown. `--shrink` first puts unmutated lines back and deletes lines while the
failure class persists.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import difflib
import io
import random
import re
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from permalloy.pipeline import (
    BUFFER_LEVEL,
    FUSION,
    LOOP_LEVEL,
    TENSOR_LEVEL,
    default_pipeline,
    pipeline_text,
)
from permalloy.targets import triton

from .compare import time_limit

CORPUS_ROOT = Path(__file__).resolve().parents[1] / "filecheck"
SPLIT_MARKER = re.compile(r"^// -----\s*$", re.MULTILINE)

# ---------------------------------------------------------------------------
# The corpus
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """One chunk of a corpus file, without its comment lines."""

    path: str
    """The file, relative to `tests/filecheck/`."""
    chunk: int
    """The chunk's index in the file (split on `// -----`)."""
    lines: tuple[str, ...]

    @property
    def level(self) -> str:
        """`buffer`, `loop` or `ptensor`: the lowest level the chunk uses."""
        text = "\n".join(self.lines)
        if "buffer." in text:
            return "buffer"
        if "loop." in text:
            return "loop"
        return "ptensor"


def _strip_comments(text: str) -> tuple[str, ...]:
    return tuple(
        line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("//")
    )


@cache
def corpus() -> tuple[Source, ...]:
    """Every chunk of every `.mlir` file under `tests/filecheck/` that holds IR."""
    sources = []
    for path in sorted(CORPUS_ROOT.rglob("*.mlir")):
        if "Output" in path.parts:
            continue
        relative = str(path.relative_to(CORPUS_ROOT))
        for index, chunk in enumerate(SPLIT_MARKER.split(path.read_text())):
            lines = _strip_comments(chunk)
            if lines:
                sources.append(Source(relative, index, lines))
    return tuple(sources)


# ---------------------------------------------------------------------------
# Mutations
# ---------------------------------------------------------------------------

Lines = list[str]
Mutator = Callable[[Lines, random.Random], Lines | None]
"""Mutates a copy of the lines, or gives None when it does not apply."""

INTEGER = re.compile(r"(?<![\w%@#.])-?\d+(?![\w.])")
DTYPES = ("f16", "bf16", "f32", "f64", "i1", "i8", "i32", "i64", "ui8", "index")
DTYPE = re.compile(r"\b(" + "|".join(DTYPES) + r")\b")
SHAPE = re.compile(r"\[([^\[\]]*)\]")
TYPE_NAMES = ("!ptensor.tensor", "!buffer.buffer", "tensor", "memref")
SSA = re.compile(r"%[\w.$-]+")
SYMBOL = re.compile(r"@[\w.$-]+")
ATTRIBUTE_ENTRY = re.compile(r"[\w.]+\s*=\s*(\"[^\"]*\"|#?[\w.]+(<[^<>]*>)?|\[[^\[\]]*\]|-?\d+(\.\d+)?(\s*:\s*\w+)?)\s*,?\s*")
OP_NAME = re.compile(r"\b(ptensor|loop|buffer|sym|arith|math|func)\.([a-z_][a-z0-9_]*)\b")
SIZE_WORDS = ("0", "1", "2", "3", "7", "8", "64", "s0", "s1", "s9", "-1", "d0", "r0", "s0 + 1")


def _pick_line(lines: Lines, rng: random.Random, pattern: re.Pattern[str] | None = None) -> int | None:
    candidates = [i for i, line in enumerate(lines) if pattern is None or pattern.search(line)]
    return rng.choice(candidates) if candidates else None


def _replace_match(line: str, pattern: re.Pattern[str], rng: random.Random, new: Callable[[re.Match[str]], str]) -> str:
    matches = list(pattern.finditer(line))
    match = rng.choice(matches)
    return line[: match.start()] + new(match) + line[match.end() :]


def delete_line(lines: Lines, rng: random.Random) -> Lines | None:
    """One line removed."""
    index = _pick_line(lines, rng)
    return None if index is None else lines[:index] + lines[index + 1 :]


def duplicate_line(lines: Lines, rng: random.Random) -> Lines | None:
    """One line repeated after itself."""
    index = _pick_line(lines, rng)
    return None if index is None else lines[: index + 1] + lines[index:]


def swap_lines(lines: Lines, rng: random.Random) -> Lines | None:
    """Two lines (usually neighbours) exchanged."""
    if len(lines) < 2:
        return None
    first = rng.randrange(len(lines) - 1)
    second = first + 1 if rng.random() < 0.7 else rng.randrange(len(lines))
    lines[first], lines[second] = lines[second], lines[first]
    return lines


def change_integer(lines: Lines, rng: random.Random) -> Lines | None:
    """An integer literal replaced by a nearby, zero, negative or large one."""
    index = _pick_line(lines, rng, INTEGER)
    if index is None:
        return None

    def new(match: re.Match[str]) -> str:
        value = int(match.group())
        return str(rng.choice((0, 1, -1, value + 1, value - 1, value * 2, 2**31, -(2**40), 3)))

    lines[index] = _replace_match(lines[index], INTEGER, rng, new)
    return lines


def change_size(lines: Lines, rng: random.Random) -> Lines | None:
    """One size of a shape `[...]` replaced, added or removed."""
    index = _pick_line(lines, rng, SHAPE)
    if index is None:
        return None

    def new(match: re.Match[str]) -> str:
        sizes = [s.strip() for s in match.group(1).split(",") if s.strip()]
        action = rng.randrange(3)
        if action == 0 and sizes:
            sizes[rng.randrange(len(sizes))] = rng.choice(SIZE_WORDS)
        elif action == 1:
            sizes.insert(rng.randrange(len(sizes) + 1), rng.choice(SIZE_WORDS))
        elif sizes:
            del sizes[rng.randrange(len(sizes))]
        return "[" + ", ".join(sizes) + "]"

    lines[index] = _replace_match(lines[index], SHAPE, rng, new)
    return lines


def change_dtype(lines: Lines, rng: random.Random) -> Lines | None:
    """One element type replaced by another."""
    index = _pick_line(lines, rng, DTYPE)
    if index is None:
        return None
    lines[index] = _replace_match(lines[index], DTYPE, rng, lambda m: rng.choice(DTYPES))
    return lines


def change_type(lines: Lines, rng: random.Random) -> Lines | None:
    """One type constructor replaced by another (`!ptensor.tensor` by `!buffer.buffer`, ...)."""
    pattern = re.compile("|".join(re.escape(name) + "(?=<)" for name in TYPE_NAMES))
    index = _pick_line(lines, rng, pattern)
    if index is None:
        return None
    lines[index] = _replace_match(lines[index], pattern, rng, lambda m: rng.choice(TYPE_NAMES))
    return lines


def rename_ssa(lines: Lines, rng: random.Random) -> Lines | None:
    """One use or definition of an SSA value renamed (to another value or a new name)."""
    index = _pick_line(lines, rng, SSA)
    if index is None:
        return None
    names = sorted({m.group() for line in lines for m in SSA.finditer(line)})
    lines[index] = _replace_match(lines[index], SSA, rng, lambda m: rng.choice([*names, "%fresh"]))
    return lines


def rename_symbol(lines: Lines, rng: random.Random) -> Lines | None:
    """One symbol reference or definition renamed."""
    index = _pick_line(lines, rng, SYMBOL)
    if index is None:
        return None
    names = sorted({m.group() for line in lines for m in SYMBOL.finditer(line)})
    lines[index] = _replace_match(lines[index], SYMBOL, rng, lambda m: rng.choice([*names, "@missing"]))
    return lines


def drop_attribute(lines: Lines, rng: random.Random) -> Lines | None:
    """One `name = value` entry of an attribute dictionary or property list removed."""
    index = _pick_line(lines, rng, ATTRIBUTE_ENTRY)
    if index is None:
        return None
    lines[index] = _replace_match(lines[index], ATTRIBUTE_ENTRY, rng, lambda m: "")
    return lines


@cache
def dialect_op_names() -> dict[str, tuple[str, ...]]:
    """The op names (without the dialect prefix) of each dialect, by dialect."""
    from permalloy.dialects import all_dialects

    names: dict[str, tuple[str, ...]] = {}
    for name, factory in all_dialects().items():
        ops = tuple(sorted(op.name.split(".", 1)[1] for op in factory().operations))
        names[name] = ops
    return names


def change_op_name(lines: Lines, rng: random.Random) -> Lines | None:
    """One op renamed to another op of the same dialect."""
    index = _pick_line(lines, rng, OP_NAME)
    if index is None:
        return None

    def new(match: re.Match[str]) -> str:
        dialect = match.group(1)
        others = dialect_op_names().get(dialect) or (match.group(2),)
        return f"{dialect}.{rng.choice(others)}"

    lines[index] = _replace_match(lines[index], OP_NAME, rng, new)
    return lines


def truncate(lines: Lines, rng: random.Random) -> Lines | None:
    """The text cut at a random character."""
    text = "\n".join(lines)
    if len(text) < 2:
        return None
    return text[: rng.randrange(1, len(text))].split("\n")


MUTATIONS: dict[str, Mutator] = {
    "delete-line": delete_line,
    "duplicate-line": duplicate_line,
    "swap-lines": swap_lines,
    "change-integer": change_integer,
    "change-size": change_size,
    "change-dtype": change_dtype,
    "change-type": change_type,
    "rename-ssa": rename_ssa,
    "rename-symbol": rename_symbol,
    "drop-attribute": drop_attribute,
    "change-op-name": change_op_name,
    "truncate": truncate,
}
"""Every mutation, by name."""

# ---------------------------------------------------------------------------
# Command lines
# ---------------------------------------------------------------------------

SINGLE_PASSES = (
    "canonicalize",
    "cse",
    "dce",
    "convert-ptensor-to-loop",
    "split-reductions",
    "fuse-loops",
    "convert-loop-to-buffer",
    "plan-memory",
)
PIPELINES = (
    pipeline_text(default_pipeline()),
    pipeline_text(default_pipeline(target="triton")),
    pipeline_text([*TENSOR_LEVEL, *LOOP_LEVEL]),
    pipeline_text([*triton.TARGET.loop_passes, *FUSION, *BUFFER_LEVEL]),
    pipeline_text([*FUSION, *BUFFER_LEVEL]),
)
KERNEL_TARGETS = ("llvm", "triton")


def command_lines(level: str) -> list[tuple[str, ...]]:
    """The options runs of an input at `level` are given (the input file comes first)."""
    argvs: list[tuple[str, ...]] = [()]
    argvs += [("-p", name) for name in SINGLE_PASSES]
    argvs += [("-p", text) for text in PIPELINES]
    if level == "buffer":
        argvs += [("-t", target) for target in KERNEL_TARGETS]
        argvs += [("-p", "plan-memory", "-t", target) for target in KERNEL_TARGETS]
    else:
        argvs += [("-p", PIPELINES[0], "-t", "llvm"), ("-p", PIPELINES[1], "-t", "triton")]
    return argvs


# ---------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One mutated input and one command line, determined by (seed, index)."""

    seed: int
    index: int
    level: str | None
    source: Source
    mutation: str
    text: str
    options: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.source.path}#{self.source.chunk} {self.mutation} permalloy-opt {' '.join(map(_quote, self.options))}"

    def replay_command(self) -> str:
        level = f" --level {self.level}" if self.level else ""
        return f"python -m tests.fuzz.ir_mutations --replay {self.index} --seed {self.seed}{level}"


def _quote(word: str) -> str:
    return word if re.fullmatch(r"[\w.,=/-]+", word) else f"'{word}'"


def make_run(seed: int, index: int, level: str | None = None) -> Run:
    """The run `index` of the runs of `seed` (on inputs at `level` only, if given)."""
    rng = random.Random(f"ir-mutations:{seed}:{index}" + (f":{level}" if level else ""))
    sources = [s for s in corpus() if level in (None, s.level)]
    source = sources[rng.randrange(len(sources))]
    names = list(MUTATIONS)
    for _ in range(20):
        mutation = rng.choice(names)
        mutated = MUTATIONS[mutation](list(source.lines), rng)
        if mutated is not None and mutated != list(source.lines):
            break
    else:
        mutation, mutated = "none", list(source.lines)
    options = rng.choice(command_lines(source.level))
    return Run(seed, index, level, source, mutation, "\n".join(mutated) + "\n", options)


@dataclass
class Outcome:
    """What one invocation of the tool did."""

    status: int | None
    """The exit status, or None when an exception escaped the tool."""
    output: str
    error: BaseException | None = None
    failure: str | None = None
    """The failure class (None when the run passed)."""
    trace: str = field(default="", repr=False)

    @property
    def passed(self) -> bool:
        return self.failure is None


@cache
def _input_file() -> Path:
    return Path(tempfile.mkdtemp(prefix="permalloy-ir-fuzz-")) / "input.mlir"


def run_tool(text: str, options: tuple[str, ...]) -> Outcome:
    """`permalloy-opt` on `text` with `options`, in this process, its output captured."""
    from permalloy.tools.opt import main

    path = _input_file()
    path.write_text(text)
    output = io.StringIO()
    status: int | None = None
    error: BaseException | None = None
    trace = ""
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output), time_limit(RUN_SECONDS, RunTimeout):
        try:
            main([str(path), *options])
        except SystemExit as exit_:
            status = exit_.code if isinstance(exit_.code, int) else 1
        except RecursionError as exception:
            error, trace = exception, "RecursionError"
        except Exception as exception:  # noqa: BLE001 - the outcome records it
            error, trace = exception, traceback.format_exc()
    return classify(Outcome(status, output.getvalue(), error, trace=trace))


RUN_SECONDS = 20
"""A run taking longer fails as a `RunTimeout` (the tool hangs on its input)."""


class RunTimeout(Exception):
    """A run went past `RUN_SECONDS`."""


def classify(outcome: Outcome) -> Outcome:
    """The outcome with its failure class: an escaped exception, a printed traceback,
    or a non-zero exit without a message."""
    if outcome.error is not None:
        outcome.failure = f"{type(outcome.error).__name__} at {_raising_frame(outcome.error)}"
    elif "Traceback (most recent call last)" in outcome.output:
        outcome.failure = "printed-traceback"
    elif outcome.status not in (0, None) and not outcome.output.strip():
        outcome.failure = "silent-exit"
    return outcome


def _raising_frame(error: BaseException) -> str:
    """`module:function` of the innermost permalloy frame of the error's traceback
    (or the innermost frame when none is permalloy's)."""
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if "/permalloy/" in f.filename and "/tools/opt.py" not in f.filename]
    frame = (ours or frames or [None])[-1]
    if frame is None:
        return "?"
    module = frame.filename.split("/permalloy/", 1)[-1] if "/permalloy/" in frame.filename else Path(frame.filename).name
    return f"{module}:{frame.name}"


def execute(run: Run) -> Outcome:
    """The outcome of one run."""
    return run_tool(run.text, run.options)


def iterate_runs(seed: int, count: int, start: int = 0, level: str | None = None) -> Iterator[Run]:
    """The runs `start` to `start + count - 1` of `seed`."""
    for index in range(start, start + count):
        yield make_run(seed, index, level)


# ---------------------------------------------------------------------------
# Shrinking
# ---------------------------------------------------------------------------


def shrink(run: Run, failure: str, budget: int = 300) -> str:
    """A smaller input failing with the same class: unmutated lines put back, then
    lines deleted one at a time, while the failure persists."""
    original = list(run.source.lines)
    lines = run.text.rstrip("\n").split("\n")
    tries = 0

    def fails(candidate: Lines) -> bool:
        nonlocal tries
        tries += 1
        return run_tool("\n".join(candidate) + "\n", run.options).failure == failure

    lines = _restore_original(lines, original, fails)
    index = 0
    while index < len(lines) and tries < budget:
        candidate = lines[:index] + lines[index + 1 :]
        if candidate and fails(candidate):
            lines = candidate
        else:
            index += 1
    return "\n".join(lines) + "\n"


def _restore_original(lines: Lines, original: Lines, fails: Callable[[Lines], bool]) -> Lines:
    """`lines` with each block that differs from `original` put back where the
    failure persists without the change."""
    matcher = difflib.SequenceMatcher(a=lines, b=original, autojunk=False)
    for tag, a0, a1, b0, b1 in reversed(matcher.get_opcodes()):
        if tag == "equal":
            continue
        candidate = lines[:a0] + original[b0:b1] + lines[a1:]
        if fails(candidate):
            lines = candidate
    return lines


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def summarize(failures: dict[str, list[Run]], runs: int, seconds: float) -> str:
    """Failures by class, each with its first run and the command replaying it."""
    failed = sum(len(found) for found in failures.values())
    text = [f"ir-mutations: {runs} runs, {runs - failed} passed, {failed} failed, {seconds:.0f} s"]
    for failure, found in sorted(failures.items(), key=lambda item: -len(item[1])):
        first = found[0]
        text.append(f"  {len(found):5d}  {failure}")
        text.append(f"         e.g. {first.describe()}")
        text.append(f"         {first.replay_command()}")
    return "\n".join(text)


def fuzz(seed: int, count: int, start: int = 0, level: str | None = None, verbose: bool = False) -> dict[str, list[Run]]:
    """The failing runs of `count` runs of `seed`, by failure class."""
    failures: dict[str, list[Run]] = collections.defaultdict(list)
    for run in iterate_runs(seed, count, start, level):
        outcome = execute(run)
        if outcome.failure:
            failures[outcome.failure].append(run)
            if verbose:
                print(f"run {run.index}: {outcome.failure}: {run.describe()}", file=sys.stderr, flush=True)
    return failures


def replay(seed: int, index: int, level: str | None, do_shrink: bool) -> int:
    """Print run `index` of `seed`, run it and show its traceback, if any."""
    run = make_run(seed, index, level)
    outcome = execute(run)
    text = run.text
    if outcome.failure and do_shrink:
        text = shrink(run, outcome.failure)
    path = Path(tempfile.gettempdir()) / f"ir-fuzz-{seed}-{index}.mlir"
    path.write_text(text)
    print(f"// {run.describe()}\n{text}")
    print(f"// reproduce: permalloy-opt {path} {' '.join(map(_quote, run.options))}")
    print(outcome.output, end="")
    if outcome.failure:
        print(f"// failure: {outcome.failure}\n{outcome.trace}")
        return 1
    print(f"// passed (exit status {outcome.status})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.ir_mutations", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000, help="how many runs (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="the seed of the runs (default 0)")
    parser.add_argument("--start", type=int, default=0, help="the index of the first run")
    parser.add_argument("--level", choices=("ptensor", "loop", "buffer"), help="mutate inputs at this level only")
    parser.add_argument("--replay", type=int, metavar="INDEX", help="replay one run and show its traceback")
    parser.add_argument("--shrink", action="store_true", help="with --replay, shrink the failing input")
    parser.add_argument("--verbose", action="store_true", help="a line per failing run")
    args = parser.parse_args(argv)
    if args.replay is not None:
        return replay(args.seed, args.replay, args.level, args.shrink)
    started = time.perf_counter()
    failures = fuzz(args.seed, args.runs, args.start, args.level, args.verbose)
    print(summarize(failures, args.runs, time.perf_counter() - started))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
