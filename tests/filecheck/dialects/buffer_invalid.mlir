// RUN: permalloy-opt %s --split-input-file --allow-unregistered-dialect --verify-diagnostics --parsing-diagnostics | filecheck %s
// Every case is rejected: no split prints a module that verified.
// RUN: permalloy-opt %s --split-input-file --allow-unregistered-dialect --verify-diagnostics --parsing-diagnostics | not grep "^builtin.module"

// Every message of the buffer verifiers and custom parsers, one case per split.

// The buffer type

// CHECK: buffer_invalid.mlir:[[# @LINE + 2]]:
// CHECK: buffer element type index is not supported
func.func @f(%x: !buffer.buffer<[4], index>) {
  func.return
}

// -----

// CHECK: buffer_invalid.mlir:[[# @LINE + 2]]:
// CHECK: a buffer of rank 2 needs as many strides, got 1
func.func @f(%x: !buffer.buffer<[4, 4], f32, strides [1]>) {
  func.return
}

// -----

// CHECK: buffer_invalid.mlir:[[# @LINE + 2]]:
// CHECK: buffer layout 'd0' may only use size symbols
func.func @f(%x: !buffer.buffer<[4], f32, offset d0>) {
  func.return
}

// -----

// CHECK: buffer_invalid.mlir:[[# @LINE + 2]]:
// CHECK: Expected one of 'offset', 'strides'
func.func @f(%x: !buffer.buffer<[4], f32, stride [1]>) {
  func.return
}

// -----

// buffer.alloc

func.func @f() {
  // CHECK: Operation does not verify: buffer.alloc: a new buffer starts at offset 0
  %0 = buffer.alloc : !buffer.buffer<[4], f32, offset 2>
  func.return
}

// -----

// buffer.view

func.func @f(%x: !buffer.buffer<[4], f32>) {
  // CHECK: Operation does not verify: buffer.view cannot change the element type
  %0 = buffer.view %x : !buffer.buffer<[4], f32> -> !buffer.buffer<[4], i32>
  func.return
}

// -----

// buffer.copy

func.func @f(%x: !buffer.buffer<[4], f32>, %y: !buffer.buffer<[5], f32>) {
  // CHECK: Operation does not verify: buffer.copy: !buffer.buffer<[4], f32> and !buffer.buffer<[5], f32> differ in shape or element type
  buffer.copy %x, %y : !buffer.buffer<[4], f32>, !buffer.buffer<[5], f32>
  func.return
}

// -----

func.func @f(%x: !buffer.buffer<[4], f32>, %y: !buffer.buffer<[4], f16>) {
  // CHECK: Operation does not verify: buffer.copy: !buffer.buffer<[4], f32> and !buffer.buffer<[4], f16> differ in shape or element type
  buffer.copy %x, %y : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f16>
  func.return
}

// -----

// buffer.kernel

