# RUN: python %s | filecheck %s
"""ATen ops with no ptensor equivalent import as ptensor.fallback, arguments encoded as attributes."""

import warnings

import torch

from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.import_fx import import_graph


def uses_unsupported_ops(x):
    return torch.cumsum(x, 1, dtype=torch.float64) * 2, torch.sort(x, 0).values + 1


warnings.simplefilter("ignore")
(graph,) = capture_aten_graphs(uses_unsupported_ops, torch.randn(3, 4))
print(import_graph(graph).module)

# CHECK-LABEL: func.func @forward(%0: !ptensor.tensor<[3, 4], f32>)
# CHECK:      %[[CUMSUM:.*]] = ptensor.fallback "aten.cumsum.default"(%0) [#ptensor.operand<0>, 1 : i64] kwargs {dtype = f64} : (!ptensor.tensor<[3, 4], f32>) -> !ptensor.tensor<[3, 4], f64>
# CHECK:      ptensor.binary mul %[[CUMSUM]], %{{.*}} : !ptensor.tensor<[3, 4], f64>, !ptensor.tensor<[], f64> -> !ptensor.tensor<[3, 4], f64>
# CHECK:      %[[VALUES:.*]], %{{.*}} = ptensor.fallback "aten.sort.default"(%0) [#ptensor.operand<0>, 0 : i64] : (!ptensor.tensor<[3, 4], f32>) -> (!ptensor.tensor<[3, 4], f32>, !ptensor.tensor<[3, 4], i64>)
# CHECK:      ptensor.binary add %[[VALUES]]
