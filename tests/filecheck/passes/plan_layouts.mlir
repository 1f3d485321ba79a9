// RUN: permalloy-opt %s -p plan-layouts | filecheck %s
// RUN: permalloy-opt %s -p plan-layouts | permalloy-opt | filecheck %s

// plan-layouts: channels-last buffers around 2-d convolutions where the host
// program leaves the layout free, on host programs as convert-loop-to-buffer
// gives them (a convolution, a ReLU kernel, a 1x1 convolution, a mean).

// The graph input is copied to channels-last for the first convolution; the
// convolutions' results and the ReLU's result between them are channels-last,
// and the kernels read and write them so. The mean's [2, 4] result keeps its layout.
// CHECK-LABEL: func.func @planned(
// CHECK-NEXT:    %[[X:.*]] = buffer.alloc : !buffer.buffer<[2, 3, 5, 5], f32, strides [75, 1, 15, 3]>
// CHECK-NEXT:    buffer.copy %1, %[[X]]
// CHECK-NEXT:    %[[C:.*]] = buffer.extern ins(%{{.*}} = %[[X]] : !buffer.buffer<[2, 3, 5, 5], f32, strides [75, 1, 15, 3]>, {{.*}}) -> (!buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>)
// CHECK:         %[[R:.*]] = buffer.alloc : !buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>
// CHECK-NEXT:    buffer.launch @pointwise_0 ins(%[[C]] : {{.*}}) outs(%[[R]] : {{.*}})
// CHECK-NEXT:    %[[D:.*]] = buffer.extern ins(%{{.*}} = %[[R]] : {{.*}}) -> (!buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>)
// CHECK:         buffer.alloc : !buffer.buffer<[2, 4], f32>
// CHECK-NEXT:    buffer.launch @fused_reduce_sum_pointwise_1 ins(%[[D]]

// Refusal: a returned convolution result keeps eager's layout, and so does
// everything its input shares a kernel with: the convolution would otherwise
// give back channels-last for a channels-last input.
// CHECK-LABEL: func.func @returned_result(
// CHECK-NOT:     strides
// CHECK:         func.return

// A returned ReLU result keeps its layout; the 1x1 convolution reads a
// channels-last copy of it, and its own result, read only by the mean, is
// channels-last.
// CHECK-LABEL: func.func @returned_input(
// CHECK:         %[[R:.*]] = buffer.alloc : !buffer.buffer<[2, 4, 5, 5], f32>
// CHECK-NEXT:    buffer.launch @pointwise_0
// CHECK-NEXT:    %[[Y:.*]] = buffer.alloc : !buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>
// CHECK-NEXT:    buffer.copy %[[R]], %[[Y]]
// CHECK-NEXT:    buffer.extern ins(%{{.*}} = %[[Y]] : {{.*}}) -> (!buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>)

