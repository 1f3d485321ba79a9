// RUN: permalloy-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s
// Every case is rejected: no split prints a module that verified.
// RUN: permalloy-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | not grep "^builtin.module"

// The messages of loop.scatter's and loop.scatter_yield's verifiers.

func.func @f(%x: !ptensor.tensor<[5], f32>, %idx: !ptensor.tensor<[3], i64>) {
  // CHECK: loop.scatter: init has type !ptensor.tensor<[5], f32>, but the result is !ptensor.tensor<[6], f32>
  %y = loop.scatter sum init(%x : !ptensor.tensor<[5], f32>) ins(%i = %idx : !ptensor.tensor<[3], i64>) over [3] -> !ptensor.tensor<[6], f32> {
    %k = loop.load %i[d0] : i64
    %p = arith.index_cast %k : i64 to index
    %c = arith.constant 1.0 : f32
    loop.scatter_yield %c at [v0] (%p) : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[5, 2], f32>, %idx: !ptensor.tensor<[3], i64>) {
  // CHECK: loop.scatter: 1 indices at loop.scatter_yield for a result of rank 2 [5, 2]
  %y = loop.scatter sum init(%x : !ptensor.tensor<[5, 2], f32>) ins(%i = %idx : !ptensor.tensor<[3], i64>) over [3] -> !ptensor.tensor<[5, 2], f32> {
    %k = loop.load %i[d0] : i64
    %p = arith.index_cast %k : i64 to index
    %c = arith.constant 1.0 : f32
    loop.scatter_yield %c at [v0] (%p) : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[5], f16>, %idx: !ptensor.tensor<[3], i64>) {
  // CHECK: loop.scatter: the body yields f32, but a result of f16 needs f16
  %y = loop.scatter max init(%x : !ptensor.tensor<[5], f16>) ins(%i = %idx : !ptensor.tensor<[3], i64>) over [3] -> !ptensor.tensor<[5], f16> {
    %k = loop.load %i[d0] : i64
    %p = arith.index_cast %k : i64 to index
    %c = arith.constant 1.0 : f32
    loop.scatter_yield %c at [v0] (%p) : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[5], f32>, %idx: !ptensor.tensor<[3], i64>) {
  // CHECK: loop.scatter_yield: 'v1' in 'v1' is unbound: there are 1 index value operands here
  %y = loop.scatter sum init(%x : !ptensor.tensor<[5], f32>) ins(%i = %idx : !ptensor.tensor<[3], i64>) over [3] -> !ptensor.tensor<[5], f32> {
    %k = loop.load %i[d0] : i64
    %p = arith.index_cast %k : i64 to index
    %c = arith.constant 1.0 : f32
    loop.scatter_yield %c at [v1] (%p) : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[5], f32>, %idx: !ptensor.tensor<[3], i64>) {
  // CHECK: loop.scatter: domain size 'd0' may only use size symbols
  %y = loop.scatter sum init(%x : !ptensor.tensor<[5], f32>) ins(%i = %idx : !ptensor.tensor<[3], i64>) over [d0] -> !ptensor.tensor<[5], f32> {
    %c = arith.constant 1.0 : f32
    loop.scatter_yield %c at [0] : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[5], f32>, %idx: !ptensor.tensor<[3], i64>) {
  // CHECK: 'loop.yield' expects parent op to be one of 'loop.pointwise', 'loop.reduce', 'loop.scan'
  %y = "loop.scatter"(%idx, %x) <{kind = #ptensor<scatter_kind sum>, domain = #ptensor.exprs[3]}> ({
  ^bb0(%i: !ptensor.tensor<[3], i64>):
    %c = arith.constant 1.0 : f32
    "loop.yield"(%c) : (f32) -> ()
  }) : (!ptensor.tensor<[3], i64>, !ptensor.tensor<[5], f32>) -> !ptensor.tensor<[5], f32>
  func.return
}
