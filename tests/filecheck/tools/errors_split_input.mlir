// With --split-input-file, each chunk is processed on its own, and a location
// counts lines in the whole file. The first error stops the tool; with
// --parsing-diagnostics it is printed and the next chunk goes on.

// RUN: not permalloy-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: permalloy-opt %s --split-input-file --parsing-diagnostics | filecheck %s --check-prefix=DIAG

// CHECK:      func.func @first
// CHECK-NOT:  Traceback
// CHECK:      errors_split_input.mlir:[[# @LINE + 15]]:23: error: operand expected
// CHECK-NOT:  func.func @third

// DIAG:       func.func @first
// DIAG:       errors_split_input.mlir:[[# @LINE + 11]]:23
// DIAG:       operand expected
// DIAG:       func.func @third

func.func @first() {
  func.return
}

// -----

func.func @second(%a: i32) {
  %b = arith.addi %a, : i32
  func.return
}

// -----

func.func @third() {
  func.return
}
