// A type of no registered dialect is a parse error at the type.

// RUN: not permalloy-opt %s 2>&1 | filecheck %s

// CHECK-NOT:  Traceback
// CHECK:      errors_unknown_type.mlir:[[# @LINE + 3]]:{{[0-9]+}}: error: 'ptensor.tensr' is not registered
// CHECK-NEXT: func.func @f(%x: !ptensor.tensr<[4], f32>) {
// CHECK-NOT:  Traceback
func.func @f(%x: !ptensor.tensr<[4], f32>) {
  func.return
}
