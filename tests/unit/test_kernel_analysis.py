"""
The kernel analysis (`permalloy.analysis`): the facts both kernel targets and
fusion read off loop and buffer IR. Kernels come from ptensor IR written as
text and lowered by the default pipeline (fusion included), so the facts are
those of the kernels a compiled graph has: row groups of a softmax and a layer
norm, reductions along and across the contiguous dimension, gathers, the
collapsed domains of contiguous and permuted reads, and the kernels no target
translates.
"""

from __future__ import annotations

import pytest
import sympy
from xdsl.parser import Parser

from permalloy.analysis.affine import LoadForm, gathered, is_affine, load_form, split_affine, unit_stride
from permalloy.analysis.collapse import collapse, collapse_space
from permalloy.analysis.kernel import (
    INNER,
    OUTER,
    UnsupportedKernelError,
    analyze_kernel,
    reduction_direction,
    stage_space,
)
from permalloy.analysis.rows import reads_at_own_row, row_groups, same_row
from permalloy.compiler import lower_module
from permalloy.dialects import make_context
from permalloy.dialects.buffer import BufferType, KernelOp, LaunchOp
from permalloy.dialects.sym import FloorDiv, symbol
from permalloy.targets import UnsupportedKernelError as TargetsError
from permalloy.targets.llvm import UnsupportedKernelError as LLVMError
from permalloy.targets.llvm.testing import parse_kernel, pointwise_kernel, tensor
from permalloy.targets.triton.types import UnsupportedKernelError as TritonError

d0, d1, d2, d3, r0, r1, s0, v0 = (symbol(n) for n in ("d0", "d1", "d2", "d3", "r0", "r1", "s0", "v0"))


def T(shape: str, dtype: str = "f32") -> str:
    return f"!ptensor.tensor<[{shape}], {dtype}>"


def lowered(body: str, params: str, results: str) -> list[tuple[KernelOp, list[BufferType]]]:
    """The kernels of `func.func @f(<params>) -> (<results>)` after the default
    pipeline, each with the layouts of its launch."""
    module = Parser(make_context(), f"func.func @f({params}) -> ({results}) {{\n{body}\n}}").parse_module()
    lower_module(module, target="llvm")
    kernels = {op.sym_name.data: op for op in module.ops if isinstance(op, KernelOp)}
    launches = [op for op in module.walk() if isinstance(op, LaunchOp)]
    return [
        (kernels[launch.kernel.root_reference.data], [v.type for v in (*launch.inputs, *launch.outputs)])
        for launch in launches
    ]


def only_kernel(body: str, params: str, results: str):
    (kernel_and_layouts,) = lowered(body, params, results)
    return kernel_and_layouts


def spaces(kernel: KernelOp, layouts: list[BufferType]):
    """The collapsed space of each stage, its result in memory where the kernel keeps it."""
    analysis = analyze_kernel(kernel, layouts, "test")
    results = [analysis.result_layout(s) for s in analysis.stages]
    found = []
    for stage in analysis.stages:
        inputs = {
            arg: (results[src.index] if src.stage else analysis.inputs[src.index]) for arg, src in stage.sources.items()
        }
        outputs = [analysis.outputs[j] for j in stage.returned] or [results[stage.position]]
        found.append(stage_space(stage, inputs, outputs))
    return analysis, found


SOFTMAX = f"""
  %m = ptensor.reduce max %x dims [1] keepdim : {T("8, 32")} -> {T("8, 1")}
  %d = ptensor.binary sub %x, %m : {T("8, 32")}, {T("8, 1")} -> {T("8, 32")}
  %e = ptensor.unary exp %d : {T("8, 32")} -> {T("8, 32")}
  %s = ptensor.reduce sum %e dims [1] keepdim : {T("8, 32")} -> {T("8, 1")}
  %y = ptensor.binary div %e, %s : {T("8, 32")}, {T("8, 1")} -> {T("8, 32")}
  func.return %y : {T("8, 32")}
"""

