// RUN: permalloy-opt %s | filecheck %s --check-prefix=NONE
// RUN: permalloy-opt %s -p dce | filecheck %s --check-prefix=DCE
// RUN: permalloy-opt %s -p canonicalize,cse | filecheck %s --check-prefix=CANON-CSE
// RUN: permalloy-opt %s -p canonicalize,cse --print-between-passes | filecheck %s --check-prefix=BETWEEN
// RUN: permalloy-opt %s -p cse -o %t && filecheck %s --check-prefix=CANON-CSE-TENSORS --input-file %t
// RUN: cat %s | permalloy-opt -p cse | filecheck %s --check-prefix=CANON-CSE-TENSORS

// Pipelines of upstream passes over permalloy IR: `-p` runs them in order.

func.func @scalars(%a: i32) -> i32 {
  %zero = arith.constant 0 : i32
  %b = arith.addi %a, %zero : i32
  %c = arith.muli %b, %b : i32
  %d = arith.muli %b, %b : i32
  %e = arith.addi %c, %d : i32
  func.return %e : i32
}

func.func @tensors(%x: !ptensor.tensor<[s0, 8], f32>) -> !ptensor.tensor<[s0, 8], f32> {
  %0 = ptensor.unary exp %x : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 8], f32>
  %1 = ptensor.unary exp %x : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 8], f32>
  %unused = ptensor.unary neg %x : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 8], f32>
  %2 = ptensor.binary add %0, %1 : !ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 8], f32>
  func.return %2 : !ptensor.tensor<[s0, 8], f32>
}

// Without a pipeline, the input comes back unchanged.
// NONE:      %d = arith.muli %b, %b : i32
// NONE:      %unused = ptensor.unary neg %x

// dce removes the unused pure op and nothing else.
// DCE-LABEL: func.func @scalars
// DCE-NEXT:    %zero = arith.constant 0 : i32
// DCE-NEXT:    %b = arith.addi %a, %zero : i32
// DCE-NEXT:    %c = arith.muli %b, %b : i32
// DCE-NEXT:    %d = arith.muli %b, %b : i32
// DCE-LABEL: func.func @tensors
// DCE-NEXT:    %0 = ptensor.unary exp %x
// DCE-NEXT:    %1 = ptensor.unary exp %x
// DCE-NEXT:    %2 = ptensor.binary add %0, %1
// DCE-NEXT:    func.return %2

// canonicalize folds `x + 0`; cse merges the equal products and the equal
// ptensor ops (they are Pure).
// CANON-CSE-LABEL: func.func @scalars(%a: i32) -> i32 {
// CANON-CSE-NEXT:    %c = arith.muli %a, %a : i32
// CANON-CSE-NEXT:    %e = arith.addi %c, %c : i32
// CANON-CSE-NEXT:    func.return %e : i32
// CANON-CSE-TENSORS-LABEL: func.func @tensors(
// CANON-CSE-TENSORS-NEXT:    %0 = ptensor.unary exp %x : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 8], f32>
// CANON-CSE-TENSORS-NEXT:    %1 = ptensor.binary add %0, %0 : !ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 8], f32>
// CANON-CSE-TENSORS-NEXT:    func.return %1 : !ptensor.tensor<[s0, 8], f32>

// --print-between-passes shows the IR after each pass but the last; the final
// IR follows.
// BETWEEN:      IR after canonicalize:
// BETWEEN-NEXT: builtin.module {
// BETWEEN:        %c = arith.muli %a, %a : i32
// BETWEEN-NEXT:   %d = arith.muli %a, %a : i32
// BETWEEN-NOT:  IR after cse:
// BETWEEN:      builtin.module {
// BETWEEN:        %c = arith.muli %a, %a : i32
// BETWEEN-NEXT:   %e = arith.addi %c, %c : i32
