// RUN: permalloy-opt %s --split-input-file --allow-unregistered-dialect --verify-diagnostics --parsing-diagnostics | filecheck %s
// Every case is rejected: no split prints a module that verified.
// RUN: permalloy-opt %s --split-input-file --allow-unregistered-dialect --verify-diagnostics --parsing-diagnostics | not grep "^builtin.module"

// Every message of the loop verifiers and custom parsers, one case per split.
// (Index expressions themselves are checked in sym_invalid.mlir.)

// Bodies

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: loop.pointwise: the body has 0 arguments for 1 inputs
  %0 = "loop.pointwise"(%x) ({
    %c = arith.constant 1.0 : f32
    "loop.yield"(%c) : (f32) -> ()
  }) : (!ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: loop.reduce: body argument type !ptensor.tensor<[4], f16> differs from its input's !ptensor.tensor<[4], f32>
  %0 = "loop.reduce"(%x) <{kind = #ptensor<reduce_kind sum>, reduction = #ptensor.exprs[4]}> ({
  ^bb0(%a: !ptensor.tensor<[4], f16>):
    %v = loop.load %a[r0] : f16
    %w = arith.extf %v : f16 to f32
    "loop.yield"(%w) : (f32) -> ()
  }) : (!ptensor.tensor<[4], f32>) -> !ptensor.tensor<[], f32>
  func.return
}

// -----