LAYER_NORM = f"""
  %c = ptensor.full 0.015625 : {T("")}
  %t = ptensor.reduce sum %x dims [2] keepdim : {T("4, 6, 64")} -> {T("4, 6, 1")}
  %m = ptensor.binary mul %t, %c : {T("4, 6, 1")}, {T("")} -> {T("4, 6, 1")}
  %d = ptensor.binary sub %x, %m : {T("4, 6, 64")}, {T("4, 6, 1")} -> {T("4, 6, 64")}
  %q = ptensor.binary mul %d, %d : {T("4, 6, 64")}, {T("4, 6, 64")} -> {T("4, 6, 64")}
  %u = ptensor.reduce sum %q dims [2] keepdim : {T("4, 6, 64")} -> {T("4, 6, 1")}
  %v = ptensor.binary mul %u, %c : {T("4, 6, 1")}, {T("")} -> {T("4, 6, 1")}
  %r = ptensor.unary rsqrt %v : {T("4, 6, 1")} -> {T("4, 6, 1")}
  %y = ptensor.binary mul %d, %r : {T("4, 6, 64")}, {T("4, 6, 1")} -> {T("4, 6, 64")}
  func.return %y : {T("4, 6, 64")}
"""


# -- rows -----------------------------------------------------------------------------


def test_a_softmax_is_one_row_group_of_two_reductions_and_its_epilogue():
    kernel, layouts = only_kernel(SOFTMAX, f"%x: {T('8, 32')}", T("8, 32"))
    analysis, found = spaces(kernel, layouts)
    assert [s.kind for s in analysis.stages] == ["max", "sum", None]
    assert analysis.groups == [([0, 1, 2], 1)]
    assert [s.position for s in analysis.intermediates] == [0, 1]  # the max and the sum
    assert analysis.stages[2].returned == [0]
    assert [reduction_direction(space) for space in found[:2]] == [INNER, INNER]


def test_a_layer_norm_is_one_row_group_over_both_leading_dimensions():
    kernel, layouts = only_kernel(LAYER_NORM, f"%x: {T('4, 6, 64')}", T("4, 6, 64"))
    analysis, found = spaces(kernel, layouts)
    kinds = [s.kind for s in analysis.stages]
    assert kinds.count("sum") == 2 and kinds[-1] is None
    ((members, rank),) = analysis.groups
    assert members == list(range(len(analysis.stages))) and rank == 2
    # the rows [4, 6] walk memory as one dimension; each row reduces 64 elements
    assert [(space.parallel, space.reduction) for space in found if space.reduction] == [((24,), (64,))] * 2


def test_a_read_of_another_row_ends_the_row_group():
    text = f"""
buffer.kernel @k(%a: {tensor("[4, 16]", "f32")}) -> ({tensor("[4, 16]", "f32")}) {{
  %s = loop.reduce sum ins(%x = %a : {tensor("[4, 16]", "f32")}) over [16] -> {tensor("[4]", "f32")} {{
    %v = loop.load %x[d0, r0] : f32
    loop.yield %v : f32
  }}
  %y = loop.pointwise ins(%x = %a : {tensor("[4, 16]", "f32")}, %t = %s : {tensor("[4]", "f32")}) -> {tensor("[4, 16]", "f32")} {{
    %v = loop.load %x[d0, d1] : f32
    %w = loop.load %t[3 - d0] : f32
    %q = arith.divf %v, %w : f32
    loop.yield %q : f32
  }}
  buffer.yield %y : {tensor("[4, 16]", "f32")}
}}
"""
    kernel = parse_kernel(text)
    reduce, pointwise = [op for op in kernel.body.block.ops][:2]
    assert not reads_at_own_row(pointwise, reduce.result, 1)
    assert [(len(g.members), g.rank) for g in row_groups([reduce, pointwise])] == [(1, 1), (1, 2)]


