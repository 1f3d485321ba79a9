# RUN: python %s > %t
# RUN: filecheck %s < %t
# RUN: filecheck %s --check-prefix=WHOLE < %t
"""conv + batch norm (inference) + ReLU: ptensor.convolution, per-channel statistics, scale and shift each reshaped once to broadcast, ReLU as maximum with 0."""

import warnings

from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.import_fx import import_graph
from permalloy.tools.zoo import make_case

warnings.simplefilter("ignore")
case = make_case("conv_bn_relu")
(graph,) = capture_aten_graphs(case.model, *case.inputs)
print(import_graph(graph).module)

# CHECK-LABEL: func.func @forward
# CHECK:      %[[CONV:.*]] = ptensor.convolution %{{.*}}, %{{.*}}, %{{.*}} stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 4, 8, 8], f32>, !ptensor.tensor<[8, 4, 3, 3], f32>, !ptensor.tensor<[8], f32> -> !ptensor.tensor<[2, 8, 8, 8], f32>
# CHECK:      ptensor.unary sqrt
# CHECK:      ptensor.unary reciprocal
# CHECK:      %[[MEAN:.*]] = ptensor.reshape %{{.*}} : !ptensor.tensor<[8], f32> -> !ptensor.tensor<[1, 8, 1, 1], f32>
# CHECK-NEXT: ptensor.binary sub %[[CONV]], %[[MEAN]] : !ptensor.tensor<[2, 8, 8, 8], f32>, !ptensor.tensor<[1, 8, 1, 1], f32> -> !ptensor.tensor<[2, 8, 8, 8], f32>
# CHECK-NOT:  ptensor.unsqueeze
# CHECK:      %[[ZERO:.*]] = ptensor.full 0.0 : !ptensor.tensor<[], f32>
# CHECK-NEXT: %[[OUT:.*]] = ptensor.binary maximum %{{.*}}, %[[ZERO]] : !ptensor.tensor<[2, 8, 8, 8], f32>, !ptensor.tensor<[], f32> -> !ptensor.tensor<[2, 8, 8, 8], f32>
# CHECK-NEXT: func.return %[[OUT]]

# No op falls back to torch anywhere in the module.
# WHOLE-NOT: ptensor.fallback
