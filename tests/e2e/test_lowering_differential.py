"""
The conversions preserve results: each function runs at three levels on the
same random non-zero inputs (the ptensor interpreter; the loop interpreter after
`convert-ptensor-to-loop`; the buffer interpreter after `convert-loop-to-buffer`),
and the results must agree: floats to a relative 1e-5, integers and bools
exactly. Every lowered module is also printed and parsed back before it runs.

The functions are small ptensor programs written as IR, one per op kind, dtype
and view chain, and the graphs the importer makes of the model zoo.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import pytest
import sympy
import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from permalloy.dialects import make_context
from permalloy.dialects.ptensor import TensorType
from permalloy.dialects.sym import symbol
from permalloy.dtypes import torch_dtype
from permalloy.interpreter import run_function
from permalloy.interpreter.levels import module_level, run_module_function
from permalloy.lowering.ptensor_to_loop_ops import LOWERINGS
from permalloy.passes import build_pipeline

Tensor = torch.Tensor
Inputs = Callable[[Mapping[str, int]], list]

# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------


def T(shape: str, dtype: str = "f32") -> str:
    """A ptensor type: `T("s0, 4")` is `!ptensor.tensor<[s0, 4], f32>`."""
    return f"!ptensor.tensor<[{shape}], {dtype}>"


@dataclass(frozen=True)
class Case:
    """A function as IR text, the inputs to run it on, and the values of its
    size symbols to run it at."""

    name: str
    ir: str
    inputs: Inputs | None = None
    sizes: tuple[dict[str, int], ...] = ({},)
    domain: str = "any"
    """Where random float inputs lie: any, positive, unit (|x| < 1), above_one."""
    known_bug: str | None = None
    """Why a conversion gets this case wrong today (the test is a strict xfail)."""


def op_case(
    name: str,
    op: str,
    operand_types: Sequence[str],
    result_type: str,
    **options,
) -> Case:
    """A function `@f(%a0, %a1, ...)` returning `%r = <op>`."""
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(operand_types))
    ir = (
        f"func.func @f({params}) -> {result_type} {{\n"
        f"  %r = {op}\n"
        f"  func.return %r : {result_type}\n"
        "}"
    )
    return Case(name, ir, **options)


def body_case(name: str, params: str, result_type: str, body: str, **options) -> Case:
    """A function with a body of several ops ending in `func.return %r`."""
    ir = (
        f"func.func @f({params}) -> {result_type} {{\n{body}\n"
        f"  func.return %r : {result_type}\n}}"
    )
    return Case(name, ir, **options)


UNARY_FLOAT = [
    "neg", "abs", "exp", "exp2", "expm1", "sin", "cos", "tan", "atan", "sinh",
    "cosh", "tanh", "asinh", "erf", "erfc", "sigmoid", "reciprocal", "floor",
    "ceil", "round", "trunc", "sign",
]  # fmt: skip
UNARY_DOMAIN = {
    "log": "positive", "log2": "positive", "log10": "positive", "log1p": "positive",
    "sqrt": "positive", "rsqrt": "positive", "asin": "unit", "acos": "unit",
    "atanh": "unit", "acosh": "above_one",
}  # fmt: skip


def unary_cases() -> list[Case]:
    cases = []
    x = T("3, 5")
    for kind in UNARY_FLOAT:
        cases.append(op_case(f"unary_{kind}_f32", f"ptensor.unary {kind} %a0 : {x} -> {x}", [x], x))
    for kind, domain in UNARY_DOMAIN.items():
        cases.append(
            op_case(f"unary_{kind}_f32", f"ptensor.unary {kind} %a0 : {x} -> {x}", [x], x, domain=domain)
        )
    b = T("3, 5", "i1")
    for kind in ("isnan", "isinf", "logical_not"):
        cases.append(op_case(f"unary_{kind}_f32", f"ptensor.unary {kind} %a0 : {x} -> {b}", [x], b))
    for dtype in ("i32", "i8", "ui8", "i64"):
        t = T("3, 5", dtype)
        for kind in ("neg", "abs", "sign", "bitwise_not", "floor", "trunc"):
            cases.append(op_case(f"unary_{kind}_{dtype}", f"ptensor.unary {kind} %a0 : {t} -> {t}", [t], t))
        cases.append(op_case(f"unary_logical_not_{dtype}", f"ptensor.unary logical_not %a0 : {t} -> {b}", [t], b))
    for kind in ("logical_not", "bitwise_not", "sign"):
        cases.append(op_case(f"unary_{kind}_i1", f"ptensor.unary {kind} %a0 : {b} -> {b}", [b], b))
    for dtype in ("bf16", "f16", "f64"):
        t = T("3, 5", dtype)
        for kind in ("exp", "neg", "sigmoid", "round", "sign"):
            cases.append(op_case(f"unary_{kind}_{dtype}", f"ptensor.unary {kind} %a0 : {t} -> {t}", [t], t))
    return cases


BINARY_FLOAT = [
    "add", "sub", "mul", "div", "floordiv", "remainder", "fmod", "maximum",
    "minimum", "atan2", "copysign",
]  # fmt: skip
BINARY_INT = [
    "add", "sub", "mul", "div", "floordiv", "remainder", "fmod", "maximum",
    "minimum", "bitwise_and", "bitwise_or", "bitwise_xor",
]  # fmt: skip
BINARY_BOOL = [
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
    "bitwise_xor", "add", "mul", "maximum", "minimum",
]  # fmt: skip
PREDICATES = ["eq", "ne", "lt", "le", "gt", "ge"]


def _shift_inputs(dtype: torch.dtype) -> Inputs:
    def make(sizes: Mapping[str, int]) -> list:
        low = 1 if dtype == torch.uint8 else -100
        values = torch.randint(low, 100, (3, 5), dtype=dtype)
        values = torch.where(values == 0, torch.ones_like(values), values)
        return [values, torch.randint(1, 6, (3, 5), dtype=dtype)]

    return make


def binary_cases() -> list[Case]:
    cases = []
    x, row = T("3, 5"), T("5")
    for kind in BINARY_FLOAT:
        cases.append(
            op_case(f"binary_{kind}_f32_broadcast", f"ptensor.binary {kind} %a0, %a1 : {x}, {row} -> {x}", [x, row], x)
        )
    cases.append(
        op_case("binary_pow_f32", f"ptensor.binary pow %a0, %a1 : {x}, {x} -> {x}", [x, x], x, domain="positive")
    )
    for dtype in ("i32", "i8", "ui8", "i64"):
        t = T("3, 5", dtype)
        for kind in BINARY_INT:
            cases.append(op_case(f"binary_{kind}_{dtype}", f"ptensor.binary {kind} %a0, %a1 : {t}, {t} -> {t}", [t, t], t))
        for kind in ("shift_left", "shift_right"):
            inputs = _shift_inputs(torch_dtype_of(dtype))
            cases.append(
                op_case(f"binary_{kind}_{dtype}", f"ptensor.binary {kind} %a0, %a1 : {t}, {t} -> {t}", [t, t], t, inputs=inputs)
            )
    b = T("3, 5", "i1")
    for kind in BINARY_BOOL:
        cases.append(op_case(f"binary_{kind}_i1", f"ptensor.binary {kind} %a0, %a1 : {b}, {b} -> {b}", [b, b], b))
    for dtype in ("bf16", "f16"):
        t = T("3, 5", dtype)
        for kind in ("add", "mul", "div", "maximum", "remainder"):
            cases.append(op_case(f"binary_{kind}_{dtype}", f"ptensor.binary {kind} %a0, %a1 : {t}, {t} -> {t}", [t, t], t))
    for dtype in ("f32", "i32", "ui8", "i1", "bf16"):
        t, u = T("3, 5", dtype), T("3, 1", dtype)
        for predicate in PREDICATES:
            cases.append(
                op_case(
                    f"compare_{predicate}_{dtype}",
                    f"ptensor.compare {predicate} %a0, %a1 : {t}, {u} -> {b}",
                    [t, u],
                    b,
                )
            )
    return cases


def torch_dtype_of(name: str) -> torch.dtype:
    return {"i32": torch.int32, "i8": torch.int8, "ui8": torch.uint8, "i64": torch.int64}[name]


CASTS = [
    ("f32", "bf16"), ("bf16", "f32"), ("f32", "f16"), ("f16", "f64"), ("f32", "i32"),
    ("i32", "f32"), ("f32", "i1"), ("i1", "f32"), ("i1", "i32"), ("i32", "i1"),
    ("i32", "i8"), ("i8", "i64"), ("ui8", "i32"), ("ui8", "f32"), ("i32", "ui8"),
    ("f64", "f32"), ("bf16", "i32"), ("i64", "bf16"), ("f32", "ui8"), ("i8", "ui8"),
    ("ui8", "i8"), ("bf16", "f16"), ("i1", "bf16"), ("f64", "i16"),
]  # fmt: skip


def cast_cases() -> list[Case]:
    cases = []
    for source, target in CASTS:
        a, r = T("4, 3", source), T("4, 3", target)
        cases.append(op_case(f"cast_{source}_to_{target}", f"ptensor.cast %a0 : {a} -> {r}", [a], r))
    return cases


def broadcast_cases() -> list[Case]:
    col, row, out = T("4, 1"), T("1, 5"), T("4, 5")
    scalar = T("")
    cond = T("4, 1", "i1")
    return [
        op_case("broadcast_both", f"ptensor.binary add %a0, %a1 : {col}, {row} -> {out}", [col, row], out),
        op_case("broadcast_scalar", f"ptensor.binary mul %a0, %a1 : {scalar}, {out} -> {out}", [scalar, out], out),
        op_case(
            "broadcast_rank",
            f"ptensor.binary sub %a0, %a1 : {T('5')}, {T('2, 4, 5')} -> {T('2, 4, 5')}",
            [T("5"), T("2, 4, 5")],
            T("2, 4, 5"),
        ),
        op_case(
            "where_broadcast",
            f"ptensor.where %a0, %a1, %a2 : {cond}, {row}, {scalar} -> {out}",
            [cond, row, scalar],
            out,
        ),
        op_case(
            "where_int",
            f"ptensor.where %a0, %a1, %a2 : {T('4, 5', 'i1')}, {T('4, 5', 'i32')}, {T('5', 'i32')} -> {T('4, 5', 'i32')}",
            [T("4, 5", "i1"), T("4, 5", "i32"), T("5", "i32")],
            T("4, 5", "i32"),
        ),
    ]


def reduce_cases() -> list[Case]:
    cases = []
    x = T("3, 4, 5")
    shapes = {
        ((1,), False): "3, 5", ((1,), True): "3, 1, 5", ((0, 2), False): "4",
        ((0, 2), True): "1, 4, 1", ((0, 1, 2), False): "", ((2,), False): "3, 4",
    }  # fmt: skip
    for kind in ("sum", "prod", "max", "min", "any", "all", "argmax", "argmin"):
        for (dims, keepdim), shape in shapes.items():
            if kind.startswith("arg") and len(dims) > 1:
                continue
            dtype = {"any": "i1", "all": "i1", "argmax": "i64", "argmin": "i64"}.get(kind, "f32")
            r = T(shape, dtype)
            text = ", ".join(map(str, dims))
            keep = " keepdim" if keepdim else ""
            name = f"reduce_{kind}_dims{''.join(map(str, dims))}{'_keep' if keepdim else ''}"
            cases.append(op_case(name, f"ptensor.reduce {kind} %a0 dims [{text}]{keep} : {x} -> {r}", [x], r))
    for kind, source, result in [
        ("sum", "i32", "i32"), ("sum", "bf16", "bf16"), ("sum", "i1", "i1"),
        ("prod", "i8", "i8"), ("max", "i32", "i32"), ("min", "ui8", "ui8"),
        ("max", "ui8", "ui8"), ("argmax", "i32", "i64"), ("argmin", "i8", "i64"),
        ("any", "i32", "i1"), ("all", "i1", "i1"), ("max", "i1", "i1"),
        ("argmax", "bf16", "i64"), ("sum", "f64", "f64"), ("prod", "bf16", "bf16"),
    ]:  # fmt: skip
        a, r = T("3, 6", source), T("3", result)
        cases.append(op_case(f"reduce_{kind}_{source}", f"ptensor.reduce {kind} %a0 dims [1] : {a} -> {r}", [a], r))
    a, r = T("3, 6", "ui8"), T("3", "i64")
    for kind in ("argmax", "argmin"):
        cases.append(
            op_case(
                f"reduce_{kind}_ui8", f"ptensor.reduce {kind} %a0 dims [1] : {a} -> {r}", [a], r,
            )
        )
    ties = lambda sizes: [torch.randint(0, 3, (3, 6), dtype=torch.int32)]  # noqa: E731
    a, r = T("3, 6", "i32"), T("3", "i64")
    for kind in ("argmax", "argmin"):
        cases.append(op_case(f"reduce_{kind}_ties", f"ptensor.reduce {kind} %a0 dims [1] : {a} -> {r}", [a], r, inputs=ties))
    with_nan = lambda sizes: [torch.tensor([[1.0, float("nan"), 3.0], [2.0, 5.0, -1.0]])]  # noqa: E731
    a = T("2, 3")
    for kind, dtype in (("argmax", "i64"), ("argmin", "i64"), ("max", "f32"), ("min", "f32")):
        r = T("2", dtype)
        cases.append(op_case(f"reduce_{kind}_nan", f"ptensor.reduce {kind} %a0 dims [1] : {a} -> {r}", [a], r, inputs=with_nan))
    return cases


def scan_cases() -> list[Case]:
    cases = []
    x = T("3, 4, 5")
    for kind in ("sum", "prod", "logsumexp", "max", "min", "argmax", "argmin"):
        r = T("3, 4, 5", "i64" if kind.startswith("arg") else "f32")
        for dim in (0, 1, 2):
            cases.append(op_case(f"scan_{kind}_dim{dim}", f"ptensor.scan {kind} %a0 dim {dim} : {x} -> {r}", [x], r))
    for kind, source, result in [
        ("sum", "i64", "i64"), ("sum", "bf16", "bf16"), ("prod", "i32", "i32"), ("prod", "f64", "f64"),
        ("logsumexp", "bf16", "bf16"), ("max", "ui8", "ui8"), ("min", "i8", "i8"), ("max", "i1", "i1"),
        ("min", "i1", "i1"), ("argmax", "i1", "i64"), ("argmin", "ui8", "i64"), ("argmax", "bf16", "i64"),
    ]:  # fmt: skip
        a, r = T("3, 6", source), T("3, 6", result)
        cases.append(op_case(f"scan_{kind}_{source}", f"ptensor.scan {kind} %a0 dim 1 : {a} -> {r}", [a], r))
    ties = lambda sizes: [torch.randint(0, 3, (3, 6), dtype=torch.int32)]  # noqa: E731
    a, r = T("3, 6", "i32"), T("3, 6", "i64")
    for kind in ("argmax", "argmin"):
        cases.append(op_case(f"scan_{kind}_ties", f"ptensor.scan {kind} %a0 dim 1 : {a} -> {r}", [a], r, inputs=ties))
    special = lambda sizes: [torch.tensor([[1.0, float("nan"), 3.0, float("nan"), 0.5], [float("-inf"), float("-inf"), 2.0, float("inf"), float("inf")]])]  # noqa: E731
    a = T("2, 5")
    for kind in ("sum", "logsumexp", "max", "min", "argmax", "argmin"):
        r = T("2, 5", "i64" if kind.startswith("arg") else "f32")
        cases.append(op_case(f"scan_{kind}_special_values", f"ptensor.scan {kind} %a0 dim 1 : {a} -> {r}", [a], r, inputs=special))
    v = "ptensor"
    cases.append(
        body_case(
            "scan_of_a_permute", f"%x: {T('4, 6')}", T("6, 4"),
            f"  %t = {v}.permute %x [1, 0] : {T('4, 6')} -> {T('6, 4')}\n"
            f"  %r = {v}.scan sum %t dim 0 : {T('6, 4')} -> {T('6, 4')}",
        )
    )
    cases.append(
        op_case(
            "scan_symbolic", f"{v}.scan max %a0 dim 1 : {T('s0, s1')} -> {T('s0, s1')}", [T("s0, s1")], T("s0, s1"),
            sizes=({"s0": 2, "s1": 5}, {"s0": 3, "s1": 1}, {"s0": 1, "s1": 300}),
        )
    )
    return cases


def sort_cases() -> list[Case]:
    """Sorts (their positions and gathered values), topk, and a scatter of a
    sort's positions, as a sort's backward makes it."""
    cases = []
    v = "ptensor"
    x = T("3, 4, 5")
    for dim in (0, 1, 2):
        for order in ("", " descending"):
            name = f"sort_dim{dim}{order.replace(' ', '_')}"
            sort = f"{v}.sort %x dim {dim}{order} stable : {x} -> {x}, {T('3, 4, 5', 'i64')}"
            cases.append(body_case(name, f"%x: {x}", T("3, 4, 5", "i64"), f"  %s, %r = {sort}"))
            values = f"  %s, %p = {sort}\n  %r = {v}.unary exp %s : {x} -> {x}"
            cases.append(body_case(name + "_values_read", f"%x: {x}", x, values))
    ties = {
        "i32": lambda sizes: [torch.randint(-2, 3, (3, 40), dtype=torch.int32)],
        "ui8": lambda sizes: [torch.randint(0, 256, (3, 40), dtype=torch.uint8)],
        "i1": lambda sizes: [torch.rand(3, 40) < 0.5],
        "bf16": lambda sizes: [(torch.randint(-3, 4, (3, 40)) / 2).to(torch.bfloat16)],
        "f64": lambda sizes: [torch.randint(-3, 4, (3, 40)).double() / 2],
        "i64": lambda sizes: [torch.randint(-(2**40), 2**40, (3, 40))],
    }
    for dtype, inputs in ties.items():
        a, p = T("3, 40", dtype), T("3, 40", "i64")
        for order in ("", " descending"):
            op = f"{v}.sort %a0 dim 1{order} stable : {a} -> {a}, {p}"
            name = f"sort_ties_{dtype}{order.replace(' ', '_')}"
            cases.append(body_case(name, f"%a0: {a}", a, f"  %r, %i = {op}", inputs=inputs))
            cases.append(body_case(name + "_positions", f"%a0: {a}", p, f"  %s, %r = {op}", inputs=inputs))
    special = lambda sizes: [torch.tensor([[1.0, float("nan"), -0.0, float("-inf"), 0.0, float("inf"), float("nan"), 1.0]])]  # noqa: E731
    a, p = T("1, 8"), T("1, 8", "i64")
    for order in ("", " descending"):
        op = f"{v}.sort %a0 dim 1{order} stable : {a} -> {a}, {p}"
        cases.append(body_case(f"sort_special_values{order.replace(' ', '_')}", f"%a0: {a}", p, f"  %s, %r = {op}", inputs=special))
    a = T("4, 9")
    for largest in ("", " largest"):
        cases.append(
            body_case(
                f"topk{largest.replace(' ', '_') or '_smallest'}", f"%a0: {a}", T("4, 3"),
                f"  %r, %i = {v}.topk %a0 k 3 dim 1{largest} sorted : {a} -> {T('4, 3')}, {T('4, 3', 'i64')}",
            )
        )
    cases.append(
        body_case(
            "sort_of_a_permute_and_rows_of_one", f"%x: {T('4, 6')}, %y: {T('5, 1')}", T("6, 4", "i64"),
            f"  %t = {v}.permute %x [1, 0] : {T('4, 6')} -> {T('6, 4')}\n"
            f"  %s, %r = {v}.sort %t dim 0 : {T('6, 4')} -> {T('6, 4')}, {T('6, 4', 'i64')}\n"
            f"  %w, %one = {v}.sort %y dim 1 : {T('5, 1')} -> {T('5, 1')}, {T('5, 1', 'i64')}",
        )
    )
    cases.append(
        body_case(
            "scatter_at_sorted_positions", f"%x: {T('3, 7')}, %g: {T('3, 7')}", T("3, 7"),
            f"  %s, %i = {v}.sort %x dim 1 : {T('3, 7')} -> {T('3, 7')}, {T('3, 7', 'i64')}\n"
            f"  %z = {v}.full 0.0 : {T('')}\n"
            f"  %zeros = {v}.expand %z : {T('')} -> {T('3, 7')}\n"
            f"  %r = {v}.scatter %zeros, %i, %g dim 1 : {T('3, 7')}, {T('3, 7', 'i64')}, {T('3, 7')} -> {T('3, 7')}",
        )
    )
    return cases


def view_cases() -> list[Case]:
    v = "ptensor"
    return [
        body_case(
            "permute_then_exp", f"%x: {T('4, 6')}", T("6, 4"),
            f"  %t = {v}.permute %x [1, 0] : {T('4, 6')} -> {T('6, 4')}\n"
            f"  %r = {v}.unary exp %t : {T('6, 4')} -> {T('6, 4')}",
        ),
        body_case(
            "split_heads", f"%x: {T('2, 3, 8')}", T("2, 4, 3, 2"),
            f"  %h = {v}.reshape %x : {T('2, 3, 8')} -> {T('2, 3, 4, 2')}\n"
            f"  %p = {v}.permute %h [0, 2, 1, 3] : {T('2, 3, 4, 2')} -> {T('2, 4, 3, 2')}\n"
            f"  %r = {v}.unary neg %p : {T('2, 4, 3, 2')} -> {T('2, 4, 3, 2')}",
        ),
        body_case(
            "merge_heads", f"%x: {T('2, 4, 3, 2')}", T("2, 3, 8"),
            f"  %p = {v}.permute %x [0, 2, 1, 3] : {T('2, 4, 3, 2')} -> {T('2, 3, 4, 2')}\n"
            f"  %h = {v}.reshape %p : {T('2, 3, 4, 2')} -> {T('2, 3, 8')}\n"
            f"  %r = {v}.unary abs %h : {T('2, 3, 8')} -> {T('2, 3, 8')}",
        ),
        body_case(
            "reshape_of_reshape", f"%x: {T('6, 4')}", T("3, 8"),
            f"  %a = {v}.reshape %x : {T('6, 4')} -> {T('24')}\n"
            f"  %b = {v}.reshape %a : {T('24')} -> {T('3, 8')}\n"
            f"  %r = {v}.unary neg %b : {T('3, 8')} -> {T('3, 8')}",
        ),
        body_case(
            "slice_step", f"%x: {T('4, 9')}", T("4, 3"),
            f"  %s = {v}.slice %x dim 1 start 1 end 9 step 3 : {T('4, 9')} -> {T('4, 3')}\n"
            f"  %r = {v}.unary exp %s : {T('4, 3')} -> {T('4, 3')}",
        ),
        body_case(
            "slice_of_permute", f"%x: {T('5, 6')}", T("2, 5"),
            f"  %p = {v}.permute %x [1, 0] : {T('5, 6')} -> {T('6, 5')}\n"
            f"  %s = {v}.slice %p dim 0 start 2 end 6 step 2 : {T('6, 5')} -> {T('2, 5')}\n"
            f"  %r = {v}.unary neg %s : {T('2, 5')} -> {T('2, 5')}",
        ),
        body_case(
            "select_then_add", f"%x: {T('3, 4, 5')}", T("3, 5"),
            f"  %s = {v}.select %x dim 1 index 2 : {T('3, 4, 5')} -> {T('3, 5')}\n"
            f"  %r = {v}.binary add %s, %s : {T('3, 5')}, {T('3, 5')} -> {T('3, 5')}",
        ),
        body_case(
            "expand_of_unsqueeze", f"%x: {T('5')}", T("3, 5"),
            f"  %u = {v}.unsqueeze %x dim 0 : {T('5')} -> {T('1, 5')}\n"
            f"  %e = {v}.expand %u : {T('1, 5')} -> {T('3, 5')}\n"
            f"  %r = {v}.unary exp %e : {T('3, 5')} -> {T('3, 5')}",
        ),
        body_case(
            "squeeze_unsqueeze", f"%x: {T('3, 1, 4')}", T("3, 4, 1"),
            f"  %s = {v}.squeeze %x dims [1] : {T('3, 1, 4')} -> {T('3, 4')}\n"
            f"  %u = {v}.unsqueeze %s dim 2 : {T('3, 4')} -> {T('3, 4, 1')}\n"
            f"  %r = {v}.unary neg %u : {T('3, 4, 1')} -> {T('3, 4, 1')}",
        ),
        body_case(
            "as_strided_windows", f"%x: {T('4, 4')}", T("3, 4"),
            f"  %w = {v}.as_strided %x strides [4, 1] offset 2 : {T('4, 4')} -> {T('3, 4')}\n"
            f"  %r = {v}.unary exp %w : {T('3, 4')} -> {T('3, 4')}",
        ),
        body_case(
            "select_of_reshape_of_permute", f"%x: {T('4, 6')}", T("4"),
            f"  %p = {v}.permute %x [1, 0] : {T('4, 6')} -> {T('6, 4')}\n"
            f"  %h = {v}.reshape %p : {T('6, 4')} -> {T('2, 3, 4')}\n"
            f"  %s = {v}.select %h dim 1 index 1 : {T('2, 3, 4')} -> {T('2, 4')}\n"
            f"  %q = {v}.select %s dim 0 index 1 : {T('2, 4')} -> {T('4')}\n"
            f"  %r = {v}.unary neg %q : {T('4')} -> {T('4')}",
        ),
        body_case(
            "sum_of_transpose", f"%x: {T('4, 6')}", T("6"),
            f"  %p = {v}.permute %x [1, 0] : {T('4, 6')} -> {T('6, 4')}\n"
            f"  %r = {v}.reduce sum %p dims [1] : {T('6, 4')} -> {T('6')}",
        ),
        body_case(
            "returned_views", f"%x: {T('4, 6')}", T("6, 4"),
            f"  %r = {v}.permute %x [1, 0] : {T('4, 6')} -> {T('6, 4')}",
        ),
        body_case(
            "returned_reshape_of_transpose", f"%x: {T('4, 6')}", T("24"),
            f"  %p = {v}.permute %x [1, 0] : {T('4, 6')} -> {T('6, 4')}\n"
            f"  %r = {v}.reshape %p : {T('6, 4')} -> {T('24')}",
        ),
        body_case(
            "returned_slice_of_computed", f"%x: {T('4, 6')}", T("2, 6"),
            f"  %e = {v}.unary exp %x : {T('4, 6')} -> {T('4, 6')}\n"
            f"  %r = {v}.slice %e dim 0 start 1 end 4 step 2 : {T('4, 6')} -> {T('2, 6')}",
        ),
        body_case(
            "views_feeding_mm", f"%x: {T('6, 4')}, %y: {T('2, 3, 5')}", T("4, 5"),
            f"  %t = {v}.permute %x [1, 0] : {T('6, 4')} -> {T('4, 6')}\n"
            f"  %f = {v}.reshape %y : {T('2, 3, 5')} -> {T('6, 5')}\n"
            f"  %r = {v}.mm %t, %f : {T('4, 6')}, {T('6, 5')} -> {T('4, 5')}",
        ),
        body_case(
            "mm_of_reshaped_transpose", f"%x: {T('2, 3, 4')}, %y: {T('6, 5')}", T("4, 5"),
            f"  %p = {v}.permute %x [2, 0, 1] : {T('2, 3, 4')} -> {T('4, 2, 3')}\n"
            f"  %f = {v}.reshape %p : {T('4, 2, 3')} -> {T('4, 6')}\n"
            f"  %r = {v}.mm %f, %y : {T('4, 6')}, {T('6, 5')} -> {T('4, 5')}",
        ),
    ]


def data_movement_cases() -> list[Case]:
    v = "ptensor"
    cases = [
        op_case("cat_dim0", f"{v}.cat %a0, %a1 dim 0 : {T('2, 3')}, {T('4, 3')} -> {T('6, 3')}", [T("2, 3"), T("4, 3")], T("6, 3")),
        op_case(
            "cat_three_dim1",
            f"{v}.cat %a0, %a1, %a2 dim 1 : {T('2, 1', 'i32')}, {T('2, 3', 'i32')}, {T('2, 2', 'i32')} -> {T('2, 6', 'i32')}",
            [T("2, 1", "i32"), T("2, 3", "i32"), T("2, 2", "i32")],
            T("2, 6", "i32"),
        ),
        op_case("cat_empty_input", f"{v}.cat %a0, %a1 dim 0 : {T('0, 3')}, {T('4, 3')} -> {T('4, 3')}", [T("0, 3"), T("4, 3")], T("4, 3")),
    ]
    pads = [
        ("constant 1.5", "[1, 2]", "[0, 3]", "5, 9"),
        ("constant 0.0", "[-1, 0]", "[0, -2]", "3, 2"),
        ("constant -2.0", "[2, -1]", "[-1, 2]", "5, 5"),
        ("reflect", "[1, 2]", "[2, 3]", "7, 9"),
        ("reflect", "[-1, 1]", "[1, -2]", "4, 3"),
        ("replicate", "[2, 0]", "[1, 4]", "7, 8"),
        ("replicate", "[0, -2]", "[3, 1]", "7, 3"),
    ]
    for mode, low, high, shape in pads:
        name = f"pad_{mode.split()[0]}_{low}_{high}".replace(" ", "").replace("[", "").replace("]", "").replace(",", "_")
        cases.append(
            op_case(name, f"{v}.pad %a0 {mode} low {low} high {high} : {T('4, 4')} -> {T(shape)}", [T("4, 4")], T(shape))
        )
    gather = lambda dim, rows, cols, size: (  # noqa: E731
        lambda sizes: [randn(4, 5), torch.randint(0, size, (rows, cols))]
    )
    cases += [
        op_case(
            "gather_dim1",
            f"{v}.gather %a0, %a1 dim 1 : {T('4, 5')}, {T('4, 3', 'i64')} -> {T('4, 3')}",
            [T("4, 5"), T("4, 3", "i64")], T("4, 3"), inputs=gather(1, 4, 3, 5),
        ),
        op_case(
            "gather_dim0",
            f"{v}.gather %a0, %a1 dim 0 : {T('4, 5')}, {T('2, 5', 'i64')} -> {T('2, 5')}",
            [T("4, 5"), T("2, 5", "i64")], T("2, 5"), inputs=gather(0, 2, 5, 4),
        ),
    ]
    source = T("5, 6, 7")
    index_cases = [
        ("index_first", "[0]", [("2, 3", 5)], "2, 3, 6, 7"),
        ("index_middle", "[1]", [("4", 6)], "5, 4, 7"),
        ("index_adjacent", "[1, 2]", [("3", 6), ("3", 7)], "5, 3"),
        ("index_adjacent_broadcast", "[1, 2]", [("2, 1", 6), ("3", 7)], "5, 2, 3"),
        ("index_non_adjacent", "[0, 2]", [("4", 5), ("4", 7)], "4, 6"),
        ("index_non_adjacent_broadcast", "[0, 2]", [("2, 1", 5), ("1, 3", 7)], "2, 3, 6"),
    ]
    for name, dims, indices, shape in index_cases:
        types = [T(s, "i64") for s, _ in indices]
        refs = ", ".join(f"%a{i + 1}" for i in range(len(indices)))
        inputs = _index_inputs((5, 6, 7), indices, negative=False)
        negative = _index_inputs((5, 6, 7), indices, negative=True)
        text = f"{v}.index %a0[{refs}] dims {dims} : {source}, {', '.join(types)} -> {T(shape)}"
        cases.append(op_case(name, text, [source, *types], T(shape), inputs=inputs))
        cases.append(op_case(name + "_negative", text, [source, *types], T(shape), inputs=negative))
    source4 = T("3, 4, 5, 6")
    types = [T("2", "i64"), T("2", "i64")]
    text = f"{v}.index %a0[%a1, %a2] dims [1, 3] : {source4}, {', '.join(types)} -> {T('2, 3, 5')}"
    inputs = lambda sizes: [randn(3, 4, 5, 6), torch.tensor([1, -1]), torch.tensor([-6, 5])]  # noqa: E731
    cases.append(op_case("index_non_adjacent_kept_first", text, [source4, *types], T("2, 3, 5"), inputs=inputs))
    i32_index = _index_inputs((5, 6, 7), [("3", 6)], negative=True, dtype=torch.int32)
    text = f"{v}.index %a0[%a1] dims [1] : {source}, {T('3', 'i32')} -> {T('5, 3, 7')}"
    cases.append(op_case("index_i32_indices", text, [source, T("3", "i32")], T("5, 3, 7"), inputs=i32_index))
    return cases


def _index_inputs(shape, indices, negative: bool, dtype=torch.int64) -> Inputs:
    def make(sizes: Mapping[str, int]) -> list:
        tensors = [randn(*shape)]
        for index_shape, size in indices:
            dims = [int(d) for d in index_shape.split(", ")]
            low = -size if negative else 0
            tensors.append(torch.randint(low, size, dims, dtype=dtype))
        return tensors

    return make


def generator_cases() -> list[Case]:
    v = "ptensor"
    return [
        op_case("iota_i64", f"{v}.iota start 3 step -2 : {T('7', 'i64')}", [], T("7", "i64")),
        op_case("iota_i32", f"{v}.iota start -4 step 3 : {T('6', 'i32')}", [], T("6", "i32")),
        op_case("iota_f32", f"{v}.iota start 0.5 step 0.25 : {T('9')}", [], T("9")),
        op_case("iota_bf16", f"{v}.iota start 1.0 step 0.3 : {T('9', 'bf16')}", [], T("9", "bf16")),
        op_case("full_f32", f"{v}.full 2.5 : {T('3, 4')}", [], T("3, 4")),
        op_case("full_i64", f"{v}.full -7 : {T('2, 3', 'i64')}", [], T("2, 3", "i64")),
        op_case("full_i1", f"{v}.full 1 : {T('2, 3', 'i1')}", [], T("2, 3", "i1")),
        op_case("full_ui8", f"{v}.full 200 : {T('4', 'ui8')}", [], T("4", "ui8")),
        op_case("full_rank0", f"{v}.full -inf : {T('')}", [], T("")),
        op_case("full_bf16", f"{v}.full 0.1 : {T('3', 'bf16')}", [], T("3", "bf16")),
    ]


def symbolic_cases() -> list[Case]:
    v = "ptensor"
    two = ({"s0": 3}, {"s0": 7})
    both = ({"s0": 2, "s1": 5}, {"s0": 4, "s1": 3})
    return [
        body_case(
            "symbolic_elementwise", f"%x: {T('s0, 4')}, %y: {T('4')}", T("s0, 4"),
            f"  %e = {v}.unary exp %x : {T('s0, 4')} -> {T('s0, 4')}\n"
            f"  %r = {v}.binary add %e, %y : {T('s0, 4')}, {T('4')} -> {T('s0, 4')}",
            sizes=two,
        ),
        op_case(
            "symbolic_reduce", f"{v}.reduce sum %a0 dims [1] : {T('3, s0')} -> {T('3')}",
            [T("3, s0")], T("3"), sizes=two,
        ),
        op_case(
            "symbolic_argmax", f"{v}.reduce argmax %a0 dims [0] : {T('s0, s1')} -> {T('s1', 'i64')}",
            [T("s0, s1")], T("s1", "i64"), sizes=both,
        ),
        op_case(
            "symbolic_cat",
            f"{v}.cat %a0, %a1 dim 0 : {T('s0, 3')}, {T('s1, 3')} -> {T('s0 + s1, 3')}",
            [T("s0, 3"), T("s1, 3")], T("s0 + s1, 3"), sizes=both,
        ),
        body_case(
            "symbolic_slice_to_end", f"%x: {T('s0, 4')}", T("s0 - 1, 4"),
            f"  %s = {v}.slice %x dim 0 start 1 end s0 step 1 : {T('s0, 4')} -> {T('s0 - 1, 4')}\n"
            f"  %r = {v}.unary neg %s : {T('s0 - 1, 4')} -> {T('s0 - 1, 4')}",
            sizes=two,
        ),
        body_case(
            "symbolic_split_heads", f"%x: {T('s0, 8')}", T("4, s0, 2"),
            f"  %h = {v}.reshape %x : {T('s0, 8')} -> {T('s0, 4, 2')}\n"
            f"  %p = {v}.permute %h [1, 0, 2] : {T('s0, 4, 2')} -> {T('4, s0, 2')}\n"
            f"  %r = {v}.unary exp %p : {T('4, s0, 2')} -> {T('4, s0, 2')}",
            sizes=two,
        ),
        body_case(
            "symbolic_flatten", f"%x: {T('s0, s1')}", T("s0 * s1"),
            f"  %f = {v}.reshape %x : {T('s0, s1')} -> {T('s0 * s1')}\n"
            f"  %r = {v}.unary neg %f : {T('s0 * s1')} -> {T('s0 * s1')}",
            sizes=both,
        ),
        body_case(
            "symbolic_select_last", f"%x: {T('s0, 3')}", T("3"),
            f"  %s = {v}.select %x dim 0 index s0 - 1 : {T('s0, 3')} -> {T('3')}\n"
            f"  %r = {v}.unary exp %s : {T('3')} -> {T('3')}",
            sizes=two,
        ),
        op_case(
            "symbolic_pad", f"{v}.pad %a0 reflect low [2] high [1] : {T('s0')} -> {T('s0 + 3')}",
            [T("s0")], T("s0 + 3"), sizes=two,
        ),
        op_case("symbolic_full", f"{v}.full 1.5 : {T('s0, 2')}", [T("s0")], T("s0, 2"), sizes=two),
    ]


def library_cases() -> list[Case]:
    v = "ptensor"
    return [
        body_case(
            "mm_epilogue", f"%a: {T('3, 4')}, %b: {T('4, 5')}, %c: {T('5')}", T("3, 5"),
            f"  %m = {v}.mm %a, %b : {T('3, 4')}, {T('4, 5')} -> {T('3, 5')}\n"
            f"  %r = {v}.binary add %m, %c : {T('3, 5')}, {T('5')} -> {T('3, 5')}",
        ),
        body_case(
            "fallback_cumsum", f"%a: {T('3, 4')}", T("3, 4"),
            f"  %e = {v}.unary exp %a : {T('3, 4')} -> {T('3, 4')}\n"
            f'  %c = {v}.fallback "aten.cumsum.default"(%e) [#ptensor.operand<0>, 1 : i64] : ({T("3, 4")}) -> {T("3, 4")}\n'
            f"  %r = {v}.unary neg %c : {T('3, 4')} -> {T('3, 4')}",
        ),
    ]


def host_and_layout_cases() -> list[Case]:
    v = "ptensor"
    strided = "{ptensor.strides = #ptensor.exprs[1, 4]}"
    scatter = lambda sizes: [  # noqa: E731
        randn(3, 5), torch.randint(0, 3, (2, 5)), randn(2, 5)
    ]
    return [
        Case(
            "strided_argument",
            f"func.func @f(%x: {T('4, 6')} {strided}) -> {T('6, 4')} {{\n"
            f"  %p = {v}.permute %x [1, 0] : {T('4, 6')} -> {T('6, 4')}\n"
            f"  %r = {v}.unary exp %p : {T('6, 4')} -> {T('6, 4')}\n"
            f"  func.return %r : {T('6, 4')}\n}}",
        ),
        Case(
            "strided_argument_reshaped_into_mm",
            f"func.func @f(%x: {T('4, 6')} {strided}, %y: {T('3, 2')}) -> {T('12, 12')} {{\n"
            f"  %f = {v}.reshape %x : {T('4, 6')} -> {T('12, 2')}\n"
            f"  %e = {v}.unary exp %y : {T('3, 2')} -> {T('3, 2')}\n"
            f"  %t = {v}.permute %f [1, 0] : {T('12, 2')} -> {T('2, 12')}\n"
            f"  %r = {v}.mm %f, %t : {T('12, 2')}, {T('2, 12')} -> {T('12, 12')}\n"
            f"  func.return %r : {T('12, 12')}\n}}",
        ),
        Case(
            "strided_result",
            f"func.func @f(%x: {T('4, 6')}) -> ({T('4, 6')} {{ptensor.strides = #ptensor.exprs[1, 4]}}) {{\n"
            f"  %r = {v}.unary exp %x : {T('4, 6')} -> {T('4, 6')}\n"
            f"  func.return %r : {T('4, 6')}\n}}",
        ),
        body_case(
            "cat_of_views", f"%x: {T('3, 2')}, %y: {T('4, 3')}", T("3, 6"),
            f"  %p = {v}.permute %y [1, 0] : {T('4, 3')} -> {T('3, 4')}\n"
            f"  %r = {v}.cat %x, %p dim 1 : {T('3, 2')}, {T('3, 4')} -> {T('3, 6')}",
        ),
        body_case(
            "index_by_expanded_view", f"%x: {T('5, 4')}, %i: {T('3', 'i64')}", T("2, 3, 4"),
            f"  %u = {v}.unsqueeze %i dim 0 : {T('3', 'i64')} -> {T('1, 3', 'i64')}\n"
            f"  %e = {v}.expand %u : {T('1, 3', 'i64')} -> {T('2, 3', 'i64')}\n"
            f"  %r = {v}.index %x[%e] dims [0] : {T('5, 4')}, {T('2, 3', 'i64')} -> {T('2, 3, 4')}",
            inputs=lambda sizes: [randn(5, 4), torch.randint(-5, 5, (3,))],
        ),
        body_case(
            "gather_by_transposed_index", f"%x: {T('4, 5')}, %i: {T('3, 4', 'i64')}", T("4, 3"),
            f"  %t = {v}.permute %i [1, 0] : {T('3, 4', 'i64')} -> {T('4, 3', 'i64')}\n"
            f"  %r = {v}.gather %x, %t dim 1 : {T('4, 5')}, {T('4, 3', 'i64')} -> {T('4, 3')}",
            inputs=lambda sizes: [randn(4, 5), torch.randint(0, 5, (3, 4))],
        ),
        body_case(
            "as_strided_of_permute", f"%x: {T('4, 3')}", T("2, 3"),
            f"  %p = {v}.permute %x [1, 0] : {T('4, 3')} -> {T('3, 4')}\n"
            f"  %w = {v}.as_strided %p strides [2, 3] offset 1 : {T('3, 4')} -> {T('2, 3')}\n"
            f"  %r = {v}.unary neg %w : {T('2, 3')} -> {T('2, 3')}",
        ),
        body_case(
            "returned_as_strided_of_permute", f"%x: {T('4, 3')}", T("2, 3"),
            f"  %p = {v}.permute %x [1, 0] : {T('4, 3')} -> {T('3, 4')}\n"
            f"  %r = {v}.as_strided %p strides [2, 3] offset 1 : {T('3, 4')} -> {T('2, 3')}",
        ),
        body_case(
            "constant_through_views", f"%x: {T('3, 2')}", T("3, 2"),
            f"  %c = {v}.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32> -> {T('2, 3')}\n"
            f"  %t = {v}.permute %c [1, 0] : {T('2, 3')} -> {T('3, 2')}\n"
            f"  %r = {v}.binary add %x, %t : {T('3, 2')}, {T('3, 2')} -> {T('3, 2')}",
        ),
        body_case(
            "scatter_add_then_exp", f"%x: {T('3, 5')}, %i: {T('2, 5', 'i64')}, %s: {T('2, 5')}", T("3, 5"),
            f"  %a = {v}.scatter_add %x, %i, %s dim 0 : {T('3, 5')}, {T('2, 5', 'i64')}, {T('2, 5')} -> {T('3, 5')}\n"
            f"  %r = {v}.unary exp %a : {T('3, 5')} -> {T('3, 5')}",
            inputs=scatter,
        ),
        op_case("pad_constant_i32", f"{v}.pad %a0 constant 7 low [1] high [2] : {T('4', 'i32')} -> {T('7', 'i32')}", [T("4", "i32")], T("7", "i32")),
        op_case("pad_constant_i1", f"{v}.pad %a0 constant 1 low [2] high [1] : {T('4', 'i1')} -> {T('7', 'i1')}", [T("4", "i1")], T("7", "i1")),
        op_case("reduce_all_dims_keepdim", f"{v}.reduce sum %a0 dims [0, 1, 2] keepdim : {T('2, 3, 4')} -> {T('1, 1, 1')}", [T("2, 3, 4")], T("1, 1, 1")),
        op_case("reduce_argmax_keepdim", f"{v}.reduce argmax %a0 dims [0] keepdim : {T('4, 3')} -> {T('1, 3', 'i64')}", [T("4, 3")], T("1, 3", "i64")),
        op_case("reduce_size_one_dim", f"{v}.reduce max %a0 dims [1] : {T('4, 1')} -> {T('4')}", [T("4, 1")], T("4")),
        op_case("unary_on_empty", f"{v}.unary exp %a0 : {T('0, 3')} -> {T('0, 3')}", [T("0, 3")], T("0, 3")),
        Case(
            "return_argument_and_one_value_twice",
            f"func.func @f(%x: {T('4')}) -> ({T('4')}, {T('4')}, {T('4')}) {{\n"
            f"  %e = {v}.unary exp %x : {T('4')} -> {T('4')}\n"
            f"  func.return %x, %e, %e : {T('4')}, {T('4')}, {T('4')}\n}}",
        ),
        body_case(
            "returned_reshape_of_computed", f"%x: {T('4, 6')}", T("24"),
            f"  %e = {v}.unary exp %x : {T('4, 6')} -> {T('4, 6')}\n"
            f"  %r = {v}.reshape %e : {T('4, 6')} -> {T('24')}",
        ),
        Case(
            "returned_view_in_its_declared_layout",
            f"func.func @f(%x: {T('4, 6')}) -> ({T('6, 4')} {{ptensor.strides = #ptensor.exprs[1, 6]}}) {{\n"
            f"  %r = {v}.permute %x [1, 0] : {T('4, 6')} -> {T('6, 4')}\n"
            f"  func.return %r : {T('6, 4')}\n}}",
        ),
        body_case(
            "gather_by_argmax", f"%x: {T('4, 6')}", T("4, 1"),
            f"  %i = {v}.reduce argmax %x dims [1] keepdim : {T('4, 6')} -> {T('4, 1', 'i64')}\n"
            f"  %r = {v}.gather %x, %i dim 1 : {T('4, 6')}, {T('4, 1', 'i64')} -> {T('4, 1')}",
        ),
        body_case(
            "sum_of_broadcast", f"%x: {T('5')}", T("5"),
            f"  %u = {v}.unsqueeze %x dim 0 : {T('5')} -> {T('1, 5')}\n"
            f"  %e = {v}.expand %u : {T('1, 5')} -> {T('3, 5')}\n"
            f"  %r = {v}.reduce sum %e dims [0] : {T('3, 5')} -> {T('5')}",
        ),
        body_case(
            "pad_of_permute", f"%x: {T('3, 5')}", T("4, 4"),
            f"  %p = {v}.permute %x [1, 0] : {T('3, 5')} -> {T('5, 3')}\n"
            f"  %r = {v}.pad %p constant 0.0 low [-1, 1] high [0, 0] : {T('5, 3')} -> {T('4, 4')}",
        ),
        body_case(
            "cat_with_sliced_middle", f"%a: {T('2, 3')}, %b: {T('6, 3')}, %c: {T('1, 3')}", T("6, 3"),
            f"  %s = {v}.slice %b dim 0 start 1 end 6 step 2 : {T('6, 3')} -> {T('3, 3')}\n"
            f"  %r = {v}.cat %a, %s, %c dim 0 : {T('2, 3')}, {T('3, 3')}, {T('1, 3')} -> {T('6, 3')}",
        ),
        body_case(
            "flattened_broadcast_into_fallback", f"%x: {T('4')}", T("12"),
            f"  %u = {v}.unsqueeze %x dim 0 : {T('4')} -> {T('1, 4')}\n"
            f"  %e = {v}.expand %u : {T('1, 4')} -> {T('3, 4')}\n"
            f"  %f = {v}.reshape %e : {T('3, 4')} -> {T('12')}\n"
            f'  %r = {v}.fallback "aten.clone.default"(%f) [#ptensor.operand<0>] : ({T("12")}) -> {T("12")}',
        ),
        body_case(
            "strided_views_into_fallback", f"%x: {T('4, 6')}", T("3, 2"),
            f"  %p = {v}.permute %x [1, 0] : {T('4, 6')} -> {T('6, 4')}\n"
            f"  %s = {v}.slice %p dim 0 start 1 end 6 step 2 : {T('6, 4')} -> {T('3, 4')}\n"
            f"  %q = {v}.slice %s dim 1 start 2 end 4 step 1 : {T('3, 4')} -> {T('3, 2')}\n"
            f'  %r = {v}.fallback "aten.clone.default"(%q) [#ptensor.operand<0>] : ({T("3, 2")}) -> {T("3, 2")}',
        ),
        body_case(
            "symbolic_slice_start", f"%x: {T('s0, 2')}", T("2, 2"),
            f"  %s = {v}.slice %x dim 0 start s0 - 2 end s0 step 1 : {T('s0, 2')} -> {T('2, 2')}\n"
            f"  %r = {v}.unary neg %s : {T('2, 2')} -> {T('2, 2')}",
            sizes=({"s0": 3}, {"s0": 6}),
        ),
        body_case(
            "symbolic_reshape_of_slice", f"%x: {T('s0, 6')}", T("s0 * 2"),
            f"  %s = {v}.slice %x dim 1 start 1 end 5 step 2 : {T('s0, 6')} -> {T('s0, 2')}\n"
            f"  %f = {v}.reshape %s : {T('s0, 2')} -> {T('s0 * 2')}\n"
            f"  %r = {v}.unary neg %f : {T('s0 * 2')} -> {T('s0 * 2')}",
            sizes=({"s0": 3}, {"s0": 5}),
        ),
        body_case(
            "symbolic_reshape_transpose_reshape", f"%x: {T('s0, s1')}", T("s1 * s0"),
            f"  %p = {v}.permute %x [1, 0] : {T('s0, s1')} -> {T('s1, s0')}\n"
            f"  %r = {v}.reshape %p : {T('s1, s0')} -> {T('s1 * s0')}",
            sizes=({"s0": 2, "s1": 5}, {"s0": 4, "s1": 3}),
        ),
    ]


ALL_CASES: list[Case] = [
    *host_and_layout_cases(),
    *unary_cases(),
    *binary_cases(),
    *cast_cases(),
    *broadcast_cases(),
    *reduce_cases(),
    *scan_cases(),
    *sort_cases(),
    *view_cases(),
    *data_movement_cases(),
    *generator_cases(),
    *symbolic_cases(),
    *library_cases(),
]

# --------------------------------------------------------------------------
# Running a case at the three levels
# --------------------------------------------------------------------------


def randn(*shape: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """Standard normal values pushed away from zero."""
    x = torch.randn(shape, dtype=torch.float64)
    return (x + 0.1 * torch.sign(x)).to(dtype)


def random_tensor(shape: Sequence[int], dtype: torch.dtype, domain: str) -> Tensor:
    """Random non-zero values of a dtype, floats in the case's domain."""
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if dtype.is_floating_point:
        x = randn(*shape, dtype=torch.float64)
        x = {
            "any": x,
            "positive": x.abs() + 0.1,
            "unit": torch.tanh(x) * 0.95,
            "above_one": x.abs() + 1.1,
        }[domain]
        return x.to(dtype)
    low, high = (1, 256) if dtype == torch.uint8 else (-9, 10)
    x = torch.randint(low, high, tuple(shape), dtype=dtype)
    return torch.where(x == 0, torch.ones_like(x), x)