def test_same_row_compares_the_coefficients_of_the_row_variables():
    row = {d1: 15}
    assert same_row(16 * d0 + d1, 16 * d0 + d1, [d0], row, row)
    assert same_row(16 * d0 + 15 - d1, 16 * d0 + d1, [d0], row, row)  # the row read backwards
    assert same_row(16 * d0, 16 * d0 + d1, [d0], {}, row)  # one element of the row
    assert not same_row(4 * d0, 4 * d0 + 2, [d0], {}, {})  # an element the row's writer never wrote
    assert not same_row(48 - 16 * d0 + d1, 16 * d0 + d1, [d0], row, row)
    assert not same_row(FloorDiv(d0, 2), d0, [d0], {}, {})


def test_same_row_refuses_reads_that_reach_into_a_neighbouring_row():
    """A 3 x 3 window over rows `d1` of 6 elements written at `6 * d1 + d2`:
    its corner `6 * d1 + d2 - 7` has the row's coefficient but reads the row
    before (a max pool over a product of an expanded input ran so, reading
    rows not yet written)."""
    row = {d2: 5}
    assert not same_row(18 * d0 + 6 * d1 + d2 - 7, 18 * d0 + 6 * d1 + d2, [d0, d1], row, row)
    assert not same_row(18 * d0 + 6 * d1 + d2 + 1, 18 * d0 + 6 * d1 + d2, [d0, d1], row, row)
    assert same_row(18 * d0 + 6 * d1 + 5 - d2, 18 * d0 + 6 * d1 + d2, [d0, d1], row, row)


# -- reductions -----------------------------------------------------------------------


def test_row_sums_reduce_inner_and_column_sums_outer():
    rows = only_kernel(
        f"  %s = ptensor.reduce sum %x dims [1] : {T('64, 32')} -> {T('64')}\n  func.return %s : {T('64')}",
        f"%x: {T('64, 32')}",
        T("64"),
    )
    columns = only_kernel(
        f"  %s = ptensor.reduce sum %x dims [0] : {T('64, 32')} -> {T('32')}\n  func.return %s : {T('32')}",
        f"%x: {T('64, 32')}",
        T("32"),
    )
    _, (row_space,) = spaces(*rows)
    _, (column_space,) = spaces(*columns)
    assert reduction_direction(row_space) == INNER
    assert reduction_direction(column_space) == OUTER
    assert (column_space.parallel, column_space.reduction) == ((32,), (64,))
    (address,) = column_space.load_addresses.values()
    assert unit_stride(address, d0) and not unit_stride(address, r0)


# -- scans --------------------------------------------------------------------------


POSITION_IDS = f"""
  %w = ptensor.cast %m : {T("4, 32", "i1")} -> {T("4, 32", "i64")}
  %c = ptensor.scan sum %w dim 1 : {T("4, 32", "i64")} -> {T("4, 32", "i64")}
  %one = ptensor.full 1 : {T("", "i64")}
  %p = ptensor.binary sub %c, %one : {T("4, 32", "i64")}, {T("", "i64")} -> {T("4, 32", "i64")}
  func.return %p : {T("4, 32", "i64")}
"""


def test_a_scan_of_rows_shares_its_rows_with_its_epilogue():
    kernel, layouts = only_kernel(POSITION_IDS, f"%m: {T('4, 32', 'i1')}", T("4, 32", "i64"))
    analysis, (scan, epilogue) = spaces(kernel, layouts)
    assert [(s.is_scan, s.kind) for s in analysis.stages] == [(True, "sum"), (False, None)]
    assert analysis.groups == [([0, 1], 1)]
    assert analysis.stages[0].sizes == [4] and analysis.stages[0].reduction_sizes == [32]
    # the cast is inlined into the scan; its result goes through memory, read at its own row
    assert analysis.stages[0].intermediate and analysis.result_layout(analysis.stages[0]).sizes == (4, 32)
    assert (scan.parallel, scan.reduction) == ((4,), (32,)) and reduction_direction(scan) == INNER
    assert scan.output_addresses == [32 * d0 + r0]


