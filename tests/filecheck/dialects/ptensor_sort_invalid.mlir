// RUN: permalloy-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s
// RUN: permalloy-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | not grep "^builtin.module"

// The messages of the verifiers of ptensor.sort, ptensor.topk and ptensor.scatter.

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: sorted dimension 2 is out of range for rank 2
  %v, %i = ptensor.sort %x dim 2 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], i64>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[], f32>) {
  // CHECK: ptensor.sort takes a tensor of at least one dimension
  %v, %i = ptensor.sort %x dim 0 : !ptensor.tensor<[], f32> -> !ptensor.tensor<[], f32>, !ptensor.tensor<[], i64>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: ptensor.sort: element types differ (f32 and f16); insert a ptensor.cast
  %v, %i = ptensor.sort %x dim 1 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f16>, !ptensor.tensor<[4, 8], i64>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: ptensor.sort gives i64 indices, not i32
  %v, %i = ptensor.sort %x dim 1 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], i32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: ptensor.sort: result shape [4, 8] should be [8, 4]
  %v, %i = ptensor.sort %x dim 1 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[8, 4], f32>, !ptensor.tensor<[4, 8], i64>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: ptensor.topk: k 9 is more than the 8 elements along dimension 1
  %v, %i = ptensor.topk %x k 9 dim 1 largest : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 9], f32>, !ptensor.tensor<[4, 9], i64>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: ptensor.topk: result shape [4, 8] should be [4, 3]
  %v, %i = ptensor.topk %x k 3 dim 1 largest : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], i64>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: ptensor.topk: k is -1, not a count
  %v, %i = ptensor.topk %x k -1 dim 1 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], i64>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>, %i: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: ptensor.scatter: the index must be integer
  %y = ptensor.scatter %x, %i, %x dim 1 : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>, %i: !ptensor.tensor<[5, 8], i64>) {
  // CHECK: ptensor.scatter: the index has size 5 in dimension 0, more than the source's 4
  %y = ptensor.scatter %x, %i, %x dim 1 : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[5, 8], i64>, !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>
  func.return
}
