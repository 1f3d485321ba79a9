// RUN: permalloy-opt %s | permalloy-opt | filecheck %s

// loop.sort prints and parses back: its order, its inputs, its sorted
// dimension, the row length it sorts (`over`), and a result keeping every
// position of a row or its first k; rows may have symbolic lengths.

// CHECK-LABEL: func.func @sort_rows
// CHECK:         %p = loop.sort ascending ins(%a = %x : !ptensor.tensor<[4, 8], f32>) dim 1 over [8] -> !ptensor.tensor<[4, 8], i64> {
// CHECK-NEXT:      %v = loop.load %a[d0, r0] : f32
// CHECK-NEXT:      loop.yield %v : f32
// CHECK-NEXT:    }
func.func @sort_rows(%x: !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], i64> {
  %p = loop.sort ascending ins(%a = %x : !ptensor.tensor<[4, 8], f32>) dim 1 over [8] -> !ptensor.tensor<[4, 8], i64> {
    %v = loop.load %a[d0, r0] : f32
    loop.yield %v : f32
  }
  func.return %p : !ptensor.tensor<[4, 8], i64>
}

// The 3 largest along the first dimension, of widened unsigned bytes.
// CHECK-LABEL: func.func @top_three_of_columns
// CHECK:         %p = loop.sort descending ins(%a = %x : !ptensor.tensor<[8, 4], ui8>) dim 0 over [8] -> !ptensor.tensor<[3, 4], i64> {
// CHECK-NEXT:      %v = loop.load %a[r0, d0] : i8
// CHECK-NEXT:      %w = arith.extui %v : i8 to i16
// CHECK-NEXT:      loop.yield %w : i16
func.func @top_three_of_columns(%x: !ptensor.tensor<[8, 4], ui8>) -> !ptensor.tensor<[3, 4], i64> {
  %p = loop.sort descending ins(%a = %x : !ptensor.tensor<[8, 4], ui8>) dim 0 over [8] -> !ptensor.tensor<[3, 4], i64> {
    %v = loop.load %a[r0, d0] : i8
    %w = arith.extui %v : i8 to i16
    loop.yield %w : i16
  }
  func.return %p : !ptensor.tensor<[3, 4], i64>
}

// CHECK-LABEL: func.func @symbolic
// CHECK:         loop.sort ascending ins(%a = %x : !ptensor.tensor<[s0, s1], f16>) dim 1 over [s1] -> !ptensor.tensor<[s0, 2], i64> {
func.func @symbolic(%x: !ptensor.tensor<[s0, s1], f16>) -> !ptensor.tensor<[s0, 2], i64> {
  %p = loop.sort ascending ins(%a = %x : !ptensor.tensor<[s0, s1], f16>) dim 1 over [s1] -> !ptensor.tensor<[s0, 2], i64> {
    %v = loop.load %a[d0, r0] : f16
    loop.yield %v : f16
  }
  func.return %p : !ptensor.tensor<[s0, 2], i64>
}