def concrete_shape(tensor_type: TensorType, sizes: Mapping[str, int]) -> list[int]:
    values = {symbol(name): value for name, value in sizes.items()}
    return [int(sympy.sympify(s).xreplace(values)) for s in tensor_type.sizes]


def make_inputs(module: ModuleOp, case: Case, sizes: Mapping[str, int]) -> list:
    if case.inputs is not None:
        return case.inputs(sizes)
    function = next(iter(module.ops))
    inputs = []
    for arg_type in function.function_type.inputs.data:  # type: ignore[attr-defined]
        assert isinstance(arg_type, TensorType)
        dtype = torch_dtype(arg_type.element_type)
        inputs.append(random_tensor(concrete_shape(arg_type, sizes), dtype, case.domain))
    return inputs


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def lower(module: ModuleOp, pipeline: str) -> ModuleOp:
    """`module` after a pipeline, printed and parsed back."""
    lowered = module.clone()
    build_pipeline(pipeline).apply(make_context(), lowered)
    lowered.verify()
    reparsed = parse(str(lowered))
    assert str(reparsed) == str(lowered)
    return reparsed


def assert_same(actual: Tensor, expected: Tensor, what: str) -> None:
    """Equal dtype and shape; floats to a relative 1e-5, others exactly."""
    assert actual.dtype == expected.dtype, what
    assert actual.shape == expected.shape, what
    if expected.is_floating_point():
        # one unit in the last place of the narrow float types: accumulating
        # in f32 or f64 before the final rounding may land on either side
        rtol, atol = {torch.bfloat16: (8e-3, 1e-5), torch.float16: (1e-3, 1e-6)}.get(
            expected.dtype, (1e-5, 1e-6)
        )
        torch.testing.assert_close(
            actual, expected, rtol=rtol, atol=atol, equal_nan=True, msg=lambda m: f"{what}: {m}"
        )
    else:
        assert torch.equal(actual, expected), f"{what}:\n{actual}\n!=\n{expected}"


