# RUN: python %s | filecheck %s
"""Scans import as ptensor.scan: cumsum and cumprod take their input in the
result's dtype (int64 for integers and bools, or the `dtype` argument),
negative dimensions count from the end, cummax and cummin are two scans (the
values and their positions), and a 0-d tensor is its own scan."""

import torch

from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.import_fx import import_graph


def scans(x, mask, s):
    return (
        torch.cumsum(x, -1),
        mask.cumsum(1),
        torch.cumprod(x, 0, dtype=torch.float64),
        torch.logcumsumexp(x, 1),
        torch.cummax(x, 0),
        torch.cummin(mask, -1),
        torch.cumsum(s, 0),
        torch.cummax(s, -1),
    )


(graph,) = capture_aten_graphs(scans, torch.randn(3, 4), torch.rand(3, 4) < 0.5, torch.tensor(2.0))
print(import_graph(graph).module)

# CHECK-LABEL: func.func @forward(%0: !ptensor.tensor<[3, 4], f32>, %1: !ptensor.tensor<[3, 4], i1>, %2: !ptensor.tensor<[], f32>)
# CHECK-NEXT:    %[[SUM:.+]] = ptensor.scan sum %0 dim 1 : !ptensor.tensor<[3, 4], f32> -> !ptensor.tensor<[3, 4], f32>
# CHECK-NEXT:    %[[WIDE:.+]] = ptensor.cast %1 : !ptensor.tensor<[3, 4], i1> -> !ptensor.tensor<[3, 4], i64>
# CHECK-NEXT:    %[[COUNT:.+]] = ptensor.scan sum %[[WIDE]] dim 1 : !ptensor.tensor<[3, 4], i64> -> !ptensor.tensor<[3, 4], i64>
# CHECK-NEXT:    %[[DOUBLE:.+]] = ptensor.cast %0 : !ptensor.tensor<[3, 4], f32> -> !ptensor.tensor<[3, 4], f64>
# CHECK-NEXT:    %[[PROD:.+]] = ptensor.scan prod %[[DOUBLE]] dim 0 : !ptensor.tensor<[3, 4], f64> -> !ptensor.tensor<[3, 4], f64>
# CHECK-NEXT:    %[[LSE:.+]] = ptensor.scan logsumexp %0 dim 1 : !ptensor.tensor<[3, 4], f32> -> !ptensor.tensor<[3, 4], f32>
# CHECK-NEXT:    %[[MAX:.+]] = ptensor.scan max %0 dim 0 : !ptensor.tensor<[3, 4], f32> -> !ptensor.tensor<[3, 4], f32>
# CHECK-NEXT:    %[[ARGMAX:.+]] = ptensor.scan argmax %0 dim 0 : !ptensor.tensor<[3, 4], f32> -> !ptensor.tensor<[3, 4], i64>
# CHECK-NEXT:    %[[MIN:.+]] = ptensor.scan min %1 dim 1 : !ptensor.tensor<[3, 4], i1> -> !ptensor.tensor<[3, 4], i1>
# CHECK-NEXT:    %[[ARGMIN:.+]] = ptensor.scan argmin %1 dim 1 : !ptensor.tensor<[3, 4], i1> -> !ptensor.tensor<[3, 4], i64>
# CHECK-NEXT:    %[[ZERO:.+]] = ptensor.full 0 : !ptensor.tensor<[], i64>
# CHECK-NEXT:    func.return %[[SUM]], %[[COUNT]], %[[PROD]], %[[LSE]], %[[MAX]], %[[ARGMAX]], %[[MIN]], %[[ARGMIN]], %2, %2, %[[ZERO]] :