// CHECK: Operation does not verify: buffer.kernel: the body's arguments differ from the signature
"buffer.kernel"() <{sym_name = "k", function_type = (!ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32>}> ({
^bb0(%a: !ptensor.tensor<[5], f32>):
  "buffer.yield"(%a) : (!ptensor.tensor<[5], f32>) -> ()
}) : () -> ()

// -----

// CHECK: Operation does not verify: buffer.kernel arguments and results are !ptensor.tensor, got f32
buffer.kernel @k(%a: f32) -> () {
  buffer.yield
}

// -----

// CHECK: Operation does not verify: buffer.kernel: the body must end with buffer.yield
buffer.kernel @k(%a: !ptensor.tensor<[4], f32>) -> (!ptensor.tensor<[4], f32>) {
  "test.terminator"(%a) : (!ptensor.tensor<[4], f32>) -> ()
}

// -----

// CHECK: Operation does not verify: buffer.kernel: buffer.yield's types differ from the signature's results
buffer.kernel @k(%a: !ptensor.tensor<[4], f32>) -> (!ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32>) {
  buffer.yield %a : !ptensor.tensor<[4], f32>
}

// -----

// buffer.launch

func.func @f(%x: !buffer.buffer<[4], f32>) {
  // CHECK: Operation does not verify: buffer.launch: no buffer.kernel named @missing
  buffer.launch @missing ins(%x : !buffer.buffer<[4], f32>) outs(%x : !buffer.buffer<[4], f32>)
  func.return
}

// -----

func.func @k() {
  func.return
}
func.func @f(%x: !buffer.buffer<[4], f32>) {
  // CHECK: Operation does not verify: buffer.launch: no buffer.kernel named @k
  buffer.launch @k ins(%x : !buffer.buffer<[4], f32>) outs(%x : !buffer.buffer<[4], f32>)
  func.return
}

// -----

buffer.kernel @k(%a: !ptensor.tensor<[4], f32>) -> (!ptensor.tensor<[4], f32>) {
  buffer.yield %a : !ptensor.tensor<[4], f32>
}
func.func @f(%x: !buffer.buffer<[4], f32>) {
  // CHECK: Operation does not verify: buffer.launch: k takes 1 inputs and gives 1 results
  buffer.launch @k ins(%x, %x : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>) outs(%x : !buffer.buffer<[4], f32>)
  func.return
}

// -----

buffer.kernel @k(%a: !ptensor.tensor<[4], f32>) -> (!ptensor.tensor<[4], f32>) {
  buffer.yield %a : !ptensor.tensor<[4], f32>
}
func.func @f(%x: !buffer.buffer<[4], f32>, %y: !buffer.buffer<[s0], f32>) {
  // CHECK: Operation does not verify: buffer.launch: buffer !buffer.buffer<[s0], f32> cannot hold !ptensor.tensor<[4], f32>
  buffer.launch @k ins(%x : !buffer.buffer<[4], f32>) outs(%y : !buffer.buffer<[s0], f32>)
  func.return
}

// -----

buffer.kernel @k(%a: !ptensor.tensor<[4], f32>) -> (!ptensor.tensor<[4], f32>) {
  buffer.yield %a : !ptensor.tensor<[4], f32>
}
func.func @f(%x: !buffer.buffer<[4], f16>) {
  // CHECK: Operation does not verify: buffer.launch: buffer !buffer.buffer<[4], f16> cannot hold !ptensor.tensor<[4], f32>
  buffer.launch @k ins(%x : !buffer.buffer<[4], f16>) outs(%x : !buffer.buffer<[4], f16>)
  func.return
}

// -----

// buffer.extern

func.func @f(%x: !buffer.buffer<[4], f32>) {
  // CHECK: Operation does not verify: buffer.extern: one body argument per input
  %0 = "buffer.extern"(%x) ({
    %c = "test.op"() : () -> !ptensor.tensor<[4], f32>
    "buffer.yield"(%c) : (!ptensor.tensor<[4], f32>) -> ()
  }) : (!buffer.buffer<[4], f32>) -> !buffer.buffer<[4], f32>
  func.return
}

// -----

func.func @f(%x: !buffer.buffer<[4], f32>) {
  // CHECK: Operation does not verify: buffer.extern: body argument !ptensor.tensor<[4], f16> does not match input !buffer.buffer<[4], f32>
  %0 = "buffer.extern"(%x) ({
  ^bb0(%a: !ptensor.tensor<[4], f16>):
    %c = "test.op"(%a) : (!ptensor.tensor<[4], f16>) -> !ptensor.tensor<[4], f32>
    "buffer.yield"(%c) : (!ptensor.tensor<[4], f32>) -> ()
  }) : (!buffer.buffer<[4], f32>) -> !buffer.buffer<[4], f32>
  func.return
}

// -----

func.func @f(%x: !buffer.buffer<[4], f32>) {
  // CHECK: Operation does not verify: buffer.extern: the body must end with buffer.yield
  %0 = buffer.extern ins(%a = %x : !buffer.buffer<[4], f32>) -> (!buffer.buffer<[4], f32>) {
    "test.terminator"(%a) : (!ptensor.tensor<[4], f32>) -> ()
  }
  func.return
}

// -----

func.func @f(%x: !buffer.buffer<[4], f32>) {
  // CHECK: Operation does not verify: buffer.extern: buffer.yield gives a value per result
  %0 = buffer.extern ins(%a = %x : !buffer.buffer<[4], f32>) -> (!buffer.buffer<[4], f32>) {
    buffer.yield %a, %a : !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32>
  }
  func.return
}

// -----

func.func @f(%x: !buffer.buffer<[4], f32>) {
  // CHECK: Operation does not verify: buffer.extern: buffer !buffer.buffer<[5], f32> cannot hold !ptensor.tensor<[4], f32>
  %0 = buffer.extern ins(%a = %x : !buffer.buffer<[4], f32>) -> (!buffer.buffer<[5], f32>) {
    buffer.yield %a : !ptensor.tensor<[4], f32>
  }
  func.return
}

// -----

func.func @f(%x: !buffer.buffer<[4], f32>, %o: !buffer.buffer<[5], f32>) {
  // CHECK: Operation does not verify: buffer.extern: buffer.writes_last_input needs one result of its last input's layout
  %0 = buffer.extern ins(%a = %x : !buffer.buffer<[4], f32>, %b = %o : !buffer.buffer<[5], f32>) -> (!buffer.buffer<[4], f32>) attributes {buffer.writes_last_input} {
    buffer.yield %a : !ptensor.tensor<[4], f32>
  }
  func.return
}

// -----

func.func @f(%x: !buffer.buffer<[4], f32>, %o: !buffer.buffer<[4], f32>) {
  // CHECK: Operation does not verify: buffer.extern: buffer.writes_last_input's op must not read its last input
  %0 = buffer.extern ins(%a = %x : !buffer.buffer<[4], f32>, %b = %o : !buffer.buffer<[4], f32>) -> (!buffer.buffer<[4], f32>) attributes {buffer.writes_last_input} {
    buffer.yield %b : !ptensor.tensor<[4], f32>
  }
  func.return
}

// -----

// CHECK: buffer_invalid.mlir:[[# @LINE + 3]]:
// CHECK: buffer.extern takes buffers, got !ptensor.tensor<[4], f32>
func.func @f(%x: !ptensor.tensor<[4], f32>) {
  %0 = buffer.extern ins(%a = %x : !ptensor.tensor<[4], f32>) -> (!buffer.buffer<[4], f32>) {
    buffer.yield %a : !ptensor.tensor<[4], f32>
  }
  func.return
}

// -----

// buffer.yield

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: 'buffer.yield' expects parent op to be one of 'buffer.kernel', 'buffer.extern'
  "test.region"() ({
    buffer.yield %x : !ptensor.tensor<[4], f32>
  }) : () -> ()
  func.return
}