@dataclass
class Levels:
    """A module at the three levels, and at the loop and buffer levels after
    fusion, and with memory planned; `lowering` is the conversion to loops
    with its options (a target's pipeline may give it some)."""

    ptensor: ModuleOp
    lowering: str = "convert-ptensor-to-loop"
    loop: ModuleOp = field(init=False)
    buffer: ModuleOp = field(init=False)
    fused: ModuleOp = field(init=False)
    fused_buffer: ModuleOp = field(init=False)
    planned: ModuleOp = field(init=False)
    fused_planned: ModuleOp = field(init=False)

    def __post_init__(self) -> None:
        self.loop = lower(self.ptensor, self.lowering)
        self.buffer = lower(self.loop, "convert-loop-to-buffer")
        self.fused = lower(self.loop, "cse,fuse-loops,cse,dce")
        self.fused_buffer = lower(self.fused, "convert-loop-to-buffer")
        self.planned = lower(self.buffer, "plan-memory")
        self.fused_planned = lower(self.fused_buffer, "plan-memory")

    def check(self, args: list, expected: Sequence[Tensor] | None = None) -> None:
        """Run the three levels on `args` and compare them (and `expected`)."""
        reference = run_function(self.ptensor, [clone(a) for a in args])
        if expected is not None:
            for i, (r, e) in enumerate(zip(reference, expected, strict=True)):
                assert_close_to_eager(r, e, f"ptensor result {i} vs eager")
        for level in ("loop", "buffer", "fused", "fused_buffer", "planned", "fused_planned"):
            results = run_module_function(getattr(self, level), [clone(a) for a in args])
            assert len(results) == len(reference)
            for i, (r, e) in enumerate(zip(results, reference)):
                assert_same(r, e, f"{level} result {i}")


