"""
`permalloy-bench`: a suite of models under eager PyTorch, Inductor and
permalloy, side by side. The `zoo` suite (the default) holds twelve small
blocks; the `models` suite holds whole models of every common family.

    permalloy-bench                                  # every zoo case, every backend, on CPU
    permalloy-bench --suite models --device cuda     # the broad model suite on a GPU
    permalloy-bench --suite models --profile --cases resnet,bert
                                                     # host vs kernel time, top kernels
    permalloy-bench --quick                          # tiny sizes, few repetitions (CI)
    permalloy-bench --cases layer_norm,mlp --backends eager,permalloy
    permalloy-bench --device cuda --json results.json --plot speedups.png
    permalloy-bench --quick --json -                 # JSON only, on stdout
    permalloy-bench --threads 1                      # steadier on a busy machine
    permalloy-bench --train                          # training steps: forward + backward
    permalloy-bench --suite models --cases gpt2,resnet --backends eager,permalloy --warm-compile
                                                     # compile time by stage, cold and warm

Progress goes to stderr, the table to stdout. `--json -` prints only the JSON
on stdout and no progress.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
from collections.abc import Callable, Sequence

from permalloy.tools.bench.backends import BACKENDS, BenchError, check_target_options, parse_target_option
from permalloy.tools.bench.profiles import DEVICES, profile_for
from permalloy.tools.bench.progress import Progress
from permalloy.tools.bench.results import BenchConfig, BenchReport
from permalloy.tools.bench.suites import SUITES, make_suite


def build_parser() -> argparse.ArgumentParser:
    """The command line of permalloy-bench."""
    parser = argparse.ArgumentParser(
        prog="permalloy-bench",
        description="Time a suite of models under eager PyTorch, Inductor and permalloy.",
        epilog=f"suites: {', '.join(SUITES)} (--list shows a suite's cases); "
        f"backends: {', '.join(BACKENDS)}",
    )
    parser.add_argument(
        "--suite",
        default=SUITES[0],
        help=f"which cases: {' or '.join(SUITES)} (whole models of every family); "
        f"default {SUITES[0]}",
    )
    parser.add_argument(
        "--device",
        default="cpu",
        help=f"where to run: {' or '.join(DEVICES)} (cuda runs larger sizes); default cpu",
    )
    parser.add_argument(
        "--cases", default=None, metavar="A,B", help="comma-separated cases (default: all)"
    )
    parser.add_argument(
        "--backends",
        default=",".join(BACKENDS),
        metavar="A,B",
        help=f"comma-separated backends among {', '.join(BACKENDS)} (default: all)",
    )
    parser.add_argument(
        "--target-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an option of permalloy's kernel target, repeatable (--target-option "
        "depthwise_convolutions=measured); a bad name or value lists the valid ones",
    )
    parser.add_argument(
        "--quick", action="store_true", help="tiny sizes and few repetitions, for CI"
    )
    parser.add_argument(
        "--json",
        default=None,
        metavar="FILE",
        help="write the results as JSON to FILE ('-': to stdout, with no table and no progress)",
    )
    parser.add_argument(
        "--plot", default=None, metavar="FILE.png", help="draw the speedups (needs matplotlib)"
    )
    parser.add_argument(
        "--threads",
        default=None,
        metavar="N",
        help="CPU threads of torch and of permalloy's kernels (default: torch's); "
        "1 gives steadier timings on a busy machine",
    )
    parser.add_argument(
        "--train",
        action="store_true",
        help="time training steps (forward, a fixed loss, backward; models in train mode) "
        "and compare gradients with eager's",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also profile each case: host time per call (back-to-back calls minus summed "
        "kernel time), generated kernels' time by kind (pointwise, reductions, templates) and "
        "each compiler's ten most expensive kernels (every kernel in the JSON)",
    )
    parser.add_argument(
        "--compile-times",
        action="store_true",
        help="also print permalloy's compile time per case, stage by stage (AOTAutograd, "
        "import, passes, kernel emission, compilation and tuning, host program, cache)",
    )
    parser.add_argument(
        "--float64-reference",
        action="store_true",
        help="also run each case's model in float64 and report each backend's relative error against it "
        "(outputs; with --train, gradients), eager float32's included: which of two backends that differ is "
        "the closer to the exact result",
    )
    parser.add_argument(
        "--warm-compile",
        action="store_true",
        help="also compile each case in a new process with the caches the first compile "
        "filled, permalloy and Inductor each, and report those warm compiles (implies --compile-times)",
    )
    parser.add_argument(
        "--cold-process",
        action="store_true",
        help="also compile each case in a new process with empty caches, as that process's first "
        "compile, permalloy and Inductor each, and report those cold compiles, which no backend run "
        "before them in the bench's process helped (implies --compile-times)",
    )
    parser.add_argument(
        "--merge",
        default=None,
        metavar="A.json,B.json",
        help="run nothing: print the table of saved reports of one configuration "
        "(a suite split over several runs with --cases) as one run's; --json saves the merge",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="print to standard error the permalloy.explain report (graph breaks, fallbacks, "
        "kernels, loop ops fusion kept apart and why) of each case permalloy fails or runs "
        "slower than Inductor",
    )
    parser.add_argument("--list", action="store_true", help="list the suite's cases and exit")
    return parser


def parse_list(
    text: str, valid: Sequence[str], what: str, accepts: Callable[[str], bool] | None = None
) -> tuple[str, ...]:
    """Comma-separated names, each one of `valid` (or that `accepts` takes),
    duplicates dropped, in order."""
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise BenchError(f"empty {what} name in {text!r}; valid {what}s: {', '.join(valid)}")
    unknown = [n for n in names if n not in valid and not (accepts and accepts(n))]
    if unknown:
        listed = ", ".join(repr(n) for n in unknown)
        raise BenchError(f"unknown {what} {listed}; valid {what}s: {', '.join(valid)}")
    return tuple(dict.fromkeys(names))


def parse_config(args: argparse.Namespace) -> BenchConfig:
    """The run the flags describe; a `BenchError` names what is wrong and what is valid."""
    if args.device not in DEVICES:
        raise BenchError(f"unknown device {args.device!r}; valid devices: {', '.join(DEVICES)}")
    suite = make_suite(args.suite)
    names = suite.names()
    cases = parse_list(args.cases, names, "case", suite.accepts) if args.cases is not None else names
    backends = parse_list(args.backends, BACKENDS, "backend")
    ordered = tuple(b for b in BACKENDS if b in backends)
    if args.plot is not None:
        from permalloy.tools.bench.plot import plot_baseline, require_matplotlib

        require_matplotlib()
        plot_baseline(ordered)
    for flag, path in (("--json", args.json), ("--plot", args.plot)):
        check_output_path(flag, path)
    profile = profile_for(args.device, args.quick)
    threads = parse_threads(args.threads)
    target_options = tuple(parse_target_option(text) for text in args.target_option)
    if target_options and "permalloy" in ordered:
        check_target_options(args.device, target_options)
    return BenchConfig(
        args.device,
        cases,
        ordered,
        profile,
        threads,
        train=args.train,
        suite=args.suite,
        profile_kernels=args.profile,
        compile_times=args.compile_times or args.warm_compile or args.cold_process,
        warm_compile=args.warm_compile,
        cold_process=args.cold_process,
        float64_reference=args.float64_reference,
        target_options=target_options,
        verbose=args.verbose,
    )


def check_output_path(flag: str, path: str | None) -> None:
    """Fail before the run, not after it, when an output file's folder is missing."""
    if path in (None, "-"):
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise BenchError(f"{flag} {path}: folder {folder} does not exist")


