"""
`import_graph`: an FX graph of ATen ops (after AOTAutograd) as a `func.func`
of ptensor ops inside a `builtin.module`.

Function arguments, in order: the graph's placeholders (tensors as
`!ptensor.tensor`, SymInts and ints as `index` with `{ptensor.symbol =
#sym.expr<...>}` naming the expression they hold), then one argument per large
`get_attr` constant (`{ptensor.constant = "<attribute name>"}`), whose values
`ImportResult.constants` lists; small constants become `ptensor.constant`.

Results: the graph's tensor outputs, in order. Outputs that are not tensors
(None, an int, a SymInt) are not results; `ImportResult.outputs` says, for
each output of the graph, which result it is or which value it has. After
them, one result per input the graph updates in place (an `aten.copy_` into
a placeholder, which AOTAutograd writes at the end of a graph that keeps its
input mutations): the input's new value, marked `ptensor.updates_input`,
which `write-input-updates` turns into a write of that argument.

Runtime assertions (`_assert_async`, `_assert_scalar`) are left out: they
compute nothing, and the IR has no side effects.
"""

from __future__ import annotations

import operator
import warnings
from dataclasses import dataclass, field
from typing import Any

import sympy
import torch
from torch import fx
from torch.multiprocessing.reductions import StorageWeakRef
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType as BuiltinTensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, BlockArgument, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from permalloy.dialects import ptensor
from permalloy.dialects.sym import SymExprAttr
from permalloy.lowering.import_fx.context import ImportContext
from permalloy.lowering.import_fx.converters import converter_for, is_library_op
from permalloy.lowering.import_fx.errors import GraphImportError
from permalloy.lowering.import_fx.fallback import DECLINED, NO_CONVERTER, import_fallback

SYMBOL_ATTR = "ptensor.symbol"
STRIDES_ATTR = "ptensor.strides"
CONSTANT_ATTR = "ptensor.constant"
ON_CPU_ATTR = "ptensor.on_cpu"
"""An argument attribute: the graph takes this tensor on the CPU while other
tensors of it are on a GPU (an index or a 0-d tensor, which eager's GPU
kernels accept); the program moves it to the GPU for its kernels."""
ALIAS_ATTR = "ptensor.aliases_input"
"""A result attribute: the graph returns a view of one of its inputs (whose
memory the result may share); any other result the function returns is
new memory, never an input's."""
UPDATES_ATTR = "ptensor.updates_input"
"""A result attribute (the position of an argument): the result is the new
value of that argument, which the program writes into it; not a graph
output."""
UPDATED_ATTR = "ptensor.updated"
"""An argument attribute: the program writes into this argument (its
`ptensor.updates_input` result, written in place by `write-input-updates`);
a host program that conforms it into a copy copies the copy back."""
FREE_LAYOUT_ATTR = "ptensor.free_layout"
"""A result attribute: the caller takes the result in whatever dense layout
the program plans for it (a training step's forward graph returns the
tensors its backward graph reads this way, and reports their strides to
AOTAutograd); `ptensor.strides` does not apply to it."""


def result_attribute(function: func.FuncOp, position: int, name: str) -> Attribute | None:
    """The attribute `name` (`ptensor.aliases_input`, `ptensor.free_layout`,
    ...) of the function's result at `position`, if it has one."""
    attributes = function.res_attrs
    if attributes is None or position >= len(attributes.data):
        return None
    entry = attributes.data[position]
    return entry.data.get(name) if isinstance(entry, DictionaryAttr) else None


RUNTIME_ASSERTIONS = frozenset(
    {
        torch.ops.aten._assert_async.msg,
        torch.ops.aten._assert_async.default,
        torch.ops.aten._assert_scalar.default,
        torch.ops.aten._functional_assert_async.msg,
        torch.ops.aten.sym_constrain_range_for_size.default,
    }
)
"""Checks on data or sizes that the IR leaves out: they compute nothing."""
LARGE_CONSTANT_ELEMENTS = 256
"""get_attr constants with more elements become function arguments."""


@dataclass(frozen=True)
class TensorOutput:
    """A graph output that is the function's result number `result`."""

    result: int


