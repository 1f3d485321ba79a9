# RUN: python %s > %t
# RUN: filecheck %s < %t
# RUN: filecheck %s --check-prefix=WHOLE < %t
"""A BERT layer from transformers (small config, random weights): three projections, ptensor.attention, post-norm residuals, GELU MLP."""

import warnings

from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.import_fx import import_graph
from permalloy.tools.zoo import make_case

warnings.simplefilter("ignore")
case = make_case("bert_block")
(graph,) = capture_aten_graphs(case.model, *case.inputs)
print(import_graph(graph).module)

# CHECK-LABEL: func.func @forward
# CHECK-COUNT-3: ptensor.addmm {{.*}} -> !ptensor.tensor<[16, 32], f32>
# CHECK:      ptensor.attention {{.*}} -> !ptensor.tensor<[2, 4, 8, 8], f32>
# CHECK:      ptensor.addmm {{.*}} -> !ptensor.tensor<[16, 32], f32>
# CHECK:      ptensor.reduce sum {{.*}} dims [2] keepdim
# CHECK:      ptensor.unary rsqrt
# CHECK:      ptensor.addmm {{.*}} -> !ptensor.tensor<[16, 128], f32>
# CHECK:      ptensor.unary erf
# CHECK:      ptensor.addmm {{.*}} -> !ptensor.tensor<[16, 32], f32>
# CHECK:      ptensor.unary rsqrt
# CHECK:      func.return

# No op falls back to torch anywhere in the module.
# WHOLE-NOT: ptensor.fallback
