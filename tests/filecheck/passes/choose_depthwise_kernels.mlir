// RUN: permalloy-opt %s -p choose-depthwise-kernels | filecheck %s
// RUN: permalloy-opt %s -p choose-depthwise-kernels | permalloy-opt | filecheck %s

// choose-depthwise-kernels (choose=always): a 2-d depthwise convolution of
// static layouts is marked with the first tile of permalloy's depthwise
// kernel for its input's memory; other convolutions stay the library's.

// Channels-last input and result, with a bias: the channels-last tile.
// CHECK-LABEL: func.func @channels_last(
// CHECK:         ptensor.convolution %{{.*}}, %{{.*}}, %{{.*}} stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 {depthwise_tile = #ptensor.ints[4, 8, 32, 4]}
func.func @channels_last(%x: !buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>, %w: !buffer.buffer<[8, 1, 3, 3], f32>, %b: !buffer.buffer<[8], f32>) -> !buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]> {
  %y = buffer.extern ins(%a = %x : !buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>, %c = %w : !buffer.buffer<[8, 1, 3, 3], f32>, %d = %b : !buffer.buffer<[8], f32>) -> (!buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>) {
    %r = ptensor.convolution %a, %c, %d stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 : !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[8, 1, 3, 3], f32>, !ptensor.tensor<[8], f32> -> !ptensor.tensor<[2, 8, 5, 5], f32>
    buffer.yield %r : !ptensor.tensor<[2, 8, 5, 5], f32>
  }
  func.return %y : !buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>
}

// NCHW memory, a strided 5x5 window: the NCHW tile.
// CHECK-LABEL: func.func @nchw(
// CHECK:         ptensor.convolution {{.*}} groups 8 {depthwise_tile = #ptensor.ints[8, 8, 4, 4]}
func.func @nchw(%x: !buffer.buffer<[2, 8, 9, 9], f16>, %w: !buffer.buffer<[8, 1, 5, 5], f16>) -> !buffer.buffer<[2, 8, 5, 5], f16> {
  %y = buffer.extern ins(%a = %x : !buffer.buffer<[2, 8, 9, 9], f16>, %c = %w : !buffer.buffer<[8, 1, 5, 5], f16>) -> (!buffer.buffer<[2, 8, 5, 5], f16>) {
    %r = ptensor.convolution %a, %c stride [2, 2] padding [2, 2] dilation [1, 1] groups 8 : !ptensor.tensor<[2, 8, 9, 9], f16>, !ptensor.tensor<[8, 1, 5, 5], f16> -> !ptensor.tensor<[2, 8, 5, 5], f16>
    buffer.yield %r : !ptensor.tensor<[2, 8, 5, 5], f16>
  }
  func.return %y : !buffer.buffer<[2, 8, 5, 5], f16>
}

// Refused: a grouped convolution of two channels a group, a transposed
// depthwise one, one of symbolic batch, and one whose planned result is
// NCHW where its input is channels-last (the kernel writes the input's).
// CHECK-LABEL: func.func @refused(
// CHECK-NOT:     depthwise_tile
// CHECK:         func.return
func.func @refused(%x: !buffer.buffer<[2, 8, 5, 5], f32>, %w2: !buffer.buffer<[4, 2, 3, 3], f32>, %w: !buffer.buffer<[8, 1, 3, 3], f32>, %s: !buffer.buffer<[s0, 8, 5, 5], f32>, %cl: !buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>) -> (!buffer.buffer<[2, 4, 5, 5], f32>, !buffer.buffer<[2, 8, 5, 5], f32>, !buffer.buffer<[s0, 8, 5, 5], f32>, !buffer.buffer<[2, 8, 5, 5], f32>) {
  %g = buffer.extern ins(%a = %x : !buffer.buffer<[2, 8, 5, 5], f32>, %c = %w2 : !buffer.buffer<[4, 2, 3, 3], f32>) -> (!buffer.buffer<[2, 4, 5, 5], f32>) {
    %r = ptensor.convolution %a, %c stride [1, 1] padding [1, 1] dilation [1, 1] groups 4 : !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[4, 2, 3, 3], f32> -> !ptensor.tensor<[2, 4, 5, 5], f32>
    buffer.yield %r : !ptensor.tensor<[2, 4, 5, 5], f32>
  }
  %t = buffer.extern ins(%a = %x : !buffer.buffer<[2, 8, 5, 5], f32>, %c = %w : !buffer.buffer<[8, 1, 3, 3], f32>) -> (!buffer.buffer<[2, 8, 5, 5], f32>) {
    %r = ptensor.convolution %a, %c stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 transposed output_padding [0, 0] : !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[8, 1, 3, 3], f32> -> !ptensor.tensor<[2, 8, 5, 5], f32>
    buffer.yield %r : !ptensor.tensor<[2, 8, 5, 5], f32>
  }
  %d = buffer.extern ins(%a = %s : !buffer.buffer<[s0, 8, 5, 5], f32>, %c = %w : !buffer.buffer<[8, 1, 3, 3], f32>) -> (!buffer.buffer<[s0, 8, 5, 5], f32>) {
    %r = ptensor.convolution %a, %c stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 : !ptensor.tensor<[s0, 8, 5, 5], f32>, !ptensor.tensor<[8, 1, 3, 3], f32> -> !ptensor.tensor<[s0, 8, 5, 5], f32>
    buffer.yield %r : !ptensor.tensor<[s0, 8, 5, 5], f32>
  }
  %n = buffer.extern ins(%a = %cl : !buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>, %c = %w : !buffer.buffer<[8, 1, 3, 3], f32>) -> (!buffer.buffer<[2, 8, 5, 5], f32>) {
    %r = ptensor.convolution %a, %c stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 : !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[8, 1, 3, 3], f32> -> !ptensor.tensor<[2, 8, 5, 5], f32>
    buffer.yield %r : !ptensor.tensor<[2, 8, 5, 5], f32>
  }
  func.return %g, %t, %d, %n : !buffer.buffer<[2, 4, 5, 5], f32>, !buffer.buffer<[2, 8, 5, 5], f32>, !buffer.buffer<[s0, 8, 5, 5], f32>, !buffer.buffer<[2, 8, 5, 5], f32>
}
