// A type or attribute that parses but fails its verifier is reported where it
// is written, as a parse error.

// RUN: not permalloy-opt %s 2>&1 | filecheck %s

// CHECK-NOT:  Traceback
// CHECK:      errors_attribute.mlir:[[# @LINE + 4]]:18: error: size 'd0' may only use size symbols (s0, s1, ...), not d0
// CHECK-NEXT: func.func @f(%x: !ptensor.tensor<[d0], f32>) {
// CHECK-NEXT: {{^}}                 ^{{$}}
// CHECK-NOT:  Traceback
func.func @f(%x: !ptensor.tensor<[d0], f32>) {
  func.return
}
