"""The LLVM target against torch: every `arith` op, casts, bools, f16/bf16."""

from __future__ import annotations

import pytest
import torch

from permalloy.targets.llvm import LLVMTarget
from permalloy.targets.llvm.testing import parse_kernel, pointwise_kernel, run

SHAPE = (5, 37)  # a row of 37: one full vector chunk and a masked tail
TORCH = {"f32": torch.float32, "f64": torch.float64, "i8": torch.int8, "i16": torch.int16,
         "i32": torch.int32, "i64": torch.int64, "i1": torch.bool, "f16": torch.float16,
         "bf16": torch.bfloat16}  # fmt: skip


@pytest.fixture(scope="module")
def target() -> LLVMTarget:
    return LLVMTarget()


def compute(target, inputs, body, result_type, element_types=None):
    """Run a pointwise kernel over SHAPE whose body computes `%y` from `%a<k>`."""
    types = element_types or [_ir_type(t.dtype) for t in inputs]
    kernel = parse_kernel(pointwise_kernel(str(list(SHAPE)), types, result_type, body))
    out = torch.empty(SHAPE, dtype=TORCH[result_type])
    run(target, kernel, inputs, [out])
    return out


def _ir_type(dtype: torch.dtype) -> str:
    return {v: k for k, v in TORCH.items()}[dtype]


def floats(dtype=torch.float32, special=False) -> torch.Tensor:
    x = torch.randn(SHAPE, dtype=torch.float64) * 3
    if special:
        x.view(-1)[:6] = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0])
    return x.to(dtype)


def ints(dtype, low=-100, high=100, nonzero=False) -> torch.Tensor:
    x = torch.randint(low, high, SHAPE, dtype=torch.int64)
    if nonzero:
        x[x == 0] = 7
    return x.to(dtype)


FLOAT_BINARY = {
    "addf": torch.add,
    "subf": torch.sub,
    "mulf": torch.mul,
    "divf": torch.div,
    "maximumf": torch.maximum,
    "minimumf": torch.minimum,
}


@pytest.mark.parametrize("element", ["f32", "f64"])
@pytest.mark.parametrize("op", sorted(FLOAT_BINARY))
def test_float_binary(target, op, element):
    a, b = floats(TORCH[element], special=True), floats(TORCH[element])
    b.view(-1)[6] = float("nan")
    out = compute(target, [a, b], f"    %y = arith.{op} %a0, %a1 : {element}", element)
    torch.testing.assert_close(out, FLOAT_BINARY[op](a, b), equal_nan=True, rtol=0, atol=0)


def test_negf(target):
    a = floats(special=True)
    out = compute(target, [a], "    %y = arith.negf %a0 : f32", "f32")
    assert torch.equal(out.view(torch.int32), (-a).view(torch.int32))


INT_BINARY = {
    "addi": torch.add,
    "subi": torch.sub,
    "muli": torch.mul,
    "divsi": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "remsi": torch.fmod,
    "floordivsi": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "ceildivsi": lambda a, b: -torch.div(-a, b, rounding_mode="floor"),
    "maxsi": torch.maximum,
    "minsi": torch.minimum,
    "andi": torch.bitwise_and,
    "ori": torch.bitwise_or,
    "xori": torch.bitwise_xor,
}


@pytest.mark.parametrize("element", ["i32", "i64"])
@pytest.mark.parametrize("op", sorted(INT_BINARY))
def test_int_binary(target, op, element):
    a, b = ints(TORCH[element]), ints(TORCH[element], nonzero=True)
    out = compute(target, [a, b], f"    %y = arith.{op} %a0, %a1 : {element}", element)
    assert torch.equal(out, INT_BINARY[op](a, b))


@pytest.mark.parametrize("element", ["i8", "i16"])
def test_narrow_int_arithmetic_wraps(target, element):
    dtype = TORCH[element]
    a, b = ints(dtype, -120, 120), ints(dtype, -120, 120, nonzero=True)
    body = f"""
    %s = arith.muli %a0, %a1 : {element}
    %q = arith.divsi %a0, %a1 : {element}
    %y = arith.addi %s, %q : {element}"""
    out = compute(target, [a, b], body, element)
    assert torch.equal(out, a * b + torch.div(a, b, rounding_mode="trunc"))