@dataclass(frozen=True)
class ValueOutput:
    """A graph output that is not a tensor: None, a number or a size expression."""

    value: None | bool | int | float | sympy.Expr


@dataclass
class ImportResult:
    """A graph imported into ptensor, with what the caller needs to run it."""

    module: ModuleOp
    fallback_ops: list[str] = field(default_factory=list)
    """ATen ops imported as `ptensor.fallback`, in graph order."""
    fallback_reasons: list[str] = field(default_factory=list)
    """Why each op of `fallback_ops` fell back: no converter, or what its
    converter does not take (a dtype, a symbolic argument, ...)."""
    value_labels: dict[str, tuple[str, str]] = field(default_factory=dict)
    """With `label_values`: each name hint given to imported values ->
    (the FX node's name, its ATen op)."""
    extern_ops: list[str] = field(default_factory=list)
    """ATen ops imported as library ops (extern calls), in graph order."""
    outputs: list[TensorOutput | ValueOutput] = field(default_factory=list)
    constants: list[torch.Tensor] = field(default_factory=list)
    """Values of the trailing constant arguments, in order."""
    symbols: dict[str, str] = field(default_factory=dict)
    """Dynamo's symbol names -> permalloy's (`s77` -> `s0`)."""


@dataclass
class _Signature:
    """The function's arguments as they are added."""

    attributes: list[dict[str, Attribute]] = field(default_factory=list)
    constants: list[torch.Tensor] = field(default_factory=list)

    def add(self, block: Block, type: Attribute, attributes: dict) -> SSAValue:
        self.attributes.append(attributes)
        return block.insert_arg(type, len(block.args))


def import_graph(
    gm: fx.GraphModule,
    name: str = "forward",
    label_values: bool = False,
    free_layout_outputs: frozenset[int] = frozenset(),
    verify: bool = True,
) -> ImportResult:
    """
    Import an ATen FX graph; raises `GraphImportError` for what ptensor cannot
    represent. With `verify=False` the imported module is not verified here:
    a caller that may not lower it (a compiled-graph cache hit, keyed by its
    text) calls `verify_imported` before lowering it. Unknown ops never fail:
    they become `ptensor.fallback`, and one warning lists them. With `label_values`, the results of the ops imported
    for each node get the name hint `n<position>` (`ImportResult.value_labels`
    says which node it is), which the passes carry to the ops made of them.
    The tensor outputs at the positions of `free_layout_outputs` whose sizes
    are constant are marked `ptensor.free_layout`.
    """
    ctx = ImportContext(Block())
    signature = _Signature()
    on_gpu = any(_device_type(n) == "cuda" for n in gm.graph.nodes if n.op == "placeholder")
    outputs: list = []
    updates: dict[int, SSAValue] = {}
    labels: dict[str, tuple[str, str]] = {}
    for position, node in enumerate(gm.graph.nodes):
        ctx.node = node
        if node.op == "call_function":
            last = ctx.block.last_op
            if node.target is torch.ops.aten.copy_.default:
                ctx.values[node] = _input_update(ctx, node, updates)
            else:
                ctx.values[node] = _call_function(ctx, node)
            if label_values:
                labels.update(_label_new_ops(ctx.block, last, position, node))
        elif node.op == "placeholder":
            ctx.values[node] = _placeholder(ctx, signature, node, on_gpu)
        elif node.op == "get_attr":
            ctx.values[node] = _get_attr(ctx, signature, gm, node)
        elif node.op == "output":
            outputs = _output(ctx, node, free_layout_outputs)
        else:
            raise ctx.error(f"unsupported FX node kind '{node.op}'")
    module = _module(ctx, signature, name, outputs, updates)
    if verify:
        verify_imported(module)
    if ctx.fallback_ops:
        warnings.warn(
            "permalloy runs these ATen ops with torch (ptensor.fallback): "
            + ", ".join(sorted(set(ctx.fallback_ops))),
            stacklevel=2,
        )
    return ImportResult(
        module,
        ctx.fallback_ops,
        ctx.fallback_reasons,
        labels,
        ctx.extern_ops,
        [o for o, _ in outputs],
        signature.constants,
        {k: v.name for k, v in ctx.symbols.names.items()},
    )


