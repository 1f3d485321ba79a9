"""The `plan-layouts` pass."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import sympy
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from permalloy.analysis.channels import concatenates_channels, walks_channels_beside
from permalloy.dialects import buffer as buf
from permalloy.dialects import ptensor as pt
from permalloy.lowering.convert_loop_to_buffer import attention_buffer
from permalloy.lowering.import_fx.graph import FREE_LAYOUT_ATTR, result_attribute
from permalloy.passes import check_option
from permalloy.passes.convolution_layouts import MEASURED_DEVICES, LayoutTimes, convolution_times
from permalloy.passes.plan_memory import FRESH_RESULT_OPS

PLANNED_RANK = 4
"""The rank of the tensors whose layout is planned: those of 2-d convolutions."""


def channels_last_strides(sizes: Sequence[sympy.Expr]) -> tuple[sympy.Expr, ...]:
    """The strides torch gives a `[N, C, *spatial]` tensor in channels-last
    memory: channels innermost, then the spatial dimensions row-major, then
    the batch."""
    return buf.dense_strides_in_order(sizes, (0, *range(2, len(sizes)), 1))


def _channels_last(layout: buf.BufferType) -> buf.BufferType:
    """`layout` in channels-last memory; a `[C, H, W]` image of one batch
    element (squeezed) with the strides of `[1, C, H, W]` channels-last."""
    if layout.rank == PLANNED_RANK - 1:
        strides = channels_last_strides([1, *layout.sizes])[1:]
    else:
        strides = channels_last_strides(layout.sizes)
    return buf.BufferType(layout.sizes, layout.element_type, strides)


def _is_channels_last(layout: buf.BufferType) -> bool:
    return tuple(layout.strides.data) == channels_last_strides(layout.sizes) and layout.offset.expr == 0


def _same_memory_order(a: buf.BufferType, b: buf.BufferType) -> bool:
    """Whether two dense layouts of the same sizes differ only in the strides
    of dimensions of size 1, which no element is read through."""
    return a.offset.expr == b.offset.expr and all(
        size == 1 or x == y for size, x, y in zip(a.sizes, a.strides.data, b.strides.data)
    )


def _unit_batch_view(op: Operation) -> bool:
    """Whether `op` views an image of one batch element `[C, H, W]`, as a
    kernel writes it once `squeeze-leading-unit-dims` dropped its batch
    dimension, as the `[1, C, H, W]` image a convolution reads (or back):
    both contiguous, from the same offset."""
    if not isinstance(op, buf.ViewOp):
        return False
    source, result = buf.buffer_type(op.source), buf.buffer_type(op.result)
    squeezed, image = (source, result) if source.rank == PLANNED_RANK - 1 else (result, source)
    return (
        squeezed.rank == PLANNED_RANK - 1
        and image.rank == PLANNED_RANK
        and image.sizes[0] == 1
        and tuple(image.sizes[1:]) == tuple(squeezed.sizes)
        and squeezed.is_contiguous()
        and image.is_contiguous()
        and source.offset.expr == result.offset.expr == 0
    )


def _unit_batch_views(value: SSAValue) -> list[buf.ViewOp]:
    """The unit-batch views (`_unit_batch_view`) of a `[C, H, W]` buffer."""
    return [use.operation for use in value.uses if _unit_batch_view(use.operation)]  # type: ignore[misc]


def _is_image(value: SSAValue) -> bool:
    """Whether `value` is an image whose layout is planned: a 4-d buffer, or
    a `[C, H, W]` one a unit-batch view shows as `[1, C, H, W]`."""
    layout = value.type
    if not isinstance(layout, buf.BufferType):
        return False
    if layout.rank == PLANNED_RANK:
        return True
    return layout.rank == PLANNED_RANK - 1 and bool(_unit_batch_views(value))


def _batch_and_channels(layout: buf.BufferType) -> tuple:
    """An image's batch and channel sizes (1 for a squeezed one's batch)."""
    return tuple(layout.sizes[:2]) if layout.rank == PLANNED_RANK else (1, layout.sizes[0])


@dataclass
class _Components:
    """Union-find over buffer values."""

    parent: dict[SSAValue, SSAValue] = field(default_factory=dict)

    def find(self, value: SSAValue) -> SSAValue:
        self.parent.setdefault(value, value)
        while self.parent[value] is not value:
            self.parent[value] = self.parent[self.parent[value]]
            value = self.parent[value]
        return value

    def union(self, values: Iterable[SSAValue]) -> None:
        roots = [self.find(v) for v in values]
        for root in roots[1:]:
            self.parent[root] = roots[0]


def _copied_for_channels_last(source: SSAValue) -> bool:
    """Whether a planned convolution's input `source` is copied to
    channels-last for it: it is neither channels-last already nor free to
    take that layout (a graph input, a view other than the unit-batch view
    of a free image, which is planned with its image)."""
    return not _is_channels_last(buf.buffer_type(source)) and not _free(_planned_image(source))


def _planned_image(value: SSAValue) -> SSAValue:
    """The buffer whose layout decides `value`'s: the `[C, H, W]` image a
    unit-batch view shows as `[1, C, H, W]` (at a batch of one, kernels
    write their images with the batch squeezed out and convolutions read
    them through such views), else `value` itself."""
    owner = value.owner
    if _unit_batch_view(owner) and buf.buffer_type(owner.source).rank == PLANNED_RANK - 1:  # type: ignore[union-attr]
        return owner.source  # type: ignore[union-attr]
    return value


def _reads_given_channels_last(op: buf.ExternOp) -> bool:
    """Whether the convolution `op` reads a channels-last input whose layout
    is not the program's to choose (a graph input in that memory format):
    torch's convolution answers it in channels-last, so an NCHW result would
    be a conversion of every element."""
    source = op.inputs[0]
    return _is_channels_last(buf.buffer_type(source)) and not _free(source)


def _free(value: SSAValue) -> bool:
    """Whether nothing but its layout-agnostic users sees `value`'s layout: a
    contiguous buffer the program allocates (for a kernel's result, or a
    library call's fresh one), of the planned rank, that only launches, extern
    calls and frees use, and returns only as results of free layout
    (`ptensor.free_layout`). A buffer returned otherwise, viewed or copied
    keeps its layout."""
    owner = value.owner
    fresh = isinstance(owner, buf.AllocOp) or (
        isinstance(owner, buf.ExternOp) and isinstance(owner.library_op, FRESH_RESULT_OPS)
    )
    layout = value.type
    if not fresh or not isinstance(layout, buf.BufferType) or not _is_image(value):
        return False
    if not layout.is_contiguous():
        return False
    return _used_freely(value, views=layout.rank == PLANNED_RANK - 1)


def _used_freely(value: SSAValue, views: bool) -> bool:
    """Whether only launches, extern calls' inputs, frees and returns of free
    layout use `value` (and, with `views`, unit-batch views used so)."""
    for use in value.uses:
        user = use.operation
        if isinstance(user, buf.ExternOp) and value in user.inputs:
            continue
        if isinstance(user, func.ReturnOp) and _returns_free_layout(user, use.index):
            continue
        if views and _unit_batch_view(user):
            if not _used_freely(user.results[0], views=False):
                return False
            continue
        if not isinstance(user, (buf.LaunchOp, buf.DeallocOp)):
            return False
    return True


def _returns_free_layout(op: func.ReturnOp, position: int) -> bool:
    """Whether the function of `op` returns its result `position` in any layout."""
    function = op.parent_op()
    return isinstance(function, func.FuncOp) and result_attribute(function, position, FREE_LAYOUT_ATTR) is not None


def _multiply_adds(op: buf.ExternOp) -> int | None:
    """The multiply-adds of the convolution `op` holds: each element of its
    result (of its input, transposed) times a weight's receptive field; None
    where its sizes are symbolic."""
    convolution = op.library_op
    assert isinstance(convolution, pt.ConvolutionOp)
    swept = convolution.input if convolution.transposed is not None else convolution.result
    sizes = [*pt.tensor_type(swept).sizes, *pt.tensor_type(convolution.weight).sizes[1:]]
    work = sympy.Mul(*sizes)
    return int(work) if work.is_Integer else None


def _convolution(op: Operation) -> pt.ConvolutionOp | None:
    if isinstance(op, buf.ExternOp) and isinstance(op.library_op, pt.ConvolutionOp):
        convolution = op.library_op
        if pt.tensor_type(convolution.result).rank == PLANNED_RANK:
            return convolution
    return None


def _is_convolution_backward(op: Operation) -> bool:
    return isinstance(op, buf.ExternOp) and isinstance(op.library_op, pt.ConvolutionBackwardOp)


def _follows_channels_last_input(op: Operation) -> bool:
    """Whether `op` is a convolution's backward call whose saved input is
    channels-last: the forward program planned that layout for it (a
    decision the forward measured), and the gradients around it follow."""
    if not _is_convolution_backward(op):
        return False
    saved_input = buf.buffer_type(op.inputs[1])
    return saved_input.rank == PLANNED_RANK and _is_channels_last(saved_input)


def _gradient_images(op: buf.ExternOp) -> list[SSAValue]:
    """The 4-d images of a convolution's backward call: the result's
    gradient, the saved input and, when asked for, the input's gradient."""
    backward = op.library_op
    assert isinstance(backward, pt.ConvolutionBackwardOp)
    images = [op.inputs[0], op.inputs[1]]
    if backward.output_mask.data[0]:
        images.append(op.results[0])
    return images


ConvolutionTimer = Callable[..., LayoutTimes]
"""`(extern holding a convolution, whether its input is copied, keeps_nchw=)
-> times` (`convolution_layouts.convolution_times` on a device)."""

MEASURED_MARGIN = 0.02
"""Measured convolutions keep NCHW memory only where their channels-last
time, in all, exceeds their NCHW time by this fraction of it."""

MEASURED_FLOOR_SECONDS = {"cpu": 1e-4, "cuda": 1e-3}
"""Measured convolutions taking less than this in all, in both layouts, on
each device, keep NCHW memory: at that scale a call's fixed costs and the
timing's noise, not the layout, decide which measures faster. On the CPU a
floor of a millisecond kept ConvNeXt's convolutions at the CPU sizes (0.47
ms in NCHW memory, 0.41 ms channels-last) in NCHW memory, where every
block's depthwise convolution, reading its permuted channels, gave a result
to copy back; a GPU's launches and synchronizations weigh more in its times,
and its floor stays where the GPU measurements left it."""

MEASURED_MIN_MULTIPLY_ADDS = 1 << 22
"""Measured convolutions doing fewer multiply-adds than this in all (about
4 million: a tenth of a millisecond on one CPU core) keep NCHW memory without
being timed: they are far under `MEASURED_FLOOR_SECONDS` on any machine, and
a timing of them on a busy one can still land above it, which would make the
same program compile to different layouts from run to run."""

MEASURED_MIN_CONVOLUTIONS = {"cpu": 8}
"""On each device that has one, the number of convolutions from which a set
is timed whatever its multiply-adds: each call of a library convolution has
fixed costs that `MEASURED_MIN_MULTIPLY_ADDS` does not count, and they
differ by layout. On one CPU core, MobileNetV2 at a batch of 2 and 32x32
images does 2.4 million multiply-adds in 52 convolutions, each call 11 to
280 us, and its 3x3 depthwise ones took 1.22 ms a call in NCHW memory
against 0.92 ms channels-last; eight calls reach the floor. A GPU has no
such count: its floor is ten times the CPU's."""

TRANSPOSING_MARGIN = 0.25
"""The margin instead where a kernel of the set walks the images' channels
beside a tensor contiguous along them (`analysis.channels`: a layer norm over
permuted channels, a linear layer's result added back), which NCHW memory
makes a transposing kernel and the convolutions' times do not count."""


CONCATENATING_MARGIN = {"cpu": -0.15, "cuda": MEASURED_MARGIN}
"""On each device, the margin instead where a kernel of the set
concatenates images along their channels
(`analysis.channels.concatenates_channels`), whose kernels the
convolutions' times do not count. On the CPU it is negative: the set takes
channels-last only where its convolutions run more than 15% faster so.
DenseNet-121's convolutions ran 5% faster channels-last on one CPU core
(41.8 against 44.2 ms a call), its whole program 5% slower (56.6 against
53.9 ms), its concatenating kernels switching inputs within every pixel's
channels (the cost is that of the CPU's vector loads; on a GPU such a set
is judged as any other)."""


@dataclass
class _LayoutPlanner:
    """The layout decisions for one host program; with `timer`, convolutions
    keep NCHW memory where channels-last measures slower."""

    function: func.FuncOp
    timer: ConvolutionTimer | None
    min_multiply_adds: int
    """Measured sets doing fewer multiply-adds keep NCHW without being timed..."""
    min_convolutions: int
    """...unless they hold at least this many convolutions."""
    floor_seconds: float
    """Measured sets taking less in all, both ways, keep NCHW."""
    concatenating_margin: float
    """`CONCATENATING_MARGIN` on the device the sets are measured on."""
    components: _Components = field(default_factory=_Components)

    def run(self) -> None:
        self._plan_convolutions()
        self._plan_attention_queries()
        _update_result_types(self.function)

    def _plan_attention_queries(self) -> None:
        """A free query of a 4-d attention is written in attention's memory
        order: torch's flash and cuDNN kernels give their result the layout
        of the query, and the program expects that order
        (`ATTENTION_MEMORY_ORDER`), so the result needs no copy."""
        for op in list(self.function.body.block.ops):
            if not (isinstance(op, buf.ExternOp) and isinstance(op.library_op, pt.AttentionOp)):
                continue
            query = op.inputs[0]
            if _free(query) and buf.buffer_type(query).sizes == buf.buffer_type(op.results[0]).sizes:
                self._relayout(query.owner, {query}, lambda layout: attention_buffer(layout.tensor_type()))

    def _plan_convolutions(self) -> None:
        block = self.function.body.block
        planned: list[buf.ExternOp] = []
        kept: list[buf.ExternOp] = []
        following: list[buf.ExternOp] = []
        for op in block.ops:
            if isinstance(op, buf.LaunchOp):
                self._connect_launch(op)
            elif _convolution(op) is not None:
                (planned if _free(op.results[0]) else kept).append(op)
            elif _follows_channels_last_input(op):
                following.append(op)
                self.components.union(_gradient_images(op))
        if not planned and not following:
            return
        if self.timer is None:
            vetoed = [v for op in kept for v in (op.inputs[0], op.results[0])]
        else:
            # measured: a kept convolution reads an NCHW copy of a channels-last
            # input, a cost its timing counts, so only its result vetoes
            vetoed = [op.results[0] for op in kept]
            kept = [op for op in kept if _free(op.inputs[0])]
            planned_values = [v for op in planned for v in (op.inputs[0], op.results[0])]
            self.components.union(planned_values + [op.inputs[0] for op in kept])
        seeds = {self.components.find(v) for op in planned for v in (op.inputs[0], op.results[0])}
        chosen = seeds - {self.components.find(v) for v in vetoed}
        if self.timer is not None:
            chosen &= self._not_measured_slower(planned, kept)
        chosen |= {self.components.find(op.inputs[0]) for op in following} - {self.components.find(v) for v in vetoed}
        changed: dict[Operation, set[SSAValue]] = {}
        for value in list(self.components.parent):
            if self.components.find(value) in chosen and _free(value):
                changed.setdefault(value.owner, set()).add(value)
        replaced = {owner: self._relayout(owner, values) for owner, values in changed.items()}
        for op in planned:
            if self.components.find(op.results[0]) in chosen:
                self._channels_last_input(replaced.get(op, op))
        for op in kept:
            source = buf.buffer_type(op.inputs[0])
            if self.timer is not None and _is_channels_last(source) and not source.is_contiguous():
                _read_copy(op, buf.BufferType(source.sizes, source.element_type))
        for op in list(block.ops):
            if _reads_fixed_input_beside_channels_last_gradient(op):
                _read_copy(op, _channels_last(buf.buffer_type(op.inputs[1])), operand=1)

    def _not_measured_slower(self, planned: list[buf.ExternOp], kept: list[buf.ExternOp]) -> set[SSAValue]:
        """The sets (by their root) whose convolutions do not run slower in
        all with channels-last memory, by more than `MEASURED_MARGIN`, as
        `timer` measures them (one set: every planned convolution's). A kept
        convolution (whose result keeps NCHW memory) reading the set counts
        the copy of its input back to NCHW. A set too small to time, or too
        fast to tell apart, is chosen only when it is given a channels-last
        input."""
        assert self.timer is not None
        sets: dict[SSAValue, list[buf.ExternOp]] = {}
        for op in planned:
            sets.setdefault(self.components.find(op.results[0]), []).append(op)
        readers: dict[SSAValue, list[buf.ExternOp]] = {}
        for op in kept:
            readers.setdefault(self.components.find(op.inputs[0]), []).append(op)
        nchw: dict[SSAValue, float] = {}
        channels_last: dict[SSAValue, float] = {}
        trains = {"trains": True} if self._trains() else {}
        for root, ops in sets.items():
            work = [_multiply_adds(op) for op in ops]
            if None not in work and sum(work) < self.min_multiply_adds and len(ops) < self.min_convolutions:
                continue
            times = [self.timer(op, _copied_for_channels_last(op.inputs[0]), **trains) for op in ops]
            times += [self.timer(op, False, keeps_nchw=True, **trains) for op in readers.get(root, ())]
            nchw[root] = sum(t.nchw for t in times)
            channels_last[root] = sum(t.channels_last for t in times)
        undecided = sets.keys() - nchw.keys()  # too small to time
        chosen = set()
        kernels = self._kernels()
        for root in nchw:
            measured = nchw[root] > 0 or channels_last[root] > 0
            if measured and max(nchw[root], channels_last[root]) < self.floor_seconds:
                undecided.add(root)
                continue
            if self._transposes_in_nchw(root, kernels):
                margin = TRANSPOSING_MARGIN
            elif self._concatenates_channels(root, kernels):
                margin = self.concatenating_margin
            else:
                margin = MEASURED_MARGIN
            if channels_last[root] <= nchw[root] * (1 + margin):
                chosen.add(root)
        # an undecided set keeps NCHW, unless a convolution of it is given a channels-last input
        return chosen | {root for root in undecided if any(map(_reads_given_channels_last, sets[root]))}

    def _trains(self) -> bool:
        """Whether the function is a training step's forward graph (it
        returns saved activations of free layout), whose convolutions'
        gradients the backward graph computes in the layouts planned here."""
        returned = self.function.body.block.last_op
        return isinstance(returned, func.ReturnOp) and any(
            _returns_free_layout(returned, i) for i in range(len(returned.arguments))
        )

    def _transposes_in_nchw(self, root: SSAValue, kernels: dict[str, buf.KernelOp]) -> bool:
        """Whether a kernel launched on the set of `root` walks its images'
        channels beside a tensor contiguous along them (`kernels`: the
        module's, by name)."""
        for op in self.function.body.block.ops:
            if not isinstance(op, buf.LaunchOp):
                continue
            operands = [*op.inputs, *op.outputs]
            images = {
                i
                for i, v in enumerate(operands)
                if isinstance(v.type, buf.BufferType) and v.type.rank == PLANNED_RANK and self.components.find(v) is root
            }
            kernel = kernels.get(op.kernel.root_reference.data)
            if images and kernel is not None and walks_channels_beside(kernel, [v.type for v in operands], images):
                return True
        return False

    def _concatenates_channels(self, root: SSAValue, kernels: dict[str, buf.KernelOp]) -> bool:
        """Whether a kernel launched on the set of `root` concatenates
        images along their channels (`analysis.channels`; `kernels`: the
        module's, by name)."""
        for op in self.function.body.block.ops:
            if not isinstance(op, buf.LaunchOp):
                continue
            if not any(_is_image(v) and self.components.find(v) is root for v in op.outputs):
                continue
            kernel = kernels.get(op.kernel.root_reference.data)
            if kernel is not None and concatenates_channels(kernel):
                return True
        return False

    def _kernels(self) -> dict[str, buf.KernelOp]:
        """The kernels of the function's module, by name."""
        module = self.function.parent_op()
        return {op.sym_name.data: op for op in module.walk() if isinstance(op, buf.KernelOp)} if module else {}

    def _connect_launch(self, op: buf.LaunchOp) -> None:
        """The planned-rank operands of one launch with the same batch and
        channel sizes share a layout decision: a kernel reads and writes
        them along the same dimensions."""
        by_channels: dict[tuple, list[SSAValue]] = {}
        for value in (*op.inputs, *op.outputs):
            if _is_image(value):
                by_channels.setdefault(_batch_and_channels(buf.buffer_type(value)), []).append(value)
                for view in _unit_batch_views(value):
                    self.components.union([value, view.result])
        for values in by_channels.values():
            self.components.union(values)

    def _relayout(
        self,
        owner: Operation,
        values: set[SSAValue],
        layout_for: Callable[[buf.BufferType], buf.BufferType] = _channels_last,
    ) -> Operation:
        """Give the free buffers `values` of `owner` the layout `layout_for`
        gives (channels-last by default); the op that now defines them."""
        types = [layout_for(buf.buffer_type(r)) if r in values else r.type for r in owner.results]
        if isinstance(owner, buf.AllocOp):
            new: Operation = buf.AllocOp(types[0])
        else:
            assert isinstance(owner, buf.ExternOp)
            body = owner.detach_region(owner.body)
            new = buf.ExternOp(list(owner.inputs), types, body)  # type: ignore[arg-type]
        for old, result in zip(owner.results, new.results):
            result.name_hint = old.name_hint
        views = [view for old in owner.results for view in _unit_batch_views(old)]
        Rewriter.replace_op(owner, new)
        for view in views:
            image = buf.buffer_type(view.result)
            relaid = buf.ViewOp(view.source, layout_for(image))
            relaid.result.name_hint = view.result.name_hint
            Rewriter.replace_op(view, relaid)
        return new

    def _channels_last_input(self, op: buf.ExternOp) -> None:
        """A planned convolution whose input arrives in another layout (a
        graph input) reads a channels-last copy of it: the copy of the input
        is smaller than one of the result would be."""
        if _copied_for_channels_last(op.inputs[0]):
            _read_copy(op, _channels_last(buf.buffer_type(op.inputs[0])))


def _update_result_types(function: func.FuncOp) -> None:
    """The function's result types after its returned buffers changed layout."""
    returned = function.body.block.last_op
    if not isinstance(returned, func.ReturnOp):
        return
    types = [v.type for v in returned.arguments]
    if types != list(function.function_type.outputs.data):
        function.function_type = FunctionType.from_lists(list(function.function_type.inputs.data), types)


def _read_copy(op: buf.ExternOp, layout: buf.BufferType, operand: int = 0) -> None:
    """Make `op` read a copy of its input `operand` in `layout`, made just before it."""
    copy_target = buf.AllocOp(layout)
    copy = buf.CopyOp(op.inputs[operand], copy_target.results[0])
    Rewriter.insert_op([copy_target, copy], InsertPoint.before(op))
    op.operands[operand] = copy_target.results[0]


def _reads_fixed_input_beside_channels_last_gradient(op: Operation) -> bool:
    """Whether `op` is a convolution's backward call whose result's gradient
    was planned channels-last while its saved input keeps NCHW memory (a
    graph input, which the forward program copied to channels-last for the
    convolution), and the input is no larger than the gradient: the call
    then reads a channels-last copy of the input, as the forward did, rather
    than have the library copy the gradient back to NCHW (RegNet's stem on a
    CPU: 27 us for the image's copy against 100 us for the gradient's)."""
    if not _is_convolution_backward(op):
        return False
    gradient, saved_input = (buf.buffer_type(v) for v in op.inputs[:2])
    if gradient.rank != PLANNED_RANK or saved_input.rank != PLANNED_RANK:
        return False
    if not _is_channels_last(gradient) or not _copied_for_channels_last(op.inputs[1]):
        return False
    if _same_memory_order(saved_input, _channels_last(saved_input)):
        return False  # one channel, or one position: both layouts walk memory alike
    size = sympy.expand(sympy.Mul(*saved_input.sizes) - sympy.Mul(*gradient.sizes))
    return bool(size.is_nonpositive)


@dataclass(frozen=True)
class PlanLayoutsPass(ModulePass):
    """
    Chooses channels-last memory for the 4-d tensors around 2-d convolutions,
    where the host program leaves their layout free.

    GPU convolution libraries run channels-last (NHWC) faster than NCHW, and
    pick their fast depthwise and grouped kernels only for it; torch's
    convolution returns channels-last for a channels-last input. A buffer is
    free when the program allocates it, contiguous, for a kernel's result or a
    library call's, and only launches, extern calls and frees use it: a buffer
    returned (graph outputs keep eager's strides), viewed or copied keeps its
    layout. The 4-d operands of a launch with the same batch and channel sizes
    share one decision (a kernel reads and writes them along the same
    dimensions), so the decision spreads from a convolution over the kernels
    around it. An image of one batch element that a kernel writes with its
    batch dimension squeezed out (`squeeze-leading-unit-dims`), `[C, H, W]`,
    and convolutions read through a unit-batch view as `[1, C, H, W]`, is
    planned with that view: channels-last, it takes the strides of
    channels-last `[1, C, H, W]` memory (at a batch of one on the CPU,
    RegNetY-1.6GF's kernels otherwise wrote NCHW images that were copied
    to channels-last before every convolution, 51 copies a call). A convolution whose result is free seeds its input's and its
    result's sets; a convolution whose result is not (returned, as the saved
    activations of a training step) vetoes its sets, so that no convolution
    gets a channels-last input and must give back NCHW. Kernels follow through
    their launches' layouts: a pointwise kernel walks a channels-last result
    along its channels. A planned convolution's input that arrives in another
    layout, a graph input, is copied to channels-last before the call; so
    is, in a backward graph, the saved input of a convolution's gradients
    planned channels-last, where it is no larger than the gradient.
    A free query of a 4-d attention is written token by token
    (`ATTENTION_MEMORY_ORDER`, the layout its result is planned in): torch's
    flash and cuDNN kernels give the result the query's layout, so the
    result needs no copy.

    `convolutions` says which convolutions seed channels-last sets:
    `channels-last` (the default) every one whose result is free; `measured`
    (the targets' choice, as the libraries' speed in each layout depends on
    the shape and dtype) the same unless they run slower so, timed on this
    machine (`convolution_layouts`). Measured, the inputs and results of all
    convolutions share one set, so that no kernel converts between the
    layouts of two, and a convolution whose result keeps its layout (a
    graph output) vetoes only its result's set: it reads an NCHW copy of a
    channels-last input, whose cost its timing counts. The set keeps NCHW
    memory where their time in all, each timed both ways, is lower so by
    more than `MEASURED_MARGIN` (by more than `TRANSPOSING_MARGIN` where a
    kernel of the set would transpose in NCHW memory: ConvNeXt's layer norms
    over permuted channels; on the CPU, unless faster so by more than 15%,
    `CONCATENATING_MARGIN`, where a kernel concatenates images along their
    channels: DenseNet's), and where they take under `device`'s
    `MEASURED_FLOOR_SECONDS` in all, too little for the timing to tell the
    layouts apart; a set doing under `MEASURED_MIN_MULTIPLY_ADDS`
    multiply-adds keeps NCHW untimed, unless it holds as many convolutions
    as `MEASURED_MIN_CONVOLUTIONS` (on the CPU), whose calls' fixed costs
    the timing then weighs. Untimed or under the floor, a set
    whose convolution is given a channels-last input (a graph input in that
    memory format) takes channels-last instead: torch's convolution returns
    that layout for it, which NCHW would convert element by element.
    Convolutions with symbolic sizes are not timed and count as no slower
    in channels-last memory. `device` (`cpu`, or `cuda`: the current GPU) is
    where they are timed; without a GPU, `cuda` times nothing.

    Before:
    ```
    %y = buffer.alloc : !buffer.buffer<[2, 8, 5, 5], f32>
    buffer.launch @relu ins(%x : !buffer.buffer<[2, 8, 5, 5], f32>) outs(%y : !buffer.buffer<[2, 8, 5, 5], f32>)
    %z = buffer.extern ins(%a = %y : !buffer.buffer<[2, 8, 5, 5], f32>, ...) -> (!buffer.buffer<[2, 8, 5, 5], f32>) {
      ... ptensor.convolution ...
    }
    ```
    After:
    ```
    %y = buffer.alloc : !buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>
    buffer.launch @relu ins(%x : ...) outs(%y : !buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>)
    %z = buffer.extern ins(%a = %y : ...) -> (!buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>) {...}
    ```
    """

    name = "plan-layouts"

    convolutions: str = "channels-last"
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_option("convolutions", self.convolutions, CONVOLUTION_CHOICES)
        check_option("device", self.device, MEASURED_DEVICES)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        timer = CONVOLUTION_CHOICES[self.convolutions]
        if timer is not None:
            timer = functools.partial(timer, device=self.device)
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            if function.body.blocks:
                plan_function_layouts(function, timer, device=self.device)


def plan_function_layouts(
    function: func.FuncOp,
    timer: ConvolutionTimer | None = None,
    min_multiply_adds: int | None = None,
    device: str = "cpu",
    min_convolutions: int | None = None,
) -> None:
    """Plan the layouts of one host function, as `PlanLayoutsPass` does:
    every free convolution seeds channels-last sets, or with `timer`, unless
    its measurements find them slower so (sets of fewer than
    `min_multiply_adds`, by default `MEASURED_MIN_MULTIPLY_ADDS`, and of
    fewer convolutions than `min_convolutions`, by default `device`'s
    `MEASURED_MIN_CONVOLUTIONS`, keep NCHW untimed, and sets timed under
    `device`'s `MEASURED_FLOOR_SECONDS` too, unless a convolution of theirs
    is given a channels-last input)."""
    if min_multiply_adds is None:
        min_multiply_adds = MEASURED_MIN_MULTIPLY_ADDS
    if min_convolutions is None:
        min_convolutions = MEASURED_MIN_CONVOLUTIONS.get(device, sys.maxsize)
    _LayoutPlanner(
        function,
        timer,
        min_multiply_adds,
        min_convolutions,
        MEASURED_FLOOR_SECONDS[device],
        CONCATENATING_MARGIN[device],
    ).run()


CONVOLUTION_CHOICES: dict[str, Callable[..., LayoutTimes] | None] = {
    "channels-last": None,
    "measured": convolution_times,
}
"""The values of `plan-layouts`' `convolutions` option, with the timer each
uses (`(extern, copies_input, device=) -> times`)."""
