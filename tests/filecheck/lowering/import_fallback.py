# RUN: python %s | filecheck %s
"""ATen ops with no ptensor equivalent import as ptensor.fallback, arguments
encoded as attributes; a result torch lays out in another order than
row-major (the Cholesky factor, column-major) says so in `orders`."""

import warnings

import torch

from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.import_fx import import_graph


def uses_unsupported_ops(x):
    return torch.linalg.cholesky_ex(x, upper=True).L * 2, torch.mode(x, 0).values + 1


warnings.simplefilter("ignore")
(graph,) = capture_aten_graphs(uses_unsupported_ops, torch.randn(3, 3))
print(import_graph(graph).module)

# CHECK-LABEL: func.func @forward(%0: !ptensor.tensor<[3, 3], f32>)
# CHECK:      %[[FACTOR:.*]], %{{.*}} = ptensor.fallback "aten.linalg_cholesky_ex.default"(%0) [#ptensor.operand<0>] kwargs {upper = true} orders [array<i64: 1, 0>, array<i64>] : (!ptensor.tensor<[3, 3], f32>) -> (!ptensor.tensor<[3, 3], f32>, !ptensor.tensor<[], i32>)
# CHECK:      ptensor.binary mul %[[FACTOR]], %{{.*}} : !ptensor.tensor<[3, 3], f32>, !ptensor.tensor<[], f32> -> !ptensor.tensor<[3, 3], f32>
# CHECK:      %[[VALUES:.*]], %{{.*}} = ptensor.fallback "aten.mode.default"(%0) [#ptensor.operand<0>, 0 : i64] : (!ptensor.tensor<[3, 3], f32>) -> (!ptensor.tensor<[3], f32>, !ptensor.tensor<[3], i64>)
# CHECK:      ptensor.binary add %[[VALUES]]