def _label_new_ops(block: Block, last, position: int, node: fx.Node) -> dict[str, tuple[str, str]]:
    """Name the results of the ops added to `block` after `last` after `node`."""
    label = f"n{position}"
    op = block.first_op if last is None else last.next_op
    named = False
    while op is not None:
        for result in op.results:
            if result.name_hint is None:
                result.name_hint = label
                named = True
        op = op.next_op
    return {label: (node.name, str(node.target))} if named else {}


def _device_type(node: fx.Node) -> str | None:
    example = node.meta.get("val")
    return example.device.type if isinstance(example, torch.Tensor) else None


def _placeholder(ctx: ImportContext, signature: _Signature, node: fx.Node, on_gpu: bool):
    """A graph input: a tensor argument with its layout (and `ptensor.on_cpu`
    for a CPU tensor of a GPU graph), or a size."""
    example = node.meta.get("val")
    if isinstance(example, torch.Tensor):
        attributes = _layout(ctx, example)
        if on_gpu and example.device.type == "cpu":
            attributes[ON_CPU_ATTR] = UnitAttr()
        return signature.add(ctx.block, ctx.type_of(example), attributes)
    if isinstance(example, torch.SymInt | int) and not isinstance(example, bool):
        expr = ctx.symbols.convert(example)
        signature.add(ctx.block, IndexType(), {SYMBOL_ATTR: SymExprAttr(expr)})
        return expr
    raise ctx.error(
        f"graph input with example value {example!r} is not supported (inputs "
        "are tensors, ints and SymInts, with their values in node.meta['val'])"
    )


def _get_attr(ctx: ImportContext, signature: _Signature, gm: fx.GraphModule, node):
    value = getattr(gm, node.target)
    if not isinstance(value, torch.Tensor):
        raise ctx.error(f"get_attr of a {type(value).__name__} is not supported")
    result_type = ctx.type_of(value)
    if value.numel() > LARGE_CONSTANT_ELEMENTS:
        signature.constants.append(value)
        return signature.add(
            ctx.block, result_type, {CONSTANT_ATTR: StringAttr(str(node.target))}
        )
    splat = _splat_value(value)
    if splat is not None:
        return ctx.emit(ptensor.FullOp(splat, result_type))
    return ctx.emit(ptensor.ConstantOp(_dense(value, result_type), result_type))


_SAME_WIDTH_INTEGERS = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def _splat_value(value: torch.Tensor) -> float | int | bool | None:
    """The one value every element of `value` holds (bit for bit: -0.0 is not
    0.0, a NaN is its own payload), or None. Such a constant (a 0-d tensor
    of a number a model wrote, `torch.finfo(dtype).max` assigned through a
    mask) is a `ptensor.full`, which kernels compute in place, rather than a
    tensor the host program builds on every call."""
    if value.numel() == 0:
        return None
    flat = value.detach().cpu().reshape(-1)
    bits = flat
    if flat.dtype.is_floating_point:
        width = _SAME_WIDTH_INTEGERS.get(flat.element_size())
        if width is None:
            return None
        bits = flat.view(width)
    if not bool((bits == bits[0]).all()):
        return None
    return flat[0].item()


def _dense(value: torch.Tensor, result_type: ptensor.TensorType):
    builtin_type = BuiltinTensorType(result_type.element_type, list(value.shape))
    data = value.detach().cpu()
    items = data.flatten().tolist() if data.dtype.is_floating_point else (
        data.to(torch.int64).flatten().tolist()
    )
    return DenseIntOrFPElementsAttr.from_list(builtin_type, items)


_SCALARS = (torch.SymInt, torch.SymFloat, torch.SymBool, int, float)


