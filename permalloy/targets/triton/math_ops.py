"""
Translation of `math` ops to Triton: `tl` functions where Triton has them on
every backend, helpers from `compat` (libdevice on GPUs) otherwise. Half
floats compute in float32.
"""

from __future__ import annotations

from xdsl.ir import Operation

from permalloy.targets.triton.arith import convert, result_dtype
from permalloy.targets.triton.compat import LIBDEVICE_MATH
from permalloy.targets.triton.source import SourceWriter, Value
from permalloy.targets.triton.types import UnsupportedKernelError, float_width, is_float_dtype

TL_MATH = {
    "absf": "tl.abs",
    "absi": "tl.abs",
    "exp": "tl.exp",
    "exp2": "tl.exp2",
    "log": "tl.log",
    "log2": "tl.log2",
    "sqrt": "tl.sqrt",
    "rsqrt": "tl.rsqrt",
    "sin": "tl.sin",
    "cos": "tl.cos",
    "erf": "tl.erf",
    "floor": "tl.floor",
    "ceil": "tl.ceil",
    "fma": "tl.fma",
}
"""math ops that `triton.language` computes on GPUs and in the interpreter alike."""

_RENAMED = {"powf": "pow"}


def translate_math(w: SourceWriter, op: Operation, args: list[Value]) -> str:
    """The Triton expression of a `math` op's result."""
    name = op.name.removeprefix("math.")
    dtype = result_dtype(op)
    if name in TL_MATH:
        function = TL_MATH[name]
    elif _RENAMED.get(name, name) in LIBDEVICE_MATH:
        function = "_" + _RENAMED.get(name, name)
        w.helpers.add(function)
    else:
        raise UnsupportedKernelError(f"the Triton target cannot translate math.{name}")
    narrow = is_float_dtype(dtype) and float_width(dtype) == 16
    texts = [convert(w, a.text, a.dtype, "tl.float32") if narrow else a.text for a in args]
    call = f"{function}({', '.join(texts)})"
    return convert(w, call, "tl.float32", dtype) if narrow else call
