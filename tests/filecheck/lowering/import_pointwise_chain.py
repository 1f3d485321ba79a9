# RUN: python %s > %t
# RUN: filecheck %s < %t
# RUN: filecheck %s --check-prefix=WHOLE < %t
"""The pointwise chain `tanh(x * 2 + 1) * sigmoid(x) - exp(-x * x)` imports as elementwise ops with 0-d scalar operands."""

import warnings

from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.import_fx import import_graph
from permalloy.tools.zoo import make_case

warnings.simplefilter("ignore")
case = make_case("pointwise_chain")
(graph,) = capture_aten_graphs(case.model, *case.inputs)
print(import_graph(graph).module)

# CHECK-LABEL: func.func @forward(%0: !ptensor.tensor<[2, 8, 32], f32>) -> !ptensor.tensor<[2, 8, 32], f32>
# CHECK:      %[[TWO:.*]] = ptensor.full 2.0 : !ptensor.tensor<[], f32>
# CHECK-NEXT: %[[MUL:.*]] = ptensor.binary mul %0, %[[TWO]] : !ptensor.tensor<[2, 8, 32], f32>, !ptensor.tensor<[], f32> -> !ptensor.tensor<[2, 8, 32], f32>
# CHECK-NEXT: %[[ONE:.*]] = ptensor.full 1.0 : !ptensor.tensor<[], f32>
# CHECK-NEXT: %[[ADD:.*]] = ptensor.binary add %[[MUL]], %[[ONE]]
# CHECK-NEXT: %[[TANH:.*]] = ptensor.unary tanh %[[ADD]]
# CHECK-NEXT: %[[SIGMOID:.*]] = ptensor.unary sigmoid %0
# CHECK-NEXT: %[[PRODUCT:.*]] = ptensor.binary mul %[[TANH]], %[[SIGMOID]]
# CHECK-NEXT: %[[NEG:.*]] = ptensor.unary neg %0
# CHECK-NEXT: %[[SQUARE:.*]] = ptensor.binary mul %[[NEG]], %0
# CHECK-NEXT: %[[EXP:.*]] = ptensor.unary exp %[[SQUARE]]
# CHECK-NEXT: %[[RESULT:.*]] = ptensor.binary sub %[[PRODUCT]], %[[EXP]]
# CHECK-NEXT: func.return %[[RESULT]] : !ptensor.tensor<[2, 8, 32], f32>

# No op falls back to torch anywhere in the module.
# WHOLE-NOT: ptensor.fallback
