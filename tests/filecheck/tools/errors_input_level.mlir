// A pass given IR at a level it does not handle says which level it expects,
// at the offending op's file:line:col, and the tool exits non-zero without a
// traceback. Function declarations have no body to transform and are kept.

// RUN: not permalloy-opt %s -p fuse-loops 2>&1 | filecheck %s --check-prefix=FUSE
// RUN: not permalloy-opt %s -p convert-loop-to-buffer 2>&1 | filecheck %s --check-prefix=TO-BUFFER

// FUSE-NOT:       Traceback
// FUSE:           errors_input_level.mlir:[[# @LINE + 14]]:3: error: fuse-loops expects loop-level IR (ptensor and loop ops over tensors); found 'arith.constant'
// FUSE-NEXT:      arith.constant 0 : i32
// FUSE-NOT:       Traceback
// TO-BUFFER-NOT:  Traceback
// TO-BUFFER:      errors_input_level.mlir:[[# @LINE + 10]]:3: error: convert-loop-to-buffer expects loop-level IR (ptensor and loop ops over tensors); found 'arith.constant'
// TO-BUFFER-NOT:  Traceback

func.func private @declared(%x: !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32>

func.func @tensors(%x: !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32> {
  func.return %x : !ptensor.tensor<[4], f32>
}

func.func @scalars() -> i32 {
  %zero = arith.constant 0 : i32
  func.return %zero : i32
}
