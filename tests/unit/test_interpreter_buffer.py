"""
The buffer interpreter on hand-written host programs: allocations, views with
strides and offsets, copies, launches, extern calls and deallocation.
"""

from __future__ import annotations

import pytest
import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import InterpretationError

from permalloy.dialects import make_context
from permalloy.interpreter.bindings import ShapeMismatchError
from permalloy.interpreter.buffer import UseAfterFreeError
from permalloy.interpreter.levels import module_level, run_module_function


def T(shape: str, dtype: str = "f32") -> str:
    return f"!ptensor.tensor<[{shape}], {dtype}>"


def B(shape: str, layout: str = "", dtype: str = "f32") -> str:
    return f"!buffer.buffer<[{shape}], {dtype}{layout}>"


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def run(text: str, *args) -> tuple[torch.Tensor, ...]:
    return run_module_function(parse(text), list(args))


NEG_KERNEL = f"""
buffer.kernel @neg(%a: {T("s0")}) -> ({T("s0")}) {{
  %y = loop.pointwise ins(%x = %a : {T("s0")}) -> {T("s0")} {{
    %v = loop.load %x[d0] : f32
    %n = arith.negf %v : f32
    loop.yield %n : f32
  }}
  buffer.yield %y : {T("s0")}
}}
"""


def test_launch_writes_the_kernel_result_into_a_new_buffer():
    module = NEG_KERNEL + f"""
    func.func @f(%x: {B("s0")}) -> {B("s0")} {{
      %y = buffer.alloc : {B("s0")}
      buffer.launch @neg ins(%x : {B("s0")}) outs(%y : {B("s0")})
      func.return %y : {B("s0")}
    }}"""
    assert module_level(parse(module)) == "buffer"
    for size in (3, 6):
        x = torch.randn(size)
        (y,) = run(module, x)
        assert torch.equal(y, -x)


def test_memory_no_kernel_wrote_reads_as_poison():
    (y,) = run(f"""
    func.func @f() -> {B("2, 2")} {{
      %y = buffer.alloc : {B("2, 2")}
      func.return %y : {B("2, 2")}
    }}""")
    assert torch.isnan(y).all()


def test_alloc_with_strides_lays_out_the_buffer():
    (y,) = run(NEG_KERNEL.replace("s0", "6") + f"""
    func.func @f(%x: {B("6")}) -> {B("2, 3", ", strides [1, 2]")} {{
      %y = buffer.alloc : {B("2, 3", ", strides [1, 2]")}
      %flat = buffer.view %y : {B("2, 3", ", strides [1, 2]")} -> {B("6")}
      buffer.launch @neg ins(%x : {B("6")}) outs(%flat : {B("6")})
      func.return %y : {B("2, 3", ", strides [1, 2]")}
    }}""", torch.arange(6.0))
    assert y.stride() == (1, 2)
    assert torch.equal(y, -torch.arange(6.0).reshape(3, 2).T)


def test_views_count_offsets_from_the_start_of_the_allocation():
    # A view of a view: both offsets count from position 0 of %y's memory.
    (z,) = run(NEG_KERNEL.replace("s0", "12") + f"""
    func.func @f(%x: {B("12")}) -> {B("2", ", strides [3], offset 5")} {{
      %y = buffer.alloc : {B("12")}
      buffer.launch @neg ins(%x : {B("12")}) outs(%y : {B("12")})
      %v = buffer.view %y : {B("12")} -> {B("3, 3", ", strides [3, 1], offset 2")}
      %z = buffer.view %v : {B("3, 3", ", strides [3, 1], offset 2")} -> {B("2", ", strides [3], offset 5")}
      func.return %z : {B("2", ", strides [3], offset 5")}
    }}""", torch.arange(12.0))
    assert z.tolist() == [-5.0, -8.0]


def test_an_argument_is_an_allocation_of_its_own():
    # The argument is itself a slice of a larger tensor: offset 1 is counted
    # from its first element, not from the start of the larger storage.
    larger = torch.arange(20.0)
    x = larger[4:16]
    (v,) = run(f"""
    func.func @f(%x: {B("12")}) -> {B("2, 2", ", strides [4, 1], offset 1")} {{
      %v = buffer.view %x : {B("12")} -> {B("2, 2", ", strides [4, 1], offset 1")}
      func.return %v : {B("2, 2", ", strides [4, 1], offset 1")}
    }}""", x)
    assert v.tolist() == [[5.0, 6.0], [9.0, 10.0]]
    assert v.untyped_storage().data_ptr() == larger.untyped_storage().data_ptr()


def test_arguments_arrive_in_their_declared_layout():
    text = f"""
    func.func @f(%x: {B("2, 3", ", strides [1, 2]")}) -> {B("6")} {{
      %f = buffer.view %x : {B("2, 3", ", strides [1, 2]")} -> {B("6")}
      func.return %f : {B("6")}
    }}"""
    data = torch.arange(6.0).reshape(2, 3)
    # A dense tensor is copied into the declared layout first...
    (flat,) = run(text, data)
    assert flat.tolist() == data.T.flatten().tolist()
    # ...and one already in that layout is used as it is.
    strided = data.T.contiguous().T
    (flat,) = run(text, strided)
    assert flat.data_ptr() == strided.data_ptr()


