"""
What defines a kernel target, in one object.

A `TargetDescriptor` says everything the rest of permalloy needs to know about a
target: its name, the devices whose tensors its kernels run on (and for which
it is the default), the passes it adds to the default pipeline, how to make
its code generator for a torch.compile mode and the target's own options, the
extension of the source it emits (kernel dumps and `permalloy-opt -t`), the
errors it raises for a kernel it cannot translate, how the host program of
a compiled graph runs (a mode may wrap it, as `reduce-overhead` replays CUDA
graphs on GPU targets), and the settings of the libraries its programs call
(cuDNN's algorithm search on GPU targets).

Each target package defines its descriptor (`permalloy.targets.llvm.TARGET`)
without importing its code generator, and `permalloy.targets.registry` lists
the descriptors: the backend, the pipeline, `permalloy-opt` and the bench all
read that list, so a new target is one package and one line there.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from permalloy.targets import KernelTarget


class TargetOptionError(ValueError):
    """A target option with a name or value the target does not take."""


@dataclass(frozen=True)
class TargetOption:
    """One option of a target: what it does, and a check of its value that
    returns an error message, or None for a valid value."""

    description: str
    check: Callable[[Any], str | None]
    default: Any = None
    """The value a compile that does not give the option has, where the
    value chooses passes (`optional_passes`, `optional_buffer_passes`);
    None: no value, no pass."""


def one_of(*values: Any) -> Callable[[Any], str | None]:
    """A check that the value is one of `values`."""

    def check(value: Any) -> str | None:
        if value in values and type(value) in {type(v) for v in values}:
            return None
        return f"takes one of {', '.join(map(repr, values))}, got {value!r}"

    return check


def positive_int(value: Any) -> str | None:
    """A check that the value is an integer of at least 1."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return None
    return f"takes an integer of at least 1, got {value!r}"


def boolean(value: Any) -> str | None:
    """A check that the value is True or False."""
    return None if isinstance(value, bool) else f"takes True or False, got {value!r}"


def _unchanged(run: Callable[..., Any], mode: str, updated: tuple[int, ...] = ()) -> Callable[..., Any]:
    return run


def _no_errors() -> tuple[type[Exception], ...]:
    return ()


def _no_library_settings(options: Mapping[str, Any], library_ops: Collection[str] | None) -> None:
    return None


def _turned_on(
    optional: Mapping[str, Mapping[Any, str]], options: Mapping[str, Any], known: Mapping[str, TargetOption]
) -> tuple[str, ...]:
    """The passes of `optional` (by option name and value) that the values in
    `options`, or the `known` options' defaults, add."""
    values = {name: options.get(name, known[name].default if name in known else None) for name in optional}
    return tuple(by_value[values[name]] for name, by_value in optional.items() if values[name] in by_value)


