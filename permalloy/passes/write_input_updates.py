"""The `write-input-updates` pass."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, IntegerAttr, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from permalloy.analysis.in_place import writes_over_input
from permalloy.dialects import buffer as buf
from permalloy.dialects import ptensor as pt
from permalloy.lowering.import_fx.graph import ON_CPU_ATTR, UPDATED_ATTR, UPDATES_ATTR, result_attribute
from permalloy.passes.plan_memory import memory_root, same_layout


@dataclass(frozen=True)
class WriteInputUpdatesPass(ModulePass):
    """
    Writes the new values of the inputs a graph updates in place (the results
    marked `ptensor.updates_input`, an argument's position) into those
    arguments, and drops these results from the function.

    Expects buffer-level functions (after `convert-loop-to-buffer`). Where one
    op writes the buffer holding a new value, and nothing reads the argument
    after that op, the op writes the argument instead:
    - a kernel launch, when the pointwise stage computing the value reads the
      argument, if at all, only at the point it writes (`writes_over_input`):
      the argument takes the buffer's place, or, where the function also
      returns the value as a graph output, becomes one more output of the
      launch, the kernel yielding the value twice;
    - a `buffer.copy`, when the function does not also return the value;
    - an extern's `index_put` of the argument (a cache written at some rows),
      when nothing else it reads is the argument's memory and the function
      does not also return the value: it runs in place (`index_put_`,
      `buffer.writes_first_input`), and the argument takes its result's place.
    Any other new value is copied into its argument at the end (`buffer.copy`
    before the return). Each updated argument is marked `ptensor.updated`, so
    that a host program that gives it a copy in its expected layout copies
    that copy back. `in-place=false` copies every new value at the end.

    Before (a batch-norm layer's count of batches):
    ```
    func.func @forward(%n: !buffer.buffer<[], i64>) -> !buffer.buffer<[], i64> {
      %a = buffer.alloc : !buffer.buffer<[], i64>
      buffer.launch @add_one ins(%n : ...) outs(%a : ...)
      func.return %a : !buffer.buffer<[], i64>    // {ptensor.updates_input = 0}
    }
    ```
    After:
    ```
    func.func @forward(%n: !buffer.buffer<[], i64> {ptensor.updated}) {
      buffer.launch @add_one ins(%n : ...) outs(%n : ...)
      func.return
    }
    ```
    """

    name = "write-input-updates"

    in_place: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernels = {k.sym_name.data: k for k in op.ops if isinstance(k, buf.KernelOp)}
        functions = [f for f in op.ops if isinstance(f, func.FuncOp) and f.body.blocks]
        launches = Counter(
            launch.kernel.root_reference.data
            for function in functions
            for launch in function.body.block.ops
            if isinstance(launch, buf.LaunchOp)
        )
        for function in functions:
            _Updates(op, function, kernels, launches, self.in_place).write()


@dataclass
class _Updates:
    """Writing the input updates of one function."""

    module: ModuleOp
    function: func.FuncOp
    kernels: dict[str, buf.KernelOp]
    launches: Counter[str]
    in_place: bool
    positions: dict[Operation, int] = field(default_factory=dict)
    last_reads: dict[SSAValue, int] = field(default_factory=dict)
    """The position of the last op before the return reading each argument's memory."""

    def write(self) -> None:
        terminator = self.function.body.block.last_op
        assert isinstance(terminator, func.ReturnOp)
        updates = {
            position: attribute.value.data
            for position in range(len(terminator.arguments))
            if isinstance(attribute := result_attribute(self.function, position, UPDATES_ATTR), IntegerAttr)
        }
        if not updates:
            return
        arguments = self.function.body.block.args
        updated = {arguments[index] for index in updates.values()}
        kept = [v for position, v in enumerate(terminator.arguments) if position not in updates]
        # values that are (views of) updated arguments are copied where they
        # are defined, before any update is written
        values = {
            position: self._snapshot(value) if memory_root(value) in updated else value
            for position, value in ((p, terminator.arguments[p]) for p in updates)
        }
        self._find_reads(updated)
        # a value written into several arguments is copied into each
        shared = {v for v, count in Counter(values.values()).items() if count > 1}
        for position, index in updates.items():
            value, argument = values[position], arguments[index]
            alone = value is terminator.arguments[position] and value not in shared
            if alone and self._write_in_place(value, argument, value in kept):
                continue
            Rewriter.insert_op(buf.CopyOp(value, argument), InsertPoint.before(terminator))
        self._drop_results(terminator, updates, kept)

    def _find_reads(self, updated: set[BlockArgument]) -> None:
        """Number the ops and find where each updated argument is last read."""
        for position, op in enumerate(self.function.body.block.ops):
            self.positions[op] = position
            if isinstance(op, func.ReturnOp):
                continue
            for operand in op.operands:
                if isinstance(operand.type, buf.BufferType) and (root := memory_root(operand)) in updated:
                    self.last_reads[root] = position

    # -- in place ------------------------------------------------------------------

    def _write_in_place(self, value: SSAValue, argument: BlockArgument, also_returned: bool) -> bool:
        """Make the one op writing `value`'s buffer write `argument` too (or
        instead), where that is safe; whether it did."""
        if not self.in_place or self._on_cpu(argument):
            return False
        if not same_layout(buf.buffer_type(value), buf.buffer_type(argument)):
            return False
        if isinstance(value.owner, buf.ExternOp):
            return self._extern_in_place(value.owner, value, argument, also_returned)
        if not isinstance(value.owner, buf.AllocOp):
            return False
        writers = _writers(value)
        if len(writers) != 1:
            return False
        (writer,) = writers
        if self._read_after(argument, writer):
            return False
        if isinstance(writer, buf.CopyOp):
            if also_returned or memory_root(writer.source) is argument:
                return False
            self._replace(value, argument)
            return True
        assert isinstance(writer, buf.LaunchOp)
        if not self._launch_may_write(writer, value, argument):
            return False
        if also_returned:
            self._add_output(writer, value, argument)
        else:
            self._replace(value, argument)
        return True

    def _extern_in_place(
        self, extern: buf.ExternOp, value: SSAValue, argument: BlockArgument, also_returned: bool
    ) -> bool:
        """An `index_put` of the argument (a cache written at some rows) runs
        in place (`index_put_`) where nothing else reads the argument, then or
        after, and the function returns the new value only as the update."""
        if also_returned or not isinstance(extern.library_op, pt.IndexPutOp) or len(extern.results) != 1:
            return False
        inputs = list(extern.inputs)
        if not inputs or inputs[0] is not argument or argument.type != value.type:
            return False
        if any(memory_root(other) is argument for other in inputs[1:]) or self._read_after(argument, extern):
            return False
        extern.attributes[buf.ExternOp.WRITES_FIRST_INPUT] = UnitAttr()
        value.replace_all_uses_with(argument)
        return True

    def _launch_may_write(self, launch: buf.LaunchOp, value: SSAValue, argument: BlockArgument) -> bool:
        kernel = self.kernels.get(launch.kernel.root_reference.data)
        outputs = list(launch.outputs)
        if kernel is None or outputs.count(value) != 1:
            return False
        output = outputs.index(value)
        layout = buf.buffer_type(value)
        for index, operand in enumerate(launch.inputs):
            if memory_root(operand) is not argument:
                continue
            if not same_layout(buf.buffer_type(operand), layout) or not writes_over_input(kernel, index, output):
                return False
        return True

    def _read_after(self, argument: BlockArgument, writer: Operation) -> bool:
        """Whether an op after `writer` (before the return) reads the
        argument's memory (writing one argument in place adds no reads of
        another, so the positions found first hold)."""
        return self.last_reads.get(argument, -1) > self.positions[writer]

    def _replace(self, value: SSAValue, argument: BlockArgument) -> None:
        """The argument takes the place of `value`'s allocation."""
        alloc = value.owner
        assert isinstance(alloc, buf.AllocOp)
        replacement: SSAValue = argument
        if argument.type != value.type:
            view = buf.ViewOp(argument, buf.buffer_type(value))
            Rewriter.insert_op(view, InsertPoint.before(alloc))
            replacement = view.result
        value.replace_all_uses_with(replacement)
        Rewriter.erase_op(alloc)

    def _add_output(self, launch: buf.LaunchOp, value: SSAValue, argument: BlockArgument) -> None:
        """The launch writes `value` into `argument` too: its kernel yields
        the value twice (a copy of the kernel where another launch runs it)."""
        name = launch.kernel.root_reference.data
        kernel = self.kernels[name]
        if self.launches[name] > 1:
            self.launches[name] -= 1
            kernel = kernel.clone()
            name = _fresh_name(name, self.kernels)
            kernel.properties["sym_name"] = StringAttr(name)
            self.module.body.block.add_op(kernel)
            self.kernels[name] = kernel
            self.launches[name] = 1
        terminator = kernel.body.block.last_op
        assert isinstance(terminator, buf.YieldOp)
        computed = terminator.values[list(launch.outputs).index(value)]
        Rewriter.replace_op(terminator, buf.YieldOp([*terminator.values, computed]))
        signature = kernel.function_type
        kernel.properties["function_type"] = FunctionType.from_lists(signature.inputs.data, [*signature.outputs.data, computed.type])
        widened = buf.LaunchOp(name, list(launch.inputs), [*launch.outputs, argument])
        widened.attributes.update(launch.attributes)
        Rewriter.replace_op(launch, widened)

    # -- copies ----------------------------------------------------------------------

    def _snapshot(self, value: SSAValue) -> SSAValue:
        """A copy of `value`, which views an argument the function updates,
        made where `value` is defined (before any update is written)."""
        alloc = buf.AllocOp(buf.BufferType(buf.buffer_type(value).sizes, buf.buffer_type(value).element_type))
        copy = buf.CopyOp(value, alloc.result)
        owner = value.owner
        point = InsertPoint.at_start(owner) if isinstance(owner, Block) else InsertPoint.after(owner)
        Rewriter.insert_op([alloc, copy], point)
        return alloc.result

    def _on_cpu(self, argument: BlockArgument) -> bool:
        return _argument_attributes(self.function, argument.index).get(ON_CPU_ATTR) is not None

    # -- the signature -----------------------------------------------------------------

    def _drop_results(self, terminator: func.ReturnOp, updates: dict[int, int], kept: list[SSAValue]) -> None:
        """Return only the graph outputs, and mark the updated arguments."""
        Rewriter.replace_op(terminator, func.ReturnOp(*kept))
        function = self.function
        inputs = function.function_type.inputs.data
        function.function_type = FunctionType.from_lists(inputs, [v.type for v in kept])
        if function.res_attrs is not None:
            entries = [e for p, e in enumerate(function.res_attrs.data) if p not in updates]
            function.res_attrs = ArrayAttr(entries) if any(e.data for e in entries) else None  # type: ignore[union-attr]
        argument_entries = [_argument_attributes(function, p) for p in range(len(inputs))]
        for index in updates.values():
            argument_entries[index] = argument_entries[index] | {UPDATED_ATTR: UnitAttr()}
        function.arg_attrs = ArrayAttr([DictionaryAttr(entry) for entry in argument_entries])


def _writers(value: SSAValue) -> list[Operation]:
    """The ops writing `value`'s memory, through it or views of it: launches
    giving it as an output, copies into it."""
    writers: list[Operation] = []
    for use in value.uses:
        user = use.operation
        if isinstance(user, buf.ViewOp):
            writers += _writers(user.result)
        elif isinstance(user, buf.LaunchOp) and value in user.outputs:
            writers.append(user)
        elif isinstance(user, buf.CopyOp) and user.target is value:
            writers.append(user)
    return list(dict.fromkeys(writers))


def _argument_attributes(function: func.FuncOp, position: int) -> dict:
    attributes = function.arg_attrs
    if attributes is None or position >= len(attributes.data):
        return {}
    entry = attributes.data[position]
    return dict(entry.data) if isinstance(entry, DictionaryAttr) else {}


def _fresh_name(name: str, taken: dict[str, buf.KernelOp]) -> str:
    count = 1
    while f"{name}_{count}" in taken:
        count += 1
    return f"{name}_{count}"