def test_a_scan_of_columns_runs_across_the_contiguous_dimension_on_its_own():
    body = f"""
  %c = ptensor.scan max %x dim 0 : {T("64, 3, 5")} -> {T("64, 3, 5")}
  func.return %c : {T("64, 3, 5")}
"""
    kernel, layouts = only_kernel(body, f"%x: {T('64, 3, 5')}", T("64, 3, 5"))
    analysis, (space,) = spaces(kernel, layouts)
    assert analysis.groups == [([0], 2)]  # its rows are its parallel dimensions
    assert analysis.stages[0].sizes == [3, 5]
    # the two parallel dimensions walk memory as one; the scanned one stays apart
    assert (space.parallel, space.reduction) == ((15,), (64,))
    assert space.output_addresses == [d0 + 15 * r0]
    assert reduction_direction(space) == OUTER


def test_a_scan_of_an_inner_dimension_shares_no_rows():
    text = f"""
buffer.kernel @k(%a: {tensor("[4, 8, 2]", "f32")}) -> ({tensor("[4, 8, 2]", "f32")}) {{
  %c = loop.scan sum ins(%x = %a : {tensor("[4, 8, 2]", "f32")}) dim 1 -> {tensor("[4, 8, 2]", "f32")} {{
    %v = loop.load %x[d0, r0, d1] : f32
    loop.yield %v : f32
  }}
  %y = loop.pointwise ins(%t = %c : {tensor("[4, 8, 2]", "f32")}) -> {tensor("[4, 8, 2]", "f32")} {{
    %v = loop.load %t[d0, d1, d2] : f32
    loop.yield %v : f32
  }}
  buffer.yield %y : {tensor("[4, 8, 2]", "f32")}
}}
"""
    scan, pointwise = list(parse_kernel(text).body.block.ops)[:2]
    assert reads_at_own_row(pointwise, scan.result, 1)
    # a program scans whole rows: rows [4] would leave the [8, 2] after them to one program
    assert [(len(g.members), g.rank) for g in row_groups([scan, pointwise])] == [(1, 2), (1, 3)]


@pytest.mark.parametrize("merge_size_one", [False, True])
def test_a_reduction_over_size_one_dimensions_keeps_one_loop(merge_size_one):
    space = collapse_space([4], [1, 1], [d0 * 2 + r0 + 3 * r1], [], merge_size_one)
    assert space.parallel == (4,) and space.reduction == (1,)
    assert space.addresses == [2 * d0 + r0]  # the outermost stays


# -- loads ----------------------------------------------------------------------------


def test_a_gather_reads_through_index_values():
    kernel, layouts = only_kernel(
        f"  %g = ptensor.gather %a, %i dim 1 : {T('2, 4')}, {T('2, 3', 'i64')} -> {T('2, 3')}\n"
        f"  func.return %g : {T('2, 3')}",
        f"%a: {T('2, 4')}, %i: {T('2, 3', 'i64')}",
        T("2, 3"),
    )
    analysis = analyze_kernel(kernel, layouts, "test")
    (stage,) = analysis.stages
    indices, table = stage.loads  # the indices are read first, then the table at them
    assert analysis.inputs[stage.sources[table.source].index].sizes == (2, 4)
    assert load_form(table).gather and not load_form(table).masked
    assert not load_form(indices).gather and load_form(indices).affine
    _, (space,) = spaces(kernel, layouts)
    assert space.load_addresses[table] == 4 * d0 + v0


def test_a_padded_read_is_masked():
    kernel, layouts = only_kernel(
        f"  %p = ptensor.pad %a constant 0.5 low [0, 1] high [0, 2] : {T('2, 4')} -> {T('2, 7')}\n"
        f"  func.return %p : {T('2, 7')}",
        f"%a: {T('2, 4')}",
        T("2, 7"),
    )
    (stage,) = analyze_kernel(kernel, layouts, "test").stages
    (load,) = stage.loads
    assert load_form(load) == LoadForm(affine=True, gather=False, masked=True)
    assert load.indices.data == (d0, d1 - 1)