@dataclass(frozen=True)
class TargetDescriptor:
    """A kernel target, as the backend, the pipeline, `permalloy-opt` and the
    bench see it."""

    name: str
    """The name `options={"target": ...}` and `permalloy-opt -t` use."""
    summary: str
    """One line for option listings: what the target generates."""
    make: Callable[..., KernelTarget]
    """`make(mode, **options)`: a fresh code generator for a torch.compile mode,
    importing the target's modules only when called."""
    devices: tuple[str, ...]
    """The torch device types whose tensors its kernels run on."""
    default_for: tuple[str, ...] = ()
    """The device types for which it is the target when the user names none."""
    tensor_passes: tuple[str, ...] = ()
    """Passes it adds after the clean-up of imported ptensor IR (fused graphs only)."""
    optional_passes: Mapping[str, Mapping[Any, str]] = field(default_factory=dict)
    """Its tensor-level passes that an option of its own adds, by option name
    and value: the pass, as pipeline text (a value not listed adds none)."""
    optional_buffer_passes: Mapping[str, Mapping[Any, str]] = field(default_factory=dict)
    """Its buffer-level passes that an option of its own adds (after its
    `buffer_passes`), by option name and value, as `optional_passes`."""
    loop_passes: tuple[str, ...] = ()
    """Passes it adds after the lowering to loops."""
    buffer_passes: tuple[str, ...] = ()
    """Passes it adds between the conversion to buffers and memory planning."""
    fusion_options: str = ""
    """Options of its `fuse-loops`, as pipeline text (`instruction-math=true`)."""
    atomic_scatters: bool = False
    """Whether its kernels combine a scatter's values with atomics, in an order
    that changes from run to run: with `torch.use_deterministic_algorithms`
    on, its pipeline leaves float scatters that sum or multiply to torch
    (`convert-ptensor-to-loop{deterministic-scatters=true}`)."""
    sort_limits: tuple[int, int] | None = None
    """The rows its kernels sort, as (most elements, most bits of an element):
    its pipeline lowers only those sorts to loops
    (`convert-ptensor-to-loop{sort-max-length=... sort-max-bits=...}`), the
    others run with torch; None takes the pass's defaults."""
    matmul_templates: bool = False
    """Whether its kernels tile matrix products (`analysis.contraction`): when
    a compile asks for it (its `matmul_templates` option), its fused
    pipelines lower half-precision products to contractions
    (`convert-ptensor-to-loop{matmul-templates=true}`), which fusion gives
    their prologues and epilogues; otherwise products are library calls."""
    source_extension: str | None = None
    """The extension of the source it emits for a kernel (`ll`, `py`); None for a
    target that emits no source of its own, which `permalloy-opt -t` cannot name."""
    unsupported_errors: Callable[[], tuple[type[Exception], ...]] = _no_errors
    """The exceptions it raises for a kernel it cannot translate (a reason meant
    for the user, not a bug), imported when called."""
    options: Mapping[str, TargetOption] = field(default_factory=dict)
    """The target's own options, passed to `make` by name."""
    check_inputs: Callable[[set[str]], str | None] | None = None
    """Given the device types of a graph's inputs, why it cannot compile for
    them (None when it can), beyond `devices`: a GPU target on CPU tensors under
    an interpreter, say."""
    host_runtime: Callable[[Callable[..., Any], str, tuple[int, ...]], Callable[..., Any]] = _unchanged
    """`host_runtime(run, mode, updated)`: how a compiled graph's runner runs
    in a mode (`updated`: the positions of the arguments it writes)."""
    library_settings: Callable[
        [Mapping[str, Any], Collection[str] | None], Callable[[Callable[..., Any]], Callable[..., Any]] | None
    ] = _no_library_settings
    """`library_settings(options, library_ops)`: for a compile's target
    options and the ptensor ops its library calls run (None while compiling,
    before they are known), a wrapper that runs a function under the settings
    of the libraries those calls go to, or None where no setting applies.
    `compile_graph` runs the pipeline's passes wrapped (their timings of
    library calls see the settings), and the torch.compile backend wraps its
    calls of the compiled graph; a caller running `CompiledGraph.program`
    itself wraps it with `with_library_settings`."""
    library_options: tuple[str, ...] = ()
    """Its options that only choose library settings: `library_settings`',
    not the code generator's."""

    def pipeline(
        self,
        fusion: bool,
        tensor_level: list[str],
        loop_level: list[str],
        fusion_level: list[str],
        buffer_level: list[str],
        deterministic: bool = False,
        matmul_templates: bool = False,
        optional_passes: Collection[str] = (),
        optional_buffer_passes: Collection[str] = (),
    ) -> list[str]:
        """The pass names of a pipeline for this target: each level's list with
        the target's own passes added (its tensor-level passes only when
        fusing; its buffer-level ones after the first buffer-level pass, the
        conversion), and its options on `fuse-loops`; `deterministic` when
        torch's deterministic algorithms are on; `matmul_templates` when the
        compile asks for matrix products as contractions (where it tiles them);
        `optional_passes` are passes of its `optional_passes` the compile's
        options turn on (fused graphs only, before its own tensor-level passes),
        `optional_buffer_passes` of its `optional_buffer_passes` (after its own
        buffer-level passes)."""
        lowering_options = []
        if deterministic and self.atomic_scatters:
            lowering_options.append("deterministic-scatters=true")
        if self.sort_limits is not None:
            lowering_options += [f"sort-max-length={self.sort_limits[0]}", f"sort-max-bits={self.sort_limits[1]}"]
        if fusion and matmul_templates and self.matmul_templates:
            lowering_options.append("matmul-templates=true")
        if lowering_options:
            options = " ".join(lowering_options)
            loop_level = [
                f"{name}{{{options}}}" if name == "convert-ptensor-to-loop" else name for name in loop_level
            ]
        fuse = [
            f"{name}{{{self.fusion_options}}}" if name == "fuse-loops" and self.fusion_options else name
            for name in fusion_level
        ]
        tensor_passes = [*optional_passes, *self.tensor_passes]
        return [
            *tensor_level,
            *(tensor_passes if fusion else ()),
            *loop_level,
            *self.loop_passes,
            *(fuse if fusion else ()),
            *buffer_level[:1],
            *self.buffer_passes,
            *optional_buffer_passes,
            *buffer_level[1:],
        ]

    def passes_turned_on(self, options: Mapping[str, Any]) -> tuple[str, ...]:
        """The passes of `optional_passes` that the values in `options`, or
        the options' defaults, add."""
        return _turned_on(self.optional_passes, options, self.options)

    def buffer_passes_turned_on(self, options: Mapping[str, Any]) -> tuple[str, ...]:
        """The passes of `optional_buffer_passes` that the values in
        `options`, or the options' defaults, add."""
        return _turned_on(self.optional_buffer_passes, options, self.options)

    def pass_options(self) -> set[str]:
        """The options that only choose passes: the pipeline's, not the code
        generator's."""
        return {*self.optional_passes, *self.optional_buffer_passes}

    def generator_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """Those of `options` that its code generator takes (`make`): not
        the ones that choose passes or library settings."""
        others = {*self.pass_options(), *self.library_options}
        return {name: value for name, value in options.items() if name not in others}

    def with_library_settings(
        self, run: Callable[..., Any], options: Mapping[str, Any], library_ops: Collection[str] | None
    ) -> Callable[..., Any]:
        """`run` wrapped to run under the library settings that `options`
        give for calls of `library_ops` (`library_settings`); `run` itself
        where none apply."""
        wrap = self.library_settings(options, library_ops)
        return run if wrap is None else wrap(run)

    def checked_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """`options` if the target takes each of them with its value; else a
        `TargetOptionError` that lists the options it takes."""
        for key, value in options.items():
            option = self.options.get(key)
            if option is None:
                raise TargetOptionError(
                    f"target '{self.name}' has no option {key!r}; {self.option_listing()}"
                )
            problem = option.check(value)
            if problem is not None:
                raise TargetOptionError(f"option {key!r} of target '{self.name}' {problem}")
        return dict(options)

    def with_defaults(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """`options` with the declared default of each option they do not
        give: the same compile however it is asked for."""
        defaults = {key: option.default for key, option in self.options.items() if option.default is not None}
        return {**defaults, **options}

    def option_listing(self) -> str:
        """The options it takes, as a sentence."""
        if not self.options:
            return "it takes none"
        listed = "; ".join(f"{k} ({o.description})" for k, o in self.options.items())
        return f"its options: {listed}"

    def input_problem(self, devices: set[str]) -> str | None:
        """Why it cannot compile a graph whose tensors are on `devices`, or None."""
        if self.check_inputs is not None:
            return self.check_inputs(devices)
        foreign = sorted(devices - set(self.devices))
        if foreign:
            return (
                f"target '{self.name}' runs on {' and '.join(self.devices)} tensors; "
                f"these inputs are on {', '.join(foreign)}"
            )
        return None
