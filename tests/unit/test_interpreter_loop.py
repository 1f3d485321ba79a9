"""
The loop interpreter on hand-written loop IR, against torch and against
arith's semantics computed element by element with Python integers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import pytest
import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import InterpretationError

from permalloy.dialects import make_context
from permalloy.interpreter.levels import module_level, run_module_function
from permalloy.interpreter.loop import OutOfBoundsLoadError

# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def T(shape: str, dtype: str = "f32") -> str:
    return f"!ptensor.tensor<[{shape}], {dtype}>"


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def run(text: str, *args) -> torch.Tensor:
    (result,) = run_module_function(parse(text), list(args))
    return result


def pointwise(
    inputs: Sequence[tuple[str, str]], result: str, body: str, params: str | None = None
) -> str:
    """A function whose arguments %a0, ... feed one loop.pointwise as %x0, ..."""
    params = params or ", ".join(f"%a{i}: {t}" for i, (t, _) in enumerate(inputs))
    ins = ", ".join(f"%x{i} = %a{i} : {t}" for i, (t, _) in enumerate(inputs))
    return (
        f"func.func @f({params}) -> {result} {{\n"
        f"  %r = loop.pointwise ins({ins}) -> {result} {{\n{body}\n  }}\n"
        f"  func.return %r : {result}\n}}"
    )


def scalar_op(op: str, operand: str, result: str, count: int = 2) -> str:
    """A pointwise loop applying `op` to the i-th elements of `count` inputs."""
    tensor_operand = T("6", operand)
    tensor_result = T("6", result)
    loads = "\n".join(f"    %v{i} = loop.load %x{i}[d0] : {operand}" for i in range(count))
    operands = ", ".join(f"%v{i}" for i in range(count))
    body = f"{loads}\n    %w = {op.format(operands=operands)}\n    loop.yield %w : {result}"
    return pointwise([(tensor_operand, operand)] * count, tensor_result, body)


def as_unsigned(value: int, bits: int) -> int:
    return value & ((1 << bits) - 1)


def as_signed(value: int, bits: int) -> int:
    value = as_unsigned(value, bits)
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


def expected_ints(
    function: Callable[..., int], *columns: list[int], bits: int
) -> torch.Tensor:
    """`function` on each row of Python ints, wrapped to `bits` (signed)."""
    values = [as_signed(function(*row), bits) for row in zip(*columns)]
    dtype = {8: torch.int8, 32: torch.int32, 64: torch.int64}[bits]
    return torch.tensor(values, dtype=dtype)


def trunc_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


I8_A = [-128, -7, -1, 5, 100, 127]
I8_B = [3, -2, 7, -3, 9, 2]

# --------------------------------------------------------------------------
# Loop ops
# --------------------------------------------------------------------------


def test_pointwise_reads_a_transpose_and_computes_with_math():
    text = pointwise(
        [(T("4, 6"), "f32")],
        T("6, 4"),
        "    %v = loop.load %x0[d1, d0] : f32\n"
        "    %e = math.exp %v : f32\n"
        "    loop.yield %e : f32",
    )
    x = torch.randn(4, 6)
    torch.testing.assert_close(run(text, x), torch.exp(x.T))


def test_pointwise_broadcasts_a_constant_to_its_domain():
    text = (
        f"func.func @f() -> {T('2, 3', 'i32')} {{\n"
        f"  %r = loop.pointwise ins() -> {T('2, 3', 'i32')} {{\n"
        "    %c = arith.constant 7 : i32\n"
        "    loop.yield %c : i32\n  }\n"
        f"  func.return %r : {T('2, 3', 'i32')}\n}}"
    )
    result = run(text)
    assert torch.equal(result, torch.full((2, 3), 7, dtype=torch.int32))
    assert result.is_contiguous()


def test_domain_sizes_use_size_symbols_bound_by_the_arguments():
    text = pointwise(
        [(T("s0, 3"), "f32")],
        T("3, s0"),
        "    %v = loop.load %x0[d1, d0] : f32\n    loop.yield %v : f32",
    )
    for rows in (2, 5):
        x = torch.randn(rows, 3)
        assert torch.equal(run(text, x), x.T)


def test_index_evaluates_floordiv_mod_min_max_and_size_symbols():
    text = pointwise(
        [(T("s0"), "f32")],
        T("s0, 3", "i64"),
        "    %i = loop.index max(min(d0 * 3 + d1 - 4, s0), 0) + "
        "(d0 * 3 + d1 - 4) floordiv 2 * 100 + (d0 * 3 + d1) mod 4 * 10000 + "
        "(d0 + 1) ceildiv 2 * 1000000\n"
        "    %c = arith.index_cast %i : index to i64\n"
        "    loop.yield %c : i64",
    )
    result = run(text, torch.randn(5))
    expected = []
    for d0 in range(5):
        row = []
        for d1 in range(3):
            flat = d0 * 3 + d1
            row.append(
                max(min(flat - 4, 5), 0)
                + (flat - 4) // 2 * 100
                + flat % 4 * 10000
                + -(-(d0 + 1) // 2) * 1000000
            )
        expected.append(row)
    assert result.tolist() == expected


def test_load_with_index_values_gathers():
    text = pointwise(
        [(T("5, 4"), "f32"), (T("3, 4", "i64"), "i64")],
        T("3, 4"),
        "    %i = loop.load %x1[d0, d1] : i64\n"
        "    %p = arith.index_cast %i : i64 to index\n"
        "    %v = loop.load %x0[v0, d1] (%p) : f32\n"
        "    loop.yield %v : f32",
    )
    x, index = torch.randn(5, 4), torch.randint(0, 5, (3, 4))
    assert torch.equal(run(text, x, index), torch.gather(x, 0, index))


def test_masked_load_gives_zero_where_the_mask_is_false():
    text = pointwise(
        [(T("4"), "f32")],
        T("7"),
        "    %i = loop.index d0\n"
        "    %lo = arith.constant 2 : index\n"
        "    %hi = arith.constant 6 : index\n"
        "    %a = arith.cmpi sge, %i, %lo : index\n"
        "    %b = arith.cmpi slt, %i, %hi : index\n"
        "    %m = arith.andi %a, %b : i1\n"
        "    %v = loop.load %x0[d0 - 2] if %m : f32\n"
        "    loop.yield %v : f32",
    )
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert run(text, x).tolist() == [0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 0.0]


def test_unmasked_load_out_of_bounds_is_an_error():
    text = pointwise(
        [(T("4"), "f32")], T("4"), "    %v = loop.load %x0[d0 + 1] : f32\n    loop.yield %v : f32"
    )
    with pytest.raises(OutOfBoundsLoadError, match=r"positions 1 to 4 of dimension 0 \(size 4\)"):
        run(text, torch.randn(4))


def test_negative_positions_are_out_of_bounds_too():
    text = pointwise(
        [(T("4"), "f32")], T("4"), "    %v = loop.load %x0[3 - d0 * 2] : f32\n    loop.yield %v : f32"
    )
    with pytest.raises(OutOfBoundsLoadError, match=r"positions -3 to 3"):
        run(text, torch.randn(4))


def test_unsigned_elements_are_read_as_signless_bits_and_stored_back():
    text = pointwise(
        [(T("4", "ui8"), "i8")],
        T("4", "ui8"),
        "    %v = loop.load %x0[d0] : i8\n"
        "    %c = arith.constant 1 : i8\n"
        "    %s = arith.shrui %v, %c : i8\n"
        "    loop.yield %s : i8",
    )
    x = torch.tensor([255, 128, 7, 1], dtype=torch.uint8)
    assert run(text, x).tolist() == [127, 64, 3, 0]


def reduce_text(kind: str, source: str, over: str, result: str, index: str, value: str) -> str:
    return (
        f"func.func @f(%a: {source}) -> {result} {{\n"
        f"  %r = loop.reduce {kind} ins(%x = %a : {source}) over [{over}] -> {result} {{\n"
        f"    %v = loop.load %x[{index}] : {value}\n"
        f"    loop.yield %v : {value}\n  }}\n"
        f"  func.return %r : {result}\n}}"
    )


@pytest.mark.parametrize(
    "kind, expected",
    [
        ("sum", lambda x: x.sum((1, 2))),
        ("prod", lambda x: x.prod(2).prod(1)),
        ("max", lambda x: x.amax((1, 2))),
        ("min", lambda x: x.amin((1, 2))),
    ],
)
def test_reduce_over_a_two_dimensional_domain(kind, expected):
    # The reduction domain is [5, 4]: x[d0, r1, r0] sums over the transpose.
    text = reduce_text(kind, T("3, 4, 5"), "5, 4", T("3"), "d0, r1, r0", "f32")
    x = torch.randn(3, 4, 5) * 0.5 + 1
    torch.testing.assert_close(run(text, x), expected(x))


def test_argmax_gives_the_row_major_position_in_the_reduction_domain():
    text = reduce_text("argmax", T("2, 3, 4"), "3, 4", T("2", "i64"), "d0, r0, r1", "f32")
    x = torch.randn(2, 3, 4)
    assert torch.equal(run(text, x), x.reshape(2, 12).argmax(1))


@pytest.mark.parametrize("kind", ["argmax", "argmin"])
def test_arg_extremes_take_the_first_of_ties(kind):
    text = reduce_text(kind, T("2, 5", "i32"), "5", T("2", "i64"), "d0, r0", "i32")
    x = torch.tensor([[1, 3, 0, 3, 0], [2, 2, 2, 2, 2]], dtype=torch.int32)
    expected = [1, 0] if kind == "argmax" else [2, 0]
    assert run(text, x).tolist() == expected


@pytest.mark.parametrize("kind", ["argmax", "argmin", "max", "min"])
def test_nan_counts_as_the_extreme(kind):
    result = T("2", "i64" if kind.startswith("arg") else "f32")
    text = reduce_text(kind, T("2, 3"), "3", result, "d0, r0", "f32")
    x = torch.tensor([[1.0, float("nan"), 3.0], [2.0, 5.0, -1.0]])
    actual = run(text, x)
    if kind.startswith("arg"):
        assert actual.tolist() == [1, 1 if kind == "argmax" else 2]
    else:
        assert math.isnan(actual[0]) and actual[1] == (5.0 if kind == "max" else -1.0)


@pytest.mark.parametrize("kind, expected", [("any", [True, False]), ("all", [False, False])])
def test_any_and_all(kind, expected):
    text = reduce_text(kind, T("2, 3", "i1"), "3", T("2", "i1"), "d0, r0", "i1")
    x = torch.tensor([[True, False, True], [False, False, False]])
    assert run(text, x).tolist() == expected


def test_sums_accumulate_wide_and_wrap_to_the_result():
    text = reduce_text("sum", T("1, 3", "i8"), "3", T("1", "i8"), "d0, r0", "i8")
    x = torch.tensor([[100, 100, 100]], dtype=torch.int8)
    assert run(text, x).tolist() == [as_signed(300, 8)]


def test_max_of_unsigned_elements_uses_unsigned_order():
    text = reduce_text("max", T("1, 3", "ui8"), "3", T("1", "ui8"), "d0, r0", "i8")
    x = torch.tensor([[3, 200, 100]], dtype=torch.uint8)
    assert run(text, x).tolist() == [200]


def test_reduce_to_a_scalar():
    text = reduce_text("sum", T("3, 4"), "3, 4", T(""), "r0, r1", "f32")
    x = torch.randn(3, 4)
    result = run(text, x)
    assert result.shape == () and torch.allclose(result, x.sum())


def test_body_ops_outside_a_loop_are_an_error():
    text = (
        "func.func @f() -> index {\n"
        "  %i = loop.index 0\n"
        "  func.return %i : index\n}"
    )
    with pytest.raises(InterpretationError, match="only inside a loop op"):
        run_module_function(parse(text), [])


def test_module_level_tells_loop_modules():
    text = pointwise([(T("4"), "f32")], T("4"), "    %v = loop.load %x0[d0] : f32\n    loop.yield %v : f32")
    assert module_level(parse(text)) == "loop"


# --------------------------------------------------------------------------
# arith on integers
# --------------------------------------------------------------------------

INT_BINARY = [
    ("addi", lambda a, b: a + b),
    ("subi", lambda a, b: a - b),
    ("muli", lambda a, b: a * b),
    ("divsi", trunc_div),
    ("remsi", lambda a, b: a - trunc_div(a, b) * b),
    ("floordivsi", lambda a, b: a // b),
    ("ceildivsi", lambda a, b: -(-a // b)),
    ("divui", lambda a, b: as_unsigned(a, 8) // as_unsigned(b, 8)),
    ("remui", lambda a, b: as_unsigned(a, 8) % as_unsigned(b, 8)),
    ("ceildivui", lambda a, b: -(-as_unsigned(a, 8) // as_unsigned(b, 8))),
    ("maxsi", max),
    ("minsi", min),
    ("maxui", lambda a, b: max(as_unsigned(a, 8), as_unsigned(b, 8))),
    ("minui", lambda a, b: min(as_unsigned(a, 8), as_unsigned(b, 8))),
    ("andi", lambda a, b: a & b),
    ("ori", lambda a, b: a | b),
    ("xori", lambda a, b: a ^ b),
]


@pytest.mark.parametrize("name, function", INT_BINARY, ids=[n for n, _ in INT_BINARY])
def test_integer_ops_on_i8_wrap_and_read_signedness_as_arith_says(name, function):
    text = scalar_op(f"arith.{name} {{operands}} : i8", "i8", "i8")
    a, b = (torch.tensor(c, dtype=torch.int8) for c in (I8_A, I8_B))
    assert torch.equal(run(text, a, b), expected_ints(function, I8_A, I8_B, bits=8))


@pytest.mark.parametrize(
    "name, function",
    [
        ("shli", lambda a, b: a << b),
        ("shrsi", lambda a, b: a >> b),
        ("shrui", lambda a, b: as_unsigned(a, 8) >> b),
    ],
)
def test_shifts_on_i8(name, function):
    amounts = [1, 0, 3, 7, 2, 5]
    text = scalar_op(f"arith.{name} {{operands}} : i8", "i8", "i8")
    a, b = torch.tensor(I8_A, dtype=torch.int8), torch.tensor(amounts, dtype=torch.int8)
    assert torch.equal(run(text, a, b), expected_ints(function, I8_A, amounts, bits=8))


def test_logical_shift_right_of_i64_clears_the_sign_copies():
    text = scalar_op("arith.shrui {operands} : i64", "i64", "i64")
    a = [-1, -(2**63), 5, -8, 1, -3]
    b = [1, 63, 1, 0, 0, 60]
    expected = expected_ints(lambda x, n: as_unsigned(x, 64) >> n, a, b, bits=64)
    assert torch.equal(run(text, torch.tensor(a), torch.tensor(b)), expected)


def test_unsigned_compare_of_i64_uses_unsigned_order():
    text = scalar_op("arith.cmpi ult, {operands} : i64", "i64", "i1")
    a, b = [-1, 1, -5, 0, 3, -(2**63)], [1, -1, -4, 0, 2, 2**63 - 1]
    result = run(text, torch.tensor(a), torch.tensor(b))
    assert result.tolist() == [as_unsigned(x, 64) < as_unsigned(y, 64) for x, y in zip(a, b)]


def test_i1_arithmetic_is_arithmetic_on_one_bit():
    a = torch.tensor([True, True, False, False, True, False])
    b = torch.tensor([True, False, True, False, True, False])
    add = run(scalar_op("arith.addi {operands} : i1", "i1", "i1"), a, b)
    assert torch.equal(add, a ^ b)
    mul = run(scalar_op("arith.muli {operands} : i1", "i1", "i1"), a, b)
    assert torch.equal(mul, a & b)
    # Signed, true is -1: it is less than false, and the signed max is `and`.
    less = run(scalar_op("arith.cmpi slt, {operands} : i1", "i1", "i1"), a, b)
    assert torch.equal(less, a & ~b)
    maxsi = run(scalar_op("arith.maxsi {operands} : i1", "i1", "i1"), a, b)
    assert torch.equal(maxsi, a & b)


@pytest.mark.parametrize(
    "predicate, function",
    [("eq", int.__eq__), ("ne", int.__ne__), ("slt", int.__lt__), ("sge", int.__ge__),
     ("ult", lambda a, b: as_unsigned(a, 8) < as_unsigned(b, 8)),
     ("uge", lambda a, b: as_unsigned(a, 8) >= as_unsigned(b, 8))],
)  # fmt: skip
def test_cmpi_predicates(predicate, function):
    text = scalar_op(f"arith.cmpi {predicate}, {{operands}} : i8", "i8", "i1")
    a, b = I8_A, [-128, 3, -1, 9, -100, 0]
    result = run(text, torch.tensor(a, dtype=torch.int8), torch.tensor(b, dtype=torch.int8))
    assert result.tolist() == [function(x, y) for x, y in zip(a, b)]


def test_integer_division_by_zero_does_not_stop_the_loop():
    # Bodies run at every point, also where a select discards the quotient.
    text = pointwise(
        [(T("3", "i32"), "i32"), (T("3", "i32"), "i32")],
        T("3", "i32"),
        "    %a = loop.load %x0[d0] : i32\n"
        "    %b = loop.load %x1[d0] : i32\n"
        "    %z = arith.constant 0 : i32\n"
        "    %q = arith.divsi %a, %b : i32\n"
        "    %nz = arith.cmpi ne, %b, %z : i32\n"
        "    %r = arith.select %nz, %q, %z : i32\n"
        "    loop.yield %r : i32",
    )
    a, b = torch.tensor([7, 8, 9], dtype=torch.int32), torch.tensor([2, 0, -4], dtype=torch.int32)
    assert run(text, a, b).tolist() == [3, 0, -2]


# --------------------------------------------------------------------------
# arith on floats
# --------------------------------------------------------------------------

NAN = float("nan")
F_A = [1.0, NAN, -2.0, 3.0, NAN, 0.5]
F_B = [2.0, 1.0, NAN, 3.0, NAN, -0.5]


@pytest.mark.parametrize(
    "name, expected",
    [
        ("maximumf", [2.0, NAN, NAN, 3.0, NAN, 0.5]),
        ("minimumf", [1.0, NAN, NAN, 3.0, NAN, -0.5]),
        ("maxnumf", [2.0, 1.0, -2.0, 3.0, NAN, 0.5]),
        ("minnumf", [1.0, 1.0, -2.0, 3.0, NAN, -0.5]),
    ],
)
def test_float_extremes_propagate_or_ignore_nan(name, expected):
    text = scalar_op(f"arith.{name} {{operands}} : f32", "f32", "f32")
    result = run(text, torch.tensor(F_A), torch.tensor(F_B))
    torch.testing.assert_close(result, torch.tensor(expected), equal_nan=True)


def _cmpf_reference(predicate: str, a: float, b: float) -> bool:
    if predicate in ("false", "true"):
        return predicate == "true"
    unordered = math.isnan(a) or math.isnan(b)
    if predicate == "ord":
        return not unordered
    if predicate == "uno":
        return unordered
    relation = {"eq": a == b, "gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b, "ne": a != b}
    holds = relation[predicate[1:]]
    return (not unordered and holds) if predicate[0] == "o" else (unordered or holds)


CMPF = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
        "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true"]  # fmt: skip


@pytest.mark.parametrize("predicate", CMPF)
def test_cmpf_ordered_and_unordered_predicates(predicate):
    text = scalar_op(f"arith.cmpf {predicate}, {{operands}} : f32", "f32", "i1")
    result = run(text, torch.tensor(F_A), torch.tensor(F_B))
    assert result.tolist() == [_cmpf_reference(predicate, a, b) for a, b in zip(F_A, F_B)]


def test_float_arithmetic_and_select():
    text = pointwise(
        [(T("4"), "f32"), (T("4"), "f32")],
        T("4"),
        "    %a = loop.load %x0[d0] : f32\n"
        "    %b = loop.load %x1[d0] : f32\n"
        "    %s = arith.addf %a, %b : f32\n"
        "    %d = arith.subf %a, %b : f32\n"
        "    %m = arith.mulf %s, %d : f32\n"
        "    %q = arith.divf %m, %b : f32\n"
        "    %n = arith.negf %q : f32\n"
        "    %c = arith.cmpf ogt, %a, %b : f32\n"
        "    %r = arith.select %c, %n, %a : f32\n"
        "    loop.yield %r : f32",
    )
    a, b = torch.randn(4), torch.randn(4)
    expected = torch.where(a > b, -((a + b) * (a - b) / b), a)
    torch.testing.assert_close(run(text, a, b), expected)


# --------------------------------------------------------------------------
# Casts
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op, source, target, values, expected",
    [
        ("arith.sitofp", "i1", "f32", [True, False], [-1.0, 0.0]),
        ("arith.uitofp", "i1", "f32", [True, False], [1.0, 0.0]),
        ("arith.uitofp", "i8", "f32", [-1, 5], [255.0, 5.0]),
        ("arith.sitofp", "i8", "f32", [-1, 5], [-1.0, 5.0]),
        ("arith.extsi", "i8", "i32", [-1, 100], [-1, 100]),
        ("arith.extui", "i8", "i32", [-1, 100], [255, 100]),
        ("arith.extui", "i1", "i32", [True, False], [1, 0]),
        ("arith.extsi", "i1", "i32", [True, False], [-1, 0]),
        ("arith.trunci", "i32", "i8", [300, -129], [44, 127]),
        ("arith.trunci", "i32", "i1", [3, 2], [True, False]),
        ("arith.fptosi", "f32", "i32", [-2.7, 2.7], [-2, 2]),
        ("arith.fptoui", "f32", "i8", [200.5, 3.9], [-56, 3]),
        ("arith.extf", "bf16", "f32", [1.5, -2.25], [1.5, -2.25]),
        ("arith.truncf", "f32", "bf16", [1.00390625, 1.01171875], [1.0, 1.015625]),
        ("arith.truncf", "f64", "f16", [65504.0, 1e-8], [65504.0, 0.0]),
        ("arith.bitcast", "f32", "i32", [1.0, -2.0], [0x3F800000, -(2**31) + 0x40000000]),
        ("arith.bitcast", "i32", "f32", [0x3F800000, 0x40400000], [1.0, 3.0]),
    ],
)  # fmt: skip
def test_casts(op, source, target, values, expected):
    dtypes = {"i1": torch.bool, "i8": torch.int8, "i32": torch.int32, "f32": torch.float32,
              "bf16": torch.bfloat16, "f64": torch.float64, "f16": torch.float16}  # fmt: skip
    text = pointwise(
        [(T("2", source), source)],
        T("2", target),
        f"    %v = loop.load %x0[d0] : {source}\n"
        f"    %c = {op} %v : {source} to {target}\n"
        f"    loop.yield %c : {target}",
    )
    result = run(text, torch.tensor(values, dtype=dtypes[source]))
    assert torch.equal(result, torch.tensor(expected, dtype=dtypes[target]))


def test_index_cast_sign_extends_and_truncates():
    text = pointwise(
        [(T("2", "i8"), "i8")],
        T("2", "i8"),
        "    %v = loop.load %x0[d0] : i8\n"
        "    %i = arith.index_cast %v : i8 to index\n"
        "    %k = arith.constant 256 : index\n"
        "    %s = arith.addi %i, %k : index\n"
        "    %t = arith.index_cast %s : index to i8\n"
        "    loop.yield %t : i8",
    )
    assert run(text, torch.tensor([-3, 7], dtype=torch.int8)).tolist() == [-3, 7]


# --------------------------------------------------------------------------
# math
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op, function",
    [
        ("math.exp", torch.exp), ("math.tanh", torch.tanh), ("math.erf", torch.erf),
        ("math.floor", torch.floor), ("math.absf", torch.abs), ("math.sin", torch.sin),
        ("math.log1p", lambda x: torch.log1p(x.abs())), ("math.rsqrt", lambda x: torch.rsqrt(x.abs())),
    ],
)  # fmt: skip
def test_math_functions(op, function):
    needs_abs = op in ("math.log1p", "math.rsqrt")
    prologue = "    %a = math.absf %v : f32\n" if needs_abs else ""
    operand = "%a" if needs_abs else "%v"
    text = pointwise(
        [(T("5"), "f32")],
        T("5"),
        f"    %v = loop.load %x0[d0] : f32\n{prologue}"
        f"    %r = {op} {operand} : f32\n    loop.yield %r : f32",
    )
    x = torch.randn(5)
    torch.testing.assert_close(run(text, x), function(x))


def test_round_is_half_away_and_roundeven_half_to_even():
    x = torch.tensor([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997])
    round_text = scalar_op("math.round {operands} : f32", "f32", "f32", count=1)
    even_text = scalar_op("math.roundeven {operands} : f32", "f32", "f32", count=1)
    assert run(round_text, x).tolist() == [1.0, 2.0, 3.0, -1.0, -3.0, 0.0]
    assert run(even_text, x).tolist() == [0.0, 2.0, 2.0, -0.0, -2.0, 0.0]


@pytest.mark.parametrize(
    "op, function",
    [("math.ctpop", lambda v: bin(as_unsigned(v, 8)).count("1")),
     ("math.ctlz", lambda v: 8 - as_unsigned(v, 8).bit_length()),
     ("math.cttz", lambda v: (as_unsigned(v, 8) & -as_unsigned(v, 8)).bit_length() - 1 if v else 8),
     ("math.absi", abs)],
)  # fmt: skip
def test_integer_math(op, function):
    values = [0, 1, -1, 12, -128, 64]
    text = scalar_op(f"{op} {{operands}} : i8", "i8", "i8", count=1)
    result = run(text, torch.tensor(values, dtype=torch.int8))
    assert torch.equal(result, expected_ints(function, values, bits=8))


def test_fpowi_and_copysign():
    text = pointwise(
        [(T("3"), "f32"), (T("3", "i32"), "i32")],
        T("3"),
        "    %x = loop.load %x0[d0] : f32\n"
        "    %n = loop.load %x1[d0] : i32\n"
        "    %p = math.fpowi %x, %n : f32, i32\n"
        "    %m = arith.constant -1.0 : f32\n"
        "    %c = math.copysign %p, %m : f32\n"
        "    loop.yield %c : f32",
    )
    x, n = torch.tensor([2.0, -3.0, 0.5]), torch.tensor([3, 2, -1], dtype=torch.int32)
    assert run(text, x, n).tolist() == [-8.0, -9.0, -2.0]


def test_loops_read_buffers_and_reduce_into_empty_results():
    text = """
    func.func @f(%x: !buffer.buffer<[2, 3], f32, strides [1, 2]>) -> (!ptensor.tensor<[3], f32>, !ptensor.tensor<[0], f32>) {
      %0 = loop.pointwise ins(%a = %x : !buffer.buffer<[2, 3], f32, strides [1, 2]>) -> !ptensor.tensor<[3], f32> {
        %v = loop.load %a[1, d0] : f32
        loop.yield %v : f32
      }
      %1 = loop.reduce sum ins(%a = %x : !buffer.buffer<[2, 3], f32, strides [1, 2]>) over [2] -> !ptensor.tensor<[0], f32> {
        %v = loop.load %a[r0, 0] : f32
        loop.yield %v : f32
      }
      func.return %0, %1 : !ptensor.tensor<[3], f32>, !ptensor.tensor<[0], f32>
    }"""
    x = torch.arange(6.0).reshape(2, 3)
    row, empty = run_module_function(parse(text), [x])
    assert row.tolist() == [3.0, 4.0, 5.0] and empty.shape == (0,)


def test_ptensor_modules_run_as_with_the_ptensor_interpreter():
    from permalloy.interpreter import run_function

    text = (
        f"func.func @f(%x: {T('s0, 3')}) -> {T('3, s0')} {{\n"
        f"  %t = ptensor.permute %x [1, 0] : {T('s0, 3')} -> {T('3, s0')}\n"
        f"  %r = ptensor.unary exp %t : {T('3, s0')} -> {T('3, s0')}\n"
        f"  func.return %r : {T('3, s0')}\n}}"
    )
    module, x = parse(text), torch.randn(4, 3)
    assert module_level(module) == "ptensor"
    (expected,) = run_function(module, [x])
    (actual,) = run_module_function(module, [x])
    assert torch.equal(actual, expected)
