// A syntax error is reported at its file:line:col, with the line and a caret,
// and the tool exits non-zero without a traceback. Read from stdin, the
// location names <stdin>.

// RUN: not permalloy-opt %s 2>&1 | filecheck %s
// RUN: cat %s | not permalloy-opt 2>&1 | filecheck %s --check-prefix=STDIN

// CHECK-NOT: Traceback
// CHECK:      {{.*}}tools/errors_syntax.mlir:[[# @LINE + 6]]:23: error: operand expected
// CHECK-NEXT:   %b = arith.addi %a, : i32
// CHECK-NEXT: {{^}}                      ^{{$}}
// CHECK-NOT: Traceback
// STDIN:      <stdin>:[[# @LINE + 2]]:23: error: operand expected
func.func @f(%a: i32) -> i32 {
  %b = arith.addi %a, : i32
  func.return %b : i32
}
