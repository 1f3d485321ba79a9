"""
Scan kinds (`loop.scan`) as Triton code.

A stage scans each chunk of its inner axis with `tl.associative_scan` along
the chunk's inner dimension (`tl.cumsum` and `tl.cumprod` for sums and
products), combines the chunk's prefixes with the running value that the
earlier chunks left (the `carry`, one per row) and takes the chunk's last
column as the next carry. Values are widened as reductions widen them
(f16/bf16 to f32, i1 to i8, unsigned maxima and minima ordered unsigned);
masked lanes take the kind's identity. Max and min keep the later value on
ties and propagate NaN (a later NaN replaces an earlier one); argmax and
argmin scan (value, position) pairs, the position following the value, as
torch's cummax and cummin give it. Log-sum-exp combines as torch does:
the larger plus log1p(exp(smaller - larger)), equal infinities giving
themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

from permalloy.dialects.ptensor import ScanKind
from permalloy.targets.triton.arith import convert
from permalloy.targets.triton.source import SourceWriter
from permalloy.targets.triton.types import (
    float_width,
    identity_value,
    is_bool_dtype,
    is_float_dtype,
    unsigned,
)

BOOL_KINDS = {ScanKind.SUM: ScanKind.MAX, ScanKind.PROD: ScanKind.MIN}
POSITION_KINDS = {ScanKind.ARGMAX: "max", ScanKind.ARGMIN: "min"}
EXTREME_KINDS = {ScanKind.MAX: "max", ScanKind.MIN: "min"}


@dataclass(frozen=True)
class Scan:
    """The code of one scan kind over body values of `value_dtype`."""

    kind: ScanKind
    value_dtype: str
    result_dtype: str
    unsigned_order: bool = False

    @staticmethod
    def of(kind: ScanKind, value_dtype: str, result_dtype: str, unsigned_result: bool) -> Scan:
        if is_bool_dtype(value_dtype):
            kind = BOOL_KINDS.get(kind, kind)
        return Scan(kind, value_dtype, result_dtype, unsigned_result and kind in EXTREME_KINDS)

    @property
    def is_position(self) -> bool:
        return self.kind in POSITION_KINDS

    @property
    def acc_dtype(self) -> str:
        v = self.value_dtype
        if is_bool_dtype(v):
            return "tl.int8"
        if is_float_dtype(v):
            return "tl.float32" if float_width(v) < 32 else v
        return unsigned(v) if self.unsigned_order else v

    def widen(self, text: str) -> str:
        """A body value in the accumulator type."""
        acc = self.acc_dtype
        if acc == self.value_dtype:
            return text
        if self.unsigned_order:
            return f"{text}.to({acc}, bitcast=True)"
        return f"{text}.to({acc})"

    def identity(self) -> str:
        k = self.kind
        if k == ScanKind.SUM:
            return identity_value(self.acc_dtype, "zero")
        if k == ScanKind.PROD:
            return identity_value(self.acc_dtype, "one")
        if k in (ScanKind.MAX, ScanKind.ARGMAX, ScanKind.LOGSUMEXP):
            return identity_value(self.acc_dtype, "lowest")
        return identity_value(self.acc_dtype, "highest")

    def scan(self, w: SourceWriter, values: str, positions: str | None) -> str:
        """The prefixes of a `[rows, inner]` block along its inner dimension:
        values, or `values, positions` for argmax and argmin."""
        k = self.kind
        if k in (ScanKind.SUM, ScanKind.PROD):
            helper = f"_scan_{k.value}"
            w.helpers.add(helper)
            return f"{helper}({values})"
        if k in POSITION_KINDS:
            helper = f"_cumarg{POSITION_KINDS[k]}"
            w.helpers.add(helper)
            return f"tl.associative_scan(({values}, {positions}), 1, {helper})"
        helper = self._combine_helper(w)
        return f"tl.associative_scan({values}, 1, {helper})"

    def combine(self, w: SourceWriter, earlier: str, later: str) -> str:
        """The elementwise combination of running values with later prefixes."""
        k = self.kind
        if k == ScanKind.SUM:
            return f"{earlier} + {later}"
        if k == ScanKind.PROD:
            return f"{earlier} * {later}"
        return f"{self._combine_helper(w)}({earlier}, {later})"

    def combine_positions(self, w: SourceWriter, earlier: tuple[str, str], later: tuple[str, str]) -> str:
        """`values, positions` of the combination of running (value, position)
        pairs with later ones."""
        helper = f"_cumarg{POSITION_KINDS[self.kind]}"
        w.helpers.add(helper)
        return f"{helper}({earlier[0]}, {earlier[1]}, {later[0]}, {later[1]})"

    def _combine_helper(self, w: SourceWriter) -> str:
        helper = "_log_add_exp" if self.kind == ScanKind.LOGSUMEXP else f"_cum{EXTREME_KINDS[self.kind]}"
        w.helpers.add(helper)
        return helper

    def narrow(self, w: SourceWriter, text: str) -> str:
        """A running value as a value of the result's dtype."""
        if self.acc_dtype == self.result_dtype:
            return text
        if self.unsigned_order:
            return f"{text}.to({self.result_dtype}, bitcast=True)"
        if is_bool_dtype(self.result_dtype):
            return f"({text} != 0)"
        return convert(w, text, self.acc_dtype, self.result_dtype)
