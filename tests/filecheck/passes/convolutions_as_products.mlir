// RUN: permalloy-opt %s -p convolutions-as-products | filecheck %s
// RUN: permalloy-opt %s -p convolutions-as-products | permalloy-opt | filecheck %s

// convolutions-as-products: pointwise convolutions (a 1x1 window, unit
// strides, no padding, one group) become the matrix products they are, on
// views of the same memory.

// Channels-last input and result: batch and pixels merge into rows, one mm
// on [50, 8] rows by the weight viewed transposed; the result is viewed back
// as the image, and its free takes the product's buffer.
// CHECK-LABEL: func.func @rows(
// CHECK-NEXT:    %[[X:.*]] = buffer.view %x : !buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]> -> !buffer.buffer<[50, 8], f32>
// CHECK-NEXT:    %[[W:.*]] = buffer.view %w : !buffer.buffer<[16, 8, 1, 1], f32> -> !buffer.buffer<[8, 16], f32, strides [1, 8]>
// CHECK-NEXT:    %[[P:.*]] = buffer.extern ins(%{{.*}} = %[[X]] : !buffer.buffer<[50, 8], f32>, %{{.*}} = %[[W]] : !buffer.buffer<[8, 16], f32, strides [1, 8]>) -> (!buffer.buffer<[50, 16], f32>) {
// CHECK-NEXT:      %{{.*}} = ptensor.mm
// CHECK:         %[[Y:.*]] = buffer.view %[[P]] : !buffer.buffer<[50, 16], f32> -> !buffer.buffer<[2, 16, 5, 5], f32, strides [400, 1, 80, 16]>
// CHECK-NEXT:    buffer.copy %[[Y]], %out
// CHECK-NEXT:    buffer.dealloc %[[P]]
// CHECK-NOT:     ptensor.convolution
func.func @rows(%x: !buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>, %w: !buffer.buffer<[16, 8, 1, 1], f32>, %out: !buffer.buffer<[2, 16, 5, 5], f32>) {
  %y = buffer.extern ins(%a = %x : !buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>, %b = %w : !buffer.buffer<[16, 8, 1, 1], f32>) -> (!buffer.buffer<[2, 16, 5, 5], f32, strides [400, 1, 80, 16]>) {
    %c = ptensor.convolution %a, %b stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[16, 8, 1, 1], f32> -> !ptensor.tensor<[2, 16, 5, 5], f32>
    buffer.yield %c : !ptensor.tensor<[2, 16, 5, 5], f32>
  }
  buffer.copy %y, %out : !buffer.buffer<[2, 16, 5, 5], f32, strides [400, 1, 80, 16]>, !buffer.buffer<[2, 16, 5, 5], f32>
  buffer.dealloc %y : !buffer.buffer<[2, 16, 5, 5], f32, strides [400, 1, 80, 16]>
  func.return
}

// NCHW input and result: the pixels merge, one bmm of the weight viewed with
// a batch stride of 0 by the [2, 8, 25] images.
// CHECK-LABEL: func.func @batched(
// CHECK-NEXT:    %[[X:.*]] = buffer.view %x : !buffer.buffer<[2, 8, 5, 5], f32> -> !buffer.buffer<[2, 8, 25], f32>
// CHECK-NEXT:    %[[W:.*]] = buffer.view %w : !buffer.buffer<[16, 8, 1, 1], f32> -> !buffer.buffer<[2, 16, 8], f32, strides [0, 8, 1]>
// CHECK-NEXT:    %[[P:.*]] = buffer.extern ins(%{{.*}} = %[[W]] : {{.*}}, %{{.*}} = %[[X]] : {{.*}}) -> (!buffer.buffer<[2, 16, 25], f32>) {
// CHECK-NEXT:      %{{.*}} = ptensor.bmm
// CHECK:         buffer.view %[[P]] : !buffer.buffer<[2, 16, 25], f32> -> !buffer.buffer<[2, 16, 5, 5], f32>
func.func @batched(%x: !buffer.buffer<[2, 8, 5, 5], f32>, %w: !buffer.buffer<[16, 8, 1, 1], f32>) -> !buffer.buffer<[2, 16, 5, 5], f32> {
  %y = buffer.extern ins(%a = %x : !buffer.buffer<[2, 8, 5, 5], f32>, %b = %w : !buffer.buffer<[16, 8, 1, 1], f32>) -> (!buffer.buffer<[2, 16, 5, 5], f32>) {
    %c = ptensor.convolution %a, %b stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[16, 8, 1, 1], f32> -> !ptensor.tensor<[2, 16, 5, 5], f32>
    buffer.yield %c : !ptensor.tensor<[2, 16, 5, 5], f32>
  }
  func.return %y : !buffer.buffer<[2, 16, 5, 5], f32>
}