UNSIGNED = {
    "divui": lambda a, b: a // b,
    "remui": lambda a, b: a % b,
    "maxui": torch.maximum,
    "minui": torch.minimum,
}


@pytest.mark.parametrize("op", sorted(UNSIGNED))
def test_unsigned_ops_on_i32(target, op):
    a, b = ints(torch.int32, -50, 50), ints(torch.int32, 1, 50)
    out = compute(target, [a, b], f"    %y = arith.{op} %a0, %a1 : i32", "i32")
    expected = UNSIGNED[op](a.to(torch.int64) & 0xFFFFFFFF, b.to(torch.int64))
    assert torch.equal(out.to(torch.int64) & 0xFFFFFFFF, expected & 0xFFFFFFFF)


def test_shifts(target):
    a, b = ints(torch.int32, -1000, 1000), ints(torch.int32, 0, 31)
    body = """
    %l = arith.shli %a0, %a1 : i32
    %r = arith.shrsi %a0, %a1 : i32
    %u = arith.shrui %a0, %a1 : i32
    %x = arith.xori %l, %r : i32
    %y = arith.addi %x, %u : i32"""
    out = compute(target, [a, b], body, "i32")
    unsigned = ((a.to(torch.int64) & 0xFFFFFFFF) >> b.to(torch.int64)).to(torch.int32)
    assert torch.equal(out, ((a << b) ^ (a >> b)) + unsigned)


def test_integer_division_by_zero_does_not_trap_and_raises_as_torch(target):
    a, b = ints(torch.int32), torch.zeros(SHAPE, dtype=torch.int32)
    body = """
    %q = arith.divsi %a0, %a1 : i32
    %r = arith.remui %a0, %a1 : i32
    %y = arith.addi %q, %r : i32"""
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):  # not SIGFPE
        compute(target, [a, b], body, "i32")


FCMP = "false oeq ogt oge olt ole one ord ueq ugt uge ult ule une uno true".split()


