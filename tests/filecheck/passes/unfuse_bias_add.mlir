// RUN: permalloy-opt %s -p unfuse-bias-add | filecheck %s

// A linear layer and its activation: the product loses its bias, which the
// activation's kernel adds.
// CHECK-LABEL: func.func @activation(
// CHECK-NEXT:    %[[P:.*]] = ptensor.mm %x, %w : !ptensor.tensor<[8, 32], f32>, !ptensor.tensor<[32, 64], f32> -> !ptensor.tensor<[8, 64], f32>
// CHECK-NEXT:    %[[Y:.*]] = ptensor.binary add %bias, %[[P]] : !ptensor.tensor<[64], f32>, !ptensor.tensor<[8, 64], f32> -> !ptensor.tensor<[8, 64], f32>
// CHECK-NEXT:    %[[Z:.*]] = ptensor.unary tanh %[[Y]]
// CHECK-NEXT:    func.return %[[Z]]
func.func @activation(%bias: !ptensor.tensor<[64], f32>, %x: !ptensor.tensor<[8, 32], f32>, %w: !ptensor.tensor<[32, 64], f32>) -> !ptensor.tensor<[8, 64], f32> {
  %y = ptensor.addmm %bias, %x, %w : !ptensor.tensor<[64], f32>, !ptensor.tensor<[8, 32], f32>, !ptensor.tensor<[32, 64], f32> -> !ptensor.tensor<[8, 64], f32>
  %z = ptensor.unary tanh %y : !ptensor.tensor<[8, 64], f32> -> !ptensor.tensor<[8, 64], f32>
  func.return %z : !ptensor.tensor<[8, 64], f32>
}

// A residual add read through a reshape (the product of a flattened batch)
// counts as elementwise: views are looked through.
// CHECK-LABEL: func.func @residual_through_view(
// CHECK-NEXT:    %[[P:.*]] = ptensor.mm
// CHECK-NEXT:    %[[Y:.*]] = ptensor.binary add %bias, %[[P]]
// CHECK-NEXT:    %[[V:.*]] = ptensor.reshape %[[Y]]
// CHECK-NEXT:    ptensor.binary add %[[V]], %r
func.func @residual_through_view(%bias: !ptensor.tensor<[64], f32>, %x: !ptensor.tensor<[8, 32], f32>, %w: !ptensor.tensor<[32, 64], f32>, %r: !ptensor.tensor<[2, 4, 64], f32>) -> !ptensor.tensor<[2, 4, 64], f32> {
  %y = ptensor.addmm %bias, %x, %w : !ptensor.tensor<[64], f32>, !ptensor.tensor<[8, 32], f32>, !ptensor.tensor<[32, 64], f32> -> !ptensor.tensor<[8, 64], f32>
  %v = ptensor.reshape %y : !ptensor.tensor<[8, 64], f32> -> !ptensor.tensor<[2, 4, 64], f32>
  %z = ptensor.binary add %v, %r : !ptensor.tensor<[2, 4, 64], f32>, !ptensor.tensor<[2, 4, 64], f32> -> !ptensor.tensor<[2, 4, 64], f32>
  func.return %z : !ptensor.tensor<[2, 4, 64], f32>
}

// Refusals: a returned product, one that another product reads, one with a
// scale, and a half-precision one keep their bias.
// CHECK-LABEL: func.func @returned(
// CHECK-NEXT:    ptensor.addmm
func.func @returned(%bias: !ptensor.tensor<[64], f32>, %x: !ptensor.tensor<[8, 32], f32>, %w: !ptensor.tensor<[32, 64], f32>) -> !ptensor.tensor<[8, 64], f32> {
  %y = ptensor.addmm %bias, %x, %w : !ptensor.tensor<[64], f32>, !ptensor.tensor<[8, 32], f32>, !ptensor.tensor<[32, 64], f32> -> !ptensor.tensor<[8, 64], f32>
  func.return %y : !ptensor.tensor<[8, 64], f32>
}

