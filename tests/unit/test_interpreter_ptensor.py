"""
The ptensor interpreter against eager torch, op by op, on random non-zero inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch
import torch.nn.functional as F
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func
from xdsl.parser import Parser

from permalloy.dialects.ptensor import (
    BinaryKind,
    ComparePredicate,
    PTensor,
    ReduceKind,
    UnaryKind,
)
from permalloy.dialects.sym import Sym
from permalloy.interpreter import (
    PTensorFunctions,
    ShapeMismatchError,
    UnboundSymbolError,
    run_function,
)
from permalloy.interpreter.ptensor_data import OutOfBoundsError
from permalloy.interpreter.ptensor_library import FallbackError

# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def parse(text: str) -> ModuleOp:
    """A verified module parsed with the builtin, func, sym and ptensor dialects."""
    ctx = Context()
    for dialect in (Builtin, Func, Sym, PTensor):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


def T(shape: str, dtype: str = "f32") -> str:
    """A ptensor type: `T("s0, 4")` is `!ptensor.tensor<[s0, 4], f32>`."""
    return f"!ptensor.tensor<[{shape}], {dtype}>"


def single_op(op: str, operand_types: Sequence[str], result_type: str) -> ModuleOp:
    """`func.func @f(%a0, %a1, ...)` returning `%r = <op>`."""
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(operand_types))
    return parse(
        f"func.func @f({params}) -> {result_type} {{\n"
        f"  %r = {op}\n"
        f"  func.return %r : {result_type}\n"
        "}"
    )


def run1(module: ModuleOp, *args: torch.Tensor | int) -> torch.Tensor:
    (result,) = run_function(module, args)
    return result


def assert_same(actual: torch.Tensor, expected: torch.Tensor) -> None:
    """Equal dtype and shape; floats to a relative 1e-5, others exactly."""
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    if expected.is_floating_point():
        torch.testing.assert_close(
            actual, expected, rtol=1e-5, atol=1e-6, equal_nan=True
        )
    else:
        assert torch.equal(actual, expected)


def randn(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Standard normal values pushed away from zero."""
    x = torch.randn(shape, dtype=torch.float64)
    return (x + 0.1 * torch.sign(x)).to(dtype)


def randint(*shape: int, low: int = -9, high: int = 10, dtype=torch.int32):
    """Random non-zero integers in [low, high)."""
    x = torch.randint(low, high, shape, dtype=dtype)
    return torch.where(x == 0, torch.ones_like(x), x)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


# --------------------------------------------------------------------------
# Functions, size symbols and errors
# --------------------------------------------------------------------------

SYMBOLIC = f"""
func.func @f(%x: {T("s0, 4")}, %y: {T("4")}) -> {T("s0, 4")} {{
  %e = ptensor.unary exp %x : {T("s0, 4")} -> {T("s0, 4")}
  %r = ptensor.binary add %e, %y : {T("s0, 4")}, {T("4")} -> {T("s0, 4")}
  func.return %r : {T("s0, 4")}
}}
"""


@pytest.mark.parametrize("rows", [1, 3, 7])
def test_symbolic_function_runs_at_several_sizes(rows):
    module = parse(SYMBOLIC)
    x, y = randn(rows, 4), randn(4)
    assert_same(run1(module, x, y), torch.exp(x) + y)


def test_static_size_mismatch_is_reported():
    with pytest.raises(ShapeMismatchError, match=r"argument 1 of @f, dimension 0: "
                       r"size 5 contradicts the declared size 4"):
        run_function(parse(SYMBOLIC), [randn(2, 4), randn(5)])


def test_symbol_bound_to_two_values_is_reported():
    module = single_op(
        f"ptensor.binary add %a0, %a1 : {T('s0')}, {T('s0')} -> {T('s0')}",
        [T("s0"), T("s0")],
        T("s0"),
    )
    with pytest.raises(ShapeMismatchError, match=r"argument 1 of @f, dimension 0: "
                       r"size 4 contradicts the declared size s0, which is 3 with s0 = 3"):
        run_function(module, [randn(3), randn(4)])


@pytest.mark.parametrize(
    "arg, message",
    [
        (torch.ones(2, 4, dtype=torch.float64), r"dtype torch.float64 contradicts"),
        (torch.ones(8), r"rank 1 \(shape \[8\]\) contradicts"),
        (3, r"expected a tensor of type"),
    ],
)
def test_argument_kind_rank_and_dtype_are_checked(arg, message):
    with pytest.raises(ShapeMismatchError, match=message):
        run_function(parse(SYMBOLIC), [arg, randn(4)])


def test_argument_count_is_checked():
    with pytest.raises(ShapeMismatchError, match=r"@f takes 2 arguments, got 1"):
        run_function(parse(SYMBOLIC), [randn(2, 4)])


def test_compound_size_is_solved_for_its_symbol():
    module = parse(f"""
    func.func @f(%x: {T("2 * s0")}) -> {T("s0 + 1")} {{
      %r = ptensor.full 1.5 : {T("s0 + 1")}
      func.return %r : {T("s0 + 1")}
    }}""")
    assert_same(run1(module, randn(6)), torch.full((4,), 1.5))
    with pytest.raises(ShapeMismatchError, match=r"no integer s0 gives it"):
        run1(module, randn(7))


