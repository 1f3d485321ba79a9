"""
permalloy's log channels: Python `logging` loggers under `permalloy.*`, silent
by default, switched on by `PERMALLOY_LOGS` in the style of `TORCH_LOGS`:

    PERMALLOY_LOGS=fusion,output_code,fallback,compile_time python train.py
    PERMALLOY_LOGS=all          every channel
    PERMALLOY_LOGS=+fusion      a channel's DEBUG records too (every inline and refusal)

The backend reads the variable each time it compiles a graph
(`configure_from_environment`): the channels it names log at INFO (DEBUG with
`+`) to standard error, the others are silenced; without the variable the
loggers are left as the program configured them, so `logging` alone can turn
a channel on (`logging.getLogger("permalloy.fusion").setLevel(logging.INFO)`).
What each channel says is `CHANNELS`; work that only a channel needs (fusion
decisions, kernel sources) is done only when its logger is enabled.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from typing import Any

ENVIRONMENT_VARIABLE = "PERMALLOY_LOGS"

CHANNELS: dict[str, str] = {
    "fusion": "fuse-loops' decisions as it makes them: the loop ops each kernel groups, producers and "
    "consumers left in different kernels with the rule that kept them apart (and, with +fusion, "
    "every inline and every refusal to inline)",
    "output_code": "the generated kernels and host program of each graph",
    "fallback": "ATen ops run with torch (ptensor.fallback) with the reason each fell back, and graphs run eagerly",
    "recompiles": "a graph compiled again for the same code (Dynamo's guards failed)",
    "compile_time": "a summary of each graph's compile time, stage by stage",
}
"""Every channel, by name: its logger is `permalloy.<name>`."""


_ROOT = logging.getLogger("permalloy")
if _ROOT.level == logging.NOTSET:
    # Silent by default, whatever the root logger's level: a channel speaks
    # only when PERMALLOY_LOGS or the program sets its level.
    _ROOT.setLevel(logging.WARNING)


class LogSettingError(ValueError):
    """A `PERMALLOY_LOGS` value naming a channel that does not exist."""


def logger(channel: str) -> logging.Logger:
    """The logger of a channel of `CHANNELS`."""
    assert channel in CHANNELS, channel
    return logging.getLogger(f"permalloy.{channel}")


def enabled(channel: str, level: int = logging.INFO) -> bool:
    """Whether a channel logs records of `level`."""
    return logger(channel).isEnabledFor(level)


def parse_channels(text: str) -> dict[str, int]:
    """The channels a `PERMALLOY_LOGS` value turns on, with their levels;
    raises `LogSettingError`, listing the valid names, for an unknown one."""
    levels: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        verbose = item.startswith("+")
        name = item.removeprefix("+")
        level = logging.DEBUG if verbose else logging.INFO
        if name == "all":
            levels.update({channel: min(levels.get(channel, level), level) for channel in CHANNELS})
        elif name in CHANNELS:
            levels[name] = min(levels.get(name, level), level)
        else:
            raise LogSettingError(
                f"unknown {ENVIRONMENT_VARIABLE} channel {name!r}; valid channels: "
                f"{', '.join(CHANNELS)}, or 'all' for every one ('+name' adds DEBUG records)"
            )
    return levels


class _ChannelHandler(logging.StreamHandler):
    """The standard-error handler `configure` puts on the `permalloy` logger."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.setFormatter(logging.Formatter("[%(name)s] %(message)s"))


def configure(text: str) -> None:
    """Turn on the channels a `PERMALLOY_LOGS` value names and silence the others."""
    levels = parse_channels(text)
    for channel in CHANNELS:
        logger(channel).setLevel(levels.get(channel, logging.WARNING))
    parent = _ROOT
    handlers = [h for h in parent.handlers if isinstance(h, _ChannelHandler)]
    if levels and not handlers:
        parent.addHandler(_ChannelHandler())
    elif not levels:
        for handler in handlers:
            parent.removeHandler(handler)


def configure_from_environment() -> None:
    """Apply `PERMALLOY_LOGS` when it is set; raises `LogSettingError`."""
    text = os.environ.get(ENVIRONMENT_VARIABLE)
    if text is not None:
        configure(text)


# -- what the backend logs ------------------------------------------------------


def log_compiled_graph(stats: Any, details: Any) -> None:
    """The records of one compiled graph (`GraphStats`, and its
    `GraphDetails` or None) on the fallback, output_code and compile_time
    channels; the fusion channel logs as `fuse-loops` decides."""
    fallback = logger("fallback")
    for op, reason in zip(stats.fallback_ops, stats.fallback_reasons):
        fallback.info("%s runs with torch: %s", op, reason)
    if details is not None and details.sources:
        code = logger("output_code")
        for name, source in details.kernel_sources.items():
            code.info("kernel %s:\n%s", name, source)
        code.info("host program:\n%s", details.host_source)
    if enabled("compile_time"):
        logger("compile_time").info("%s", compile_time_summary(stats))


def compile_time_summary(stats: Any) -> str:
    """One graph's compile time in a line: its total, then its stages."""
    times = stats.compile_times
    stages = [("aot_autograd", times.aot_autograd), ("import_fx", times.import_fx)]
    stages.append(("passes", sum(times.passes.values())))
    stages += [
        (name, getattr(times, name))
        for name in (
            "kernel_emission", "kernel_compilation", "kernel_loading", "autotuning",
            "host_program", "cache_lookup", "cache_store",
        )
    ]
    shown = ", ".join(f"{name} {seconds:.3f}" for name, seconds in stages if seconds)
    slowest = sorted(times.passes.items(), key=lambda item: -item[1])[:3]
    passes = ", ".join(f"{name} {seconds:.3f}" for name, seconds in slowest)
    return (
        f"graph compiled in {stats.compile_seconds:.3f} s ({stats.target}, cache {stats.cache}, "
        f"{stats.kernels} kernels): {shown} s; slowest passes: {passes} s"
    )


def log_eager_graph(reason: str) -> None:
    """A graph that runs eagerly as a whole."""
    logger("fallback").info("a graph runs eagerly: %s", reason)


def log_recompile(graph: Any) -> None:
    """A Dynamo graph compiled again for code compiled before (its frame's
    compile id counts the compilations of the frame)."""
    compile_id = getattr(graph, "meta", {}).get("dynamo_compile_id")
    count = getattr(compile_id, "frame_compile_id", None)
    if count and enabled("recompiles"):
        logger("recompiles").info(
            "compiling %s again (Dynamo compile %s): its earlier compilations' guards failed; "
            "TORCH_LOGS=recompiles says which",
            _code_location(graph),
            compile_id,
        )


def _code_location(graph: Any) -> str:
    """`fn at file:line`, from the stack trace of the graph's first traced op."""
    for node in graph.graph.nodes:
        trace = node.meta.get("stack_trace")
        if trace:
            lines = [line.strip() for line in trace.splitlines() if line.strip().startswith("File ")]
            found = re.match(r'File "(.*)", line (\d+), in (.*)', lines[-1]) if lines else None
            if found:
                return f"{found.group(3)} at {found.group(1)}:{found.group(2)}"
    return "a graph"