def test_affine_forms():
    assert split_affine(3 * d0 + s0 * d0 + 7, d0) == (7, s0 + 3)
    assert split_affine(FloorDiv(d0, 2), d0) is None
    assert split_affine(d0 * v0, d0) is None
    assert is_affine(4 * d0 + d1) and not is_affine(FloorDiv(d1, 2)) and not is_affine(d0 + v0)
    assert gathered(4 * d1 + d0, d1) and not gathered(4 * d1 + d0, d0) and not gathered(d0, d1)


# -- collapsing -----------------------------------------------------------------------


def test_a_contiguous_read_collapses_to_one_dimension():
    kernel, layouts = only_kernel(
        f"  %e = ptensor.unary exp %x : {T('4, 6, 8')} -> {T('4, 6, 8')}\n  func.return %e : {T('4, 6, 8')}",
        f"%x: {T('4, 6, 8')}",
        T("4, 6, 8"),
    )
    _, (space,) = spaces(kernel, layouts)
    assert space.parallel == (192,)
    assert list(space.load_addresses.values()) == [d0] and space.output_addresses == [d0]


def test_a_permuted_read_keeps_the_dimensions_it_walks_apart():
    kernel, layouts = only_kernel(
        f"  %p = ptensor.permute %x [0, 2, 1] : {T('4, 6, 8')} -> {T('4, 8, 6')}\n"
        f"  %e = ptensor.unary exp %p : {T('4, 8, 6')} -> {T('4, 8, 6')}\n"
        f"  func.return %e : {T('4, 8, 6')}",
        f"%x: {T('4, 6, 8')}",
        T("4, 8, 6"),
    )
    _, (space,) = spaces(kernel, layouts)
    assert space.parallel == (4, 8, 6)
    (address,) = space.load_addresses.values()
    assert address == 48 * d0 + d1 + 8 * d2
    assert unit_stride(address, d1) and gathered(address, d2)


def test_collapse_drops_size_one_dimensions_before_merging():
    # the store of a [4, 1, 3] result, and a read of a [4, 3] tensor
    dims, addresses = [(d0, 4), (d1, 1), (d2, 3)], [3 * d0 + 3 * d1 + d2, 3 * d0 + d2]
    axis = collapse(dims, addresses)
    assert axis.sizes == [12] and axis.variables == [d2]
    assert axis.substitution == {d0: 0, d1: 0}
    # merging with the size-1 dimension first (the LLVM target), its stride
    # of 0 in the read keeps d0 and d2 apart: the rows stay [4]
    apart = collapse(dims, addresses, merge_size_one=True)
    assert apart.sizes == [4, 3] and apart.substitution == {d1: 0}
    space = collapse_space([4, 1, 3], [], addresses, merge_size_one=True)
    assert space.parallel == (4, 3) and space.addresses == [3 * d0 + d1, 3 * d0 + d1]


def test_collapse_keeps_dimensions_read_as_values():
    assert collapse([(d0, 4), (d1, 3)], [3 * d0 + d1], {d1}).sizes == [4, 3]
    space = collapse_space([4, 3], [], [3 * d0 + d1], [d1])
    assert space.parallel == (4, 3) and space.values == [d1]
    # of size 1, a dimension read as a value drops out: its index is 0
    assert collapse_space([4, 1], [], [d0 + d1], [d1]).values == [0]
    # and where size-1 dimensions drop after merging too: a stage whose every
    # dimension has size 1 keeps no loop its group's nest would not bind
    assert collapse_space([4, 1], [], [d0 + d1], [d1], merge_size_one=True).values == [0]
    assert collapse_space([1, 1], [2], [d1 + r0], [d1 + r0], merge_size_one=True).values == [r0]