@pytest.mark.parametrize(
    "shape, size, error, message",
    [("s0 * s1", 6, UnboundSymbolError, r"cannot bind the symbols of size 's0 \* s1'"),
     ("s0", 0, ShapeMismatchError, r"bind size symbol s0 to 0, but size symbols are "
      r"positive")],
)  # fmt: skip
def test_sizes_that_bind_no_symbol_are_reported(shape, size, error, message):
    module = parse(f"""
    func.func @f(%x: {T(shape)}) -> {T(shape)} {{
      func.return %x : {T(shape)}
    }}""")
    with pytest.raises(error, match=message):
        run1(module, randn(size))


def test_index_argument_binds_its_symbol():
    module = parse(f"""
    func.func @f(%n: index {{ptensor.symbol = #sym.expr<s0>}}) -> {T("s0", "i64")} {{
      %r = ptensor.iota start 3 step 2 : {T("s0", "i64")}
      func.return %r : {T("s0", "i64")}
    }}""")
    assert_same(run1(module, 5), torch.arange(3, 13, 2))
    with pytest.raises(ShapeMismatchError, match=r"expected a Python int"):
        run1(module, torch.ones(1))


def test_index_argument_contradicting_a_shape_is_reported():
    module = parse(f"""
    func.func @f(%n: index {{ptensor.symbol = #sym.expr<s0>}}, %x: {T("s0")}) -> {T("s0")} {{
      func.return %x : {T("s0")}
    }}""")
    assert_same(run1(module, 4, torch.ones(4)), torch.ones(4))
    with pytest.raises(ShapeMismatchError, match=r"argument 1 of @f, dimension 0: size 3"):
        run1(module, 4, torch.ones(3))


def test_a_size_no_equation_solves_waits_for_a_later_argument():
    shape = "s0 floordiv 2"
    module = parse(f"""
    func.func @f(%x: {T(shape)}, %n: index {{ptensor.symbol = #sym.expr<s0>}})
        -> {T("s0")} {{
      %r = ptensor.full 1.0 : {T("s0")}
      func.return %r : {T("s0")}
    }}""")
    assert_same(run1(module, randn(3), 7), torch.ones(7))
    with pytest.raises(ShapeMismatchError, match=r"which is 4 with s0 = 8"):
        run1(module, randn(3), 8)


def test_unbound_symbol_is_reported():
    module = single_op(f"ptensor.full 1.0 : {T('s1')}", [T("s0")], T("s1"))
    with pytest.raises(UnboundSymbolError, match=r"unbound symbol\(s\) s1"):
        run1(module, randn(3))


def test_result_contradicting_its_type_is_reported():
    # cumsum keeps the shape; the result type claims another size.
    module = single_op(
        f'ptensor.fallback "aten.flatten.using_ints"(%a0) [#ptensor.operand<0>] '
        f": ({T('2, 3')}) -> {T('5')}",
        [T("2, 3")],
        T("5"),
    )
    with pytest.raises(ShapeMismatchError, match=r"ptensor.fallback result 0, "
                       r"dimension 0: size 6 contradicts the declared size 5"):
        run1(module, randn(2, 3))


def test_calls_bind_the_callee_symbols_in_a_scope_of_their_own():
    module = parse(f"""
    func.func @main(%a: {T("s0")}, %b: {T("s1")}) -> ({T("s1")}, {T("s0")}) {{
      %x = func.call @twice(%b) : ({T("s1")}) -> {T("s1")}
      %y = ptensor.full 2.0 : {T("s0")}
      func.return %x, %y : {T("s1")}, {T("s0")}
    }}
    func.func private @twice(%x: {T("s1")}) -> {T("s1")} {{
      %r = ptensor.binary add %x, %x : {T("s1")}, {T("s1")} -> {T("s1")}
      func.return %r : {T("s1")}
    }}""")
    a, b = randn(3), randn(5)
    x, y = run_function(module, [a, b])
    assert_same(x, b + b)
    assert_same(y, torch.full((3,), 2.0))
    (z,) = run_function(module, [a], name="twice")
    assert_same(z, a + a)


def test_every_op_has_an_implementation():
    implemented = {op_type for op_type, _ in PTensorFunctions._impls()}
    assert implemented == set(PTensor.operations)


# --------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------

_UNIT_INTERVAL = {UnaryKind.ASIN, UnaryKind.ACOS, UnaryKind.ATANH, UnaryKind.ERFINV}
_POSITIVE = {
    UnaryKind.LOG, UnaryKind.LOG2, UnaryKind.LOG10, UnaryKind.LOG1P,
    UnaryKind.SQRT, UnaryKind.RSQRT,
}  # fmt: skip