def _call_function(ctx: ImportContext, node: fx.Node):
    if node.target in RUNTIME_ASSERTIONS:
        return None
    if "val" not in node.meta:
        raise ctx.error(
            "has no example value (node.meta['val']); import graphs traced with "
            "fake tensors, as AOTAutograd and make_fx trace them"
        )
    if node.target is operator.getitem:
        return _getitem(ctx, node)
    if isinstance(node.meta["val"], _SCALARS):
        return node.meta["val"]
    converter = converter_for(node)
    ctx.declined = None
    value = None if converter is None else converter(ctx, node)
    if value is None:
        reason = NO_CONVERTER if converter is None else ctx.declined or DECLINED
        return import_fallback(ctx, node, reason)
    if is_library_op(node):
        ctx.extern_ops.append(str(node.target))
    return value


def _input_update(ctx: ImportContext, node: fx.Node, updates: dict[int, SSAValue]) -> SSAValue:
    """`copy_(input, value)`: `value`, broadcast to the input's shape in its
    dtype, recorded in `updates` as the new value of the argument (by
    position), which the function returns for the program to write. The
    graph must not read the input after it (AOTAutograd writes these copies
    last)."""
    target, source = node.args[0], node.args[1]
    argument = ctx.values.get(target) if isinstance(target, fx.Node) else None
    if not (isinstance(target, fx.Node) and target.op == "placeholder" and isinstance(argument, BlockArgument)):
        raise ctx.error("copies into a value that is not a graph input; only inputs are updated in place")
    example = ctx.meta(target)
    if any(stride == 0 and size != 1 for size, stride in zip(example.shape, example.stride())):
        raise ctx.error("updates an input that repeats its elements (a stride of 0)")
    later = [user for user in target.users if user is not node and user not in ctx.values]  # not imported yet
    if later:
        raise ctx.error(f"reads the input {target.name} after updating it in place (in {later[0].name})")
    result = ctx.result_type(node)
    value = ctx.cast(ctx.tensor(source), result.element_type)
    if not ptensor.shapes_equal(ptensor.tensor_type(value).sizes, result.sizes):
        value = ctx.emit(ptensor.ExpandOp(value, result))
    updates[argument.index] = value
    return value


def _getitem(ctx: ImportContext, node: fx.Node):
    """An element of a multi-result op; numbers come from the example value."""
    example = node.meta["val"]
    if not isinstance(example, torch.Tensor):
        return example
    value = ctx.values[node.args[0]][node.args[1]]
    if value is None and node.users:
        raise ctx.error("reads a result that its producer did not import")
    return value


def _output(ctx: ImportContext, node: fx.Node, free_layout: frozenset[int]) -> list[tuple[object, SSAValue | None]]:
    """Each graph output's description, with the SSA value it returns."""
    values = node.args[0]
    values = values if isinstance(values, list | tuple) else [values]
    described, results = [], 0
    inputs = _input_storages(node.graph)
    for position, value in enumerate(values):
        imported = ctx.values.get(value) if isinstance(value, fx.Node) else value
        if isinstance(imported, SSAValue):
            described.append((TensorOutput(results), imported))
            example = ctx.meta(value)
            aliases = isinstance(example, torch.Tensor) and _storage(example) in inputs
            free = position in free_layout and not aliases and _constant_sizes(example)
            ctx.output_examples.append(_OutputExample(example, _eager_strides(ctx, value), aliases, free))
            results += 1
        else:
            described.append((ValueOutput(ctx.scalar(imported)), None))
    return described


@dataclass(frozen=True)
class _OutputExample:
    """What the function's result for one tensor output is returned as."""

    example: Any
    """The output's example value."""
    strides: tuple | None
    """The strides eager gives it where they differ from the example's (`_eager_strides`)."""
    aliases: bool
    """Whether it shares an input's memory (`ptensor.aliases_input`)."""
    free: bool
    """Whether its layout is the program's to choose (`ptensor.free_layout`)."""


def _constant_sizes(example: Any) -> bool:
    return isinstance(example, torch.Tensor) and all(isinstance(s, int) for s in example.shape)


def _storage(example: torch.Tensor) -> StorageWeakRef:
    return StorageWeakRef(example.untyped_storage())


def _input_storages(graph: fx.Graph) -> set[StorageWeakRef]:
    """The memory of the graph's tensor inputs, as their example values share it."""
    examples = [n.meta.get("val") for n in graph.nodes if n.op == "placeholder"]
    return {_storage(e) for e in examples if isinstance(e, torch.Tensor)}


