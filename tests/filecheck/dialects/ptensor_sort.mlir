// RUN: permalloy-opt %s | permalloy-opt | filecheck %s

// ptensor.sort, ptensor.topk and ptensor.scatter print back as written, with
// and without their flags; their verifiers' messages are in
// ptensor_sort_invalid.mlir.

// CHECK-LABEL: func.func @sorts
// CHECK-NEXT:    %v, %i = ptensor.sort %x dim 1 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], i64>
// CHECK-NEXT:    %dv, %di = ptensor.sort %x dim 0 descending stable : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], i64>
// CHECK-NEXT:    %tv, %ti = ptensor.topk %x k 3 dim 1 largest sorted : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 3], f32>, !ptensor.tensor<[4, 3], i64>
// CHECK-NEXT:    %sv, %si = ptensor.topk %x k 0 dim 0 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[0, 8], f32>, !ptensor.tensor<[0, 8], i64>
// CHECK-NEXT:    %y = ptensor.scatter %x, %i, %v dim 1 : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], i64>, !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>
func.func @sorts(%x: !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
  %v, %i = ptensor.sort %x dim 1 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], i64>
  %dv, %di = ptensor.sort %x dim 0 descending stable : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], i64>
  %tv, %ti = ptensor.topk %x k 3 dim 1 largest sorted : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 3], f32>, !ptensor.tensor<[4, 3], i64>
  %sv, %si = ptensor.topk %x k 0 dim 0 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[0, 8], f32>, !ptensor.tensor<[0, 8], i64>
  %y = ptensor.scatter %x, %i, %v dim 1 : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], i64>, !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>
  func.return %y : !ptensor.tensor<[4, 8], f32>
}

// Symbolic sizes: a topk of a row of symbolic length.
// CHECK-LABEL: func.func @symbolic
// CHECK-NEXT:    %v, %i = ptensor.topk %x k 2 dim 1 : !ptensor.tensor<[s0, s1], bf16> -> !ptensor.tensor<[s0, 2], bf16>, !ptensor.tensor<[s0, 2], i64>
func.func @symbolic(%x: !ptensor.tensor<[s0, s1], bf16>) -> !ptensor.tensor<[s0, 2], i64> {
  %v, %i = ptensor.topk %x k 2 dim 1 : !ptensor.tensor<[s0, s1], bf16> -> !ptensor.tensor<[s0, 2], bf16>, !ptensor.tensor<[s0, 2], i64>
  func.return %i : !ptensor.tensor<[s0, 2], i64>
}
