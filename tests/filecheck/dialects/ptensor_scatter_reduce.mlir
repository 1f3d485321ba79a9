// RUN: permalloy-opt %s | permalloy-opt | filecheck %s

// ptensor.scatter_reduce prints back as written, with and without
// include_self; its verifier's messages follow.

// CHECK-LABEL: func.func @reductions
// CHECK-NEXT:    %0 = ptensor.scatter_reduce max %x, %i, %s dim 0 : !ptensor.tensor<[5, 4], f32>, !ptensor.tensor<[3, 4], i64>, !ptensor.tensor<[3, 4], f32> -> !ptensor.tensor<[5, 4], f32>
// CHECK-NEXT:    %1 = ptensor.scatter_reduce prod %x, %i, %s dim 1 include_self : !ptensor.tensor<[5, 4], f32>, !ptensor.tensor<[3, 4], i64>, !ptensor.tensor<[3, 4], f32> -> !ptensor.tensor<[5, 4], f32>
func.func @reductions(%x: !ptensor.tensor<[5, 4], f32>, %i: !ptensor.tensor<[3, 4], i64>, %s: !ptensor.tensor<[3, 4], f32>) -> (!ptensor.tensor<[5, 4], f32>, !ptensor.tensor<[5, 4], f32>) {
  %0 = ptensor.scatter_reduce max %x, %i, %s dim 0 : !ptensor.tensor<[5, 4], f32>, !ptensor.tensor<[3, 4], i64>, !ptensor.tensor<[3, 4], f32> -> !ptensor.tensor<[5, 4], f32>
  %1 = ptensor.scatter_reduce prod %x, %i, %s dim 1 include_self : !ptensor.tensor<[5, 4], f32>, !ptensor.tensor<[3, 4], i64>, !ptensor.tensor<[3, 4], f32> -> !ptensor.tensor<[5, 4], f32>
  func.return %0, %1 : !ptensor.tensor<[5, 4], f32>, !ptensor.tensor<[5, 4], f32>
}
