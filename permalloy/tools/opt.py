"""
`permalloy-opt`: read permalloy IR, run a pass pipeline on it, print the result.

    permalloy-opt model.mlir -p 'canonicalize,cse'
    permalloy-opt model.mlir -p canonicalize --print-between-passes
    permalloy-opt cases.mlir --split-input-file --verify-diagnostics

It is xDSL's `xdsl-opt` restricted to permalloy's dialects (`all_dialects()`),
passes (`all_passes()`) and targets (`all_targets()`), with diagnostics meant for
people: a mistake in the input, the pipeline or the command line prints a message
with its location or the list of valid names, and the tool exits non-zero
without a Python traceback.
"""

from __future__ import annotations

import bisect
import functools
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import IO, Any, ClassVar, NoReturn, cast

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Attribute, Block, Operation, SSAValue, TypeAttribute
from xdsl.parser import Parser
from xdsl.utils.arg_spec import parse_spec
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    MultipleSpansParseError,
    ParseError,
    VerifyException,
)
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from permalloy.dialects import register_all_dialects
from permalloy.passes import (
    PipelineError,
    all_passes,
    build_pipeline,
    instantiate_from_spec,
    spec_syntax_message,
)
from permalloy.passes.diagnostics import OpDiagnostic, fail_at
from permalloy.targets.registry import available_targets, kernel_target, target_descriptor

TOOL_NAME = "permalloy-opt"

TargetFactory = Callable[[], type[Target]]

def _mlir_target() -> type[Target]:
    from xdsl.targets.mlir import MLIRTarget

    return MLIRTarget


def all_targets() -> dict[str, TargetFactory]:
    """
    The output formats `permalloy-opt -t` knows, by name, each with a factory
    that imports its xDSL `Target` class.

    `mlir` (the default) prints the IR as text. Each kernel target of
    `permalloy.targets.registry` that emits source (`llvm`, `triton`, and
    `reference`, whose source is the kernel's own IR) prints the code it
    generates for the kernels a buffer-level module launches, so that emitted
    kernels can be FileCheck-tested. A newly registered target appears here.
    """
    targets: dict[str, TargetFactory] = {"mlir": _mlir_target}
    for target in available_targets().values():
        if target.source_extension is not None:
            targets[target.name] = functools.partial(kernel_source_target, target.name)
    return targets


@dataclass(frozen=True)
class KernelSourceTarget(Target):
    """
    Prints, for each kernel launch of a buffer-level module, the source a kernel
    target generates for the kernel and the launch's buffer layouts, after a
    `// kernel @name` line. Subclasses name the kernel target.
    """

    name: ClassVar[str]

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from permalloy.dialects.buffer import KernelOp, LaunchOp, buffer_type

        kernels = {op.sym_name.data: op for op in module.walk() if isinstance(op, KernelOp)}
        launches = [op for op in module.walk() if isinstance(op, LaunchOp)]
        if not launches:
            raise DiagnosticException(
                f"target '{self.name}' prints the kernels of buffer-level IR, and "
                "this module launches none; lower it first, e.g. with "
                "-p convert-ptensor-to-loop,convert-loop-to-buffer"
            )
        generator = kernel_target(self.name)
        emitted: set[tuple[str, tuple[Attribute, ...]]] = set()
        for launch in launches:
            name = launch.kernel.root_reference.data
            layouts = tuple(buffer_type(v) for v in (*launch.inputs, *launch.outputs))
            if (name, layouts) in emitted:
                continue
            emitted.add((name, layouts))
            source = self._kernel_source(generator, kernels[name], layouts, launch)
            output.write(f"// kernel @{name}\n")
            output.write(source.rstrip("\n"))
            output.write("\n\n")

    def _kernel_source(
        self, generator: Any, kernel: Operation, layouts: tuple[Attribute, ...], launch: Operation
    ) -> str:
        """The target's source for a kernel, or an error at the launch saying why
        the target cannot translate it."""
        try:
            return generator.emit_source(kernel, layouts)
        except target_descriptor(self.name).unsupported_errors() as error:
            fail_at(launch, f"target '{self.name}' cannot emit kernel @{kernel.sym_name.data}: {error}")


def kernel_source_target(name: str) -> type[Target]:
    """The `KernelSourceTarget` class of the kernel target called `name`."""
    return dataclass(frozen=True)(
        type(f"KernelSourceTarget_{name}", (KernelSourceTarget,), {"name": name})
    )


