// RUN: permalloy-opt %s -p choose-depthwise-weight-gradients | filecheck %s
// RUN: permalloy-opt %s -p choose-depthwise-weight-gradients | permalloy-opt | filecheck %s

// choose-depthwise-weight-gradients (choose=always): the backward of a 2-d
// depthwise convolution of static layouts that computes the weight's
// gradient is marked with the first channel block of permalloy's
// weight-gradient kernel for its input's memory; other backwards stay the
// library's.

// Channels-last input and output gradient, with the input's gradient too:
// the channels-last block.
// CHECK-LABEL: func.func @channels_last(
// CHECK:         ptensor.convolution_backward %{{.*}}, %{{.*}}, %{{.*}} stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 output_mask [1, 1, 0] {depthwise_weight_block = #ptensor.ints[32, 4]}
func.func @channels_last(%dy: !buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>, %x: !buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>, %w: !buffer.buffer<[8, 1, 3, 3], f32>) -> (!buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>, !buffer.buffer<[8, 1, 3, 3], f32>) {
  %gx, %gw = buffer.extern ins(%a = %dy : !buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>, %b = %x : !buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>, %c = %w : !buffer.buffer<[8, 1, 3, 3], f32>) -> (!buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>, !buffer.buffer<[8, 1, 3, 3], f32>) {
    %r0, %r1 = ptensor.convolution_backward %a, %b, %c stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 output_mask [1, 1, 0] : !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[8, 1, 3, 3], f32> -> !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[8, 1, 3, 3], f32>
    buffer.yield %r0, %r1 : !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[8, 1, 3, 3], f32>
  }
  func.return %gx, %gw : !buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>, !buffer.buffer<[8, 1, 3, 3], f32>
}

// NCHW memory, a strided 5x5 window, the weight's gradient alone: the NCHW block.
// CHECK-LABEL: func.func @nchw(
// CHECK:         ptensor.convolution_backward {{.*}} groups 8 output_mask [0, 1, 0] {depthwise_weight_block = #ptensor.ints[16, 2]}
func.func @nchw(%dy: !buffer.buffer<[2, 8, 5, 5], f16>, %x: !buffer.buffer<[2, 8, 9, 9], f16>, %w: !buffer.buffer<[8, 1, 5, 5], f16>) -> !buffer.buffer<[8, 1, 5, 5], f16> {
  %gw = buffer.extern ins(%a = %dy : !buffer.buffer<[2, 8, 5, 5], f16>, %b = %x : !buffer.buffer<[2, 8, 9, 9], f16>, %c = %w : !buffer.buffer<[8, 1, 5, 5], f16>) -> (!buffer.buffer<[8, 1, 5, 5], f16>) {
    %r = ptensor.convolution_backward %a, %b, %c stride [2, 2] padding [2, 2] dilation [1, 1] groups 8 output_mask [0, 1, 0] : !ptensor.tensor<[2, 8, 5, 5], f16>, !ptensor.tensor<[2, 8, 9, 9], f16>, !ptensor.tensor<[8, 1, 5, 5], f16> -> !ptensor.tensor<[8, 1, 5, 5], f16>
    buffer.yield %r : !ptensor.tensor<[8, 1, 5, 5], f16>
  }
  func.return %gw : !buffer.buffer<[8, 1, 5, 5], f16>
}

// Refused: a grouped convolution of two channels a group, a depthwise one
// whose weight's gradient is not asked for, and one of symbolic batch.
// CHECK-LABEL: func.func @refused(
// CHECK-NOT:     depthwise_weight_block
// CHECK:         func.return
func.func @refused(%dy4: !buffer.buffer<[2, 4, 5, 5], f32>, %x: !buffer.buffer<[2, 8, 5, 5], f32>, %w2: !buffer.buffer<[4, 2, 3, 3], f32>, %dy: !buffer.buffer<[2, 8, 5, 5], f32>, %w: !buffer.buffer<[8, 1, 3, 3], f32>, %dys: !buffer.buffer<[s0, 8, 5, 5], f32>, %xs: !buffer.buffer<[s0, 8, 5, 5], f32>) -> (!buffer.buffer<[4, 2, 3, 3], f32>, !buffer.buffer<[2, 8, 5, 5], f32>, !buffer.buffer<[8, 1, 3, 3], f32>) {
  %g = buffer.extern ins(%a = %dy4 : !buffer.buffer<[2, 4, 5, 5], f32>, %b = %x : !buffer.buffer<[2, 8, 5, 5], f32>, %c = %w2 : !buffer.buffer<[4, 2, 3, 3], f32>) -> (!buffer.buffer<[4, 2, 3, 3], f32>) {
    %r = ptensor.convolution_backward %a, %b, %c stride [1, 1] padding [1, 1] dilation [1, 1] groups 4 output_mask [0, 1, 0] : !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[4, 2, 3, 3], f32> -> !ptensor.tensor<[4, 2, 3, 3], f32>
    buffer.yield %r : !ptensor.tensor<[4, 2, 3, 3], f32>
  }
  %i = buffer.extern ins(%a = %dy : !buffer.buffer<[2, 8, 5, 5], f32>, %b = %x : !buffer.buffer<[2, 8, 5, 5], f32>, %c = %w : !buffer.buffer<[8, 1, 3, 3], f32>) -> (!buffer.buffer<[2, 8, 5, 5], f32>) {
    %r = ptensor.convolution_backward %a, %b, %c stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 output_mask [1, 0, 0] : !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[8, 1, 3, 3], f32> -> !ptensor.tensor<[2, 8, 5, 5], f32>
    buffer.yield %r : !ptensor.tensor<[2, 8, 5, 5], f32>
  }
  %s = buffer.extern ins(%a = %dys : !buffer.buffer<[s0, 8, 5, 5], f32>, %b = %xs : !buffer.buffer<[s0, 8, 5, 5], f32>, %c = %w : !buffer.buffer<[8, 1, 3, 3], f32>) -> (!buffer.buffer<[8, 1, 3, 3], f32>) {
    %r = ptensor.convolution_backward %a, %b, %c stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 output_mask [0, 1, 0] : !ptensor.tensor<[s0, 8, 5, 5], f32>, !ptensor.tensor<[s0, 8, 5, 5], f32>, !ptensor.tensor<[8, 1, 3, 3], f32> -> !ptensor.tensor<[8, 1, 3, 3], f32>
    buffer.yield %r : !ptensor.tensor<[8, 1, 3, 3], f32>
  }
  func.return %g, %i, %s : !buffer.buffer<[4, 2, 3, 3], f32>, !buffer.buffer<[2, 8, 5, 5], f32>, !buffer.buffer<[8, 1, 3, 3], f32>
}
