// IR that parses but fails an op's verifier: the verifier's message, then the
// IR (in generic form) with the failing op marked; exit status 1.
// With --verify-diagnostics the same report goes to stdout and the tool
// succeeds, for tests of verifiers.

// RUN: not permalloy-opt %s 2>&1 | filecheck %s
// RUN: permalloy-opt %s --verify-diagnostics | filecheck %s --check-prefix=DIAG

// CHECK-NOT:  Traceback
// CHECK:      permalloy-opt: error: ptensor.mm: inner sizes 8 and 4 differ
// CHECK:      %0 = "ptensor.mm"(%a, %a)
// CHECK-NEXT: ^^^^^^^^^^^^^^^^^
// CHECK-NEXT: | Operation does not verify: ptensor.mm: inner sizes 8 and 4 differ
// CHECK-NOT:  Traceback

// DIAG:      ptensor.mm: inner sizes 8 and 4 differ
// DIAG:      | Operation does not verify: ptensor.mm: inner sizes 8 and 4 differ
func.func @f(%a: !ptensor.tensor<[4, 8], f32>) {
  %0 = ptensor.mm %a, %a : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>
  func.return
}
