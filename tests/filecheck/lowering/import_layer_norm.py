# RUN: python %s > %t
# RUN: filecheck %s < %t
# RUN: filecheck %s --check-prefix=WHOLE < %t
"""Layer norm decomposes into two-pass mean and variance reductions (the mean shifted by each row's first element), rsqrt, and the affine weight and bias."""

import warnings

from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.import_fx import import_graph
from permalloy.tools.zoo import make_case

warnings.simplefilter("ignore")
case = make_case("layer_norm")
(graph,) = capture_aten_graphs(case.model, *case.inputs)
print(import_graph(graph).module)

# The mean is each row's first element plus the mean of the differences from
# it, exactly that element where a row's elements are equal.
# CHECK-LABEL: func.func @forward
# CHECK:      %[[FIRST:.*]] = ptensor.slice %[[X:.*]] dim 2 start 0 end 1 step 1 : !ptensor.tensor<[2, 8, 32], f32> -> !ptensor.tensor<[2, 8, 1], f32>
# CHECK:      %[[DIFFERENCES:.*]] = ptensor.binary sub %[[X]], %[[FIRST]]
# CHECK:      %[[SUM:.*]] = ptensor.reduce sum %[[DIFFERENCES]] dims [2] keepdim : !ptensor.tensor<[2, 8, 32], f32> -> !ptensor.tensor<[2, 8, 1], f32>
# CHECK:      %[[SHIFT:.*]] = ptensor.binary div %[[SUM]]
# CHECK:      %[[MEAN:.*]] = ptensor.binary add %[[FIRST]], %[[SHIFT]]
# CHECK:      %[[CENTRED:.*]] = ptensor.binary sub %[[X]], %[[MEAN]]
# CHECK:      %[[SQUARES:.*]] = ptensor.binary mul %[[CENTRED]], %[[CENTRED]]
# CHECK:      ptensor.reduce sum %[[SQUARES]] dims [2] keepdim
# CHECK:      ptensor.full 1.0e-05
# CHECK:      %[[RSTD:.*]] = ptensor.unary rsqrt
# CHECK:      ptensor.binary mul %{{.*}}, %[[RSTD]] : !ptensor.tensor<[2, 8, 32], f32>, !ptensor.tensor<[2, 8, 1], f32> -> !ptensor.tensor<[2, 8, 32], f32>
# CHECK:      ptensor.binary mul %{{.*}}, %{{.*}} : !ptensor.tensor<[2, 8, 32], f32>, !ptensor.tensor<[32], f32> -> !ptensor.tensor<[2, 8, 32], f32>
# CHECK:      %[[OUT:.*]] = ptensor.binary add %{{.*}}, %{{.*}} : !ptensor.tensor<[2, 8, 32], f32>, !ptensor.tensor<[32], f32> -> !ptensor.tensor<[2, 8, 32], f32>
# CHECK-NEXT: func.return %[[OUT]]

# No op falls back to torch anywhere in the module.
# WHOLE-NOT: ptensor.fallback
