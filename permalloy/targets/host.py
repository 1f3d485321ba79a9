"""
The host program: a buffer-level function turned into generated Python.

Each op of the function becomes one line of Python: symbols are read off the
argument shapes, `buffer.alloc` calls torch's allocator for the arguments'
device (chosen once per call, `allocator`), `buffer.view` is
`torch.as_strided`, `buffer.launch` calls a compiled kernel, `buffer.extern`
calls torch. The source is kept (`HostProgram.source`) so that it can be read
and dumped; running it walks no IR.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import sympy
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IndexType, ModuleOp
from xdsl.ir import Operation, SSAValue

from permalloy.dialects import buffer as buf
from permalloy.dialects import ptensor as pt
from permalloy.dialects.sym import CeilDiv, FloorDiv, SymExprAttr, symbol_kind
from permalloy.dtypes import torch_dtype
from permalloy.targets import CompiledKernel, KernelTarget, kernel_symbols
from permalloy.targets.externs import extern_call, extern_into_call
from permalloy.targets.externs.calls import PlannedCall
from permalloy.targets.externs.recorded import RecordedCall
from permalloy.targets.workspace import KeptWorkspace, kept_workspace

SYMBOL_ATTR = "ptensor.symbol"
ON_CPU_ATTR = "ptensor.on_cpu"
UPDATED_ATTR = "ptensor.updated"


NO_SYMBOLS = MappingProxyType({})
"""The symbol values passed to a library call whose sizes are constant."""


def python_expr(expr: sympy.Expr) -> str:
    """A Python expression computing an integer expression from symbol variables."""
    expr = sympy.sympify(expr)
    if expr.is_Integer:
        return str(int(expr))
    if expr.is_Symbol:
        return expr.name
    if expr.is_Add:
        return "(" + " + ".join(python_expr(a) for a in expr.args) + ")"
    if expr.is_Mul:
        return "(" + " * ".join(python_expr(a) for a in expr.args) + ")"
    if expr.is_Pow and expr.exp.is_Integer and int(expr.exp) > 0:
        return "(" + " * ".join([python_expr(expr.base)] * int(expr.exp)) + ")"
    if isinstance(expr, FloorDiv):
        return f"({python_expr(expr.args[0])} // {python_expr(expr.args[1])})"
    if isinstance(expr, CeilDiv):
        return f"(-(-{python_expr(expr.args[0])} // {python_expr(expr.args[1])}))"
    if isinstance(expr, sympy.Mod):
        return f"({python_expr(expr.args[0])} % {python_expr(expr.args[1])})"
    if isinstance(expr, sympy.Min | sympy.Max):
        name = "min" if isinstance(expr, sympy.Min) else "max"
        return f"{name}(" + ", ".join(python_expr(a) for a in expr.args) + ")"
    raise ValueError(f"cannot compute '{expr}' in the host program")


def allocator(tensor: torch.Tensor) -> Any:
    """The function `(sizes, strides, dtype) -> tensor` allocating on `tensor`'s
    device: torch's own allocation without argument parsing (as Inductor's
    programs call it) on the CPU and on the current CUDA device, else
    `torch.empty_strided` on that device."""
    fast = _FAST_ALLOCATORS.get(tensor.device.type)
    if fast is not None and (tensor.is_cpu or tensor.get_device() == torch._C._cuda_getDevice()):  # noqa: SLF001
        return fast
    device = tensor.device
    return lambda sizes, strides, dtype: torch.empty_strided(sizes, strides, dtype=dtype, device=device)


def _as_strided_from(tensor: torch.Tensor, sizes: Sequence[int], strides: Sequence[int], offset: int) -> torch.Tensor:
    return torch.as_strided(tensor, sizes, strides, tensor.storage_offset() + offset)


reinterpret = getattr(getattr(torch._C, "_dynamo", None), "guards", None)  # noqa: SLF001
reinterpret = getattr(reinterpret, "_reinterpret_tensor", None) or _as_strided_from
"""`(tensor, sizes, strides, offset) -> view` of `tensor`'s storage from `offset`
elements past its own: torch's alias without argument parsing (as Inductor's
programs make views, half the host time of `torch.as_strided`) where the
build has it."""


def first_on_gpu(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """The first of `tensors` on a GPU, else the first."""
    return next((t for t in tensors if t.is_cuda), tensors[0])


def _fast_allocators() -> dict[str, Any]:
    guards = getattr(torch._C, "_dynamo", None)  # noqa: SLF001
    guards = getattr(guards, "guards", None)
    found = {"cpu": getattr(guards, "_empty_strided_cpu", None), "cuda": getattr(guards, "_empty_strided_cuda", None)}
    return {device: function for device, function in found.items() if function is not None}


_FAST_ALLOCATORS = _fast_allocators()
"""torch's allocation functions by device type (a constant of the torch build)."""