def permalloy_version() -> str:
    """The installed permalloy version."""
    try:
        return version("permalloy")
    except PackageNotFoundError:
        return "unknown"


class OptError(Exception):
    """A mistake on the command line, reported as its message alone."""


# Errors a dialect raises while building an attribute whose text parsed but whose
# value is wrong (`!ptensor.tensor<[d0], f32>`, `#sym.expr<d0 floordiv 0>`).
_VALUE_ERRORS = (VerifyException, ValueError, ArithmeticError)


class SourceParser(Parser):
    """
    xDSL's parser, reporting attributes and types that fail their verifier as
    parse errors at the place they are written, instead of as bare exceptions.

    Each op without a `loc(...)` gets the location it is written at (a
    `FileLineColLoc`, `line_offset` lines into the file), so that passes can
    report an op they cannot handle at its place in the input.
    """

    line_offset: int = 0

    def parse_optional_attribute(self) -> Attribute | None:
        start = self.pos
        try:
            return super().parse_optional_attribute()
        except _VALUE_ERRORS as error:
            self.raise_error(str(error), start)

    def parse_optional_type(self) -> TypeAttribute | None:
        start = self.pos
        try:
            return super().parse_optional_type()
        except _VALUE_ERRORS as error:
            self.raise_error(str(error), start)

    def parse_optional_operation(self) -> Operation | None:
        start = self.pos
        try:
            op = super().parse_optional_operation()
        except _VALUE_ERRORS as error:
            self.raise_error(str(error), start)
        if op is not None and isinstance(op.location, UnknownLoc):
            op.location = self._location(start)
        return op

    def _location(self, position: int) -> FileLineColLoc:
        line = bisect.bisect_right(self._line_starts, position)
        column = position - self._line_starts[line - 1] + 1
        return FileLineColLoc(
            StringAttr(self.lexer.input.name), IntAttr(line + self.line_offset), IntAttr(column)
        )

    @functools.cached_property
    def _line_starts(self) -> list[int]:
        """The offset of the first character of each line of the input."""
        content = self.lexer.input.content
        return [0, *(m.end() for m in re.finditer("\n", content))]


class PermalloyOptMain(xDSLOptMain):
    """The `permalloy-opt` driver: xDSL's opt driver over permalloy's registries."""

    version_format = (
        f"{TOOL_NAME} (permalloy {permalloy_version()}, built on xDSL {{xdsl_version}})"
    )

    def __init__(self, args: Sequence[str] | None = None):
        super().__init__(
            description="permalloy's modular optimizer driver: parse IR, run "
            "a pass pipeline (-p), print the result in a target format (-t)",
            args=args,
        )

    def register_all_dialects(self) -> None:
        register_all_dialects(self.ctx)

    def register_all_passes(self) -> None:
        for name, factory in all_passes().items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        for name, factory in all_targets().items():
            self.available_targets[name] = factory

    def register_all_frontends(self) -> None:
        self.available_frontends["mlir"] = self.parse_mlir

    def parse_mlir(self, stream: IO[bytes]) -> ModuleOp:
        """Parse MLIR text, naming the input file in error locations."""
        try:
            text = stream.read().decode("utf-8")
        except UnicodeDecodeError as error:
            raise OptError(
                f"{self.get_input_name()} is not UTF-8 text ({error.reason} at "
                f"byte {error.start})"
            ) from None
        parser = SourceParser(self.ctx, text, self.get_input_name())
        parser.line_offset = self.chunk_line_offset
        module = parser.parse_module(not self.args.no_implicit_module)
        check_defined_before_use(module)
        return module

    chunk_line_offset: int = 0
    """The line of the input file the chunk being parsed starts after."""

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        self.chunk_line_offset = start_offset
        return super().parse_chunk(chunk, file_extension, start_offset)

    def get_input_name(self) -> str:
        return self.args.input_file or "<stdin>"

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """The input, read as MLIR unless its extension names another frontend."""
        if self.args.input_file is None:
            return sys.stdin.buffer, "mlir"
        try:
            stream = open(self.args.input_file, "rb")
        except OSError as error:
            raise OptError(
                f"cannot read input file '{self.args.input_file}': {error.strerror}"
            ) from None
        extension = os.path.splitext(self.args.input_file)[1].removeprefix(".")
        return stream, extension if extension in self.available_frontends else "mlir"

    def prepare_output(self) -> IO[str]:
        if self.args.output_file is None:
            return sys.stdout
        try:
            return open(self.args.output_file, "w")
        except OSError as error:
            raise OptError(
                f"cannot write output file '{self.args.output_file}': "
                f"{error.strerror}"
            ) from None

    def setup_pipeline(self) -> None:
        """
        Check the pipeline and the target with permalloy's messages, then build
        the pipeline as xDSL does (verification and `--print-between-passes`
        between passes).
        """
        self.make_target()
        build_pipeline(self.args.passes, self.available_passes)
        super().setup_pipeline()

    def make_target(self) -> Target:
        """
        The target `-t` names, with its options. (xDSL's driver has already
        rejected a target name that is not registered.)
        """
        spec = parse_spec(self.args.target)
        factory = cast(TargetFactory, self.available_targets[spec.name])
        return instantiate_from_spec(factory(), spec, "target")


