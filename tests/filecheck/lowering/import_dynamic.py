# RUN: python %s > %t
# RUN: filecheck %s < %t
# RUN: filecheck %s --check-prefix=WHOLE < %t
"""A graph captured with a symbolic first dimension: sizes are `s0` and `index` arguments name it."""

import warnings

import torch

from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.import_fx import import_graph


def pointwise_and_mean(x):
    return torch.exp(x * 2).sum(-1) + x.mean(0).sum()


warnings.simplefilter("ignore")
x = torch.randn(6, 8)
torch._dynamo.mark_dynamic(x, 0)
(graph,) = capture_aten_graphs(pointwise_and_mean, x, dynamic=None)
print(import_graph(graph).module)

# CHECK-LABEL: func.func @forward
# CHECK-SAME:  index {ptensor.symbol = #sym.expr<s0>}
# CHECK-SAME:  !ptensor.tensor<[s0, 8], f32>
# CHECK-SAME:  -> !ptensor.tensor<[s0], f32>
# CHECK:      ptensor.unary exp %{{.*}} : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 8], f32>
# CHECK:      ptensor.reduce sum %{{.*}} dims [1] : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0], f32>
# The mean divides by s0, materialized as element s0 of an iota.
# CHECK:      %[[IOTA:.*]] = ptensor.iota start 0 step 1 : !ptensor.tensor<[s0 + 1], i64>
# CHECK-NEXT: %[[COUNT:.*]] = ptensor.select %[[IOTA]] dim 0 index s0 : !ptensor.tensor<[s0 + 1], i64> -> !ptensor.tensor<[], i64>
# CHECK-NEXT: %[[DIVISOR:.*]] = ptensor.cast %[[COUNT]] : !ptensor.tensor<[], i64> -> !ptensor.tensor<[], f32>
# CHECK-NEXT: ptensor.binary div %{{.*}}, %[[DIVISOR]]

# No op falls back to torch anywhere in the module.
# WHOLE-NOT: ptensor.fallback
