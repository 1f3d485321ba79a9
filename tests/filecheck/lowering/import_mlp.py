# RUN: python %s > %t
# RUN: filecheck %s < %t
# RUN: filecheck %s --check-prefix=WHOLE < %t
"""An MLP: each linear layer is a reshape to 2-D, a transposed weight and ptensor.addmm; GELU is erf-based."""

import warnings

from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.import_fx import import_graph
from permalloy.tools.zoo import make_case

warnings.simplefilter("ignore")
case = make_case("mlp")
(graph,) = capture_aten_graphs(case.model, *case.inputs)
print(import_graph(graph).module)

# CHECK-LABEL: func.func @forward
# CHECK:      %[[FLAT:.*]] = ptensor.reshape %{{.*}} : !ptensor.tensor<[2, 8, 32], f32> -> !ptensor.tensor<[16, 32], f32>
# CHECK-NEXT: %[[W1:.*]] = ptensor.permute %{{.*}} [1, 0] : !ptensor.tensor<[128, 32], f32> -> !ptensor.tensor<[32, 128], f32>
# CHECK-NEXT: ptensor.addmm %{{.*}}, %[[FLAT]], %[[W1]] : !ptensor.tensor<[128], f32>, !ptensor.tensor<[16, 32], f32>, !ptensor.tensor<[32, 128], f32> -> !ptensor.tensor<[16, 128], f32>
# CHECK:      ptensor.unary erf
# CHECK:      ptensor.permute %{{.*}} [1, 0] : !ptensor.tensor<[32, 128], f32> -> !ptensor.tensor<[128, 32], f32>
# CHECK-NEXT: ptensor.addmm {{.*}} -> !ptensor.tensor<[16, 32], f32>
# CHECK-NEXT: %[[OUT:.*]] = ptensor.reshape {{.*}} -> !ptensor.tensor<[2, 8, 32], f32>
# CHECK-NEXT: func.return %[[OUT]]

# No op falls back to torch anywhere in the module.
# WHOLE-NOT: ptensor.fallback
