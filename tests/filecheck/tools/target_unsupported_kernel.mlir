// A kernel a kernel target cannot translate is an error at the launch that
// binds it, with the target's reason, and no traceback.

// RUN: not permalloy-opt %s -t llvm 2>&1 | filecheck %s --check-prefix=LLVM
// RUN: not permalloy-opt %s -t triton 2>&1 | filecheck %s --check-prefix=TRITON

// LLVM-NOT:    Traceback
// LLVM:        target_unsupported_kernel.mlir:[[# @LINE + 12]]:3: error: target 'llvm' cannot emit kernel @identity: a kernel that returns one of its arguments has no loop to emit
// LLVM-NEXT:   buffer.launch @identity
// LLVM-NOT:    Traceback
// TRITON-NOT:  Traceback
// TRITON:      target_unsupported_kernel.mlir:[[# @LINE + 8]]:3: error: target 'triton' cannot emit kernel @identity:
// TRITON-NOT:  Traceback

buffer.kernel @identity(%a: !ptensor.tensor<[4], f32>) -> (!ptensor.tensor<[4], f32>) {
  buffer.yield %a : !ptensor.tensor<[4], f32>
}
func.func @f(%x: !buffer.buffer<[4], f32>) -> !buffer.buffer<[4], f32> {
  %y = buffer.alloc : !buffer.buffer<[4], f32>
  buffer.launch @identity ins(%x : !buffer.buffer<[4], f32>) outs(%y : !buffer.buffer<[4], f32>)
  func.return %y : !buffer.buffer<[4], f32>
}
