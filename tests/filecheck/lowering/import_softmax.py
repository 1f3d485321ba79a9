# RUN: python %s > %t
# RUN: filecheck %s < %t
# RUN: filecheck %s --check-prefix=WHOLE < %t
"""A masked softmax: the mask selects -inf with ptensor.where, then max, exp, sum and div along the last dimension."""

import warnings

from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.import_fx import import_graph
from permalloy.tools.zoo import make_case

warnings.simplefilter("ignore")
case = make_case("masked_softmax")
(graph,) = capture_aten_graphs(case.model, *case.inputs)
print(import_graph(graph).module)

# CHECK-LABEL: func.func @forward
# CHECK-SAME:  !ptensor.tensor<[2, 4, 8, 8], i1>
# CHECK:      %[[KEEP:.*]] = ptensor.unary bitwise_not %{{.*}} : !ptensor.tensor<[2, 4, 8, 8], i1> -> !ptensor.tensor<[2, 4, 8, 8], i1>
# CHECK-NEXT: %[[NEGINF:.*]] = ptensor.full -inf : !ptensor.tensor<[], f32>
# CHECK-NEXT: %[[MASKED:.*]] = ptensor.where %[[KEEP]], %[[NEGINF]], %{{.*}}
# CHECK-NEXT: %[[MAX:.*]] = ptensor.reduce max %[[MASKED]] dims [3] keepdim : !ptensor.tensor<[2, 4, 8, 8], f32> -> !ptensor.tensor<[2, 4, 8, 1], f32>
# CHECK-NEXT: %[[SHIFTED:.*]] = ptensor.binary sub %[[MASKED]], %[[MAX]]
# CHECK-NEXT: %[[EXP:.*]] = ptensor.unary exp %[[SHIFTED]]
# CHECK-NEXT: %[[SUM:.*]] = ptensor.reduce sum %[[EXP]] dims [3] keepdim
# CHECK-NEXT: %[[OUT:.*]] = ptensor.binary div %[[EXP]], %[[SUM]]
# CHECK-NEXT: func.return %[[OUT]]

# No op falls back to torch anywhere in the module.
# WHOLE-NOT: ptensor.fallback