def test_collapse_space_renames_the_surviving_variables_in_order():
    # d0 and d1 walk both addresses as one; d2 strides by 100 in the second
    space = collapse_space([5, 4, 3], [7], [12 * d0 + 3 * d1 + d2 + 60 * r0, 12 * d0 + 3 * d1 + 100 * d2])
    assert space.parallel == (20, 3) and space.reduction == (7,)
    assert space.addresses == [3 * d0 + d1 + 60 * r0, 3 * d0 + 100 * d1]



def test_collapse_space_in_the_memory_order_of_an_address():
    # a channels-last [2, 8, 5, 7] result: channels innermost, then rows, then width
    result = 280 * d0 + d1 + 56 * d2 + 8 * d3
    space = collapse_space([2, 8, 5, 7], [], [result], ordered_by=result)
    assert space.parallel == (560,) and space.addresses == [d0]
    # an NCHW read beside it keeps the batch, spatial and channel dimensions apart
    nchw = 280 * d0 + 35 * d1 + 7 * d2 + d3
    space = collapse_space([2, 8, 5, 7], [], [nchw, result], ordered_by=result)
    assert space.parallel == (2, 35, 8)
    assert space.addresses == [280 * d0 + d1 + 35 * d2, 280 * d0 + 8 * d1 + d2]


def test_collapse_space_keeps_shared_rows_apart():
    # a [4, 6, 8] contiguous read walks its three dimensions as one; rows [4, 6]
    # that another stage shares merge among themselves, not with the last one
    addresses = [48 * d0 + 8 * d1 + d2]
    assert collapse_space([4, 6, 8], [], addresses).parallel == (192,)
    space = collapse_space([4, 6, 8], [], addresses, row_rank=2)
    assert space.parallel == (24, 8) and space.addresses == [8 * d0 + d1]


# -- refusals -------------------------------------------------------------------------


def test_one_refusal_error_for_every_target():
    assert TargetsError is UnsupportedKernelError is LLVMError is TritonError
    assert issubclass(UnsupportedKernelError, NotImplementedError) and issubclass(UnsupportedKernelError, ValueError)


def test_a_kernel_returning_its_argument_is_refused():
    kernel = parse_kernel(f"""
buffer.kernel @k(%a: {tensor("[4]", "f32")}) -> ({tensor("[4]", "f32")}) {{
  buffer.yield %a : {tensor("[4]", "f32")}
}}
""")
    layouts = [BufferType([4], kernel.function_type.inputs.data[0].element_type)] * 2
    with pytest.raises(UnsupportedKernelError, match="returns one of its arguments"):
        analyze_kernel(kernel, layouts, "test")


def test_layouts_must_match_the_signature():
    kernel = parse_kernel(pointwise_kernel("[4, 8]", ["f32"], "f32", "    %y = math.exp %a0 : f32"))
    element = kernel.function_type.inputs.data[0].element_type
    with pytest.raises(UnsupportedKernelError, match="takes 1 inputs and 1 outputs, got 1 layouts"):
        analyze_kernel(kernel, [BufferType([4, 8], element)], "test")


def test_a_kernel_body_holds_loop_ops_only():
    kernel = parse_kernel(f"""
buffer.kernel @k(%a: {tensor("[4]", "f32")}) -> ({tensor("[4]", "f32")}) {{
  %c = ptensor.unary neg %a : {tensor("[4]", "f32")} -> {tensor("[4]", "f32")}
  buffer.yield %c : {tensor("[4]", "f32")}
}}
""")
    layouts = [BufferType([4], kernel.function_type.inputs.data[0].element_type)] * 2
    with pytest.raises(UnsupportedKernelError, match="the LLVM target expects loop ops in a kernel body, got ptensor.unary"):
        analyze_kernel(kernel, layouts, "LLVM")


def test_the_analysis_sees_unknown_sizes_as_symbols():
    space = collapse_space([s0, 8], [], [8 * d0 + d1])
    assert space.parallel == (sympy.expand(8 * s0),)