def parse_threads(text: str | None) -> int | None:
    """The `--threads` value: a positive integer, or None when not given."""
    if text is None:
        return None
    if not text.isdigit() or int(text) < 1:
        raise BenchError(f"--threads takes a positive integer, not {text!r}")
    return int(text)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark the flags describe; 0 on success, 2 on a bad flag, 1 on a set-up error."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.list:
            print(_listing(args.suite))
            return 0
        if args.merge is None:
            config = parse_config(args)
        else:
            check_output_path("--json", args.json)
    except BenchError as error:
        parser.error(str(error))
    if args.merge is not None:
        return _merge(args)
    json_to_stdout = args.json == "-"
    progress = Progress(None if json_to_stdout else sys.stderr, len(config.cases))
    try:
        report = _run(config, progress, quiet_stdout=json_to_stdout, json_path=None if json_to_stdout else args.json)
    except BenchError as error:
        print(f"permalloy-bench: error: {error}", file=sys.stderr)
        return 1
    _write_outputs(report, args, json_to_stdout)
    return 0


def _merge(args: argparse.Namespace) -> int:
    """Print (and with `--json`, save) the merge of the saved reports `--merge` names."""
    from permalloy.tools.bench.saved import load_report, merge_reports

    paths = [p.strip() for p in args.merge.split(",") if p.strip()]
    try:
        merged = merge_reports([load_report(p) for p in paths])
    except BenchError as error:
        print(f"permalloy-bench: error: {error}", file=sys.stderr)
        return 1
    _write_outputs(merged, args, json_to_stdout=args.json == "-")
    return 0


def _listing(suite_name: str) -> str:
    """The suite's cases, one a line with what each is."""
    suite = make_suite(suite_name)
    names = suite.names()
    width = max(len(n) for n in names)
    return "\n".join(f"{n.ljust(width)}  {suite.describe(n)}".rstrip() for n in names)


def _run(config: BenchConfig, progress: Progress, quiet_stdout: bool, json_path: str | None = None) -> BenchReport:
    """Run the benchmark; with `quiet_stdout` whatever it prints goes to stderr, so
    that stdout holds the JSON alone. With `json_path`, the JSON of the cases
    done so far is written there after each case, so that a run stopped before
    its end (a time limit) leaves what it measured."""
    from permalloy.tools.bench.runner import run_benchmark

    redirect = contextlib.redirect_stdout(sys.stderr) if quiet_stdout else contextlib.nullcontext()
    case_done = None if json_path is None else functools.partial(_write_json, path=json_path)
    with redirect:
        return run_benchmark(config, progress, case_done)


def _write_json(report: BenchReport, path: str) -> None:
    """The report's JSON at `path`, whole: written beside it, then renamed."""
    from permalloy.tools.bench.report import to_json

    scratch = f"{path}.partial"
    with open(scratch, "w", encoding="utf-8") as out:
        out.write(to_json(report) + "\n")
    os.replace(scratch, path)


def _write_outputs(report: BenchReport, args: argparse.Namespace, json_to_stdout: bool) -> None:
    """The JSON (file or stdout), the plot, and unless JSON goes to stdout, the table."""
    from permalloy.tools.bench.report import format_table, to_json

    if json_to_stdout:
        sys.stdout.write(to_json(report) + "\n")
    else:
        print(format_table(report))
        if args.json is not None:
            _write_json(report, args.json)
    if args.plot is not None:
        from permalloy.tools.bench.plot import write_plot

        write_plot(report, args.plot)


if __name__ == "__main__":
    sys.exit(main())
