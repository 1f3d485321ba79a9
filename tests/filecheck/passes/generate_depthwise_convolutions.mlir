// RUN: permalloy-opt %s -p generate-depthwise-convolutions | filecheck %s

// A strided, padded depthwise convolution with a bias: the padded input seen
// through its windows, times the weight's taps, summed over the window.
// CHECK-LABEL: func.func @depthwise(
// CHECK-NEXT:    %[[P:.*]] = ptensor.pad %x constant 0.0 low [0, 0, 1, 1] high [0, 0, 1, 1] : !ptensor.tensor<[2, 8, 6, 6], f32> -> !ptensor.tensor<[2, 8, 8, 8], f32>
// CHECK-NEXT:    %[[V:.*]] = ptensor.as_strided %[[P]] strides [512, 64, 16, 2, 8, 1] offset 0 : !ptensor.tensor<[2, 8, 8, 8], f32> -> !ptensor.tensor<[2, 8, 3, 3, 3, 3], f32>
// CHECK-NEXT:    %[[T:.*]] = ptensor.reshape %w : !ptensor.tensor<[8, 1, 3, 3], f32> -> !ptensor.tensor<[8, 1, 1, 3, 3], f32>
// CHECK-NEXT:    %[[M:.*]] = ptensor.binary mul %[[V]], %[[T]]
// CHECK-NEXT:    %[[S:.*]] = ptensor.reduce sum %[[M]] dims [4, 5] : !ptensor.tensor<[2, 8, 3, 3, 3, 3], f32> -> !ptensor.tensor<[2, 8, 3, 3], f32>
// CHECK-NEXT:    %[[B:.*]] = ptensor.reshape %b : !ptensor.tensor<[8], f32> -> !ptensor.tensor<[8, 1, 1], f32>
// CHECK-NEXT:    %[[Y:.*]] = ptensor.binary add %[[S]], %[[B]]
// CHECK-NEXT:    func.return %[[Y]]
func.func @depthwise(%x: !ptensor.tensor<[2, 8, 6, 6], f32>, %w: !ptensor.tensor<[8, 1, 3, 3], f32>, %b: !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[2, 8, 3, 3], f32> {
  %y = ptensor.convolution %x, %w, %b stride [2, 2] padding [1, 1] dilation [1, 1] groups 8 : !ptensor.tensor<[2, 8, 6, 6], f32>, !ptensor.tensor<[8, 1, 3, 3], f32>, !ptensor.tensor<[8], f32> -> !ptensor.tensor<[2, 8, 3, 3], f32>
  func.return %y : !ptensor.tensor<[2, 8, 3, 3], f32>
}

// Half precision sums in float32 and rounds once; without padding there is no pad.
// CHECK-LABEL: func.func @half(
// CHECK-NEXT:    %[[X:.*]] = ptensor.cast %x : !ptensor.tensor<[2, 4, 8], bf16> -> !ptensor.tensor<[2, 4, 8], f32>
// CHECK-NEXT:    %[[V:.*]] = ptensor.as_strided %[[X]] strides [32, 8, 1, 1] offset 0 : !ptensor.tensor<[2, 4, 8], f32> -> !ptensor.tensor<[2, 4, 6, 3], f32>
// CHECK-NEXT:    %[[W:.*]] = ptensor.cast %w
// CHECK-NEXT:    %[[M:.*]] = ptensor.binary mul %[[V]], %[[W]]
// CHECK-NEXT:    %[[S:.*]] = ptensor.reduce sum %[[M]] dims [3]
// CHECK-NEXT:    %[[Y:.*]] = ptensor.cast %[[S]] : !ptensor.tensor<[2, 4, 6], f32> -> !ptensor.tensor<[2, 4, 6], bf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @half(%x: !ptensor.tensor<[2, 4, 8], bf16>, %w: !ptensor.tensor<[4, 1, 3], bf16>) -> !ptensor.tensor<[2, 4, 6], bf16> {
  %y = ptensor.convolution %x, %w stride [1] padding [0] dilation [1] groups 4 : !ptensor.tensor<[2, 4, 8], bf16>, !ptensor.tensor<[4, 1, 3], bf16> -> !ptensor.tensor<[2, 4, 6], bf16>
  func.return %y : !ptensor.tensor<[2, 4, 6], bf16>
}

// Refusal: two channels per group is not depthwise; the library runs it.
// CHECK-LABEL: func.func @grouped(
// CHECK-NEXT:    ptensor.convolution %x, %w
func.func @grouped(%x: !ptensor.tensor<[2, 8, 6, 6], f32>, %w: !ptensor.tensor<[8, 2, 3, 3], f32>) -> !ptensor.tensor<[2, 8, 6, 6], f32> {
  %y = ptensor.convolution %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 4 : !ptensor.tensor<[2, 8, 6, 6], f32>, !ptensor.tensor<[8, 2, 3, 3], f32> -> !ptensor.tensor<[2, 8, 6, 6], f32>
  func.return %y : !ptensor.tensor<[2, 8, 6, 6], f32>
}

// Refusal: a 9x9 window is above the default max-window (49).
// CHECK-LABEL: func.func @large_window(
// CHECK-NEXT:    ptensor.convolution %x, %w
func.func @large_window(%x: !ptensor.tensor<[1, 4, 12, 12], f32>, %w: !ptensor.tensor<[4, 1, 9, 9], f32>) -> !ptensor.tensor<[1, 4, 12, 12], f32> {
  %y = ptensor.convolution %x, %w stride [1, 1] padding [4, 4] dilation [1, 1] groups 4 : !ptensor.tensor<[1, 4, 12, 12], f32>, !ptensor.tensor<[4, 1, 9, 9], f32> -> !ptensor.tensor<[1, 4, 12, 12], f32>
  func.return %y : !ptensor.tensor<[1, 4, 12, 12], f32>
}