// A result that is not a tensor is reported by the loop op, not by the loads
// of its body, whose indices are checked against the result's rank.
func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: result 'result' at position 0 does not verify:
  %0 = "loop.reduce"(%x) <{kind = #ptensor<reduce_kind sum>, reduction = #ptensor.exprs[4]}> ({
  ^bb0(%a: !ptensor.tensor<[4], f32>):
    %v = loop.load %a[r0] : f32
    "loop.yield"(%v) : (f32) -> ()
  }) : (!ptensor.tensor<[4], f32>) -> !buffer.buffer<[], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: loop.pointwise: the body must end with loop.yield
  %0 = loop.pointwise ins(%a = %x : !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32> {
    %v = loop.load %a[d0] : f32
    "test.terminator"(%v) : (f32) -> ()
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: loop.pointwise: the body yields f32, but a result of bf16 needs bf16
  %0 = loop.pointwise ins(%a = %x : !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], bf16> {
    %v = loop.load %a[d0] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

// A ui8 result is yielded as signless i8.
func.func @f(%x: !ptensor.tensor<[4], ui8>) {
  // CHECK: Operation does not verify: loop.pointwise: the body yields ui8, but a result of ui8 needs i8
  %0 = "loop.pointwise"(%x) ({
  ^bb0(%a: !ptensor.tensor<[4], ui8>):
    %v = "test.op"() : () -> ui8
    "loop.yield"(%v) : (ui8) -> ()
  }) : (!ptensor.tensor<[4], ui8>) -> !ptensor.tensor<[4], ui8>
  func.return
}

// -----

// CHECK: loop_invalid.mlir:[[# @LINE + 3]]:
// CHECK: expected a !ptensor.tensor result, got f32
func.func @f(%x: !ptensor.tensor<[4], f32>) {
  %0 = loop.pointwise ins(%a = %x : !ptensor.tensor<[4], f32>) -> f32 {
    %v = loop.load %a[d0] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

// loop.reduce

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: loop.reduce: the reduction domain needs at least one dimension
  %0 = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4], f32>) over [] -> !ptensor.tensor<[4], f32> {
    %v = loop.load %a[d0] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 4], f32>) {
  // CHECK: Operation does not verify: loop.reduce: reduction size 'd0 + 1' may only use size symbols
  %0 = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4, 4], f32>) over [d0 + 1] -> !ptensor.tensor<[4], f32> {
    %v = loop.load %a[d0, r0] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: loop.reduce argmax gives i64
  %0 = loop.reduce argmax ins(%a = %x : !ptensor.tensor<[4], f32>) over [4] -> !ptensor.tensor<[], i32> {
    %v = loop.load %a[r0] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: loop.reduce any reduces i1 values into an i1 result
  %0 = loop.reduce any ins(%a = %x : !ptensor.tensor<[4], f32>) over [4] -> !ptensor.tensor<[], i1> {
    %v = loop.load %a[r0] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: loop.reduce: the body yields f32, but a result of f64 needs f64
  %0 = loop.reduce max ins(%a = %x : !ptensor.tensor<[4], f32>) over [4] -> !ptensor.tensor<[], f64> {
    %v = loop.load %a[r0] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

// loop.scan

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: loop.scan: dimension 2 is out of range for a result of rank 2
  %0 = loop.scan sum ins(%a = %x : !ptensor.tensor<[4, 8], f32>) dim 2 -> !ptensor.tensor<[4, 8], f32> {
    %v = loop.load %a[d0, d1] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: loop.load: 'd1' in 'd1' is unbound: there are 1 parallel indices here
  %0 = loop.scan sum ins(%a = %x : !ptensor.tensor<[4, 8], f32>) dim 1 -> !ptensor.tensor<[4, 8], f32> {
    %v = loop.load %a[d0, d1] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: loop.scan argmin gives i64
  %0 = loop.scan argmin ins(%a = %x : !ptensor.tensor<[4, 8], f32>) dim 1 -> !ptensor.tensor<[4, 8], f32> {
    %v = loop.load %a[d0, r0] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], i64>) {
  // CHECK: Operation does not verify: loop.scan logsumexp gives floats
  %0 = loop.scan logsumexp ins(%a = %x : !ptensor.tensor<[4, 8], i64>) dim 1 -> !ptensor.tensor<[4, 8], i64> {
    %v = loop.load %a[d0, r0] : i64
    loop.yield %v : i64
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: loop.scan: the body yields f32, but a result of f64 needs f64
  %0 = loop.scan prod ins(%a = %x : !ptensor.tensor<[4, 8], f32>) dim 0 -> !ptensor.tensor<[4, 8], f64> {
    %v = loop.load %a[r0, d0] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

// loop.load

func.func @f(%n: index, %x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: loop.load reads a !ptensor.tensor or a !buffer.buffer, got index
  %0 = "loop.pointwise"(%n) ({
  ^bb0(%a: index):
    %v = loop.load %a[d0] : f32
    loop.yield %v : f32
  }) : (index) -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: loop.load: 1 indices for an input of rank 2 [4, 8]
  %0 = loop.pointwise ins(%a = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4], f32> {
    %v = loop.load %a[d0] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

// A ui8 element is loaded as signless i8.
func.func @f(%x: !ptensor.tensor<[4], ui8>) {
  // CHECK: Operation does not verify: loop.load: result type ui8 should be i8 to read elements of ui8
  %0 = loop.pointwise ins(%a = %x : !ptensor.tensor<[4], ui8>) -> !ptensor.tensor<[4], i8> {
    %v = loop.load %a[d0] : ui8
    %w = "test.op"(%v) : (ui8) -> i8
    loop.yield %w : i8
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 4], f32>) {
  // CHECK: Operation does not verify: loop.load: 'd2' in 'd2' is unbound: there are 2 parallel indices here
  %0 = loop.pointwise ins(%a = %x : !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f32> {
    %v = loop.load %a[d0, d2] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 4], f32>) {
  // CHECK: Operation does not verify: loop.load: 'r1' in 'r1 + 1' is unbound: there are 1 reduction indices here
  %0 = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4, 4], f32>) over [3] -> !ptensor.tensor<[4], f32> {
    %v = loop.load %a[d0, r1 + 1] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: loop.load: 'v0' in 'v0' is unbound: there are 0 index value operands here
  %0 = loop.pointwise ins(%a = %x : !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32> {
    %v = loop.load %a[v0] : f32
    loop.yield %v : f32
  }
  func.return
}

// -----

// loop.index

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: loop.index: 'r0' in 'd0 + r0' is unbound: there are 0 reduction indices here
  %0 = loop.pointwise ins(%a = %x : !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], i64> {
    %i = loop.index d0 + r0
    %c = arith.index_cast %i : index to i64
    loop.yield %c : i64
  }
  func.return
}

// -----

func.func @f() {
  // CHECK: Operation does not verify: loop.index: 'd0' in 'd0' is unbound: there are 0 parallel indices here
  %i = loop.index d0
  func.return
}

// -----

// loop.yield

func.func @f(%x: f32) {
  // CHECK: Operation does not verify: 'loop.yield' expects parent op to be one of 'loop.pointwise', 'loop.reduce'
  "test.region"() ({
    loop.yield %x : f32
  }) : () -> ()
  func.return
}