def _unary_input(kind: UnaryKind) -> torch.Tensor:
    x = randn(3, 4)
    if kind in _UNIT_INTERVAL:
        return torch.tanh(x) * 0.9
    if kind in _POSITIVE:
        return x.abs()
    if kind == UnaryKind.ACOSH:
        return x.abs() + 1
    if kind in (UnaryKind.ISNAN, UnaryKind.ISINF):
        return torch.where(x > 1, float("nan"), torch.where(x < -1, -float("inf"), x))
    if kind == UnaryKind.BITWISE_NOT:
        return randint(3, 4)
    return x * 3


@pytest.mark.parametrize("kind", list(UnaryKind))
def test_unary(kind):
    x = _unary_input(kind)
    dtype = "i32" if kind == UnaryKind.BITWISE_NOT else "f32"
    bool_result = kind in (UnaryKind.ISNAN, UnaryKind.ISINF, UnaryKind.LOGICAL_NOT)
    result_type = T("3, 4", "i1" if bool_result else dtype)
    module = single_op(
        f"ptensor.unary {kind.value} %a0 : {T('3, 4', dtype)} -> {result_type}",
        [T("3, 4", dtype)],
        result_type,
    )
    assert_same(run1(module, x), getattr(x, kind.value)())


def test_unary_round_is_half_to_even():
    module = single_op(f"ptensor.unary round %a0 : {T('4')} -> {T('4')}", [T("4")], T("4"))
    x = torch.tensor([0.5, 1.5, 2.5, -2.5])
    assert run1(module, x).tolist() == [0.0, 2.0, 2.0, -2.0]


_FLOAT_BINARY = [
    (BinaryKind.ADD, lambda a, b: a + b),
    (BinaryKind.SUB, lambda a, b: a - b),
    (BinaryKind.MUL, lambda a, b: a * b),
    (BinaryKind.DIV, lambda a, b: a / b),
    (BinaryKind.FLOORDIV, lambda a, b: a // b),
    (BinaryKind.REMAINDER, lambda a, b: a % b),
    (BinaryKind.FMOD, torch.fmod),
    (BinaryKind.POW, lambda a, b: a.abs() ** b),
    (BinaryKind.MAXIMUM, torch.maximum),
    (BinaryKind.MINIMUM, torch.minimum),
    (BinaryKind.ATAN2, torch.atan2),
    (BinaryKind.COPYSIGN, torch.copysign),
]
_INT_BINARY = [
    (BinaryKind.ADD, lambda a, b: a + b),
    (BinaryKind.SUB, lambda a, b: a - b),
    (BinaryKind.MUL, lambda a, b: a * b),
    (BinaryKind.DIV, lambda a, b: torch.div(a, b, rounding_mode="trunc")),
    (BinaryKind.FLOORDIV, lambda a, b: torch.div(a, b, rounding_mode="floor")),
    (BinaryKind.REMAINDER, lambda a, b: a % b),
    (BinaryKind.FMOD, torch.fmod),
    (BinaryKind.MAXIMUM, torch.maximum),
    (BinaryKind.MINIMUM, torch.minimum),
    (BinaryKind.BITWISE_AND, lambda a, b: a & b),
    (BinaryKind.BITWISE_OR, lambda a, b: a | b),
    (BinaryKind.BITWISE_XOR, lambda a, b: a ^ b),
    (BinaryKind.SHIFT_LEFT, lambda a, b: a << b.abs()),
    (BinaryKind.SHIFT_RIGHT, lambda a, b: a >> b.abs()),
]
_BOOL_BINARY = [
    (BinaryKind.LOGICAL_AND, lambda a, b: a & b),
    (BinaryKind.LOGICAL_OR, lambda a, b: a | b),
    (BinaryKind.LOGICAL_XOR, lambda a, b: a ^ b),
]
_ALL_BINARY = (
    [(k, f, "f32") for k, f in _FLOAT_BINARY]
    + [(k, f, "i32") for k, f in _INT_BINARY]
    + [(k, f, "i1") for k, f in _BOOL_BINARY]
)


def _binary_operands(kind: BinaryKind, dtype: str):
    if dtype == "i1":
        return torch.rand(3, 4) > 0.5, torch.rand(4) > 0.5
    if dtype == "i32":
        a, b = randint(3, 4), randint(4)
        if kind in (BinaryKind.SHIFT_LEFT, BinaryKind.SHIFT_RIGHT):
            b = randint(4, low=1, high=5)
        return a, b
    a, b = randn(3, 4) * 4, randn(4)
    if kind == BinaryKind.POW:
        a = a.abs()
    return a, b


def test_binary_covers_every_kind():
    assert {k for k, _, _ in _ALL_BINARY} == set(BinaryKind)


@pytest.mark.parametrize("kind, expected, dtype", _ALL_BINARY)
def test_binary_with_broadcasting(kind, expected, dtype):
    a, b = _binary_operands(kind, dtype)
    module = single_op(
        f"ptensor.binary {kind.value} %a0, %a1 : {T('3, 4', dtype)}, {T('4', dtype)} "
        f"-> {T('3, 4', dtype)}",
        [T("3, 4", dtype), T("4", dtype)],
        T("3, 4", dtype),
    )
    assert_same(run1(module, a, b), expected(a, b))


@pytest.mark.parametrize(
    "kind, expected",
    [("div", [-3, 3, -3]), ("floordiv", [-4, 3, -4]), ("remainder", [1, 1, -1]),
     ("fmod", [-1, 1, 1])],
)  # fmt: skip
def test_integer_division_rounding(kind, expected):
    module = single_op(
        f"ptensor.binary {kind} %a0, %a1 : {T('3', 'i64')}, {T('3', 'i64')} "
        f"-> {T('3', 'i64')}",
        [T("3", "i64"), T("3", "i64")],
        T("3", "i64"),
    )
    lhs, rhs = torch.tensor([-7, 7, 7]), torch.tensor([2, 2, -2])
    assert run1(module, lhs, rhs).tolist() == expected


@pytest.mark.parametrize("predicate", list(ComparePredicate))
def test_compare(predicate):
    a = randn(3, 4)
    b = a[1].clone()
    b[::2] = randn(2)
    module = single_op(
        f"ptensor.compare {predicate.value} %a0, %a1 : {T('3, 4')}, {T('4')} "
        f"-> {T('3, 4', 'i1')}",
        [T("3, 4"), T("4")],
        T("3, 4", "i1"),
    )
    expected = getattr(torch, predicate.value)(a, b)
    assert_same(run1(module, a, b), expected)


def test_where_broadcasts_a_scalar():
    module = single_op(
        f"ptensor.where %a0, %a1, %a2 : {T('3, 4', 'i1')}, {T('3, 4')}, {T('')} "
        f"-> {T('3, 4')}",
        [T("3, 4", "i1"), T("3, 4"), T("")],
        T("3, 4"),
    )
    c, a, b = torch.rand(3, 4) > 0.5, randn(3, 4), randn()
    assert_same(run1(module, c, a, b), torch.where(c, a, b))


@pytest.mark.parametrize(
    "source, target",
    [("f32", "i32"), ("f32", "i1"), ("i64", "f32"), ("f32", "bf16"), ("i1", "f32"),
     ("i32", "ui8")],
)  # fmt: skip
def test_cast(source, target):
    x = {
        "f32": randn(3, 4) * 5,
        "i64": randint(3, 4, dtype=torch.int64),
        "i32": randint(3, 4, low=-300, high=300),
        "i1": torch.rand(3, 4) > 0.5,
    }[source]
    module = single_op(
        f"ptensor.cast %a0 : {T('3, 4', source)} -> {T('3, 4', target)}",
        [T("3, 4", source)],
        T("3, 4", target),
    )
    dtypes = {"i32": torch.int32, "i1": torch.bool, "f32": torch.float32,
              "bf16": torch.bfloat16, "ui8": torch.uint8}  # fmt: skip
    assert_same(run1(module, x), x.to(dtypes[target]))


# --------------------------------------------------------------------------
# Generators
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, dtype, expected",
    [("0.5", "f32", 0.5), ("-inf", "f32", float("-inf")), ("7", "i64", 7),
     ("1", "i1", True)],
)  # fmt: skip
def test_full_of_symbolic_shape(value, dtype, expected):
    module = single_op(f"ptensor.full {value} : {T('s0, 4', dtype)}", [T("s0")],
                       T("s0, 4", dtype))  # fmt: skip
    result = run1(module, randn(3))
    assert_same(result, torch.full((3, 4), expected, dtype=result.dtype))
    assert result.dtype == {"f32": torch.float32, "i64": torch.int64,
                            "i1": torch.bool}[dtype]  # fmt: skip