// One image: the ReLU kernel writes its [4, 5, 5] result with the batch
// dimension squeezed out (`squeeze-leading-unit-dims`), and the second
// convolution reads it through a unit-batch view as [1, 4, 5, 5]: the
// squeezed buffer takes the strides of channels-last [1, 4, 5, 5] memory and
// the view channels-last ones, so no copy is made for the convolution.
// CHECK-LABEL: func.func @one_image(
// CHECK:         -> (!buffer.buffer<[1, 4, 5, 5], f32, strides [100, 1, 20, 4]>)
// CHECK:         %[[R:.*]] = buffer.alloc : !buffer.buffer<[4, 5, 5], f32, strides [1, 20, 4]>
// CHECK-NEXT:    buffer.launch @pointwise_one_image ins(%{{.*}} : !buffer.buffer<[1, 4, 5, 5], f32, strides [100, 1, 20, 4]>) outs(%[[R]] : !buffer.buffer<[4, 5, 5], f32, strides [1, 20, 4]>)
// CHECK-NEXT:    %[[V:.*]] = buffer.view %[[R]] : !buffer.buffer<[4, 5, 5], f32, strides [1, 20, 4]> -> !buffer.buffer<[1, 4, 5, 5], f32, strides [100, 1, 20, 4]>
// CHECK-NOT:     buffer.copy
// CHECK-NEXT:    buffer.extern ins(%{{.*}} = %[[V]] : !buffer.buffer<[1, 4, 5, 5], f32, strides [100, 1, 20, 4]>, {{.*}}) -> (!buffer.buffer<[1, 4, 5, 5], f32, strides [100, 1, 20, 4]>)

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
  func.func @planned(%0: !buffer.buffer<[4, 3, 3, 3], f32>, %1: !buffer.buffer<[2, 3, 5, 5], f32>, %2: !buffer.buffer<[4, 4, 1, 1], f32>) -> !buffer.buffer<[2, 4], f32> {
    %3 = buffer.extern ins(%4 = %1 : !buffer.buffer<[2, 3, 5, 5], f32>, %5 = %0 : !buffer.buffer<[4, 3, 3, 3], f32>) -> (!buffer.buffer<[2, 4, 5, 5], f32>) {
      %6 = ptensor.convolution %4, %5 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 3, 5, 5], f32>, !ptensor.tensor<[4, 3, 3, 3], f32> -> !ptensor.tensor<[2, 4, 5, 5], f32>
      buffer.yield %6 : !ptensor.tensor<[2, 4, 5, 5], f32>
    }
    %4 = buffer.alloc : !buffer.buffer<[2, 4, 5, 5], f32>
    buffer.launch @pointwise_0 ins(%3 : !buffer.buffer<[2, 4, 5, 5], f32>) outs(%4 : !buffer.buffer<[2, 4, 5, 5], f32>)
    %5 = buffer.extern ins(%6 = %4 : !buffer.buffer<[2, 4, 5, 5], f32>, %7 = %2 : !buffer.buffer<[4, 4, 1, 1], f32>) -> (!buffer.buffer<[2, 4, 5, 5], f32>) {
      %8 = ptensor.convolution %6, %7 stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[4, 4, 1, 1], f32> -> !ptensor.tensor<[2, 4, 5, 5], f32>
      buffer.yield %8 : !ptensor.tensor<[2, 4, 5, 5], f32>
    }
    %6 = buffer.alloc : !buffer.buffer<[2, 4], f32>
    buffer.launch @fused_reduce_sum_pointwise_1 ins(%5 : !buffer.buffer<[2, 4, 5, 5], f32>) outs(%6 : !buffer.buffer<[2, 4], f32>)
    func.return %6 : !buffer.buffer<[2, 4], f32>
  }
  func.func @returned_result(%0: !buffer.buffer<[4, 3, 3, 3], f32>, %1: !buffer.buffer<[2, 3, 5, 5], f32>, %2: !buffer.buffer<[4, 4, 1, 1], f32>) -> !buffer.buffer<[2, 4, 5, 5], f32> {
    %3 = buffer.extern ins(%4 = %1 : !buffer.buffer<[2, 3, 5, 5], f32>, %5 = %0 : !buffer.buffer<[4, 3, 3, 3], f32>) -> (!buffer.buffer<[2, 4, 5, 5], f32>) {
      %6 = ptensor.convolution %4, %5 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 3, 5, 5], f32>, !ptensor.tensor<[4, 3, 3, 3], f32> -> !ptensor.tensor<[2, 4, 5, 5], f32>
      buffer.yield %6 : !ptensor.tensor<[2, 4, 5, 5], f32>
    }
    %4 = buffer.alloc : !buffer.buffer<[2, 4, 5, 5], f32>
    buffer.launch @pointwise_0 ins(%3 : !buffer.buffer<[2, 4, 5, 5], f32>) outs(%4 : !buffer.buffer<[2, 4, 5, 5], f32>)
    %5 = buffer.extern ins(%6 = %4 : !buffer.buffer<[2, 4, 5, 5], f32>, %7 = %2 : !buffer.buffer<[4, 4, 1, 1], f32>) -> (!buffer.buffer<[2, 4, 5, 5], f32>) {
      %8 = ptensor.convolution %6, %7 stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[4, 4, 1, 1], f32> -> !ptensor.tensor<[2, 4, 5, 5], f32>
      buffer.yield %8 : !ptensor.tensor<[2, 4, 5, 5], f32>
    }
    func.return %5 : !buffer.buffer<[2, 4, 5, 5], f32>
  }
  func.func @returned_input(%0: !buffer.buffer<[4, 3, 3, 3], f32>, %1: !buffer.buffer<[2, 3, 5, 5], f32>, %2: !buffer.buffer<[4, 4, 1, 1], f32>) -> (!buffer.buffer<[2, 4], f32>, !buffer.buffer<[2, 4, 5, 5], f32>) {
    %3 = buffer.extern ins(%4 = %1 : !buffer.buffer<[2, 3, 5, 5], f32>, %5 = %0 : !buffer.buffer<[4, 3, 3, 3], f32>) -> (!buffer.buffer<[2, 4, 5, 5], f32>) {
      %6 = ptensor.convolution %4, %5 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 3, 5, 5], f32>, !ptensor.tensor<[4, 3, 3, 3], f32> -> !ptensor.tensor<[2, 4, 5, 5], f32>
      buffer.yield %6 : !ptensor.tensor<[2, 4, 5, 5], f32>
    }
    %4 = buffer.alloc : !buffer.buffer<[2, 4, 5, 5], f32>
    buffer.launch @pointwise_0 ins(%3 : !buffer.buffer<[2, 4, 5, 5], f32>) outs(%4 : !buffer.buffer<[2, 4, 5, 5], f32>)
    %5 = buffer.extern ins(%6 = %4 : !buffer.buffer<[2, 4, 5, 5], f32>, %7 = %2 : !buffer.buffer<[4, 4, 1, 1], f32>) -> (!buffer.buffer<[2, 4, 5, 5], f32>) {
      %8 = ptensor.convolution %6, %7 stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 4, 5, 5], f32>, !ptensor.tensor<[4, 4, 1, 1], f32> -> !ptensor.tensor<[2, 4, 5, 5], f32>
      buffer.yield %8 : !ptensor.tensor<[2, 4, 5, 5], f32>
    }
    %6 = buffer.alloc : !buffer.buffer<[2, 4], f32>
    buffer.launch @fused_reduce_sum_pointwise_1 ins(%5 : !buffer.buffer<[2, 4, 5, 5], f32>) outs(%6 : !buffer.buffer<[2, 4], f32>)
    func.return %6, %4 : !buffer.buffer<[2, 4], f32>, !buffer.buffer<[2, 4, 5, 5], f32>
  }
  buffer.kernel @pointwise_one_image(%0: !ptensor.tensor<[1, 4, 5, 5], f32>) -> (!ptensor.tensor<[4, 5, 5], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[1, 4, 5, 5], f32>) -> !ptensor.tensor<[4, 5, 5], f32> {
      %3 = loop.load %2[0, d0, d1, d2] : f32
      %4 = arith.constant 0.000000e+00 : f32
      %5 = arith.maximumf %3, %4 : f32
      loop.yield %5 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[4, 5, 5], f32>
  }
  func.func @one_image(%0: !buffer.buffer<[4, 3, 3, 3], f32>, %1: !buffer.buffer<[1, 3, 5, 5], f32>, %2: !buffer.buffer<[4, 4, 1, 1], f32>) -> !buffer.buffer<[1, 4], f32> {
    %3 = buffer.extern ins(%4 = %1 : !buffer.buffer<[1, 3, 5, 5], f32>, %5 = %0 : !buffer.buffer<[4, 3, 3, 3], f32>) -> (!buffer.buffer<[1, 4, 5, 5], f32>) {
      %6 = ptensor.convolution %4, %5 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[1, 3, 5, 5], f32>, !ptensor.tensor<[4, 3, 3, 3], f32> -> !ptensor.tensor<[1, 4, 5, 5], f32>
      buffer.yield %6 : !ptensor.tensor<[1, 4, 5, 5], f32>
    }
    %4 = buffer.alloc : !buffer.buffer<[4, 5, 5], f32>
    buffer.launch @pointwise_one_image ins(%3 : !buffer.buffer<[1, 4, 5, 5], f32>) outs(%4 : !buffer.buffer<[4, 5, 5], f32>)
    %5 = buffer.view %4 : !buffer.buffer<[4, 5, 5], f32> -> !buffer.buffer<[1, 4, 5, 5], f32>
    %6 = buffer.extern ins(%7 = %5 : !buffer.buffer<[1, 4, 5, 5], f32>, %8 = %2 : !buffer.buffer<[4, 4, 1, 1], f32>) -> (!buffer.buffer<[1, 4, 5, 5], f32>) {
      %9 = ptensor.convolution %7, %8 stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : !ptensor.tensor<[1, 4, 5, 5], f32>, !ptensor.tensor<[4, 4, 1, 1], f32> -> !ptensor.tensor<[1, 4, 5, 5], f32>
      buffer.yield %9 : !ptensor.tensor<[1, 4, 5, 5], f32>
    }
    %7 = buffer.alloc : !buffer.buffer<[1, 4], f32>
    buffer.launch @sum_one_image ins(%6 : !buffer.buffer<[1, 4, 5, 5], f32>) outs(%7 : !buffer.buffer<[1, 4], f32>)
    func.return %7 : !buffer.buffer<[1, 4], f32>
  }
  buffer.kernel @sum_one_image(%0: !ptensor.tensor<[1, 4, 5, 5], f32>) -> (!ptensor.tensor<[1, 4], f32>) {
    %1 = loop.reduce sum ins(%2 = %0 : !ptensor.tensor<[1, 4, 5, 5], f32>) over [5, 5] -> !ptensor.tensor<[1, 4], f32> {
      %3 = loop.load %2[d0, d1, r0, r1] : f32
      loop.yield %3 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[1, 4], f32>
  }
}