// CHECK-LABEL: func.func @read_by_a_product(
// CHECK-NEXT:    ptensor.addmm
// CHECK-NEXT:    ptensor.unary tanh
// CHECK-NEXT:    ptensor.mm
func.func @read_by_a_product(%bias: !ptensor.tensor<[64], f32>, %x: !ptensor.tensor<[8, 32], f32>, %w: !ptensor.tensor<[32, 64], f32>, %v: !ptensor.tensor<[64, 4], f32>) -> (!ptensor.tensor<[8, 64], f32>, !ptensor.tensor<[8, 4], f32>) {
  %y = ptensor.addmm %bias, %x, %w : !ptensor.tensor<[64], f32>, !ptensor.tensor<[8, 32], f32>, !ptensor.tensor<[32, 64], f32> -> !ptensor.tensor<[8, 64], f32>
  %z = ptensor.unary tanh %y : !ptensor.tensor<[8, 64], f32> -> !ptensor.tensor<[8, 64], f32>
  %p = ptensor.mm %y, %v : !ptensor.tensor<[8, 64], f32>, !ptensor.tensor<[64, 4], f32> -> !ptensor.tensor<[8, 4], f32>
  func.return %z, %p : !ptensor.tensor<[8, 64], f32>, !ptensor.tensor<[8, 4], f32>
}

// CHECK-LABEL: func.func @scaled(
// CHECK-NEXT:    ptensor.addmm
func.func @scaled(%bias: !ptensor.tensor<[64], f32>, %x: !ptensor.tensor<[8, 32], f32>, %w: !ptensor.tensor<[32, 64], f32>) -> !ptensor.tensor<[8, 64], f32> {
  %y = ptensor.addmm %bias, %x, %w beta 2.0 : !ptensor.tensor<[64], f32>, !ptensor.tensor<[8, 32], f32>, !ptensor.tensor<[32, 64], f32> -> !ptensor.tensor<[8, 64], f32>
  %z = ptensor.unary tanh %y : !ptensor.tensor<[8, 64], f32> -> !ptensor.tensor<[8, 64], f32>
  func.return %z : !ptensor.tensor<[8, 64], f32>
}

// CHECK-LABEL: func.func @half(
// CHECK-NEXT:    ptensor.addmm
func.func @half(%bias: !ptensor.tensor<[64], f16>, %x: !ptensor.tensor<[8, 32], f16>, %w: !ptensor.tensor<[32, 64], f16>) -> !ptensor.tensor<[8, 64], f16> {
  %y = ptensor.addmm %bias, %x, %w : !ptensor.tensor<[64], f16>, !ptensor.tensor<[8, 32], f16>, !ptensor.tensor<[32, 64], f16> -> !ptensor.tensor<[8, 64], f16>
  %z = ptensor.unary tanh %y : !ptensor.tensor<[8, 64], f16> -> !ptensor.tensor<[8, 64], f16>
  func.return %z : !ptensor.tensor<[8, 64], f16>
}

// A convolution's bias, read by a sigmoid: the convolution loses it, and
// the bias is added per channel (viewed as [C, 1, 1]) where the activation's
// kernel reads the convolution.
// CHECK-LABEL: func.func @convolution_activation(
// CHECK-NEXT:    %[[C:.*]] = ptensor.convolution %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 3, 8, 8], f32>, !ptensor.tensor<[4, 3, 3, 3], f32> -> !ptensor.tensor<[2, 4, 8, 8], f32>
// CHECK-NEXT:    %[[B:.*]] = ptensor.reshape %b : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4, 1, 1], f32>
// CHECK-NEXT:    %[[Y:.*]] = ptensor.binary add %[[C]], %[[B]] : !ptensor.tensor<[2, 4, 8, 8], f32>, !ptensor.tensor<[4, 1, 1], f32> -> !ptensor.tensor<[2, 4, 8, 8], f32>
// CHECK-NEXT:    ptensor.unary sigmoid %[[Y]]
func.func @convolution_activation(%x: !ptensor.tensor<[2, 3, 8, 8], f32>, %w: !ptensor.tensor<[4, 3, 3, 3], f32>, %b: !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[2, 4, 8, 8], f32> {
  %y = ptensor.convolution %x, %w, %b stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 3, 8, 8], f32>, !ptensor.tensor<[4, 3, 3, 3], f32>, !ptensor.tensor<[4], f32> -> !ptensor.tensor<[2, 4, 8, 8], f32>
  %z = ptensor.unary sigmoid %y : !ptensor.tensor<[2, 4, 8, 8], f32> -> !ptensor.tensor<[2, 4, 8, 8], f32>
  func.return %z : !ptensor.tensor<[2, 4, 8, 8], f32>
}