def test_constant():
    module = parse(f"""
    func.func @f() -> ({T("2, 2")}, {T("2", "i1")}, {T("3", "i32")}) {{
      %a = ptensor.constant dense<[[1.5, -2.0], [3.0, 4.25]]> : tensor<2x2xf32> -> {T("2, 2")}
      %b = ptensor.constant dense<[true, false]> : tensor<2xi1> -> {T("2", "i1")}
      %c = ptensor.constant dense<-3> : tensor<3xi32> -> {T("3", "i32")}
      func.return %a, %b, %c : {T("2, 2")}, {T("2", "i1")}, {T("3", "i32")}
    }}""")
    a, b, c = run_function(module, [])
    assert_same(a, torch.tensor([[1.5, -2.0], [3.0, 4.25]]))
    assert_same(b, torch.tensor([True, False]))
    assert_same(c, torch.full((3,), -3, dtype=torch.int32))


@pytest.mark.parametrize("count", [1, 5, 13])
def test_iota(count):
    module = parse(f"""
    func.func @f(%x: {T("s0")}) -> ({T("s0", "i64")}, {T("s0")}) {{
      %i = ptensor.iota start 3 step -2 : {T("s0", "i64")}
      %f = ptensor.iota start 0.5 step 0.1 : {T("s0")}
      func.return %i, %f : {T("s0", "i64")}, {T("s0")}
    }}""")
    ints, floats = run_function(module, [randn(count)])
    assert_same(ints, torch.arange(3, 3 - 2 * count, -2))
    assert_same(floats, torch.arange(0.5, 0.5 + 0.1 * (count - 0.5), 0.1))
    assert floats.shape == (count,)