// A bias rides along as addmm's where the rows merge (images of one pixel,
// as a squeeze-excite block's, merge in NCHW memory too).
// CHECK-LABEL: func.func @biased_rows(
// CHECK:         buffer.extern ins(%{{.*}} = %bias : !buffer.buffer<[16], f32>, %{{.*}} : !buffer.buffer<[4, 8], f32>, %{{.*}} : !buffer.buffer<[8, 16], f32, strides [1, 8]>) -> (!buffer.buffer<[4, 16], f32>) {
// CHECK-NEXT:      %{{.*}} = ptensor.addmm
func.func @biased_rows(%x: !buffer.buffer<[4, 8, 1, 1], f32>, %w: !buffer.buffer<[16, 8, 1, 1], f32>, %bias: !buffer.buffer<[16], f32>) -> !buffer.buffer<[4, 16, 1, 1], f32> {
  %y = buffer.extern ins(%a = %x : !buffer.buffer<[4, 8, 1, 1], f32>, %b = %w : !buffer.buffer<[16, 8, 1, 1], f32>, %c = %bias : !buffer.buffer<[16], f32>) -> (!buffer.buffer<[4, 16, 1, 1], f32>) {
    %r = ptensor.convolution %a, %b, %c stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : !ptensor.tensor<[4, 8, 1, 1], f32>, !ptensor.tensor<[16, 8, 1, 1], f32>, !ptensor.tensor<[16], f32> -> !ptensor.tensor<[4, 16, 1, 1], f32>
    buffer.yield %r : !ptensor.tensor<[4, 16, 1, 1], f32>
  }
  func.return %y : !buffer.buffer<[4, 16, 1, 1], f32>
}

