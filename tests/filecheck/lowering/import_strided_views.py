# RUN: python %s | filecheck %s
"""as_strided (and unfold, which torch decomposes into it) addresses its
input's storage: it imports as ptensor.as_strided of the nearest node up the
input's chain of views whose elements are dense and cover what it reads, put
in storage order (a permute where that node's strides are not row-major)."""

import warnings

import torch

from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.import_fx import import_graph


def windows(x, y):
    return (
        (x * 2).transpose(0, 1).unfold(0, 3, 2),
        torch.as_strided(y.expand(2, 4, 5), (2, 3), (0, 2), 1),
        torch.as_strided(y[1:], (2, 2), (5, 1), 7),
    )


warnings.simplefilter("ignore")
(graph,) = capture_aten_graphs(windows, torch.randn(4, 6), torch.randn(4, 5))
print(import_graph(graph).module)

# CHECK-LABEL: func.func @forward(%0: !ptensor.tensor<[4, 6], f32>, %1: !ptensor.tensor<[4, 5], f32>)
# CHECK:         %[[DOUBLED:.+]] = ptensor.binary mul %0, %{{.+}} : !ptensor.tensor<[4, 6], f32>, !ptensor.tensor<[], f32> -> !ptensor.tensor<[4, 6], f32>
# CHECK-NEXT:    %[[TRANSPOSED:.+]] = ptensor.permute %[[DOUBLED]] [1, 0] : !ptensor.tensor<[4, 6], f32> -> !ptensor.tensor<[6, 4], f32>
# CHECK-NEXT:    %[[STORAGE:.+]] = ptensor.permute %[[TRANSPOSED]] [1, 0] : !ptensor.tensor<[6, 4], f32> -> !ptensor.tensor<[4, 6], f32>
# CHECK-NEXT:    %[[UNFOLDED:.+]] = ptensor.as_strided %[[STORAGE]] strides [2, 6, 1] offset 0 : !ptensor.tensor<[4, 6], f32> -> !ptensor.tensor<[2, 4, 3], f32>
# CHECK:         %[[OF_EXPAND:.+]] = ptensor.as_strided %1 strides [0, 2] offset 1 : !ptensor.tensor<[4, 5], f32> -> !ptensor.tensor<[2, 3], f32>
# CHECK:         %[[OF_SLICE:.+]] = ptensor.as_strided %{{.+}} strides [5, 1] offset 2 : !ptensor.tensor<[3, 5], f32> -> !ptensor.tensor<[2, 2], f32>
# CHECK:         func.return %[[UNFOLDED]], %[[OF_EXPAND]], %[[OF_SLICE]]