@pytest.mark.parametrize(
    "distribution, generate", [("uniform", torch.rand), ("normal", torch.randn)]
)
def test_rand_uses_torch_generator(distribution, generate):
    module = single_op(f"ptensor.rand {distribution} : {T('s0, 8')}", [T("s0")],
                       T("s0, 8"))  # fmt: skip
    x = randn(4)
    torch.manual_seed(7)
    result = run1(module, x)
    torch.manual_seed(7)
    assert_same(result, generate(4, 8))
    if distribution == "uniform":
        assert 0 <= result.min() and result.max() < 1


# --------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------


def _reduce_expected(kind: ReduceKind, x: torch.Tensor, dims, keepdim: bool):
    if kind == ReduceKind.SUM:
        return x.sum(dims, keepdim=keepdim, dtype=x.dtype)
    if kind == ReduceKind.PROD:
        for d in sorted(dims, reverse=True):
            x = x.prod(d, keepdim=keepdim)
        return x
    if kind in (ReduceKind.MAX, ReduceKind.MIN):
        return getattr(x, "a" + kind.value)(dims, keepdim=keepdim)
    if kind in (ReduceKind.ARGMAX, ReduceKind.ARGMIN):
        return getattr(x, kind.value)(dims[0], keepdim=keepdim)
    return getattr(x, kind.value)(dims, keepdim=keepdim)


def _reduced(shape, dims, keepdim):
    if keepdim:
        return ", ".join("1" if i in dims else s for i, s in enumerate(shape))
    return ", ".join(s for i, s in enumerate(shape) if i not in dims)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("kind", list(ReduceKind))
def test_reduce(kind, keepdim):
    multi = kind not in (ReduceKind.ARGMAX, ReduceKind.ARGMIN)
    dims = [0, 2] if multi else [1]
    dtype = "i1" if kind in (ReduceKind.ANY, ReduceKind.ALL) else "f32"
    result_dtype = "i64" if not multi else dtype
    shape = ["s0", "4", "5"]
    result_type = T(_reduced(shape, dims, keepdim), result_dtype)
    keep = " keepdim" if keepdim else ""
    module = single_op(
        f"ptensor.reduce {kind.value} %a0 dims {dims}{keep} : {T('s0, 4, 5', dtype)} "
        f"-> {result_type}",
        [T("s0, 4, 5", dtype)],
        result_type,
    )
    x = torch.rand(3, 4, 5) > 0.3 if dtype == "i1" else randn(3, 4, 5)
    assert_same(run1(module, x), _reduce_expected(kind, x, dims, keepdim))


def test_reduce_argmax_and_argmin_take_the_first_tie():
    result_type = T("2", "i64")
    module = parse(f"""
    func.func @f(%x: {T("2, 5")}) -> ({result_type}, {result_type}) {{
      %a = ptensor.reduce argmax %x dims [1] : {T("2, 5")} -> {result_type}
      %b = ptensor.reduce argmin %x dims [1] : {T("2, 5")} -> {result_type}
      func.return %a, %b : {result_type}, {result_type}
    }}""")
    x = torch.tensor([[1.0, 3.0, 0.5, 3.0, 0.5], [2.0, 2.0, 2.0, 2.0, 2.0]])
    argmax, argmin = run_function(module, [x])
    assert argmax.tolist() == [1, 0]
    assert argmin.tolist() == [2, 0]


def test_reduce_sum_of_integers_keeps_the_dtype():
    module = single_op(
        f"ptensor.reduce sum %a0 dims [1] : {T('3, 4', 'i32')} -> {T('3', 'i32')}",
        [T("3, 4", "i32")],
        T("3", "i32"),
    )
    x = randint(3, 4)
    assert_same(run1(module, x), x.sum(1, dtype=torch.int32))


def test_reduce_over_no_dimension_is_the_identity():
    module = single_op(
        f"ptensor.reduce sum %a0 dims [] : {T('3, 4')} -> {T('3, 4')}",
        [T("3, 4")],
        T("3, 4"),
    )
    x = randn(3, 4)
    assert_same(run1(module, x), x)


# --------------------------------------------------------------------------
# Views
# --------------------------------------------------------------------------

_VIEWS = [
    ("ptensor.reshape %a0", "s0, 4", "s0 * 2, 2", lambda x: x.reshape(-1, 2)),
    ("ptensor.permute %a0 [1, 0]", "s0, 4", "4, s0", lambda x: x.permute(1, 0)),
    ("ptensor.expand %a0", "1, s0", "3, 2, s0", lambda x: x.expand(3, 2, -1)),
    ("ptensor.slice %a0 dim 0 start 1 end s0 step 2", "s0, 4",
     "(s0 - 1) ceildiv 2, 4", lambda x: x[1::2]),
    ("ptensor.slice %a0 dim 1 start 1 end 3 step 1", "s0, 4", "s0, 2",
     lambda x: x[:, 1:3]),
    ("ptensor.select %a0 dim 0 index s0 - 1", "s0, 4", "4", lambda x: x[-1]),
    ("ptensor.squeeze %a0 dims [1]", "s0, 1, 4", "s0, 4", lambda x: x.squeeze(1)),
    ("ptensor.unsqueeze %a0 dim 2", "s0, 4", "s0, 4, 1", lambda x: x.unsqueeze(2)),
    ("ptensor.as_strided %a0 strides [4, 1] offset 2", "s0, 4", "s0 - 1, 4",
     lambda x: x.reshape(-1)[2:-2].reshape(-1, 4)),
]  # fmt: skip