def test_copy_between_layouts():
    (y,) = run(f"""
    func.func @f(%x: {B("2, 3")}) -> {B("2, 3", ", strides [1, 2]")} {{
      %y = buffer.alloc : {B("2, 3", ", strides [1, 2]")}
      buffer.copy %x, %y : {B("2, 3")}, {B("2, 3", ", strides [1, 2]")}
      func.return %y : {B("2, 3", ", strides [1, 2]")}
    }}""", torch.arange(6.0).reshape(2, 3))
    assert y.stride() == (1, 2) and y.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_extern_runs_its_ptensor_op_on_buffer_contents():
    a, b = torch.randn(4, 3), torch.randn(4, 5)
    (c,) = run(f"""
    func.func @f(%a: {B("4, 3")}, %b: {B("4, 5")}) -> {B("3, 5")} {{
      %t = buffer.view %a : {B("4, 3")} -> {B("3, 4", ", strides [1, 3]")}
      %c = buffer.extern ins(%x = %t : {B("3, 4", ", strides [1, 3]")}, %y = %b : {B("4, 5")}) -> ({B("3, 5")}) {{
        %z = ptensor.mm %x, %y : {T("3, 4")}, {T("4, 5")} -> {T("3, 5")}
        buffer.yield %z : {T("3, 5")}
      }}
      func.return %c : {B("3, 5")}
    }}""", a, b)
    torch.testing.assert_close(c, a.T @ b)


def test_a_kernel_with_two_results_and_an_in_place_output():
    module = f"""
    buffer.kernel @two(%a: {T("4")}) -> ({T("4")}, {T("4", "i1")}) {{
      %n = loop.pointwise ins(%x = %a : {T("4")}) -> {T("4")} {{
        %v = loop.load %x[3 - d0] : f32
        loop.yield %v : f32
      }}
      %p = loop.pointwise ins(%x = %a : {T("4")}) -> {T("4", "i1")} {{
        %v = loop.load %x[d0] : f32
        %z = arith.constant 0.0 : f32
        %c = arith.cmpf ogt, %v, %z : f32
        loop.yield %c : i1
      }}
      buffer.yield %n, %p : {T("4")}, {T("4", "i1")}
    }}
    func.func @f(%x: {B("4")}) -> ({B("4")}, {B("4", dtype="i1")}) {{
      %m = buffer.alloc : {B("4", dtype="i1")}
      buffer.launch @two ins(%x : {B("4")}) outs(%x, %m : {B("4")}, {B("4", dtype="i1")})
      func.return %x, %m : {B("4")}, {B("4", dtype="i1")}
    }}"""
    x = torch.tensor([1.0, -2.0, 3.0, -4.0])
    reversed_, positive = run(module, x.clone())
    assert reversed_.tolist() == [-4.0, 3.0, -2.0, 1.0]
    assert positive.tolist() == [True, False, True, False]


def test_a_kernel_without_inputs_binds_its_sizes_from_its_outputs():
    (y,) = run(f"""
    buffer.kernel @fill(%a: {T("1")}) -> ({T("s0")}) {{
      %y = loop.pointwise ins(%b = %a : {T("1")}) -> {T("s0")} {{
        %i = loop.index d0 * 2
        %c = arith.index_cast %i : index to i64
        %f = arith.sitofp %c : i64 to f32
        %s = loop.load %b[0] : f32
        %r = arith.addf %f, %s : f32
        loop.yield %r : f32
      }}
      buffer.yield %y : {T("s0")}
    }}
    func.func @f(%x: {B("s0")}, %c: {B("1")}) -> {B("s0")} {{
      %y = buffer.alloc : {B("s0")}
      buffer.launch @fill ins(%c : {B("1")}) outs(%y : {B("s0")})
      func.return %y : {B("s0")}
    }}""", torch.ones(4), torch.tensor([0.5]))
    assert y.tolist() == [0.5, 2.5, 4.5, 6.5]


def test_using_a_buffer_after_dealloc_is_an_error():
    text = NEG_KERNEL.replace("s0", "3") + f"""
    func.func @f(%x: {B("3")}) -> {B("3")} {{
      %t = buffer.alloc : {B("3")}
      %v = buffer.view %t : {B("3")} -> {B("3")}
      buffer.dealloc %t : {B("3")}
      %y = buffer.alloc : {B("3")}
      buffer.launch @neg ins(%v : {B("3")}) outs(%y : {B("3")})
      func.return %y : {B("3")}
    }}"""
    with pytest.raises(UseAfterFreeError, match="buffer.launch uses a buffer after buffer.dealloc"):
        run(text, torch.ones(3))


def test_returning_a_freed_buffer_is_an_error():
    text = f"""
    func.func @f() -> {B("3")} {{
      %t = buffer.alloc : {B("3")}
      buffer.dealloc %t : {B("3")}
      func.return %t : {B("3")}
    }}"""
    with pytest.raises(UseAfterFreeError, match="returns a buffer after buffer.dealloc"):
        run(text)


def test_a_view_past_the_end_of_its_allocation_is_an_error():
    text = f"""
    func.func @f() -> {B("3", ", offset 2")} {{
      %t = buffer.alloc : {B("4")}
      %v = buffer.view %t : {B("4")} -> {B("3", ", offset 2")}
      func.return %v : {B("3", ", offset 2")}
    }}"""
    with pytest.raises(InterpretationError, match="elements 2 to 4 of an allocation of 4"):
        run(text)


def test_buffer_arguments_are_checked_against_their_types():
    text = f"""
    func.func @f(%x: {B("3")}) -> {B("3")} {{
      func.return %x : {B("3")}
    }}"""
    with pytest.raises(ShapeMismatchError, match=r"argument 0 of @f, dimension 0: size 4"):
        run(text, torch.ones(4))
