// RUN: permalloy-opt %s -p plan-layouts | filecheck %s
// RUN: permalloy-opt %s -p plan-layouts | permalloy-opt | filecheck %s

// plan-layouts on a training step's graphs. The forward graph returns the
// tensors its backward graph reads as results of free layout
// (`ptensor.free_layout`), which channels-last planning takes like any
// buffer only kernels and library calls see; the backward graph receives
// them in that layout, and the gradients around a convolution's backward
// call follow its channels-last saved input.

// The convolution's result and the ReLU's, both saved, are channels-last,
// and so are the function's result types; the mean's result is not saved.
// CHECK-LABEL: func.func @saved_activations(
// CHECK-SAME:    -> (!buffer.buffer<[2, 4], f32>, !buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]> {ptensor.free_layout}, !buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]> {ptensor.free_layout})
// CHECK:         buffer.extern {{.*}} -> (!buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>)
// CHECK:         buffer.alloc : !buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>
// CHECK:         buffer.alloc : !buffer.buffer<[2, 4], f32>
// CHECK:         func.return

// Refusal: the same activations returned as outputs the caller sees keep
// eager's layout.
// CHECK-LABEL: func.func @returned_activations(
// CHECK-NOT:     strides
// CHECK:         func.return

// The saved input arrives channels-last: the gradient the kernel computes
// and the input's gradient are channels-last; the weight's gradient, a
// result, keeps its layout.
// CHECK-LABEL: func.func @gradients_follow_saved_input(
// CHECK:         %[[G:.*]] = buffer.alloc : !buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>
// CHECK-NEXT:    buffer.launch @pointwise_0
// CHECK-NEXT:    buffer.extern ins(%{{.*}} = %[[G]] : {{.*}}) -> (!buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>, !buffer.buffer<[4, 4, 3, 3], f32>)

// Refusal: a saved input in NCHW memory leaves the gradients in it.
// CHECK-LABEL: func.func @gradients_of_nchw_input(
// CHECK-NOT:     strides
// CHECK:         func.return

// The image, a graph input in NCHW memory, beside a result's gradient
// planned channels-last (it follows the next convolution's saved input):
// the stem's backward call reads a channels-last copy of the image, as the
// forward's convolution did, rather than have the library copy the gradient.
// CHECK-LABEL: func.func @image_copied_beside_channels_last_gradient(
// CHECK:         %[[C:.*]] = buffer.alloc : !buffer.buffer<[2, 3, 5, 5], f32, strides [75, 1, 15, 3]>
// CHECK-NEXT:    buffer.copy %x0, %[[C]]
// CHECK-NEXT:    buffer.extern ins(%{{.*}} = %{{.*}} : !buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>, %{{.*}} = %[[C]] : {{.*}}, %{{.*}} = %w0 : {{.*}}) -> (!buffer.buffer<[4, 3, 3, 3], f32>)

// Refusal: an input larger than the gradient is left to the library.
// CHECK-LABEL: func.func @larger_input_not_copied(
// CHECK-NOT:     buffer.copy
// CHECK:         func.return

