// RUN: permalloy-opt %s -p 'plan-layouts{convolutions=measured}' | filecheck %s
// RUN: not permalloy-opt %s -p 'plan-layouts{convolutions=fastest}' 2>&1 | filecheck %s --check-prefix=CHOICE
// RUN: not permalloy-opt %s -p 'plan-layouts{convolutions=measured device=tpu}' 2>&1 | filecheck %s --check-prefix=DEVICE

// plan-layouts{convolutions=measured}: convolutions are timed in both layouts
// on the device, and their buffers keep NCHW where channels-last is slower.
// A batch of symbolic size is not timed: it counts as no slower, and the
// buffers around the convolutions take channels-last memory, the graph input
// copied to it first.
// CHECK-LABEL: func.func @symbolic_batch(
// CHECK:         %[[X:.*]] = buffer.alloc : !buffer.buffer<[s0, 3, 5, 5], f32, strides [75, 1, 15, 3]>
// CHECK-NEXT:    buffer.copy %{{.*}}, %[[X]]
// CHECK-NEXT:    %[[C:.*]] = buffer.extern ins(%{{.*}} = %[[X]] : {{.*}}) -> (!buffer.buffer<[s0, 4, 5, 5], f32, strides [100, 1, 20, 4]>)
// CHECK:         buffer.alloc : !buffer.buffer<[s0, 4, 5, 5], f32, strides [100, 1, 20, 4]>
// CHECK-NEXT:    buffer.launch @relu ins(%[[C]]
// The returned result keeps eager's layout.
// CHECK:         %[[R:.*]] = buffer.alloc : !buffer.buffer<[s0, 4, 5, 5], f32>
// CHECK-NEXT:    buffer.launch @relu
// CHECK-NEXT:    func.return %[[R]]

// A convolution whose result is returned keeps eager's layout, and vetoes
// only its result's set: it reads an NCHW copy of its channels-last input
// (its timing counts that copy; untimed here, no slower).
// CHECK-LABEL: func.func @returned_convolution(
// CHECK:         %[[C:.*]] = buffer.extern ins(%{{.*}} = %{{.*}} : !buffer.buffer<[s0, 3, 5, 5], f32, strides [75, 1, 15, 3]>, {{.*}}) -> (!buffer.buffer<[s0, 4, 5, 5], f32, strides [100, 1, 20, 4]>)
// CHECK:         %[[R:.*]] = buffer.alloc : !buffer.buffer<[s0, 4, 5, 5], f32, strides [100, 1, 20, 4]>
// CHECK-NEXT:    buffer.launch @relu ins(%[[C]] : {{.*}}) outs(%[[R]] : {{.*}})
// CHECK-NEXT:    %[[N:.*]] = buffer.alloc : !buffer.buffer<[s0, 4, 5, 5], f32>
// CHECK-NEXT:    buffer.copy %[[R]], %[[N]]
// CHECK-NEXT:    %[[O:.*]] = buffer.extern ins(%{{.*}} = %[[N]] : !buffer.buffer<[s0, 4, 5, 5], f32>, {{.*}}) -> (!buffer.buffer<[s0, 4, 5, 5], f32>)
// CHECK:         func.return %[[O]]

// CHOICE: permalloy-opt: error: bad options for pass 'plan-layouts': convolutions='fastest' is not valid; valid values: channels-last, measured
// DEVICE: permalloy-opt: error: bad options for pass 'plan-layouts': device='tpu' is not valid; valid values: cpu, cuda