def _eager_strides(ctx: ImportContext, value: Any) -> tuple | None:
    """The strides eager gives an output where they differ from its example's:
    an `expand`'s dimensions of size 1 that eager strides as the dimension
    after them (so a new leading dimension before a broadcast one is 0),
    where torch's meta function keeps the input's (for constant layouts).
    None otherwise."""
    if not (isinstance(value, fx.Node) and value.target is torch.ops.aten.expand.default):
        return None
    source, example = ctx.meta(value.args[0]), ctx.meta(value)
    if not isinstance(source, torch.Tensor) or not isinstance(example, torch.Tensor):
        return None
    if not all(isinstance(n, int) for n in (*source.shape, *source.stride(), *example.shape)):
        return None
    offset = example.dim() - source.dim()
    strides: list[Any] = [0] * example.dim()
    for i in reversed(range(example.dim())):
        dim = i - offset
        if dim >= 0:
            stride = source.stride()[dim]
        else:
            stride = example.shape[i + 1] * strides[i + 1] if i + 1 < example.dim() else 1
        if (source.shape[dim] if dim >= 0 else 1) != example.shape[i]:
            stride = 0
        strides[i] = stride
    return tuple(strides)


def _layout(ctx: ImportContext, example: torch.Tensor, strides: tuple | None = None) -> dict[str, Attribute]:
    """`{ptensor.strides = ...}` for a tensor that is not dense row-major: the
    layout a graph input arrives with, or a graph output must be returned in
    (`strides` where they differ from the example's)."""
    sizes = ctx.shape(example.shape)
    strides = [ctx.symbols.convert(s) for s in (example.stride() if strides is None else strides)]
    dense: list[sympy.Expr] = []
    running: sympy.Expr = sympy.Integer(1)
    for size in reversed(sizes):
        dense.append(running)
        running = running * size
    dense.reverse()
    matters = [
        not ptensor.sizes_equal(s, d) for s, d, n in zip(strides, dense, sizes) if n != 1
    ]
    if not any(matters):
        return {}
    return {STRIDES_ATTR: ptensor.SymListAttr(strides)}


def _result_attributes(ctx: ImportContext, output: _OutputExample) -> dict[str, Attribute]:
    """A result's attributes: the layout it is returned in, or that it is free."""
    if not isinstance(output.example, torch.Tensor):
        return {}
    if output.free:
        return {FREE_LAYOUT_ATTR: UnitAttr()}
    aliases = {ALIAS_ATTR: UnitAttr()} if output.aliases else {}
    return _layout(ctx, output.example, output.strides) | aliases


def _update_attributes(signature: _Signature, position: int) -> dict[str, Attribute]:
    """An update result's attributes: the argument it updates, and that
    argument's layout, which the program writes."""
    attributes: dict[str, Attribute] = {UPDATES_ATTR: IntegerAttr(position, 64)}
    strides = signature.attributes[position].get(STRIDES_ATTR)
    if strides is not None:
        attributes[STRIDES_ATTR] = strides
    return attributes


def _module(ctx: ImportContext, signature: _Signature, name: str, outputs, updates: dict[int, SSAValue]) -> ModuleOp:
    returned = [v for _, v in outputs if v is not None] + list(updates.values())
    ctx.block.add_op(func.ReturnOp(*returned))
    result_layouts = [_result_attributes(ctx, output) for output in ctx.output_examples]
    result_layouts += [_update_attributes(signature, position) for position in updates]
    function = func.FuncOp(
        name,
        ([a.type for a in ctx.block.args], [v.type for v in returned]),
        Region(ctx.block),
        arg_attrs=ArrayAttr([DictionaryAttr(a) for a in signature.attributes]),
        res_attrs=ArrayAttr([DictionaryAttr(a) for a in result_layouts])
        if any(result_layouts)
        else None,
    )
    return ModuleOp([function])


def verify_imported(module: ModuleOp) -> None:
    """Verify an imported module; a `GraphImportError` says what is wrong."""
    try:
        module.verify()
    except VerifyException as error:
        raise GraphImportError(f"the imported IR does not verify: {error}") from error
