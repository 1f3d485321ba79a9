// RUN: permalloy-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s
// RUN: permalloy-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | not grep "^builtin.module"

// The messages of ptensor.scatter_reduce's verifier.

func.func @f(%x: !ptensor.tensor<[5, 4], f32>, %i: !ptensor.tensor<[3, 4], i64>, %s: !ptensor.tensor<[3, 4], f32>) {
  // CHECK: ptensor.scatter_reduce combines values: its kind is sum, prod, max or min
  %0 = ptensor.scatter_reduce assign %x, %i, %s dim 0 : !ptensor.tensor<[5, 4], f32>, !ptensor.tensor<[3, 4], i64>, !ptensor.tensor<[3, 4], f32> -> !ptensor.tensor<[5, 4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[5, 4], f32>, %i: !ptensor.tensor<[3, 6], i64>, %s: !ptensor.tensor<[3, 6], f32>) {
  // CHECK: ptensor.scatter_reduce: the index has size 6 in dimension 1, more than the input's 4
  %0 = ptensor.scatter_reduce sum %x, %i, %s dim 0 : !ptensor.tensor<[5, 4], f32>, !ptensor.tensor<[3, 6], i64>, !ptensor.tensor<[3, 6], f32> -> !ptensor.tensor<[5, 4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[5, 4], f32>, %i: !ptensor.tensor<[3, 4], i64>, %s: !ptensor.tensor<[2, 4], f32>) {
  // CHECK: ptensor.scatter_reduce: the index has size 3 in dimension 0, more than the source's 2
  %0 = ptensor.scatter_reduce sum %x, %i, %s dim 0 : !ptensor.tensor<[5, 4], f32>, !ptensor.tensor<[3, 4], i64>, !ptensor.tensor<[2, 4], f32> -> !ptensor.tensor<[5, 4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[5, 4], f32>, %i: !ptensor.tensor<[3, 4], i64>, %s: !ptensor.tensor<[3], f32>) {
  // CHECK: ptensor.scatter_reduce: input, index and source differ in rank (2, 2 and 1)
  %0 = ptensor.scatter_reduce min %x, %i, %s dim 0 : !ptensor.tensor<[5, 4], f32>, !ptensor.tensor<[3, 4], i64>, !ptensor.tensor<[3], f32> -> !ptensor.tensor<[5, 4], f32>
  func.return
}
