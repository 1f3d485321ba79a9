# RUN: python %s > %t
# RUN: filecheck %s < %t
# RUN: filecheck %s --check-prefix=WHOLE < %t
"""A GPT-2 block from transformers (small config, random weights): layer norms, attention as ptensor.attention, tanh-GELU MLP, residuals."""

import warnings

from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.import_fx import import_graph
from permalloy.tools.zoo import make_case

warnings.simplefilter("ignore")
case = make_case("gpt2_block")
(graph,) = capture_aten_graphs(case.model, *case.inputs)
print(import_graph(graph).module)

# CHECK-LABEL: func.func @forward
# CHECK:      ptensor.reduce sum %{{.*}} dims [2] keepdim : !ptensor.tensor<[2, 8, 32], f32> -> !ptensor.tensor<[2, 8, 1], f32>
# CHECK:      ptensor.unary rsqrt
# CHECK:      ptensor.addmm {{.*}} -> !ptensor.tensor<[16, 96], f32>
# CHECK:      ptensor.attention {{.*}} causal {{.*}} -> !ptensor.tensor<[2, 4, 8, 8], f32>
# CHECK:      ptensor.addmm {{.*}} -> !ptensor.tensor<[16, 32], f32>
# CHECK:      ptensor.binary add {{.*}} -> !ptensor.tensor<[2, 8, 32], f32>
# CHECK:      ptensor.unary rsqrt
# CHECK:      ptensor.addmm {{.*}} -> !ptensor.tensor<[16, 128], f32>
# CHECK:      ptensor.unary tanh
# CHECK:      ptensor.addmm {{.*}} -> !ptensor.tensor<[16, 32], f32>
# CHECK:      %[[OUT:.*]] = ptensor.binary add {{.*}} -> !ptensor.tensor<[2, 8, 32], f32>
# CHECK-NEXT: func.return %[[OUT]]

# No op falls back to torch anywhere in the module.
# WHOLE-NOT: ptensor.fallback