def _tuple(exprs: Sequence[sympy.Expr]) -> str:
    items = [python_expr(e) for e in exprs]
    return "(" + "".join(f"{i}, " for i in items) + ")"


class DeviceConstant:
    """A constant tensor of a compiled graph, made once per device on first use
    and kept: a constant built on every call would be copied from the host to
    the device each time, which waits for the device."""

    def __init__(self, make: Any, contiguous: bool):
        self.make = make
        self.contiguous = contiguous
        self.on_device: dict[torch.device | str, torch.Tensor] = {}

    def __call__(self, device: torch.device | str) -> torch.Tensor:
        tensor = self.on_device.get(device)
        if tensor is None:
            (tensor,) = self.make((), {})
            tensor = tensor.to(device)
            tensor = tensor.contiguous() if self.contiguous else tensor
            self.on_device[device] = tensor
        return tensor


@dataclass
class HostProgram:
    """A compiled graph: call it with the graph's inputs."""

    source: str
    function: Any
    kernel_count: int
    extern_count: int
    native_source: str | None = None
    """The LLVM IR of the native host program running the calls, if one does
    (`targets.native`); `source` is then its readable form."""
    callback_count: int = 0
    """The ops the native host program runs in Python, by calling back."""
    python_function: Any = None
    """The Python host program's function (`function` too where no native one runs)."""
    on_native: Any = None
    """Called with the program once a native host program runs its calls."""
    native_image: Any = None
    """What the compiled-graph cache keeps of the native host program
    running its calls (`targets.native.image`), where it can keep it (CPU)."""

    def __call__(self, *args: Any) -> tuple[torch.Tensor, ...]:
        return self.function(*args)

    def use_native(self, hosted: Any) -> None:
        """Run calls with `hosted`, a native host program of the same function."""
        self.function = hosted.function
        self.native_source = hosted.source.source
        self.callback_count = hosted.callback_count
        self.native_image = hosted.image
        if self.on_native is not None:
            self.on_native(self)


class WrappedProgram:
    """A host program run with more work around each call (`program`): it
    reports the wrapped program's kernels, extern calls and source."""

    program: Any

    @property
    def kernel_count(self) -> int:
        return self.program.kernel_count

    @property
    def extern_count(self) -> int:
        return self.program.extern_count

    @property
    def source(self) -> str:
        return self.program.source