builtin.module {
  buffer.kernel @relu(%0: !ptensor.tensor<[s0, 4, 5, 5], f32>) -> (!ptensor.tensor<[s0, 4, 5, 5], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[s0, 4, 5, 5], f32>) -> !ptensor.tensor<[s0, 4, 5, 5], f32> {
      %3 = loop.load %2[d0, d1, d2, d3] : f32
      %4 = arith.constant 0.000000e+00 : f32
      %5 = arith.maximumf %3, %4 : f32
      loop.yield %5 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[s0, 4, 5, 5], f32>
  }
  func.func @symbolic_batch(%0: !buffer.buffer<[4, 3, 3, 3], f32>, %1: !buffer.buffer<[s0, 3, 5, 5], f32>, %2: !buffer.buffer<[4, 4, 1, 1], f32>) -> !buffer.buffer<[s0, 4, 5, 5], f32> {
    %3 = buffer.extern ins(%4 = %1 : !buffer.buffer<[s0, 3, 5, 5], f32>, %5 = %0 : !buffer.buffer<[4, 3, 3, 3], f32>) -> (!buffer.buffer<[s0, 4, 5, 5], f32>) {
      %6 = ptensor.convolution %4, %5 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[s0, 3, 5, 5], f32>, !ptensor.tensor<[4, 3, 3, 3], f32> -> !ptensor.tensor<[s0, 4, 5, 5], f32>
      buffer.yield %6 : !ptensor.tensor<[s0, 4, 5, 5], f32>
    }
    %4 = buffer.alloc : !buffer.buffer<[s0, 4, 5, 5], f32>
    buffer.launch @relu ins(%3 : !buffer.buffer<[s0, 4, 5, 5], f32>) outs(%4 : !buffer.buffer<[s0, 4, 5, 5], f32>)
    %5 = buffer.extern ins(%6 = %4 : !buffer.buffer<[s0, 4, 5, 5], f32>, %7 = %2 : !buffer.buffer<[4, 4, 1, 1], f32>) -> (!buffer.buffer<[s0, 4, 5, 5], f32>) {
      %8 = ptensor.convolution %6, %7 stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : !ptensor.tensor<[s0, 4, 5, 5], f32>, !ptensor.tensor<[4, 4, 1, 1], f32> -> !ptensor.tensor<[s0, 4, 5, 5], f32>
      buffer.yield %8 : !ptensor.tensor<[s0, 4, 5, 5], f32>
    }
    %9 = buffer.alloc : !buffer.buffer<[s0, 4, 5, 5], f32>
    buffer.launch @relu ins(%5 : !buffer.buffer<[s0, 4, 5, 5], f32>) outs(%9 : !buffer.buffer<[s0, 4, 5, 5], f32>)
    func.return %9 : !buffer.buffer<[s0, 4, 5, 5], f32>
  }
  func.func @returned_convolution(%0: !buffer.buffer<[4, 3, 3, 3], f32>, %1: !buffer.buffer<[s0, 3, 5, 5], f32>, %2: !buffer.buffer<[4, 4, 1, 1], f32>) -> !buffer.buffer<[s0, 4, 5, 5], f32> {
    %3 = buffer.extern ins(%4 = %1 : !buffer.buffer<[s0, 3, 5, 5], f32>, %5 = %0 : !buffer.buffer<[4, 3, 3, 3], f32>) -> (!buffer.buffer<[s0, 4, 5, 5], f32>) {
      %6 = ptensor.convolution %4, %5 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[s0, 3, 5, 5], f32>, !ptensor.tensor<[4, 3, 3, 3], f32> -> !ptensor.tensor<[s0, 4, 5, 5], f32>
      buffer.yield %6 : !ptensor.tensor<[s0, 4, 5, 5], f32>
    }
    %4 = buffer.alloc : !buffer.buffer<[s0, 4, 5, 5], f32>
    buffer.launch @relu ins(%3 : !buffer.buffer<[s0, 4, 5, 5], f32>) outs(%4 : !buffer.buffer<[s0, 4, 5, 5], f32>)
    %5 = buffer.extern ins(%6 = %4 : !buffer.buffer<[s0, 4, 5, 5], f32>, %7 = %2 : !buffer.buffer<[4, 4, 1, 1], f32>) -> (!buffer.buffer<[s0, 4, 5, 5], f32>) {
      %8 = ptensor.convolution %6, %7 stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : !ptensor.tensor<[s0, 4, 5, 5], f32>, !ptensor.tensor<[4, 4, 1, 1], f32> -> !ptensor.tensor<[s0, 4, 5, 5], f32>
      buffer.yield %8 : !ptensor.tensor<[s0, 4, 5, 5], f32>
    }
    func.return %5 : !buffer.buffer<[s0, 4, 5, 5], f32>
  }
}