// A depthwise convolution read through a permute by a channel layer norm's
// mean and difference: reductions take the bias in as they load too.
// CHECK-LABEL: func.func @convolution_normalized(
// CHECK-NEXT:    %[[C:.*]] = ptensor.convolution %x, %w stride
// CHECK-NEXT:    %[[B:.*]] = ptensor.reshape %b
// CHECK-NEXT:    %[[Y:.*]] = ptensor.binary add %[[C]], %[[B]]
// CHECK-NEXT:    %[[P:.*]] = ptensor.permute %[[Y]]
// CHECK-NEXT:    ptensor.reduce sum %[[P]]
func.func @convolution_normalized(%x: !ptensor.tensor<[2, 4, 8, 8], f32>, %w: !ptensor.tensor<[4, 1, 3, 3], f32>, %b: !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[2, 8, 8, 4], f32> {
  %y = ptensor.convolution %x, %w, %b stride [1, 1] padding [1, 1] dilation [1, 1] groups 4 : !ptensor.tensor<[2, 4, 8, 8], f32>, !ptensor.tensor<[4, 1, 3, 3], f32>, !ptensor.tensor<[4], f32> -> !ptensor.tensor<[2, 4, 8, 8], f32>
  %p = ptensor.permute %y [0, 2, 3, 1] : !ptensor.tensor<[2, 4, 8, 8], f32> -> !ptensor.tensor<[2, 8, 8, 4], f32>
  %s = ptensor.reduce sum %p dims [3] keepdim : !ptensor.tensor<[2, 8, 8, 4], f32> -> !ptensor.tensor<[2, 8, 8, 1], f32>
  %d = ptensor.binary sub %p, %s : !ptensor.tensor<[2, 8, 8, 4], f32>, !ptensor.tensor<[2, 8, 8, 1], f32> -> !ptensor.tensor<[2, 8, 8, 4], f32>
  func.return %d : !ptensor.tensor<[2, 8, 8, 4], f32>
}

// Refusals: a returned convolution and a half-precision one keep their bias.
// CHECK-LABEL: func.func @convolution_returned(
// CHECK-NEXT:    ptensor.convolution %x, %w, %b
// CHECK-LABEL: func.func @convolution_half(
// CHECK-NEXT:    ptensor.convolution %x, %w, %b
func.func @convolution_returned(%x: !ptensor.tensor<[2, 3, 8, 8], f32>, %w: !ptensor.tensor<[4, 3, 3, 3], f32>, %b: !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[2, 4, 8, 8], f32> {
  %y = ptensor.convolution %x, %w, %b stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 3, 8, 8], f32>, !ptensor.tensor<[4, 3, 3, 3], f32>, !ptensor.tensor<[4], f32> -> !ptensor.tensor<[2, 4, 8, 8], f32>
  func.return %y : !ptensor.tensor<[2, 4, 8, 8], f32>
}
func.func @convolution_half(%x: !ptensor.tensor<[2, 3, 8, 8], f16>, %w: !ptensor.tensor<[4, 3, 3, 3], f16>, %b: !ptensor.tensor<[4], f16>) -> !ptensor.tensor<[2, 4, 8, 8], f16> {
  %y = ptensor.convolution %x, %w, %b stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 3, 8, 8], f16>, !ptensor.tensor<[4, 3, 3, 3], f16>, !ptensor.tensor<[4], f16> -> !ptensor.tensor<[2, 4, 8, 8], f16>
  %z = ptensor.unary sigmoid %y : !ptensor.tensor<[2, 4, 8, 8], f16> -> !ptensor.tensor<[2, 4, 8, 8], f16>
  func.return %z : !ptensor.tensor<[2, 4, 8, 8], f16>
}
