# RUN: python %s > %t
# RUN: filecheck %s < %t
# RUN: filecheck %s --check-prefix=WHOLE < %t
"""A causal attention block: q, k and v are slices of one projection, and SDPA is one ptensor.attention op."""

import warnings

from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.import_fx import import_graph
from permalloy.tools.zoo import make_case

warnings.simplefilter("ignore")
case = make_case("causal_attention")
(graph,) = capture_aten_graphs(case.model, *case.inputs)
print(import_graph(graph).module)

# CHECK-LABEL: func.func @forward
# CHECK:      ptensor.addmm {{.*}} -> !ptensor.tensor<[16, 96], f32>
# CHECK:      ptensor.slice %{{.*}} dim 2 start 0 end 32 step 1 : !ptensor.tensor<[2, 8, 96], f32> -> !ptensor.tensor<[2, 8, 32], f32>
# CHECK:      ptensor.slice %{{.*}} dim 2 start 32 end 64 step 1
# CHECK:      ptensor.slice %{{.*}} dim 2 start 64 end 96 step 1
# CHECK:      ptensor.permute %{{.*}} [0, 2, 1, 3] : !ptensor.tensor<[2, 8, 4, 8], f32> -> !ptensor.tensor<[2, 4, 8, 8], f32>
# CHECK:      %[[ATTENTION:.*]] = ptensor.attention %{{.*}}, %{{.*}}, %{{.*}} causal : !ptensor.tensor<[2, 4, 8, 8], f32>, !ptensor.tensor<[2, 4, 8, 8], f32>, !ptensor.tensor<[2, 4, 8, 8], f32> -> !ptensor.tensor<[2, 4, 8, 8], f32>
# CHECK-NEXT: ptensor.permute %[[ATTENTION]] [0, 2, 1, 3]
# CHECK:      ptensor.addmm {{.*}} -> !ptensor.tensor<[16, 32], f32>

# No op falls back to torch anywhere in the module.
# WHOLE-NOT: ptensor.fallback