def _fcmp_reference(predicate: str, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    unordered = a.isnan() | b.isnan()
    if predicate in ("false", "true"):
        return torch.full(a.shape, predicate == "true")
    if predicate in ("ord", "uno"):
        return ~unordered if predicate == "ord" else unordered
    compare = {"eq": torch.eq, "gt": torch.gt, "ge": torch.ge, "lt": torch.lt,
               "le": torch.le, "ne": torch.ne}[predicate[1:]]  # fmt: skip
    result = compare(a, b) & ~unordered
    return result | unordered if predicate[0] == "u" else result


@pytest.mark.parametrize("predicate", FCMP)
def test_cmpf(target, predicate):
    a, b = floats(special=True), floats(special=True)
    b.view(-1)[6:16] = a.view(-1)[6:16]  # some equal pairs
    out = compute(target, [a, b], f"    %y = arith.cmpf {predicate}, %a0, %a1 : f32", "i1")
    assert torch.equal(out, _fcmp_reference(predicate, a, b))


CMPI = {"eq": torch.eq, "ne": torch.ne, "slt": torch.lt, "sle": torch.le, "sgt": torch.gt,
        "sge": torch.ge, "ult": torch.lt, "ule": torch.le, "ugt": torch.gt, "uge": torch.ge}  # fmt: skip


@pytest.mark.parametrize("predicate", sorted(CMPI))
def test_cmpi(target, predicate):
    a, b = ints(torch.int32, -5, 5), ints(torch.int32, -5, 5)
    out = compute(target, [a, b], f"    %y = arith.cmpi {predicate}, %a0, %a1 : i32", "i1")
    if predicate[0] == "u":
        a, b = a.to(torch.int64) & 0xFFFFFFFF, b.to(torch.int64) & 0xFFFFFFFF
    assert torch.equal(out, CMPI[predicate](a, b))


def test_select_and_bool_logic(target):
    a, b = floats(), floats()
    c = torch.rand(SHAPE) > 0.5
    body = """
    %p = arith.cmpf olt, %a0, %a1 : f32
    %q = arith.xori %p, %a2 : i1
    %r = arith.ori %q, %a2 : i1
    %s = arith.andi %r, %p : i1
    %y = arith.select %s, %a0, %a1 : f32"""
    out = compute(target, [a, b, c], body, "f32")
    p = a < b
    assert torch.equal(out, torch.where(((p ^ c) | c) & p, a, b))


def test_bool_stored_as_bytes(target):
    a = torch.rand(SHAPE) > 0.5
    out = compute(target, [a], "    %t = arith.constant true\n    %y = arith.xori %a0, %t : i1", "i1")
    assert torch.equal(out, ~a)
    assert set(out.view(torch.uint8).unique().tolist()) <= {0, 1}


CASTS = [
    ("f32", "f64", "extf", lambda a: a.double()),
    ("f64", "f32", "truncf", lambda a: a.float()),
    ("f16", "f32", "extf", lambda a: a.float()),
    ("f32", "f16", "truncf", lambda a: a.half()),
    ("bf16", "f32", "extf", lambda a: a.float()),
    ("f32", "bf16", "truncf", lambda a: a.bfloat16()),
    ("f64", "bf16", "truncf", lambda a: a.float().bfloat16()),
    ("i32", "f32", "sitofp", lambda a: a.float()),
    ("i64", "f64", "sitofp", lambda a: a.double()),
    ("i8", "f32", "uitofp", lambda a: (a.to(torch.int64) & 0xFF).float()),
    ("f32", "i32", "fptosi", lambda a: a.to(torch.int32)),
    ("f64", "i64", "fptosi", lambda a: a.to(torch.int64)),
    ("f32", "i8", "fptoui", lambda a: a.abs().to(torch.int32).to(torch.uint8).view(torch.int8)),
    ("i8", "i32", "extsi", lambda a: a.to(torch.int32)),
    ("i8", "i64", "extui", lambda a: a.to(torch.int64) & 0xFF),
    ("i1", "i32", "extui", lambda a: a.to(torch.int32)),
    ("i64", "i8", "trunci", lambda a: a.to(torch.int8)),
    ("i32", "i16", "trunci", lambda a: a.to(torch.int16)),
    ("f32", "i32", "bitcast", lambda a: a.view(torch.int32)),
    ("i64", "f64", "bitcast", lambda a: a.view(torch.float64).nan_to_num(1.5)),
]


@pytest.mark.parametrize("source,result,op,reference", CASTS, ids=[f"{c[2]}_{c[0]}_{c[1]}" for c in CASTS])
def test_casts(target, source, result, op, reference):
    dtype = TORCH[source]
    if dtype.is_floating_point:
        a = floats(dtype) * (30 if op.startswith("fpto") else 1)
        if op == "fptoui":
            a = a.abs().clamp(max=250)
    elif dtype == torch.bool:
        a = torch.rand(SHAPE) > 0.5
    else:
        a = ints(dtype, -100, 100)
    out = compute(target, [a], f"    %y = arith.{op} %a0 : {source} to {result}", result)
    assert torch.equal(out.nan_to_num(1.5) if out.is_floating_point() else out, reference(a))


def test_index_cast_and_unsigned_bytes(target):
    a = torch.randint(0, 256, SHAPE, dtype=torch.uint8)
    body = """
    %w = arith.extui %a0 : i8 to i32
    %i = arith.index_cast %w : i32 to index
    %c = arith.constant 3 : index
    %m = arith.muli %i, %c : index
    %y = arith.index_cast %m : index to i64"""
    out = compute(target, [a], body, "i64", ["ui8"])
    assert torch.equal(out, a.to(torch.int64) * 3)


@pytest.mark.parametrize("element", ["f16", "bf16"])
def test_half_floats_compute_in_f32(target, element):
    a, b = floats(TORCH[element]), floats(TORCH[element])
    body = f"""
    %x = arith.extf %a0 : {element} to f32
    %z = arith.extf %a1 : {element} to f32
    %p = arith.mulf %x, %z : f32
    %y = arith.truncf %p : f32 to {element}"""
    out = compute(target, [a, b], body, element)
    assert torch.equal(out, (a.float() * b.float()).to(TORCH[element]))


@pytest.mark.parametrize("element", ["f16", "bf16"])
def test_arithmetic_directly_on_half_floats(target, element):
    a, b = floats(TORCH[element]), floats(TORCH[element])
    body = f"""
    %s = arith.addf %a0, %a1 : {element}
    %c = arith.cmpf ogt, %a0, %a1 : {element}
    %y = arith.select %c, %s, %a1 : {element}"""
    out = compute(target, [a, b], body, element)
    assert torch.equal(out, torch.where(a > b, a + b, b))
