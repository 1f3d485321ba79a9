# RUN: python %s | filecheck %s
"""ATen ops with no ptensor equivalent import as ptensor.fallback, arguments encoded as attributes."""

import warnings

import torch

from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.import_fx import import_graph


def uses_unsupported_ops(x, boundaries):
    return torch.bucketize(x, boundaries, out_int32=True) * 2, torch.sort(x, 0).values + 1


warnings.simplefilter("ignore")
(graph,) = capture_aten_graphs(uses_unsupported_ops, torch.randn(3, 4), torch.tensor([-0.5, 0.0, 0.5]))
print(import_graph(graph).module)

# CHECK-LABEL: func.func @forward(%0: !ptensor.tensor<[3, 4], f32>, %1: !ptensor.tensor<[3], f32>)
# CHECK:      %[[BUCKETS:.*]] = ptensor.fallback "aten.bucketize.Tensor"(%0, %1) [#ptensor.operand<0>, #ptensor.operand<1>] kwargs {out_int32 = true} : (!ptensor.tensor<[3, 4], f32>, !ptensor.tensor<[3], f32>) -> !ptensor.tensor<[3, 4], i32>
# CHECK:      ptensor.binary mul %[[BUCKETS]], %{{.*}} : !ptensor.tensor<[3, 4], i32>, !ptensor.tensor<[], i32> -> !ptensor.tensor<[3, 4], i32>
# CHECK:      %[[VALUES:.*]], %{{.*}} = ptensor.fallback "aten.sort.default"(%0) [#ptensor.operand<0>, 0 : i64] : (!ptensor.tensor<[3, 4], f32>) -> (!ptensor.tensor<[3, 4], f32>, !ptensor.tensor<[3, 4], i64>)
# CHECK:      ptensor.binary add %[[VALUES]]
