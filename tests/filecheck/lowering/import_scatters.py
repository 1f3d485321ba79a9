# RUN: python %s | filecheck %s
"""The scatters import as ptensor.scatter_reduce (scatter_reduce, scatter
with a reduce argument, index_reduce with its index broadcast along the
source's other dimensions) and ptensor.index_put (index_add, with alpha);
a mean is a sum over counts of the values (one more with the input's
element), divided where the count is not zero."""

import torch

from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.import_fx import import_graph


def scatters(x, i, s, rows):
    return (
        x.scatter_reduce(0, i, s, "amax", include_self=False),
        x.scatter(1, i[:5] % 4, s, reduce="multiply"),
        x.index_reduce(0, rows, s[:3], "amin"),
        x.index_add(0, rows, s[:3], alpha=2),
        x.scatter_reduce(0, i, s, "mean"),
    )


example = (torch.randn(5, 4), torch.randint(0, 5, (7, 4)), torch.randn(7, 4), torch.tensor([0, 4, 0]))
(graph,) = capture_aten_graphs(scatters, *example)
print(import_graph(graph).module)

# CHECK-LABEL: func.func @forward(%0: !ptensor.tensor<[5, 4], f32>, %1: !ptensor.tensor<[7, 4], i64>, %2: !ptensor.tensor<[7, 4], f32>, %3: !ptensor.tensor<[3], i64>)
# CHECK:         ptensor.scatter_reduce max %0, %1, %2 dim 0 : !ptensor.tensor<[5, 4], f32>, !ptensor.tensor<[7, 4], i64>, !ptensor.tensor<[7, 4], f32> -> !ptensor.tensor<[5, 4], f32>
# CHECK:         ptensor.scatter_reduce prod %0, %{{.+}}, %2 dim 1 include_self : !ptensor.tensor<[5, 4], f32>, !ptensor.tensor<[5, 4], i64>, !ptensor.tensor<[7, 4], f32> -> !ptensor.tensor<[5, 4], f32>
# CHECK:         %[[COLUMN:.+]] = ptensor.reshape %3 : !ptensor.tensor<[3], i64> -> !ptensor.tensor<[3, 1], i64>
# CHECK-NEXT:    %[[SPREAD:.+]] = ptensor.expand %[[COLUMN]] : !ptensor.tensor<[3, 1], i64> -> !ptensor.tensor<[3, 4], i64>
# CHECK-NEXT:    ptensor.scatter_reduce min %0, %[[SPREAD]], %{{.+}} dim 0 include_self
# CHECK:         ptensor.index_put %0[%3] dims [0], %{{.+}} accumulate
# CHECK:         %[[SUM:.+]] = ptensor.scatter_reduce sum %0, %1, %2 dim 0 include_self
# CHECK:         %[[ONES:.+]] = ptensor.expand %{{.+}} : !ptensor.tensor<[], f32> -> !ptensor.tensor<[7, 4], f32>
# CHECK:         %[[START:.+]] = ptensor.expand %{{.+}} : !ptensor.tensor<[], f32> -> !ptensor.tensor<[5, 4], f32>
# CHECK-NEXT:    %[[COUNT:.+]] = ptensor.scatter_reduce sum %[[START]], %1, %[[ONES]] dim 0 include_self
# CHECK:         %[[EMPTY:.+]] = ptensor.compare eq %[[COUNT]]
# CHECK:         %[[DIVISOR:.+]] = ptensor.where %[[EMPTY]], %{{.+}}, %[[COUNT]]
# CHECK-NEXT:    ptensor.binary div %[[SUM]], %[[DIVISOR]]
