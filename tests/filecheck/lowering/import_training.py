# RUN: python %s > %t
# RUN: filecheck %s < %t
# RUN: filecheck %s --check-prefix=WHOLE < %t
"""
The forward and backward graphs of training steps, as the backend imports
them: the min-cut partitioner saves the input, mean and rstd of a layer norm
(not its normalized values, which the backward graph recomputes); a
convolution's input and weight gradients are one library op, its bias's a
sum over the output gradient's images and pixels; attention is torch's fused
kernel, forward and backward, each called whole (`ptensor.fallback` is the op
that calls an ATen op through torch; the importer records these as library
calls, not fallbacks).
"""

import warnings

from permalloy.lowering.capture import capture_training_graphs
from permalloy.lowering.import_fx import import_graph
from permalloy.tools.zoo import make_case

warnings.simplefilter("ignore")
for name in ("layer_norm", "conv_bn_relu", "causal_attention"):
    case = make_case(name)
    forward, backward = capture_training_graphs(case.model.train(), *case.inputs)
    print(f"// {name}: forward")
    print(import_graph(forward.graph_module).module)
    print(f"// {name}: backward")
    print(import_graph(backward.graph_module).module)

# CHECK-LABEL: // layer_norm: forward
# CHECK:       func.func @forward(%[[W:.*]]: !ptensor.tensor<[32], f32>, %[[B:.*]]: !ptensor.tensor<[32], f32>, %[[X:.*]]: !ptensor.tensor<[2, 8, 32], f32>)
# CHECK:       ptensor.binary div
# CHECK-NEXT:  %[[MEAN:.*]] = ptensor.binary add
# CHECK:       %[[RSTD:.*]] = ptensor.unary rsqrt
# CHECK:       func.return %[[OUT:.*]], %[[W]], %[[X]], %[[MEAN]], %[[RSTD]] :

# CHECK-LABEL: // layer_norm: backward
# CHECK:       func.func @forward(%[[BW:.*]]: !ptensor.tensor<[32], f32>, %[[BX:.*]]: !ptensor.tensor<[2, 8, 32], f32>, %[[BMEAN:.*]]: !ptensor.tensor<[2, 8, 1], f32>, %[[BRSTD:.*]]: !ptensor.tensor<[2, 8, 1], f32>, %[[DY:.*]]: !ptensor.tensor<[2, 8, 32], f32>)
# CHECK:       %[[CENTRED:.*]] = ptensor.binary sub %[[BX]], %[[BMEAN]]
# CHECK-NEXT:  ptensor.binary mul %[[CENTRED]], %[[BRSTD]]
# CHECK:       ptensor.reduce sum %{{.*}} dims [0, 1] : !ptensor.tensor<[2, 8, 32], f32> -> !ptensor.tensor<[32], f32>
# CHECK:       ptensor.reduce sum %[[DY]] dims [0, 1] : !ptensor.tensor<[2, 8, 32], f32> -> !ptensor.tensor<[32], f32>

# CHECK-LABEL: // conv_bn_relu: forward
# CHECK:       ptensor.convolution
# CHECK:       ptensor.compare le
# CHECK-LABEL: // conv_bn_relu: backward
# CHECK:       %[[DCONV:.*]] = ptensor.where
# CHECK:       ptensor.reduce sum %[[DCONV]] dims [0, 2, 3] : !ptensor.tensor<[{{.*}}], f32> -> !ptensor.tensor<[{{[0-9]+}}], f32>
# CHECK:       %{{.*}}, %{{.*}} = ptensor.convolution_backward %{{.*}} stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 output_mask [1, 1, 0]

# The forward returns the log-sum-exp that the backward reads.
# CHECK-LABEL: // causal_attention: forward
# CHECK:       %[[OUT:.*]], %[[LSE:.*]] = ptensor.fallback "aten._scaled_dot_product_flash_attention_for_cpu.default"({{.*}}) [#ptensor.operand<0>, #ptensor.operand<1>, #ptensor.operand<2>, 0.000000e+00 : f64, true]
# CHECK:       func.return {{.*}}%[[LSE]]
# CHECK-LABEL: // causal_attention: backward
# CHECK:       ptensor.fallback "aten._scaled_dot_product_flash_attention_for_cpu_backward.default"
# CHECK-NOT:   ptensor.bmm

# Attention is not the inference graphs' single-result library op here.
# WHOLE-NOT: ptensor.attention