@pytest.mark.parametrize("rows", [3, 6])
@pytest.mark.parametrize("op, source, result, expected", _VIEWS)
def test_view(op, source, result, expected, rows):
    module = single_op(f"{op} : {T(source)} -> {T(result)}", [T(source)], T(result))
    shape = [rows if s == "s0" else int(s) for s in source.split(", ")]
    x = randn(*shape)
    assert_same(run1(module, x), expected(x))


def test_as_strided_reads_a_permuted_input_as_contiguous():
    module = parse(f"""
    func.func @f(%x: {T("3, 4")}) -> {T("3, 2")} {{
      %t = ptensor.permute %x [1, 0] : {T("3, 4")} -> {T("4, 3")}
      %r = ptensor.as_strided %t strides [1, 1] offset 1 : {T("4, 3")} -> {T("3, 2")}
      func.return %r : {T("3, 2")}
    }}""")
    x = randn(3, 4)
    flat = x.t().contiguous().reshape(-1)
    expected = torch.stack([flat[1 + i : 3 + i] for i in range(3)])
    assert_same(run1(module, x), expected)


def test_as_strided_past_the_end_is_reported():
    module = single_op(
        f"ptensor.as_strided %a0 strides [4, 1] offset 1 : {T('2, 4')} -> {T('2, 4')}",
        [T("2, 4")],
        T("2, 4"),
    )
    with pytest.raises(OutOfBoundsError, match=r"as_strided last element 8"):
        run1(module, randn(2, 4))


def test_slice_and_select_out_of_range_are_reported():
    slice_module = single_op(
        f"ptensor.slice %a0 dim 0 start 0 end s0 + 1 step 1 : {T('s0')} -> {T('s0 + 1')}",
        [T("s0")],
        T("s0 + 1"),
    )
    with pytest.raises(OutOfBoundsError, match=r"slice end 4 is outside \[0, 3\]"):
        run1(slice_module, randn(3))
    select_module = single_op(
        f"ptensor.select %a0 dim 0 index s0 : {T('s0, 2')} -> {T('2')}",
        [T("s0, 2")],
        T("2"),
    )
    with pytest.raises(OutOfBoundsError, match=r"select index 3 is outside \[0, 2\]"):
        run1(select_module, randn(3, 2))


# --------------------------------------------------------------------------
# Data movement
# --------------------------------------------------------------------------


def test_cat_with_symbolic_sizes():
    module = single_op(
        f"ptensor.cat %a0, %a1 dim 0 : {T('2, 8')}, {T('s0, 8')} -> {T('s0 + 2, 8')}",
        [T("2, 8"), T("s0, 8")],
        T("s0 + 2, 8"),
    )
    a, b = randn(2, 8), randn(5, 8)
    assert_same(run1(module, a, b), torch.cat([a, b]))


@pytest.mark.parametrize(
    "mode, value, low, high",
    [("constant", " 1.5", [0, 1, 2], [0, 2, -1]),
     ("constant", " 0.0", [1, -1, 0], [-1, 0, 3]),
     ("reflect", "", [0, 0, 2], [0, 0, 3]),
     ("reflect", "", [0, 0, -2], [0, 0, 3]),
     ("replicate", "", [0, 0, 3], [0, 0, 1]),
     ("replicate", "", [0, 0, 2], [0, 0, -1])],
)  # fmt: skip
def test_pad_matches_torch(mode, value, low, high):
    sizes = [2 + lo + hi for lo, hi in zip(low, high)]
    sizes[2] += 2
    result = T(", ".join(str(s) for s in sizes))
    module = single_op(
        f"ptensor.pad %a0 {mode}{value} low {low} high {high} : {T('2, 2, 4')} -> {result}",
        [T("2, 2, 4")],
        result,
    )
    x = randn(2, 2, 4)
    pads = [a for lo, hi in reversed(list(zip(low, high))) for a in (lo, hi)]
    if mode == "constant":
        expected = F.pad(x, pads, mode="constant", value=float(value))
    else:
        expected = F.pad(x, pads[:2], mode=mode)
    assert_same(run1(module, x), expected)


def test_pad_reflect_in_every_dimension():
    module = single_op(
        f"ptensor.pad %a0 reflect low [1, 2] high [2, -1] : {T('3, 4')} -> {T('6, 5')}",
        [T("3, 4")],
        T("6, 5"),
    )
    x = randn(3, 4)
    rows = x[[1, 0, 1, 2, 1, 0]]
    assert_same(run1(module, x), rows[:, [2, 1, 0, 1, 2]])


