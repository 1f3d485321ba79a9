// A value used before the op defining it (xDSL's parser accepts forward
// references) is reported at the op using it, with the file's line and column,
// before any pass runs.

// RUN: not permalloy-opt %s --split-input-file -p fuse-loops 2>&1 | filecheck %s
// RUN: permalloy-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=DIAG

// CHECK-NOT:  Traceback
// CHECK:      errors_use_before_def.mlir:[[# @LINE + 6]]:3: error: operand 0 of 'ptensor.binary' is used before it is defined
// CHECK-NEXT: ptensor.binary add
// CHECK-NOT:  Traceback
// DIAG:       errors_use_before_def.mlir:[[# @LINE + 3]]:3: error: operand 0 of 'ptensor.binary' is used before it is defined
// DIAG:       errors_use_before_def.mlir:[[# @LINE + 13]]:5: error: operand 1 of 'loop.load' is used before it is defined
func.func @self_reference(%x: !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32> {
  %a = ptensor.binary add %a, %x : !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f32>
  func.return %a : !ptensor.tensor<[4], f32>
}

// -----

// A mask read before its definition, in a loop body.
func.func @mask_after_load(%x: !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[8], f32> {
  %c = loop.pointwise ins(%0 = %x : !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[8], f32> {
    %1 = loop.index d0
    %2 = loop.index 4
    %3 = loop.load %0[d0] if %4 : f32
    %4 = arith.cmpi slt, %1, %2 : index
    loop.yield %3 : f32
  }
  func.return %c : !ptensor.tensor<[8], f32>
}