// Refusals: a bias with NCHW images (no library call adds a bias along a
// batched product's rows), a stride of 2, a 3x3 window, two groups, and
// memory where nothing merges (a channels-last input whose width is sliced).
// CHECK-LABEL: func.func @refused(
// CHECK-NOT:     ptensor.mm
// CHECK-NOT:     ptensor.bmm
// CHECK-NOT:     ptensor.addmm
// CHECK:         func.return
func.func @refused(%x: !buffer.buffer<[2, 8, 6, 6], f32>, %w: !buffer.buffer<[8, 8, 1, 1], f32>, %bias: !buffer.buffer<[8], f32>, %w3: !buffer.buffer<[8, 8, 3, 3], f32>, %wg: !buffer.buffer<[8, 4, 1, 1], f32>, %s: !buffer.buffer<[2, 8, 6, 5], f32, strides [288, 1, 48, 8]>) {
  %y0 = buffer.extern ins(%a = %x : !buffer.buffer<[2, 8, 6, 6], f32>, %b = %w : !buffer.buffer<[8, 8, 1, 1], f32>, %c = %bias : !buffer.buffer<[8], f32>) -> (!buffer.buffer<[2, 8, 6, 6], f32>) {
    %r = ptensor.convolution %a, %b, %c stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 8, 6, 6], f32>, !ptensor.tensor<[8, 8, 1, 1], f32>, !ptensor.tensor<[8], f32> -> !ptensor.tensor<[2, 8, 6, 6], f32>
    buffer.yield %r : !ptensor.tensor<[2, 8, 6, 6], f32>
  }
  %y1 = buffer.extern ins(%a = %x : !buffer.buffer<[2, 8, 6, 6], f32>, %b = %w : !buffer.buffer<[8, 8, 1, 1], f32>) -> (!buffer.buffer<[2, 8, 3, 3], f32>) {
    %r = ptensor.convolution %a, %b stride [2, 2] padding [0, 0] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 8, 6, 6], f32>, !ptensor.tensor<[8, 8, 1, 1], f32> -> !ptensor.tensor<[2, 8, 3, 3], f32>
    buffer.yield %r : !ptensor.tensor<[2, 8, 3, 3], f32>
  }
  %y2 = buffer.extern ins(%a = %x : !buffer.buffer<[2, 8, 6, 6], f32>, %b = %w3 : !buffer.buffer<[8, 8, 3, 3], f32>) -> (!buffer.buffer<[2, 8, 6, 6], f32>) {
    %r = ptensor.convolution %a, %b stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 8, 6, 6], f32>, !ptensor.tensor<[8, 8, 3, 3], f32> -> !ptensor.tensor<[2, 8, 6, 6], f32>
    buffer.yield %r : !ptensor.tensor<[2, 8, 6, 6], f32>
  }
  %y3 = buffer.extern ins(%a = %x : !buffer.buffer<[2, 8, 6, 6], f32>, %b = %wg : !buffer.buffer<[8, 4, 1, 1], f32>) -> (!buffer.buffer<[2, 8, 6, 6], f32>) {
    %r = ptensor.convolution %a, %b stride [1, 1] padding [0, 0] dilation [1, 1] groups 2 : !ptensor.tensor<[2, 8, 6, 6], f32>, !ptensor.tensor<[8, 4, 1, 1], f32> -> !ptensor.tensor<[2, 8, 6, 6], f32>
    buffer.yield %r : !ptensor.tensor<[2, 8, 6, 6], f32>
  }
  %y4 = buffer.extern ins(%a = %s : !buffer.buffer<[2, 8, 6, 5], f32, strides [288, 1, 48, 8]>, %b = %w : !buffer.buffer<[8, 8, 1, 1], f32>) -> (!buffer.buffer<[2, 8, 6, 5], f32, strides [240, 1, 40, 8]>) {
    %r = ptensor.convolution %a, %b stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 8, 6, 5], f32>, !ptensor.tensor<[8, 8, 1, 1], f32> -> !ptensor.tensor<[2, 8, 6, 5], f32>
    buffer.yield %r : !ptensor.tensor<[2, 8, 6, 5], f32>
  }
  func.return
}

// The gradients of a pointwise convolution: the input's is the pointwise
// convolution of the result's gradient by the transposed weight, a bmm of the
// weight viewed [2, 8, 16] (batch stride 0, transposed) by the [2, 16, 25]
// gradient images; the weight's stays the library's, asked for alone.
// CHECK-LABEL: func.func @gradients(
// CHECK-NEXT:    %[[G:.*]] = buffer.view %dy : !buffer.buffer<[2, 16, 5, 5], f32> -> !buffer.buffer<[2, 16, 25], f32>
// CHECK-NEXT:    %[[W:.*]] = buffer.view %w : !buffer.buffer<[16, 8, 1, 1], f32> -> !buffer.buffer<[2, 8, 16], f32, strides [0, 1, 8]>
// CHECK-NEXT:    %[[P:.*]] = buffer.extern ins(%{{.*}} = %[[W]] : {{.*}}, %{{.*}} = %[[G]] : {{.*}}) -> (!buffer.buffer<[2, 8, 25], f32>) {
// CHECK-NEXT:      %{{.*}} = ptensor.bmm
// CHECK:         %[[DX:.*]] = buffer.view %[[P]] : !buffer.buffer<[2, 8, 25], f32> -> !buffer.buffer<[2, 8, 5, 5], f32>
// CHECK-NEXT:    %[[DW:.*]] = buffer.extern ins(%{{.*}} = %dy : {{.*}}, %{{.*}} = %x : {{.*}}, %{{.*}} = %w : {{.*}}) -> (!buffer.buffer<[16, 8, 1, 1], f32>) {
// CHECK-NEXT:      %{{.*}} = ptensor.convolution_backward {{.*}} output_mask [0, 1, 0]
// CHECK:         func.return %[[DX]], %[[DW]]
func.func @gradients(%dy: !buffer.buffer<[2, 16, 5, 5], f32>, %x: !buffer.buffer<[2, 8, 5, 5], f32>, %w: !buffer.buffer<[16, 8, 1, 1], f32>) -> (!buffer.buffer<[2, 8, 5, 5], f32>, !buffer.buffer<[16, 8, 1, 1], f32>) {
  %dx, %dw = buffer.extern ins(%g = %dy : !buffer.buffer<[2, 16, 5, 5], f32>, %a = %x : !buffer.buffer<[2, 8, 5, 5], f32>, %b = %w : !buffer.buffer<[16, 8, 1, 1], f32>) -> (!buffer.buffer<[2, 8, 5, 5], f32>, !buffer.buffer<[16, 8, 1, 1], f32>) {
    %r0, %r1 = ptensor.convolution_backward %g, %a, %b stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 output_mask [1, 1, 0] : !ptensor.tensor<[2, 16, 5, 5], f32>, !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[16, 8, 1, 1], f32> -> !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[16, 8, 1, 1], f32>
    buffer.yield %r0, %r1 : !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[16, 8, 1, 1], f32>
  }
  func.return %dx, %dw : !buffer.buffer<[2, 8, 5, 5], f32>, !buffer.buffer<[16, 8, 1, 1], f32>
}