def test_gather():
    module = single_op(
        f"ptensor.gather %a0, %a1 dim 1 : {T('4, 8')}, {T('4, 3', 'i64')} -> {T('4, 3')}",
        [T("4, 8"), T("4, 3", "i64")],
        T("4, 3"),
    )
    x, index = randn(4, 8), torch.randint(0, 8, (4, 3))
    assert_same(run1(module, x, index), torch.gather(x, 1, index))


@pytest.mark.parametrize(
    "dims, index_shapes, result, expected",
    [([0], ["2, 5"], "2, 5, 6, 7", lambda x, i: x[i[0]]),
     ([1, 2], ["3", "3"], "5, 3", lambda x, i: x[:, i[0], i[1]]),
     ([0, 2], ["2, 1", "4"], "2, 4, 6", lambda x, i: x[i[0], :, i[1]])],
)  # fmt: skip
def test_index_with_negative_entries(dims, index_shapes, result, expected):
    source = "5, 6, 7"
    types = [T(s, "i64") for s in index_shapes]
    operands = ", ".join(f"%a{i + 1}" for i in range(len(types)))
    module = single_op(
        f"ptensor.index %a0[{operands}] dims {dims} : {T(source)}, "
        f"{', '.join(types)} -> {T(result)}",
        [T(source), *types],
        T(result),
    )
    x = randn(5, 6, 7)
    indices = [
        torch.randint(-x.shape[d], x.shape[d], [int(s) for s in shape.split(", ")])
        for d, shape in zip(dims, index_shapes)
    ]
    assert any((i < 0).any() for i in indices)
    assert_same(run1(module, x, *indices), expected(x, indices))


def test_scatter_add_accumulates_repeated_indices():
    module = single_op(
        f"ptensor.scatter_add %a0, %a1, %a2 dim 0 : {T('3, 4')}, {T('5, 4', 'i64')}, "
        f"{T('5, 4')} -> {T('3, 4')}",
        [T("3, 4"), T("5, 4", "i64"), T("5, 4")],
        T("3, 4"),
    )
    x, index, source = randn(3, 4), torch.randint(0, 3, (5, 4)), randn(5, 4)
    result = run1(module, x, index, source)
    assert_same(result, torch.scatter_add(x, 0, index, source))
    assert not torch.equal(result, x)


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(accumulate):
    keyword = " accumulate" if accumulate else ""
    module = single_op(
        f"ptensor.index_put %a0[%a1] dims [1], %a2{keyword} : {T('3, 6')}, "
        f"{T('3, 1')}, [{T('2', 'i64')}] -> {T('3, 6')}",
        [T("3, 6"), T("2", "i64"), T("3, 1")],
        T("3, 6"),
    )
    x, index, values = randn(3, 6), torch.tensor([-1, 2]), randn(3, 1)
    expected = x.clone()
    if accumulate:
        expected[:, index] += values
    else:
        expected[:, index] = values
    before = x.clone()
    assert_same(run1(module, x, index, values), expected)
    assert torch.equal(x, before)


# --------------------------------------------------------------------------
# Library ops
# --------------------------------------------------------------------------


def test_mm_bmm_addmm():
    module = parse(f"""
    func.func @f(%a: {T("s0, 8")}, %b: {T("8, 5")}, %c: {T("2, s0, 8")},
                 %d: {T("2, 8, 5")}, %bias: {T("5")})
        -> ({T("s0, 5")}, {T("2, s0, 5")}, {T("s0, 5")}) {{
      %mm = ptensor.mm %a, %b : {T("s0, 8")}, {T("8, 5")} -> {T("s0, 5")}
      %bmm = ptensor.bmm %c, %d : {T("2, s0, 8")}, {T("2, 8, 5")} -> {T("2, s0, 5")}
      %addmm = ptensor.addmm %bias, %a, %b beta 0.5 alpha 2.0 : {T("5")}, {T("s0, 8")}, {T("8, 5")} -> {T("s0, 5")}
      func.return %mm, %bmm, %addmm : {T("s0, 5")}, {T("2, s0, 5")}, {T("s0, 5")}
    }}""")
    a, b, c, d, bias = randn(3, 8), randn(8, 5), randn(2, 3, 8), randn(2, 8, 5), randn(5)
    mm, bmm, addmm = run_function(module, [a, b, c, d, bias])
    assert_same(mm, a @ b)
    assert_same(bmm, c @ d)
    assert_same(addmm, 0.5 * bias + 2.0 * (a @ b))


def test_convolution():
    module = single_op(
        "ptensor.convolution %a0, %a1, %a2 stride [2, 1] padding [1, 0] "
        f"dilation [1, 2] groups 2 : {T('2, 4, 9, 9')}, {T('6, 2, 3, 3')}, {T('6')} "
        f"-> {T('2, 6, 5, 5')}",
        [T("2, 4, 9, 9"), T("6, 2, 3, 3"), T("6")],
        T("2, 6, 5, 5"),
    )
    x, w, b = randn(2, 4, 9, 9), randn(6, 2, 3, 3), randn(6)
    expected = F.conv2d(x, w, b, stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)
    assert_same(run1(module, x, w, b), expected)


