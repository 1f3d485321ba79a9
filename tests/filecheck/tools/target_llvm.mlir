// `-t llvm` prints the LLVM IR the llvm kernel target generates for each
// kernel a buffer-level module launches, for the launch's buffer layouts.

// RUN: permalloy-opt %s -p convert-ptensor-to-loop,convert-loop-to-buffer -t llvm | filecheck %s
// RUN: not permalloy-opt %s -t llvm 2>&1 | filecheck %s --check-prefix=NOT-LOWERED

// CHECK:      // kernel @pointwise_exp_0
// CHECK-NEXT: ; ModuleID = "pointwise_exp_0"
// CHECK:      define i32 @"pointwise_exp_0"(ptr %".1", ptr %".2", i32 %".3")
// CHECK-NOT:  // kernel @

// NOT-LOWERED-NOT: Traceback
// NOT-LOWERED:     permalloy-opt: error: target 'llvm' prints the kernels of buffer-level IR, and this module launches none; lower it first, e.g. with -p convert-ptensor-to-loop,convert-loop-to-buffer

func.func @f(%x: !ptensor.tensor<[s0, 8], f32>) -> !ptensor.tensor<[s0, 8], f32> {
  %0 = ptensor.unary exp %x : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 8], f32>
  func.return %0 : !ptensor.tensor<[s0, 8], f32>
}
