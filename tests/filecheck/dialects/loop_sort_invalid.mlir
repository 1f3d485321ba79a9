// RUN: permalloy-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s
// Every case is rejected: no split prints a module that verified.
// RUN: permalloy-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | not grep "^builtin.module"

// The messages of loop.sort's verifier and parser.

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: loop.sort gives i64 positions
  %p = loop.sort ascending ins(%a = %x : !ptensor.tensor<[4, 8], f32>) dim 1 over [8] -> !ptensor.tensor<[4, 8], i32> {
    %v = loop.load %a[d0, r0] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: loop.sort: dimension 2 is out of range for a result of rank 2
  %p = loop.sort ascending ins(%a = %x : !ptensor.tensor<[4, 8], f32>) dim 2 over [8] -> !ptensor.tensor<[4, 8], i64> {
    %v = loop.load %a[d0, r0] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: loop.sort: the result keeps 9 positions of rows of 8 ([4, 9])
  %p = loop.sort descending ins(%a = %x : !ptensor.tensor<[4, 8], f32>) dim 1 over [8] -> !ptensor.tensor<[4, 9], i64> {
    %v = loop.load %a[d0, r0] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: loop.sort: row length 'd0' may only use size symbols
  %p = loop.sort ascending ins(%a = %x : !ptensor.tensor<[4, 8], f32>) dim 1 over [d0] -> !ptensor.tensor<[4, 8], i64> {
    %v = loop.load %a[d0, r0] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: loop.sort: the body yields index, which it cannot sort
  %p = loop.sort ascending ins(%a = %x : !ptensor.tensor<[4, 8], f32>) dim 1 over [8] -> !ptensor.tensor<[4, 8], i64> {
    %i = loop.index r0
    loop.yield %i : index
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: loop.sort sorts rows of one length, got 2 sizes
  %p = loop.sort ascending ins(%a = %x : !ptensor.tensor<[4, 8], f32>) dim 1 over [4, 8] -> !ptensor.tensor<[4, 8], i64> {
    %v = loop.load %a[d0, r0] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Expected one of 'ascending', 'descending'
  %p = loop.sort upwards ins(%a = %x : !ptensor.tensor<[4, 8], f32>) dim 1 over [8] -> !ptensor.tensor<[4, 8], i64> {
    %v = loop.load %a[d0, r0] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: 'loop.yield' expects parent op to be one of 'loop.pointwise', 'loop.reduce', 'loop.scan', 'loop.sort'
  %y = loop.scatter sum init(%x : !ptensor.tensor<[4, 8], f32>) ins(%a = %x : !ptensor.tensor<[4, 8], f32>) over [4, 8] -> !ptensor.tensor<[4, 8], f32> {
    %v = loop.load %a[d0, d1] : f32
    loop.yield %v : f32
  }
  func.return
}
