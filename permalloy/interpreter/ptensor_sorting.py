"""
Reference semantics of the sorts of ptensor (`ptensor.sort`, `ptensor.topk`):
torch.sort and torch.topk.
"""

from __future__ import annotations

import torch
from xdsl.interpreter import Interpreter, PythonValues

from permalloy.dialects import ptensor
from permalloy.interpreter.ptensor_common import PTensorFunctionsBase, tensor_impl


class SortFunctions(PTensorFunctionsBase):
    """`ptensor.sort` and `ptensor.topk` as the torch functions they stand for."""

    @tensor_impl(ptensor.SortOp)
    def run_sort(self, interpreter: Interpreter, op: ptensor.SortOp, args: PythonValues) -> PythonValues:
        (x,) = args
        values, indices = torch.sort(x, dim=op.dim.value.data, descending=op.is_descending, stable=op.stable is not None)
        return values, indices

    @tensor_impl(ptensor.TopkOp)
    def run_topk(self, interpreter: Interpreter, op: ptensor.TopkOp, args: PythonValues) -> PythonValues:
        (x,) = args
        values, indices = torch.topk(x, op.count, dim=op.dim.value.data, largest=op.is_largest, sorted=op.sorted is not None)
        return values, indices
