# RUN: python %s | filecheck %s
"""The sorts import as ptensor.sort (sort, stable sort, and argsort and msort,
which torch's decompositions make sorts) and ptensor.topk; kthvalue is the
last of a topk of the k smallest, selected (and unsqueezed with keepdim); a
scatter of a source, as a sort's backward makes it, is ptensor.scatter."""

import torch

from permalloy.lowering.capture import capture_aten_graphs, capture_training_graphs
from permalloy.lowering.import_fx import import_graph


def sorts(x):
    return (
        torch.sort(x, dim=-1),
        torch.sort(x, dim=0, descending=True, stable=True),
        torch.argsort(x, dim=1, stable=True),
        torch.msort(x),
        torch.topk(x, 3, largest=False, sorted=False),
        torch.kthvalue(x, 2, dim=0, keepdim=True),
    )


(graph,) = capture_aten_graphs(sorts, torch.randn(4, 6))
print(import_graph(graph).module)

# CHECK-LABEL: func.func @forward(%0: !ptensor.tensor<[4, 6], f32>)
# CHECK:         ptensor.sort %0 dim 1 : !ptensor.tensor<[4, 6], f32> -> !ptensor.tensor<[4, 6], f32>, !ptensor.tensor<[4, 6], i64>
# CHECK:         ptensor.sort %0 dim 0 descending stable : !ptensor.tensor<[4, 6], f32> -> !ptensor.tensor<[4, 6], f32>, !ptensor.tensor<[4, 6], i64>
# CHECK:         ptensor.sort %0 dim 1 stable
# CHECK:         ptensor.sort %0 dim 0 :
# CHECK:         ptensor.topk %0 k 3 dim 1 : !ptensor.tensor<[4, 6], f32> -> !ptensor.tensor<[4, 3], f32>, !ptensor.tensor<[4, 3], i64>
# CHECK:         %[[KV:.+]], %[[KI:.+]] = ptensor.topk %0 k 2 dim 0 sorted : !ptensor.tensor<[4, 6], f32> -> !ptensor.tensor<[2, 6], f32>, !ptensor.tensor<[2, 6], i64>
# CHECK-NEXT:    %[[V:.+]] = ptensor.select %[[KV]] dim 0 index 1 : !ptensor.tensor<[2, 6], f32> -> !ptensor.tensor<[6], f32>
# CHECK-NEXT:    ptensor.unsqueeze %[[V]] dim 0 : !ptensor.tensor<[6], f32> -> !ptensor.tensor<[1, 6], f32>
# CHECK-NEXT:    %[[I:.+]] = ptensor.select %[[KI]] dim 0 index 1 : !ptensor.tensor<[2, 6], i64> -> !ptensor.tensor<[6], i64>
# CHECK-NEXT:    ptensor.unsqueeze %[[I]] dim 0 : !ptensor.tensor<[6], i64> -> !ptensor.tensor<[1, 6], i64>


def largest(x):
    return torch.topk(x, 2).values


(forward, backward) = (c.graph_module for c in capture_training_graphs(largest, torch.randn(4, 6)))
print(import_graph(backward).module)

# CHECK-LABEL: func.func @forward
# CHECK:         ptensor.scatter %{{.+}}, %{{.+}}, %{{.+}} dim 1 : !ptensor.tensor<[4, 6], f32>, !ptensor.tensor<[4, 2], i64>, !ptensor.tensor<[4, 2], f32> -> !ptensor.tensor<[4, 6], f32>