// Refused: a strided pointwise convolution's gradients, and gradients that
// do not ask for the input's.
// CHECK-LABEL: func.func @gradients_refused(
// CHECK-NOT:     ptensor.bmm
// CHECK:         output_mask [1, 1, 0]
// CHECK:         output_mask [0, 1, 0]
func.func @gradients_refused(%dy: !buffer.buffer<[2, 16, 3, 3], f32>, %x: !buffer.buffer<[2, 8, 6, 6], f32>, %w: !buffer.buffer<[16, 8, 1, 1], f32>, %dz: !buffer.buffer<[2, 16, 6, 6], f32>) -> (!buffer.buffer<[2, 8, 6, 6], f32>, !buffer.buffer<[16, 8, 1, 1], f32>, !buffer.buffer<[16, 8, 1, 1], f32>) {
  %dx, %dw = buffer.extern ins(%g = %dy : !buffer.buffer<[2, 16, 3, 3], f32>, %a = %x : !buffer.buffer<[2, 8, 6, 6], f32>, %b = %w : !buffer.buffer<[16, 8, 1, 1], f32>) -> (!buffer.buffer<[2, 8, 6, 6], f32>, !buffer.buffer<[16, 8, 1, 1], f32>) {
    %r0, %r1 = ptensor.convolution_backward %g, %a, %b stride [2, 2] padding [0, 0] dilation [1, 1] groups 1 output_mask [1, 1, 0] : !ptensor.tensor<[2, 16, 3, 3], f32>, !ptensor.tensor<[2, 8, 6, 6], f32>, !ptensor.tensor<[16, 8, 1, 1], f32> -> !ptensor.tensor<[2, 8, 6, 6], f32>, !ptensor.tensor<[16, 8, 1, 1], f32>
    buffer.yield %r0, %r1 : !ptensor.tensor<[2, 8, 6, 6], f32>, !ptensor.tensor<[16, 8, 1, 1], f32>
  }
  %ew = buffer.extern ins(%g = %dz : !buffer.buffer<[2, 16, 6, 6], f32>, %a = %x : !buffer.buffer<[2, 8, 6, 6], f32>, %b = %w : !buffer.buffer<[16, 8, 1, 1], f32>) -> (!buffer.buffer<[16, 8, 1, 1], f32>) {
    %r = ptensor.convolution_backward %g, %a, %b stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 output_mask [0, 1, 0] : !ptensor.tensor<[2, 16, 6, 6], f32>, !ptensor.tensor<[2, 8, 6, 6], f32>, !ptensor.tensor<[16, 8, 1, 1], f32> -> !ptensor.tensor<[16, 8, 1, 1], f32>
    buffer.yield %r : !ptensor.tensor<[16, 8, 1, 1], f32>
  }
  func.return %dx, %dw, %ew : !buffer.buffer<[2, 8, 6, 6], f32>, !buffer.buffer<[16, 8, 1, 1], f32>, !buffer.buffer<[16, 8, 1, 1], f32>
}