def test_transposed_convolution():
    module = single_op(
        "ptensor.convolution %a0, %a1 stride [2] padding [1] dilation [1] groups 1 "
        f"transposed output_padding [1] : {T('2, 4, 5')}, {T('4, 3, 3')} -> {T('2, 3, 10')}",
        [T("2, 4, 5"), T("4, 3, 3")],
        T("2, 3, 10"),
    )
    x, w = randn(2, 4, 5), randn(4, 3, 3)
    expected = F.conv_transpose1d(x, w, stride=2, padding=1, output_padding=1)
    assert_same(run1(module, x, w), expected)


@pytest.mark.parametrize(
    "extra, mask_type, make_mask, kwargs",
    [("", "", None, {}),
     (" causal", "", None, {"is_causal": True}),
     (" scale 0.25", "", None, {"scale": 0.25}),
     (" mask %a3", "6, 6, i1", lambda: torch.rand(6, 6) > 0.3, {}),
     (" mask %a3 scale 0.5", "1, 6, f32", lambda: randn(1, 6), {"scale": 0.5})],
)  # fmt: skip
def test_attention(extra, mask_type, make_mask, kwargs):
    qkv = T("2, s0, 6, 8")
    types = [qkv, qkv, qkv] + ([T(*mask_type.rsplit(", ", 1))] if mask_type else [])
    module = single_op(
        f"ptensor.attention %a0, %a1, %a2{extra} : {', '.join(types)} -> {qkv}",
        types,
        qkv,
    )
    q, k, v = randn(2, 3, 6, 8), randn(2, 3, 6, 8), randn(2, 3, 6, 8)
    mask = [make_mask()] if make_mask else []
    expected = F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask[0] if mask else None, **kwargs
    )
    assert_same(run1(module, q, k, v, *mask), expected)


# --------------------------------------------------------------------------
# Fallback
# --------------------------------------------------------------------------


def test_fallback_cumsum():
    module = single_op(
        f'ptensor.fallback "aten.cumsum.default"(%a0) [#ptensor.operand<0>, 1] '
        f": ({T('s0, 5')}) -> {T('s0, 5')}",
        [T("s0, 5")],
        T("s0, 5"),
    )
    x = randn(3, 5)
    assert_same(run1(module, x), torch.cumsum(x, 1))


def test_fallback_decodes_kwargs_dtypes_lists_none_bools_and_sizes():
    f64, i64 = T("s0, 4", "f64"), T("s0, 4", "i64")
    module = parse(f"""
    func.func @f(%x: {T("s0, 4")}) -> ({f64}, {T("s0, 4")}, {T("s0, 4")}, {i64}, {T("s0 * 2, 2")}) {{
      %c = ptensor.fallback "aten.cumsum.default"(%x) [#ptensor.operand<0>, 0]
          kwargs {{dtype = f64}} : ({T("s0, 4")}) -> {f64}
      %f = ptensor.fallback "aten.flip.default"(%x) [#ptensor.operand<0>, [0, 1]]
          : ({T("s0, 4")}) -> {T("s0, 4")}
      %m = ptensor.fallback "aten.clamp.default"(%x) [#ptensor.operand<0>, #ptensor.none, 0.5]
          : ({T("s0, 4")}) -> {T("s0, 4")}
      %v, %i = ptensor.fallback "aten.sort.default"(%x) [#ptensor.operand<0>, 1, true]
          : ({T("s0, 4")}) -> ({T("s0, 4")}, {i64})
      %r = ptensor.fallback "aten.view.default"(%x) [#ptensor.operand<0>, [#sym.expr<s0 * 2>, 2]]
          : ({T("s0, 4")}) -> {T("s0 * 2, 2")}
      func.return %c, %f, %m, %i, %r : {f64}, {T("s0, 4")}, {T("s0, 4")}, {i64}, {T("s0 * 2, 2")}
    }}""")
    x = randn(3, 4)
    cumsum, flipped, clamped, indices, viewed = run_function(module, [x])
    assert_same(cumsum, torch.cumsum(x, 0, dtype=torch.float64))
    assert_same(flipped, torch.flip(x, [0, 1]))
    assert_same(clamped, torch.clamp(x, max=0.5))
    assert_same(indices, torch.sort(x, 1, descending=True).indices)
    assert_same(viewed, x.view(6, 2))


def test_fallback_of_an_in_place_op_leaves_its_operand_alone():
    module = single_op(
        f'ptensor.fallback "aten.add_.Tensor"(%a0) [#ptensor.operand<0>, #ptensor.operand<0>] '
        f": ({T('4')}) -> {T('4')}",
        [T("4")],
        T("4"),
    )
    x = randn(4)
    before = x.clone()
    assert_same(run1(module, x), before * 2)
    assert torch.equal(x, before)


def test_fallback_to_an_unknown_op_is_reported():
    module = single_op(
        f'ptensor.fallback "aten.no_such_op.default"(%a0) [#ptensor.operand<0>] '
        f": ({T('4')}) -> {T('4')}",
        [T("4")],
        T("4"),
    )
    with pytest.raises(FallbackError, match=r"torch has no op 'aten.no_such_op.default'"):
        run1(module, randn(4))