def clone(value):
    return value.clone() if isinstance(value, Tensor) else value


def assert_close_to_eager(actual: Tensor, expected: Tensor, what: str) -> None:
    assert actual.shape == expected.shape and actual.dtype == expected.dtype, what
    if expected.is_floating_point():
        error = (actual.double() - expected.double()).norm() / expected.double().norm()
        assert error < 1e-5, f"{what}: relative error {float(error)}"
    else:
        assert torch.equal(actual, expected), what


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def case_params(cases: Sequence[Case]) -> list:
    """Cases as pytest parameters, those with a known bug as strict xfails."""
    return [
        pytest.param(
            c,
            id=c.name,
            marks=[pytest.mark.xfail(strict=True, reason=c.known_bug)] if c.known_bug else [],
        )
        for c in cases
    ]


@pytest.mark.parametrize("case", case_params(ALL_CASES))
def test_levels_agree(case: Case):
    levels = Levels(parse(case.ir))
    assert not [op for op in levels.loop.walk() if type(op) in LOWERINGS]
    assert module_level(levels.loop) in ("loop", "ptensor")
    assert module_level(levels.buffer) == "buffer"
    for sizes in case.sizes:
        levels.check(make_inputs(levels.ptensor, case, sizes))


def test_every_case_name_is_unique():
    names = [c.name for c in ALL_CASES]
    assert len(names) == len(set(names))