@dataclass
class _Emitter:
    """The state of generating one host program."""

    module: ModuleOp
    function: func.FuncOp
    target: KernelTarget
    lines: list[str] = field(default_factory=list)
    names: dict[SSAValue, str] = field(default_factory=dict)
    roots: dict[SSAValue, str] = field(default_factory=dict)
    namespace: dict[str, Any] = field(default_factory=dict)
    bound: set[str] = field(default_factory=set)
    kernels: dict[str, buf.KernelOp] = field(default_factory=dict)
    symbol_hints: dict[str, int] = field(default_factory=dict)
    """The size symbols' values at the first call, where known."""
    workspace: KeptWorkspace | None = None
    """The allocations a CPU program keeps between calls (`targets.workspace`)."""
    kernel_count: int = 0
    extern_count: int = 0
    launched: dict[Operation, tuple[CompiledKernel, list[str]]] = field(default_factory=dict)
    """Each launch's compiled kernel and the symbols it takes, and each
    extern's call that runs permalloy's kernels by a plan (`PlannedCall`,
    with no symbols), whose launches a native program can make, or records
    the library op it dispatched (`RecordedCall`), which a native program
    can call."""
    updated: list[SSAValue] = field(default_factory=list)
    """The arguments the program writes (`ptensor.updated`): a copy of one in
    the expected layout is copied back into the caller's tensor at the end."""

    def name(self, value: SSAValue) -> str:
        if value not in self.names:
            self.names[value] = f"v{len(self.names)}"
        return self.names[value]

    def constant(self, stem: str, value: Any) -> str:
        name = f"{stem}_{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def emit(self) -> HostProgram:
        self.kernels = {
            op.sym_name.data: op for op in self.module.ops if isinstance(op, buf.KernelOp)
        }
        args = self.function.body.block.args
        parameters = [self.name(a) for a in args]
        self._bind_symbols(args)
        if getattr(self.target, "device", "cpu") == "cpu":
            self.workspace = kept_workspace(self.function)
        if self.workspace is not None:
            self.namespace["workspace_pool"] = self.workspace.pool
            self.lines.append("workspace = workspace_pool.take()")
        for op in self.function.body.block.ops:
            self._emit_op(op)
        body = "\n".join("    " + line for line in self.lines) or "    pass"
        source = f"def host({', '.join(parameters)}):\n{body}\n"
        self.namespace.update(torch=torch)
        exec(compile(source, "<permalloy host program>", "exec"), self.namespace)
        return HostProgram(
            source, self.namespace["host"], self.kernel_count, self.extern_count
        )

    # -- arguments -------------------------------------------------------------

    def _bind_symbols(self, args: Sequence[SSAValue]) -> None:
        for position, arg in enumerate(args):
            if isinstance(arg.type, IndexType):
                symbol = index_argument_symbol(self.function, position)
                if symbol is not None and symbol not in self.bound:
                    self.lines.append(f"{symbol} = int({self.name(arg)})")
                    self.bound.add(symbol)
        for arg in args:
            if isinstance(arg.type, buf.BufferType):
                for dim, size in enumerate(arg.type.sizes):
                    if size.is_Symbol and size.name not in self.bound:
                        self.lines.append(f"{size.name} = {self.name(arg)}.shape[{dim}]")
                        self.bound.add(size.name)
        for position, arg in enumerate(args):
            if isinstance(arg.type, buf.BufferType):
                if argument_attribute(self.function, position, UPDATED_ATTR) is not None:
                    self.lines.append(f"{self.name(arg)}_caller = {self.name(arg)}")
                    self.updated.append(arg)
                self._move_to_gpu_for_kernels(position, arg)
                self._conform_argument(arg)
                self.roots[arg] = self.name(arg)

    def _move_to_gpu_for_kernels(self, position: int, arg: SSAValue) -> None:
        """A CPU tensor argument of a GPU graph that a kernel reads is moved
        to the program's GPU first, as eager's GPU kernels take CPU indices."""
        if getattr(self.target, "device", "cpu") != "cuda" or argument_attribute(self.function, position, ON_CPU_ATTR) is None:
            return
        if _launched(arg):
            name = self.name(arg)
            self.lines.append(f"{name} = {name}.to({self._device()})")

    def _conform_argument(self, arg: SSAValue) -> None:
        """Give an input the layout the program expects, copying if it differs."""
        self._copy_unless_strided(arg)

    def _copy_unless_strided(self, value: SSAValue) -> None:
        """A line giving the tensor of `value` its buffer's strides, copying
        it into a new tensor of that layout when its own strides differ."""
        layout = buf.buffer_type(value)
        name = self.name(value)
        strides = _tuple(layout.strides.data)
        self.lines.append(
            f"if {name}.stride() != {strides}: "
            f"{name} = torch.empty_strided({_tuple(layout.sizes)}, {strides}, dtype={name}.dtype, "
            f"device={name}.device).copy_({name})"
        )

    # -- ops ----------------------------------------------------------------------

    def _emit_op(self, op: Operation) -> None:
        if isinstance(op, buf.AllocOp):
            self._emit_alloc(op)
        elif isinstance(op, buf.LaunchOp):
            self._emit_launch(op)
        elif isinstance(op, buf.ExternOp):
            self._emit_extern(op)
        elif isinstance(op, buf.ViewOp):
            self._emit_view(op)
        elif isinstance(op, buf.CopyOp):
            self.lines.append(f"{self.name(op.target)}.copy_({self.name(op.source)})")
        elif isinstance(op, buf.DeallocOp):
            self.lines.append(f"del {self.name(op.buffer)}")
        elif isinstance(op, func.ReturnOp):
            for arg in self.updated:
                name = self.name(arg)
                self.lines.append(f"if {name} is not {name}_caller: {name}_caller.copy_({name})")
            if self.workspace is not None:
                self.lines.append("workspace_pool.give(workspace)")
            values = "".join(f"{self.name(v)}, " for v in op.arguments)
            self.lines.append(f"return ({values})")
        else:
            raise ValueError(f"the host program cannot run {op.name}")

    def _emit_alloc(self, op: buf.AllocOp) -> None:
        name = self.name(op.result)
        self.roots[op.result] = name
        if self.workspace is not None and op.result in self.workspace.positions:
            layout = buf.buffer_type(op.result)
            sizes, strides = _tuple(layout.sizes), _tuple(layout.strides.data)
            position = self.workspace.positions[op.result]
            self.lines.append(f"{name} = workspace.tensors[{position}]  # {sizes}, {strides}")
            return
        self._allocate(name, buf.buffer_type(op.result))

    def _allocate(self, name: str, layout: buf.BufferType) -> None:
        """The line allocating a tensor of `layout` called `name`."""
        dtype = self.constant("dtype", torch_dtype(layout.element_type))
        sizes, strides = _tuple(layout.sizes), _tuple(layout.strides.data)
        first = self._first_tensor()
        if first is None:
            device = repr(getattr(self.target, "device", "cpu"))
            self.lines.append(f"{name} = torch.empty_strided({sizes}, {strides}, dtype={dtype}, device={device})")
            return
        if "alloc" not in self.bound:
            self.lines.append(f"alloc = {self.constant('allocator', allocator)}({first})")
            self.bound.add("alloc")
        self.lines.append(f"{name} = alloc({sizes}, {strides}, {dtype})")

    def _first_tensor(self) -> str | None:
        """The name of a tensor argument on the device the program computes on
        (whose allocations and constants go there), if it has tensor arguments:
        the first one, or on a GPU target with several, the first on the GPU
        (a graph may also take CPU tensors, such as 0-d ones or indices it
        moves to the GPU itself), chosen once per call."""
        tensors = [self.name(a) for a in self.function.body.block.args if isinstance(a.type, buf.BufferType)]
        if len(tensors) < 2 or getattr(self.target, "device", "cpu") != "cuda":
            return tensors[0] if tensors else None
        if "on_device" not in self.bound:
            choose = self.constant("first_on_gpu", first_on_gpu)
            self.lines.append(f"on_device = {tensors[0]} if {tensors[0]}.is_cuda else {choose}(({', '.join(tensors)},))")
            self.bound.add("on_device")
        return "on_device"

    def _device(self) -> str:
        first = self._first_tensor()
        if first is not None:
            return f"{first}.device"
        return repr(getattr(self.target, "device", "cpu"))

    def _emit_launch(self, op: buf.LaunchOp) -> None:
        name = op.kernel.root_reference.data
        operands = [*op.inputs, *op.outputs]
        layouts = [buf.buffer_type(v) for v in operands]
        compiled, symbols = self._launched_kernel(name, layouts)
        self.launched[op] = (compiled, symbols)
        callable_name = self.constant(f"kernel_{name}", compiled)
        precompile = getattr(compiled, "precompile", None)
        if precompile is not None and all(s in self.symbol_hints for s in symbols):
            precompile([self.symbol_hints[s] for s in symbols])
        tensors = "".join(f"{self.name(v)}, " for v in operands)
        symbol_values = "".join(f"{s}, " for s in symbols)
        self.lines.append(f"{callable_name}(({tensors}), ({symbol_values}))")
        self.kernel_count += 1

    def _launched_kernel(self, name: str, layouts: list[buf.BufferType]) -> tuple[CompiledKernel, list[str]]:
        """The compiled kernel `name` for `layouts`, and the symbols it takes: the
        target's `prepared_launch` when it has one (kernels loaded from the
        compiled-graph cache, whose bodies the module then need not hold), else
        compiled from the module's `buffer.kernel`."""
        prepared = getattr(self.target, "prepared_launch", None)
        found = prepared(name, layouts) if prepared is not None else None
        if found is not None:
            return found
        kernel = self.kernels[name]
        return self.target.compile_kernel(kernel, layouts), kernel_symbols(kernel, layouts)

    def _emit_extern(self, op: buf.ExternOp) -> None:
        if isinstance(op.library_op, pt.ConstantOp):
            self._emit_device_constant(op)
            return
        if self._emit_extern_into(op):
            return
        made = extern_call(op)
        if isinstance(made, PlannedCall | RecordedCall):  # calls a native program can make itself
            self.launched[op] = (made, [])
        call = self.constant("extern", made)
        symbols = extern_symbols(op)
        if symbols:
            symbol_map = self.constant("symbols", symbols)
            bindings = f"dict(zip({symbol_map}, ({', '.join(s.name for s in symbols)},)))"
        else:
            bindings = self.constant("no_symbols", NO_SYMBOLS)
        inputs = "".join(f"{self.name(v)}, " for v in op.inputs)
        results = "".join(f"{self.name(r)}, " for r in op.results)
        self.lines.append(f"{results}= {call}(({inputs}), {bindings})")
        for result in op.results:
            self.roots[result] = self.name(result)
            if not op.inputs:  # made from nothing (a constant): on the program's device
                name = self.name(result)
                self.lines.append(f"{name} = {name}.to({self._device()})")
            self._conform_extern_result(result)
        self.extern_count += 1

    def _emit_extern_into(self, op: buf.ExternOp) -> bool:
        """A library op with a form writing into a given tensor (the matrix
        products): into its last input where it is marked so, else into a
        result the program allocates itself in its planned layout; False where
        the op has no such form or would not write that layout as it is
        (`extern_into_call`)."""
        into = extern_into_call(op)
        if into is None:
            return False
        if op.writes_last_input:  # into a buffer the program planned (`plan-memory`)
            inputs = "".join(f"{self.name(v)}, " for v in op.inputs[:-1])
            self.lines.append(f"{self.constant('extern', into)}(({inputs}), {self.name(op.inputs[-1])})")
            self.extern_count += 1
            return True
        (result,) = op.results
        name = self.name(result)
        self.roots[result] = name
        self._allocate(name, buf.buffer_type(result))
        inputs = "".join(f"{self.name(v)}, " for v in op.inputs)
        self.lines.append(f"{self.constant('extern', into)}(({inputs}), {name})")
        self.extern_count += 1
        return True

    def _emit_device_constant(self, op: buf.ExternOp) -> None:
        """A constant: made on the program's device on the first call, then kept
        (`plan-memory` never writes over a constant's buffer); a copy where the
        program returns it, which the caller may write."""
        (result,) = op.results
        contiguous = buf.buffer_type(result).is_contiguous()
        constant = self.constant("constant", DeviceConstant(extern_call(op), contiguous))
        name = self.name(result)
        self.roots[result] = name
        copy = ".clone()" if returned(result) else ""
        self.lines.append(f"{name} = {constant}({self._device()}){copy}")
        self.extern_count += 1

    def _conform_extern_result(self, result: SSAValue) -> None:
        """Give a library call's result the layout the program planned for it
        (dense row-major, or channels-last around convolutions), copying when
        the library gave another."""
        if buf.buffer_type(result).is_contiguous():
            name = self.name(result)
            self.lines.append(f"{name} = {name}.contiguous()")
        else:
            self._copy_unless_strided(result)

    def _emit_view(self, op: buf.ViewOp) -> None:
        layout = buf.buffer_type(op.result)
        root = self.roots[op.source]
        name = self.name(op.result)
        self.roots[op.result] = root
        view = self.constant("view", reinterpret)
        self.lines.append(
            f"{name} = {view}({root}, {_tuple(layout.sizes)}, {_tuple(layout.strides.data)}, "
            f"{python_expr(layout.offset.expr)})"
        )


