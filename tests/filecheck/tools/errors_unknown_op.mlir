// An op of no registered dialect is a parse error at the op's name.

// RUN: not permalloy-opt %s 2>&1 | filecheck %s
// RUN: permalloy-opt %s --allow-unregistered-dialect | filecheck %s --check-prefix=ALLOWED

// CHECK-NOT:  Traceback
// CHECK:      errors_unknown_op.mlir:[[# @LINE + 4]]:{{[0-9]+}}: error: Operation ptensor.no_such_op is not registered
// CHECK-NOT:  Traceback
// ALLOWED:    %0 = "ptensor.no_such_op"(%x) : (!ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32>
func.func @f(%x: !ptensor.tensor<[4], f32>) {
  %0 = "ptensor.no_such_op"(%x) : (!ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32>
  func.return
}
