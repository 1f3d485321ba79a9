"""
Reduction kinds as Triton accumulators.

Values are widened to an accumulator type (f16/bf16 accumulate in f32, narrow
integer sums and products in int32), masked lanes take the kind's identity,
chunks are combined elementwise into a `[XBLOCK, RBLOCK]` accumulator and the
accumulator is reduced along its inner axis at the end. Max and min propagate
NaN as torch does; argmax and argmin give the first position of the extreme
value, NaN counting as the extreme; i1 sums and maxima are `any`, products
and minima `all`; max and min of unsigned results order unsigned.
"""

from __future__ import annotations

from dataclasses import dataclass

from permalloy.dialects.ptensor import ReduceKind
from permalloy.targets.triton.arith import convert
from permalloy.targets.triton.source import SourceWriter
from permalloy.targets.triton.types import (
    float_width,
    identity_value,
    int_width,
    is_bool_dtype,
    is_float_dtype,
    unsigned,
)

BOOL_KINDS = {
    ReduceKind.SUM: ReduceKind.ANY,
    ReduceKind.MAX: ReduceKind.ANY,
    ReduceKind.PROD: ReduceKind.ALL,
    ReduceKind.MIN: ReduceKind.ALL,
}
ARG_KINDS = (ReduceKind.ARGMAX, ReduceKind.ARGMIN)
FAR_POSITION = "tl.full([], 4611686018427387904, tl.int64)"
"""The position masked lanes of argmax/argmin carry: after every real one."""


@dataclass(frozen=True)
class Reduction:
    """The code of one reduction kind over body values of `value_dtype`."""

    kind: ReduceKind
    value_dtype: str
    result_dtype: str
    unsigned_order: bool = False

    @staticmethod
    def of(kind: ReduceKind, value_dtype: str, result_dtype: str, unsigned_result: bool) -> Reduction:
        if is_bool_dtype(value_dtype) and kind in BOOL_KINDS:
            kind = BOOL_KINDS[kind]
        ordered = unsigned_result and kind in (ReduceKind.MAX, ReduceKind.MIN)
        return Reduction(kind, value_dtype, result_dtype, ordered)

    @property
    def is_arg(self) -> bool:
        return self.kind in ARG_KINDS

    @property
    def acc_dtype(self) -> str:
        v = self.value_dtype
        if self.kind in (ReduceKind.ANY, ReduceKind.ALL) or is_bool_dtype(v):
            return "tl.int8"
        if is_float_dtype(v):
            return "tl.float32" if float_width(v) < 32 else v
        if self.unsigned_order:
            return unsigned(v)
        if self.kind in (ReduceKind.SUM, ReduceKind.PROD):
            return "tl.int32" if int_width(v) <= 32 else "tl.int64"
        return v

    def widen(self, text: str) -> str:
        """A body value in the accumulator type."""
        acc = self.acc_dtype
        if acc == self.value_dtype:
            return text
        if self.unsigned_order:
            return f"{text}.to({acc}, bitcast=True)"
        if self.value_dtype == "tl.bfloat16" and acc != "tl.float32":
            return f"{text}.to(tl.float32).to({acc})"
        return f"{text}.to({acc})"

    def identity(self) -> str:
        k = self.kind
        if k in (ReduceKind.SUM, ReduceKind.ANY):
            return identity_value(self.acc_dtype, "zero")
        if k in (ReduceKind.PROD, ReduceKind.ALL):
            return identity_value(self.acc_dtype, "one")
        if k in (ReduceKind.MAX, ReduceKind.ARGMAX):
            return identity_value(self.acc_dtype, "lowest")
        return identity_value(self.acc_dtype, "highest")

    def combine(self, w: SourceWriter, acc: str, value: str) -> str:
        """Elementwise combination of an accumulator with a chunk of values."""
        k = self.kind
        if k == ReduceKind.SUM:
            return f"{acc} + {value}"
        if k == ReduceKind.PROD:
            return f"{acc} * {value}"
        if k in (ReduceKind.MAX, ReduceKind.ANY):
            return self._extreme(w, "max", acc, value)
        return self._extreme(w, "min", acc, value)

    def _extreme(self, w: SourceWriter, which: str, a: str, b: str) -> str:
        if is_float_dtype(self.acc_dtype):
            w.helpers.add(f"_{which}_nan")
            return f"_{which}_nan({a}, {b})"
        return f"tl.{which}imum({a}, {b})"

    def combine_arg(self, w: SourceWriter, acc: str, position: str, value: str, index: str) -> str:
        """`value, position` of the combination of two argmax/argmin candidates."""
        name = f"_{self.kind.value}"
        w.helpers.add(name)
        return f"{name}({acc}, {position}, {value}, {index})"

    def final(self, w: SourceWriter, acc: str) -> str:
        """The `[XBLOCK]` reduction of an accumulator along its inner axis, in
        the result's value type."""
        k = self.kind
        if k in (ReduceKind.SUM, ReduceKind.PROD):
            helper = f"_row_{k.value}"
        elif k in (ReduceKind.ANY, ReduceKind.ALL):
            helper = "_row_max" if k == ReduceKind.ANY else "_row_min"
            w.helpers.add(helper)
            return f"({helper}({acc}) != 0)"
        else:
            helper = "_row_max" if k == ReduceKind.MAX else "_row_min"
            if is_float_dtype(self.acc_dtype):
                helper += "_nan"
        w.helpers.add(helper)
        return self.narrow(w, f"{helper}({acc})")

    def final_arg(self, w: SourceWriter, acc: str, position: str) -> str:
        """The `[XBLOCK]` int64 positions of the extremes of argmax/argmin
        accumulators (per-lane best values and their positions)."""
        name = f"_row_{self.kind.value}"
        w.helpers.add(name)
        return f"{name}({acc}, {position})"

    def narrow(self, w: SourceWriter, text: str) -> str:
        if self.acc_dtype == self.result_dtype:
            return text
        if self.unsigned_order:
            return f"{text}.to({self.acc_dtype}).to({self.result_dtype}, bitcast=True)"
        return convert(w, text, self.acc_dtype, self.result_dtype)