def check_defined_before_use(root: Operation) -> None:
    """
    Fail at the first op that uses a value its block defines only later, or that
    its enclosing blocks do not define at all (xDSL's parser accepts forward
    references, and no verifier checks dominance). In regions of several blocks
    (control flow), every value of the region counts as defined.
    """
    _check_regions(root, set())


def _check_regions(op: Operation, visible: set[SSAValue]) -> None:
    for region in op.regions:
        added: set[SSAValue] = set()
        if len(region.blocks) > 1:
            added = {v for block in region.blocks for v in _block_values(block)} - visible
        visible |= added
        for block in region.blocks:
            _check_block(block, visible)
        visible -= added


def _block_values(block: Block) -> list[SSAValue]:
    return [*block.args, *(r for op in block.ops for r in op.results)]


def _check_block(block: Block, visible: set[SSAValue]) -> None:
    added = set(block.args) - visible
    visible |= added
    for op in block.ops:
        for position, value in enumerate(op.operands):
            if value not in visible:
                fail_at(op, f"operand {position} of '{op.name}' is used before it is defined")
        _check_regions(op, visible)
        new = set(op.results) - visible
        added |= new
        visible |= new
    visible -= added


def format_error(error: BaseException) -> str:
    """The message `permalloy-opt` prints for an error the user caused."""
    if isinstance(error, ParseError):
        return _format_parse_error(error)
    if isinstance(error, OpDiagnostic):
        return _format_op_diagnostic(error)
    notes = "".join(f"{note}\n" for note in getattr(error, "__notes__", ()))
    message = str(error)
    if isinstance(error, ArgSpecParseError):
        # Pipelines are checked by `build_pipeline`, so this is the `-t` text.
        message = spec_syntax_message(error, "target").replace(
            "pass-pipeline:", "target:", 1
        )
    return f"{TOOL_NAME}: error: {message}\n{notes}"


def _format_op_diagnostic(error: OpDiagnostic) -> str:
    """`file:line:col: error: message` and the op's first line, or the tool's
    name in place of a location the op does not have."""
    text = str(error) if error.location else f"{TOOL_NAME}: error: {error}"
    return f"{text}\n  {_first_line(error.op)}\n"


def _first_line(op: Operation) -> str:
    lines = str(op).strip().splitlines()
    return lines[0] if lines else op.name


def _format_parse_error(error: ParseError) -> str:
    location = error.span.get_location()
    context = error.span.print_with_context().split("\n", 1)[1]
    text = f"{location}: error: {error.msg}\n{context}"
    if isinstance(error, MultipleSpansParseError):
        if error.ref_text is not None:
            text += error.ref_text + "\n"
        for span, note in error.refs:
            text += span.print_with_context(note) + "\n"
    return text


USER_ERRORS = (
    OptError,
    PipelineError,
    ParseError,
    DiagnosticException,
    ArgSpecParseError,
)
"""Exceptions caused by the input or the command line, not by a bug in permalloy."""


def main(args: Sequence[str] | None = None) -> NoReturn:
    """Run `permalloy-opt` with command-line arguments; exit 1 on a user error."""
    try:
        PermalloyOptMain(args=args).run()
    except USER_ERRORS as error:
        sys.stdout.flush()
        sys.stderr.write(format_error(error))
        sys.exit(1)
    except BrokenPipeError:
        # The reader of our output went away (`permalloy-opt x.mlir | head`).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    sys.exit(0)


if __name__ == "__main__":
    main()