def argument_attribute(function: func.FuncOp, position: int, name: str) -> Any:
    """The attribute `name` of the function's argument at `position`, if it has one."""
    attrs = function.arg_attrs
    if attrs is None:
        return None
    entry = attrs.data[position]
    return entry.data.get(name) if isinstance(entry, DictionaryAttr) else None


def index_argument_symbol(function: func.FuncOp, position: int) -> str | None:
    """The size symbol an index argument gives the value of, if any."""
    symbol = argument_attribute(function, position, SYMBOL_ATTR)
    if isinstance(symbol, SymExprAttr) and symbol.expr.is_Symbol:
        return symbol.expr.name
    return None


def extern_symbols(op: buf.ExternOp) -> list[sympy.Symbol]:
    """The size symbols of an extern's operand and result sizes, by name:
    those its call is given the values of."""
    return sorted(
        {
            s
            for t in (*op.operand_types, *op.result_types)
            if isinstance(t, buf.BufferType)
            for e in t.sizes
            for s in e.free_symbols
            if symbol_kind(s) == "s"
        },
        key=lambda s: s.name,
    )


def _launched(value: SSAValue) -> bool:
    """Whether a kernel launch reads `value` or a view of it."""
    for use in value.uses:
        if isinstance(use.operation, buf.LaunchOp):
            return True
        if isinstance(use.operation, buf.ViewOp) and _launched(use.operation.result):
            return True
    return False