def test_an_op_without_a_scalar_lowering_stays_for_the_host():
    source = (
        f"func.func @f(%x: {T('4')}) -> {T('4')} {{\n"
        f"  %r = ptensor.unary erfinv %x : {T('4')} -> {T('4')}\n"
        f"  func.return %r : {T('4')}\n}}"
    )
    x = torch.rand(4) * 1.8 - 0.9
    on_loops = lower(parse(source), "convert-ptensor-to-loop")
    assert "ptensor.unary erfinv" in str(on_loops)
    on_buffers = lower(parse(source), "convert-ptensor-to-loop,convert-loop-to-buffer")
    assert "buffer.extern" in str(on_buffers)
    for module in (on_loops, on_buffers):
        (result,) = run_module_function(module, [x])
        torch.testing.assert_close(result, torch.erfinv(x))


# --------------------------------------------------------------------------
# Imported graphs of the model zoo
# --------------------------------------------------------------------------

ZOO = [
    "pointwise_chain", "layer_norm", "masked_softmax", "rms_norm_silu",
    "layer_norm_gelu_residual", "mlp", "causal_attention",
    "causal_attention_explicit", "gpt2_block", "bert_block", "conv_bn_relu",
]  # fmt: skip


@pytest.mark.parametrize("name", ZOO)
def test_zoo_graphs_agree_with_eager_at_every_level(name: str):
    from torch.utils._pytree import tree_leaves

    from permalloy.lowering.capture import capture_with_inputs
    from permalloy.lowering.import_fx import import_graph
    from permalloy.tools.zoo import ZooSize, make_case

    case = make_case(name, ZooSize(batch=2, seq=4, hidden=16, heads=2, channels=3, image=5))
    with torch.no_grad():
        expected = [t for t in tree_leaves(case.model(*case.inputs)) if isinstance(t, Tensor)]
    (graph,) = capture_with_inputs(case.model, *case.inputs)
    imported = import_graph(graph.graph_module)
    levels = Levels(imported.module)
    levels.check([*graph.inputs, *imported.constants], expected)
