"""
`ptensor.fft`, a discrete Fourier transform run by a library, on complex
tensors in their real pair layout: a complex tensor of shape S is a float
tensor of shape S + [2] (real, imaginary), so that ptensor needs no complex
element type (`permalloy.complex_layout`).
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.dialects.builtin import I64, IntegerAttr, UnitAttr
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

from permalloy.dialects.ptensor.checks import check_dims, check_float_operands, check_shape, require
from permalloy.dialects.ptensor.kinds import FftKind, FftKindAttr
from permalloy.dialects.ptensor.types import IntListAttr, TensorType, sizes_equal, tensor_type
from permalloy.dialects.sym import FloorDiv

NORMALIZATIONS = (0, 1, 2)
"""torch's FFT normalizations: none, by the square root of the transformed
size, by the transformed size."""


@irdl_op_definition
class FftOp(IRDLOperation):
    """
    torch's `_fft_r2c`, `_fft_c2c` or `_fft_c2r` over dimensions `dims` of
    the complex tensor (of the real input, for `r2c`), with complex tensors
    as real pairs, run by a library.

    `%y = ptensor.fft c2c %x dims [1] normalization 0 forward : !ptensor.tensor<[4, 8, 2], f32> -> !ptensor.tensor<[4, 8, 2], f32>`.

    `r2c` takes a real tensor and gives the pair of its transform, whose
    last transformed dimension keeps `n // 2 + 1` of its `n` frequencies
    when `onesided`; `c2c` transforms a pair forwards (`forward`) or
    backwards; `c2r` gives the real inverse transform of a pair, whose last
    transformed dimension has the result's size. `normalization` scales by
    nothing (0), the square root of the transformed size (1) or the size (2).
    """

    name = "ptensor.fft"

    kind = prop_def(FftKindAttr)
    dims = prop_def(IntListAttr)
    normalization = prop_def(IntegerAttr[I64])
    forward = opt_prop_def(UnitAttr)
    onesided = opt_prop_def(UnitAttr)
    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$kind $input `dims` $dims `normalization` $normalization (`forward` $forward^)? "
        "(`onesided` $onesided^)? attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        kind: FftKind,
        input: SSAValue,
        dims: Sequence[int],
        normalization: int,
        result_type: TensorType,
        forward: bool = False,
        onesided: bool = False,
    ):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                "kind": FftKindAttr(kind),
                "dims": IntListAttr(dims),
                "normalization": IntegerAttr(normalization, 64),
                "forward": UnitAttr() if forward else None,
                "onesided": UnitAttr() if onesided else None,
            },
        )

    def verify_(self) -> None:
        source, result = tensor_type(self.input), tensor_type(self.result)
        kind = self.kind.data
        check_float_operands(self, self.input, self.result)
        require(
            self.normalization.value.data in NORMALIZATIONS,
            f"ptensor.fft: normalization {self.normalization.value.data} is not one of {NORMALIZATIONS}",
        )
        require(
            self.forward is None or kind == FftKind.C2C,
            "ptensor.fft: only c2c has a direction (r2c is forwards, c2r backwards)",
        )
        require(self.onesided is None or kind == FftKind.R2C, "ptensor.fft: only r2c is onesided")
        real, pair = (source, result) if kind == FftKind.R2C else (result, source)
        if kind == FftKind.C2C:
            real = None
        require(pair.rank >= 1 and sizes_equal(pair.sizes[-1], 2), f"ptensor.fft {kind}: complex tensors are [..., 2] pairs")
        complex_sizes = list(pair.sizes[:-1])
        dims = list(self.dims.data)
        require(bool(dims), "ptensor.fft transforms at least one dimension")
        check_dims(dims, len(complex_sizes), "ptensor.fft dimension")
        if kind == FftKind.C2C:
            check_shape(self.name, result, source.sizes)
            return
        require(real.rank == len(complex_sizes), f"ptensor.fft {kind}: the real tensor is the pair less its 2")
        last = dims[-1]
        expected = list(real.sizes)
        if kind == FftKind.C2R or self.onesided is not None:
            expected[last] = FloorDiv(real.sizes[last], 2) + sympy.Integer(1)
        if kind == FftKind.R2C:
            check_shape(self.name, result, [*expected, sympy.Integer(2)])
            return
        for position, (size, wanted) in enumerate(zip(complex_sizes, expected)):
            require(
                position == last or sizes_equal(size, wanted),
                f"ptensor.fft c2r: input size {size} of dimension {position} should be the result's {wanted}",
            )