def returned(value: SSAValue) -> bool:
    """Whether the function returns `value` or a view of it."""
    for use in value.uses:
        if isinstance(use.operation, func.ReturnOp):
            return True
        if isinstance(use.operation, buf.ViewOp) and returned(use.operation.result):
            return True
    return False


def build_host_program(
    module: ModuleOp,
    target: KernelTarget,
    function_name: str | None = None,
    symbol_hints: dict[str, int] | None = None,
    native: bool = True,
    native_image: Any = None,
    kept_images: Any = None,
) -> HostProgram:
    """Generate and compile the host program of a buffer-level module; with
    `native`, calls run a native host program where one applies
    (`targets.native`), the Python one staying its readable form; a CPU
    native program is loaded from `native_image` where the compiled-graph
    cache kept one, a GPU one from `kept_images` (`targets.native.KeptImages`)
    where it holds one made for the launches the first call chose.

    With `symbol_hints`, the size symbols' values at the first call, kernels
    whose target can compile ahead (`precompile(symbol values)`, as the Triton
    target's compile workers do) start compiling for those sizes."""
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if function_name is not None:
        functions = [f for f in functions if f.sym_name.data == function_name]
    if not functions:
        raise ValueError("the module has no function to run")
    emitter = _Emitter(module, functions[0], target, symbol_hints=dict(symbol_hints or {}))
    program = emitter.emit()
    program.python_function = program.function
    if native:
        from permalloy.targets.native import attach_native_host

        attach_native_host(
            program, functions[0], emitter.launched, target, emitter.workspace, native_image, kept_images
        )
    return program