builtin.module {
  buffer.kernel @pointwise_0(%0: !ptensor.tensor<[2, 4, 5, 5], f32>) -> (!ptensor.tensor<[2, 4, 5, 5], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[2, 4, 5, 5], f32>) -> !ptensor.tensor<[2, 4, 5, 5], f32> {
      %3 = loop.load %2[d0, d1, d2, d3] : f32
      %4 = arith.constant 0.000000e+00 : f32
      %5 = arith.maximumf %3, %4 : f32
      loop.yield %5 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[2, 4, 5, 5], f32>
  }
  buffer.kernel @fused_reduce_sum_pointwise_1(%0: !ptensor.tensor<[2, 4, 5, 5], f32>) -> (!ptensor.tensor<[2, 4], f32>) {
    %1 = loop.reduce sum ins(%2 = %0 : !ptensor.tensor<[2, 4, 5, 5], f32>) over [5, 5] -> !ptensor.tensor<[2, 4], f32> {
      %3 = loop.load %2[d0, d1, r0, r1] : f32
      loop.yield %3 : f32
    }
    %2 = loop.pointwise ins(%3 = %1 : !ptensor.tensor<[2, 4], f32>) -> !ptensor.tensor<[2, 4], f32> {
      %4 = loop.load %3[d0, d1] : f32
      %5 = arith.constant 2.500000e+01 : f32
      %6 = arith.divf %4, %5 : f32
      loop.yield %6 : f32
    }
    buffer.yield %2 : !ptensor.tensor<[2, 4], f32>
  }
  func.func @saved_activations(%0: !buffer.buffer<[4, 3, 3, 3], f32>, %1: !buffer.buffer<[2, 3, 5, 5], f32>) -> (!buffer.buffer<[2, 4], f32>, !buffer.buffer<[2, 4, 5, 5], f32> {ptensor.free_layout}, !buffer.buffer<[2, 4, 5, 5], f32> {ptensor.free_layout}) {
    %3 = buffer.extern ins(%4 = %1 : !buffer.buffer<[2, 3, 5, 5], f32>, %5 = %0 : !buffer.buffer<[4, 3, 3, 3], f32>) -> (!buffer.buffer<[2, 4, 5, 5], f32>) {
      %6 = ptensor.convolution %4, %5 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 3, 5, 5], f32>, !ptensor.tensor<[4, 3, 3, 3], f32> -> !ptensor.tensor<[2, 4, 5, 5], f32>
      buffer.yield %6 : !ptensor.tensor<[2, 4, 5, 5], f32>
    }
    %4 = buffer.alloc : !buffer.buffer<[2, 4, 5, 5], f32>
    buffer.launch @pointwise_0 ins(%3 : !buffer.buffer<[2, 4, 5, 5], f32>) outs(%4 : !buffer.buffer<[2, 4, 5, 5], f32>)
    %5 = buffer.alloc : !buffer.buffer<[2, 4], f32>
    buffer.launch @fused_reduce_sum_pointwise_1 ins(%4 : !buffer.buffer<[2, 4, 5, 5], f32>) outs(%5 : !buffer.buffer<[2, 4], f32>)
    func.return %5, %3, %4 : !buffer.buffer<[2, 4], f32>, !buffer.buffer<[2, 4, 5, 5], f32>, !buffer.buffer<[2, 4, 5, 5], f32>
  }
  func.func @returned_activations(%0: !buffer.buffer<[4, 3, 3, 3], f32>, %1: !buffer.buffer<[2, 3, 5, 5], f32>) -> (!buffer.buffer<[2, 4], f32>, !buffer.buffer<[2, 4, 5, 5], f32>, !buffer.buffer<[2, 4, 5, 5], f32> {ptensor.free_layout}) {
    %3 = buffer.extern ins(%4 = %1 : !buffer.buffer<[2, 3, 5, 5], f32>, %5 = %0 : !buffer.buffer<[4, 3, 3, 3], f32>) -> (!buffer.buffer<[2, 4, 5, 5], f32>) {
      %6 = ptensor.convolution %4, %5 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 3, 5, 5], f32>, !ptensor.tensor<[4, 3, 3, 3], f32> -> !ptensor.tensor<[2, 4, 5, 5], f32>
      buffer.yield %6 : !ptensor.tensor<[2, 4, 5, 5], f32>
    }
    %4 = buffer.alloc : !buffer.buffer<[2, 4, 5, 5], f32>
    buffer.launch @pointwise_0 ins(%3 : !buffer.buffer<[2, 4, 5, 5], f32>) outs(%4 : !buffer.buffer<[2, 4, 5, 5], f32>)
    %5 = buffer.alloc : !buffer.buffer<[2, 4], f32>
    buffer.launch @fused_reduce_sum_pointwise_1 ins(%4 : !buffer.buffer<[2, 4, 5, 5], f32>) outs(%5 : !buffer.buffer<[2, 4], f32>)
    func.return %5, %3, %4 : !buffer.buffer<[2, 4], f32>, !buffer.buffer<[2, 4, 5, 5], f32>, !buffer.buffer<[2, 4, 5, 5], f32>
  }
  func.func @gradients_follow_saved_input(%dy: !buffer.buffer<[2, 4, 5, 5], f32>, %x: !buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>, %w: !buffer.buffer<[4, 4, 3, 3], f32>) -> (!buffer.buffer<[4, 4, 3, 3], f32>, !buffer.buffer<[2, 4], f32>) {
    %g = buffer.alloc : !buffer.buffer<[2, 4, 5, 5], f32>
    buffer.launch @pointwise_0 ins(%dy : !buffer.buffer<[2, 4, 5, 5], f32>) outs(%g : !buffer.buffer<[2, 4, 5, 5], f32>)
    %dx, %dw = buffer.extern ins(%a = %g : !buffer.buffer<[2, 4, 5, 5], f32>, %b = %x : !buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>, %c = %w : !buffer.buffer<[4, 4, 3, 3], f32>) -> (!buffer.buffer<[2, 4, 5, 5], f32>, !buffer.buffer<[4, 4, 3, 3], f32>) {
      %r0, %r1 = ptensor.convolution_backward %a, %b, %c stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 output_mask [1, 1, 0] : !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[4, 4, 3, 3], f32> -> !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[4, 4, 3, 3], f32>
      buffer.yield %r0, %r1 : !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[4, 4, 3, 3], f32>
    }
    %m = buffer.alloc : !buffer.buffer<[2, 4], f32>
    buffer.launch @fused_reduce_sum_pointwise_1 ins(%dx : !buffer.buffer<[2, 4, 5, 5], f32>) outs(%m : !buffer.buffer<[2, 4], f32>)
    func.return %dw, %m : !buffer.buffer<[4, 4, 3, 3], f32>, !buffer.buffer<[2, 4], f32>
  }
  func.func @gradients_of_nchw_input(%dy: !buffer.buffer<[2, 4, 5, 5], f32>, %x: !buffer.buffer<[2, 4, 5, 5], f32>, %w: !buffer.buffer<[4, 4, 3, 3], f32>) -> (!buffer.buffer<[4, 4, 3, 3], f32>, !buffer.buffer<[2, 4], f32>) {
    %g = buffer.alloc : !buffer.buffer<[2, 4, 5, 5], f32>
    buffer.launch @pointwise_0 ins(%dy : !buffer.buffer<[2, 4, 5, 5], f32>) outs(%g : !buffer.buffer<[2, 4, 5, 5], f32>)
    %dx, %dw = buffer.extern ins(%a = %g : !buffer.buffer<[2, 4, 5, 5], f32>, %b = %x : !buffer.buffer<[2, 4, 5, 5], f32>, %c = %w : !buffer.buffer<[4, 4, 3, 3], f32>) -> (!buffer.buffer<[2, 4, 5, 5], f32>, !buffer.buffer<[4, 4, 3, 3], f32>) {
      %r0, %r1 = ptensor.convolution_backward %a, %b, %c stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 output_mask [1, 1, 0] : !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[4, 4, 3, 3], f32> -> !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[4, 4, 3, 3], f32>
      buffer.yield %r0, %r1 : !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[4, 4, 3, 3], f32>
    }
    %m = buffer.alloc : !buffer.buffer<[2, 4], f32>
    buffer.launch @fused_reduce_sum_pointwise_1 ins(%dx : !buffer.buffer<[2, 4, 5, 5], f32>) outs(%m : !buffer.buffer<[2, 4], f32>)
    func.return %dw, %m : !buffer.buffer<[4, 4, 3, 3], f32>, !buffer.buffer<[2, 4], f32>
  }
  func.func @image_copied_beside_channels_last_gradient(%dy: !buffer.buffer<[2, 4, 5, 5], f32>, %h: !buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>, %w1: !buffer.buffer<[4, 4, 3, 3], f32>, %x0: !buffer.buffer<[2, 3, 5, 5], f32>, %w0: !buffer.buffer<[4, 3, 3, 3], f32>) -> (!buffer.buffer<[4, 4, 3, 3], f32>, !buffer.buffer<[4, 3, 3, 3], f32>) {
    %g = buffer.alloc : !buffer.buffer<[2, 4, 5, 5], f32>
    buffer.launch @pointwise_0 ins(%dy : !buffer.buffer<[2, 4, 5, 5], f32>) outs(%g : !buffer.buffer<[2, 4, 5, 5], f32>)
    %dh, %dw1 = buffer.extern ins(%a = %g : !buffer.buffer<[2, 4, 5, 5], f32>, %b = %h : !buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>, %c = %w1 : !buffer.buffer<[4, 4, 3, 3], f32>) -> (!buffer.buffer<[2, 4, 5, 5], f32>, !buffer.buffer<[4, 4, 3, 3], f32>) {
      %r0, %r1 = ptensor.convolution_backward %a, %b, %c stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 output_mask [1, 1, 0] : !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[4, 4, 3, 3], f32> -> !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[4, 4, 3, 3], f32>
      buffer.yield %r0, %r1 : !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[4, 4, 3, 3], f32>
    }
    %g2 = buffer.alloc : !buffer.buffer<[2, 4, 5, 5], f32>
    buffer.launch @pointwise_0 ins(%dh : !buffer.buffer<[2, 4, 5, 5], f32>) outs(%g2 : !buffer.buffer<[2, 4, 5, 5], f32>)
    %dw0 = buffer.extern ins(%d = %g2 : !buffer.buffer<[2, 4, 5, 5], f32>, %e = %x0 : !buffer.buffer<[2, 3, 5, 5], f32>, %f = %w0 : !buffer.buffer<[4, 3, 3, 3], f32>) -> (!buffer.buffer<[4, 3, 3, 3], f32>) {
      %r2 = ptensor.convolution_backward %d, %e, %f stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 output_mask [0, 1, 0] : !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[2, 3, 5, 5], f32>, !ptensor.tensor<[4, 3, 3, 3], f32> -> !ptensor.tensor<[4, 3, 3, 3], f32>
      buffer.yield %r2 : !ptensor.tensor<[4, 3, 3, 3], f32>
    }
    func.return %dw1, %dw0 : !buffer.buffer<[4, 4, 3, 3], f32>, !buffer.buffer<[4, 3, 3, 3], f32>
  }
  func.func @larger_input_not_copied(%dy: !buffer.buffer<[2, 4, 5, 5], f32>, %h: !buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>, %w1: !buffer.buffer<[4, 4, 3, 3], f32>, %x0: !buffer.buffer<[2, 8, 5, 5], f32>, %w0: !buffer.buffer<[4, 8, 3, 3], f32>) -> (!buffer.buffer<[4, 4, 3, 3], f32>, !buffer.buffer<[4, 8, 3, 3], f32>) {
    %g = buffer.alloc : !buffer.buffer<[2, 4, 5, 5], f32>
    buffer.launch @pointwise_0 ins(%dy : !buffer.buffer<[2, 4, 5, 5], f32>) outs(%g : !buffer.buffer<[2, 4, 5, 5], f32>)
    %dh, %dw1 = buffer.extern ins(%a = %g : !buffer.buffer<[2, 4, 5, 5], f32>, %b = %h : !buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>, %c = %w1 : !buffer.buffer<[4, 4, 3, 3], f32>) -> (!buffer.buffer<[2, 4, 5, 5], f32>, !buffer.buffer<[4, 4, 3, 3], f32>) {
      %r0, %r1 = ptensor.convolution_backward %a, %b, %c stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 output_mask [1, 1, 0] : !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[4, 4, 3, 3], f32> -> !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[4, 4, 3, 3], f32>
      buffer.yield %r0, %r1 : !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[4, 4, 3, 3], f32>
    }
    %g2 = buffer.alloc : !buffer.buffer<[2, 4, 5, 5], f32>
    buffer.launch @pointwise_0 ins(%dh : !buffer.buffer<[2, 4, 5, 5], f32>) outs(%g2 : !buffer.buffer<[2, 4, 5, 5], f32>)
    %dw0 = buffer.extern ins(%d = %g2 : !buffer.buffer<[2, 4, 5, 5], f32>, %e = %x0 : !buffer.buffer<[2, 8, 5, 5], f32>, %f = %w0 : !buffer.buffer<[4, 8, 3, 3], f32>) -> (!buffer.buffer<[4, 8, 3, 3], f32>) {
      %r2 = ptensor.convolution_backward %d, %e, %f stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 output_mask [0, 1, 0] : !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[4, 8, 3, 3], f32> -> !ptensor.tensor<[4, 8, 3, 3], f32>
      buffer.yield %r2 : !ptensor.tensor<[4, 8, 3, 3], f32>
    }
    func.return %dw1, %dw0 : !buffer.buffer<[4, 4, 3, 3], f32>, !buffer.buffer<[4, 8, 3, 3], f32>
  }
}
