// RUN: permalloy-opt %s | permalloy-opt | filecheck %s
// RUN: permalloy-opt %s --print-op-generic | permalloy-opt | filecheck %s
// RUN: permalloy-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: permalloy-opt %s -o %t.custom && permalloy-opt %t.custom -o %t.again && diff %t.custom %t.again
// RUN: permalloy-opt %s --print-op-generic | permalloy-opt -o %t.generic && diff %t.custom %t.generic

// Every loop op, in its custom syntax, printed back exactly as written (after
// a round trip through the custom and through the generic format, both of
// which print, parse and print again identically).

// GENERIC-LABEL: "func.func"() <{sym_name = "pointwise"
// GENERIC:       %0 = "loop.pointwise"(%x) ({
// GENERIC-NEXT:  ^bb0(%a: !ptensor.tensor<[4, 8], f32>):
// GENERIC-NEXT:    %v = "loop.load"(%a) <{indices = #ptensor.exprs[d1, d0], operandSegmentSizes = array<i32: 1, 0, 0>}> : (!ptensor.tensor<[4, 8], f32>) -> f32
// GENERIC:         "loop.yield"(%e) : (f32) -> ()
// GENERIC-NEXT:  }) : (!ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[8, 4], f32>
// GENERIC:       %v = "loop.load"(%a, %p) <{indices = #ptensor.exprs[v0, d1], operandSegmentSizes = array<i32: 1, 1, 0>}> : (!ptensor.tensor<[4, 8], f32>, index) -> f32
// GENERIC:       }) {note = "gather"} : (!ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[s0], i64>) -> !ptensor.tensor<[s0, 8], f32>
// GENERIC:       %k = "loop.index"() <{expr = #sym.expr<d0 - 1>}> : () -> index
// GENERIC:       %v = "loop.load"(%a, %m) <{indices = #ptensor.exprs[d0 - 1], operandSegmentSizes = array<i32: 1, 0, 1>}> {cache = "none"} : (!ptensor.tensor<[8], ui8>, i1) -> i8
// GENERIC-LABEL: "func.func"() <{sym_name = "reduce"
// GENERIC:       %0 = "loop.reduce"(%x) <{kind = #ptensor<reduce_kind sum>, reduction = #ptensor.exprs[s0]}> ({
// GENERIC:       %1 = "loop.reduce"(%x) <{kind = #ptensor<reduce_kind prod>, reduction = #ptensor.exprs[4, s0]}> ({
// GENERIC:       }) {fused} : (!ptensor.tensor<[4, 3], i1>) -> !ptensor.tensor<[4], i1>

// loop.pointwise with a transposed load, a gather through an index value
// (`v0`), a masked load with an attribute, and loop.index over size symbols.
// CHECK-LABEL: func.func @pointwise(
// CHECK-SAME:  %x: !ptensor.tensor<[4, 8], f32>, %i: !ptensor.tensor<[s0], i64>, %u: !ptensor.tensor<[8], ui8>) -> (!ptensor.tensor<[8, 4], f32>, !ptensor.tensor<[s0, 8], f32>) {
// CHECK-NEXT:   %0 = loop.pointwise ins(%a = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[8, 4], f32> {
// CHECK-NEXT:     %v = loop.load %a[d1, d0] : f32
// CHECK-NEXT:     %e = math.exp %v : f32
// CHECK-NEXT:     loop.yield %e : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %1 = loop.pointwise ins(%a = %x : !ptensor.tensor<[4, 8], f32>, %b = %i : !ptensor.tensor<[s0], i64>) -> !ptensor.tensor<[s0, 8], f32> attributes {note = "gather"} {
// CHECK-NEXT:     %j = loop.load %b[d0] : i64
// CHECK-NEXT:     %p = arith.index_cast %j : i64 to index
// CHECK-NEXT:     %v = loop.load %a[v0, d1] (%p) : f32
// CHECK-NEXT:     loop.yield %v : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %2 = loop.pointwise ins(%a = %u : !ptensor.tensor<[8], ui8>) -> !ptensor.tensor<[10], ui8> {
// CHECK-NEXT:     %k = loop.index d0 - 1
// CHECK-NEXT:     %z = arith.constant 0 : index
// CHECK-NEXT:     %m = arith.cmpi sge, %k, %z : index
// CHECK-NEXT:     %v = loop.load %a[d0 - 1] if %m {cache = "none"} : i8
// CHECK-NEXT:     loop.yield %v : i8
// CHECK-NEXT:   }
// CHECK-NEXT:   %3 = loop.pointwise ins() -> !ptensor.tensor<[], i64> {
// CHECK-NEXT:     %k = loop.index (s0 + 1) floordiv 2 + max(2, s0) - min(5, s0) + s0 ceildiv 4 + s0 mod 3 {origin = "size"}
// CHECK-NEXT:     %c = arith.index_cast %k : index to i64
// CHECK-NEXT:     loop.yield %c : i64
// CHECK-NEXT:   }
// CHECK-NEXT:   %4 = loop.pointwise ins(%a = %x : !ptensor.tensor<[4, 8], f32>, %b = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8, 8], f32> {
// CHECK-NEXT:     %l = loop.load %a[d0, d1] : f32
// CHECK-NEXT:     %r = loop.load %b[d0, d2] : f32
// CHECK-NEXT:     %s = arith.mulf %l, %r : f32
// CHECK-NEXT:     loop.yield %s : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return %0, %1 : !ptensor.tensor<[8, 4], f32>, !ptensor.tensor<[s0, 8], f32>
// CHECK-NEXT: }
func.func @pointwise(%x: !ptensor.tensor<[4, 8], f32>, %i: !ptensor.tensor<[s0], i64>, %u: !ptensor.tensor<[8], ui8>) -> (!ptensor.tensor<[8, 4], f32>, !ptensor.tensor<[s0, 8], f32>) {
  %0 = loop.pointwise ins(%a = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[8, 4], f32> {
    %v = loop.load %a[d1, d0] : f32
    %e = math.exp %v : f32
    loop.yield %e : f32
  }
  %1 = loop.pointwise ins(%a = %x : !ptensor.tensor<[4, 8], f32>, %b = %i : !ptensor.tensor<[s0], i64>) -> !ptensor.tensor<[s0, 8], f32> attributes {note = "gather"} {
    %j = loop.load %b[d0] : i64
    %p = arith.index_cast %j : i64 to index
    %v = loop.load %a[v0, d1] (%p) : f32
    loop.yield %v : f32
  }
  %2 = loop.pointwise ins(%a = %u : !ptensor.tensor<[8], ui8>) -> !ptensor.tensor<[10], ui8> {
    %k = loop.index d0 - 1
    %z = arith.constant 0 : index
    %m = arith.cmpi sge, %k, %z : index
    %v = loop.load %a[d0 - 1] if %m {cache = "none"} : i8
    loop.yield %v : i8
  }
  %3 = loop.pointwise ins() -> !ptensor.tensor<[], i64> {
    %k = loop.index (s0 + 1) floordiv 2 + max(2, s0) - min(5, s0) + s0 ceildiv 4 + s0 mod 3 {origin = "size"}
    %c = arith.index_cast %k : index to i64
    loop.yield %c : i64
  }
  %4 = loop.pointwise ins(%a = %x : !ptensor.tensor<[4, 8], f32>, %b = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8, 8], f32> {
    %l = loop.load %a[d0, d1] : f32
    %r = loop.load %b[d0, d2] : f32
    %s = arith.mulf %l, %r : f32
    loop.yield %s : f32
  }
  func.return %0, %1 : !ptensor.tensor<[8, 4], f32>, !ptensor.tensor<[s0, 8], f32>
}


// loop.reduce: every kind, one and two reduction dimensions, a reduction to
// a scalar and with keepdim-like size-1 results.
// CHECK-LABEL: func.func @reduce(
// CHECK-SAME:  %x: !ptensor.tensor<[4, s0], f32>, %b: !ptensor.tensor<[4, 3], i1>) {
// CHECK-NEXT:   %0 = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4, s0], f32>) over [s0] -> !ptensor.tensor<[4], f32> {
// CHECK-NEXT:     %v = loop.load %a[d0, r0] : f32
// CHECK-NEXT:     loop.yield %v : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %1 = loop.reduce prod ins(%a = %x : !ptensor.tensor<[4, s0], f32>) over [4, s0] -> !ptensor.tensor<[], f32> {
// CHECK-NEXT:     %v = loop.load %a[r0, r1] : f32
// CHECK-NEXT:     loop.yield %v : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %2 = loop.reduce max ins(%a = %x : !ptensor.tensor<[4, s0], f32>) over [s0] -> !ptensor.tensor<[4, 1], f32> {
// CHECK-NEXT:     %v = loop.load %a[d0, r0] : f32
// CHECK-NEXT:     loop.yield %v : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %3 = loop.reduce min ins(%a = %x : !ptensor.tensor<[4, s0], f32>) over [4] -> !ptensor.tensor<[s0], f32> {
// CHECK-NEXT:     %v = loop.load %a[r0, d0] : f32
// CHECK-NEXT:     loop.yield %v : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %4 = loop.reduce argmax ins(%a = %x : !ptensor.tensor<[4, s0], f32>) over [s0] -> !ptensor.tensor<[4], i64> {
// CHECK-NEXT:     %v = loop.load %a[d0, r0] : f32
// CHECK-NEXT:     loop.yield %v : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %5 = loop.reduce argmin ins(%a = %x : !ptensor.tensor<[4, s0], f32>) over [s0 * 2 - 1] -> !ptensor.tensor<[4], i64> {
// CHECK-NEXT:     %v = loop.load %a[d0, r0 floordiv 2] : f32
// CHECK-NEXT:     loop.yield %v : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %6 = loop.reduce any ins(%a = %b : !ptensor.tensor<[4, 3], i1>) over [3] -> !ptensor.tensor<[4], i1> {
// CHECK-NEXT:     %v = loop.load %a[d0, r0] : i1
// CHECK-NEXT:     loop.yield %v : i1
// CHECK-NEXT:   }
// CHECK-NEXT:   %7 = loop.reduce all ins(%a = %b : !ptensor.tensor<[4, 3], i1>) over [3] -> !ptensor.tensor<[4], i1> attributes {fused} {
// CHECK-NEXT:     %v = loop.load %a[d0, r0] : i1
// CHECK-NEXT:     loop.yield %v : i1
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return
// CHECK-NEXT: }
func.func @reduce(%x: !ptensor.tensor<[4, s0], f32>, %b: !ptensor.tensor<[4, 3], i1>) {
  %0 = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4, s0], f32>) over [s0] -> !ptensor.tensor<[4], f32> {
    %v = loop.load %a[d0, r0] : f32
    loop.yield %v : f32
  }
  %1 = loop.reduce prod ins(%a = %x : !ptensor.tensor<[4, s0], f32>) over [4, s0] -> !ptensor.tensor<[], f32> {
    %v = loop.load %a[r0, r1] : f32
    loop.yield %v : f32
  }
  %2 = loop.reduce max ins(%a = %x : !ptensor.tensor<[4, s0], f32>) over [s0] -> !ptensor.tensor<[4, 1], f32> {
    %v = loop.load %a[d0, r0] : f32
    loop.yield %v : f32
  }
  %3 = loop.reduce min ins(%a = %x : !ptensor.tensor<[4, s0], f32>) over [4] -> !ptensor.tensor<[s0], f32> {
    %v = loop.load %a[r0, d0] : f32
    loop.yield %v : f32
  }
  %4 = loop.reduce argmax ins(%a = %x : !ptensor.tensor<[4, s0], f32>) over [s0] -> !ptensor.tensor<[4], i64> {
    %v = loop.load %a[d0, r0] : f32
    loop.yield %v : f32
  }
  %5 = loop.reduce argmin ins(%a = %x : !ptensor.tensor<[4, s0], f32>) over [s0 * 2 - 1] -> !ptensor.tensor<[4], i64> {
    %v = loop.load %a[d0, r0 floordiv 2] : f32
    loop.yield %v : f32
  }
  %6 = loop.reduce any ins(%a = %b : !ptensor.tensor<[4, 3], i1>) over [3] -> !ptensor.tensor<[4], i1> {
    %v = loop.load %a[d0, r0] : i1
    loop.yield %v : i1
  }
  %7 = loop.reduce all ins(%a = %b : !ptensor.tensor<[4, 3], i1>) over [3] -> !ptensor.tensor<[4], i1> attributes {fused} {
    %v = loop.load %a[d0, r0] : i1
    loop.yield %v : i1
  }
  func.return
}


// loop.scan: the scanned dimension is r0, the others the parallel indices in
// order; every kind.
// CHECK-LABEL: func.func @scan(
// CHECK-SAME:  %x: !ptensor.tensor<[4, s0], f32>, %u: !ptensor.tensor<[s0], ui8>) {
// CHECK-NEXT:   %0 = loop.scan sum ins(%a = %x : !ptensor.tensor<[4, s0], f32>) dim 1 -> !ptensor.tensor<[4, s0], f32> {
// CHECK-NEXT:     %v = loop.load %a[d0, r0] : f32
// CHECK-NEXT:     loop.yield %v : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %1 = loop.scan logsumexp ins(%a = %x : !ptensor.tensor<[4, s0], f32>) dim 0 -> !ptensor.tensor<[4, s0], f32> {
// CHECK-NEXT:     %v = loop.load %a[r0, d0] : f32
// CHECK-NEXT:     loop.yield %v : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %2 = loop.scan argmax ins(%a = %x : !ptensor.tensor<[4, s0], f32>) dim 0 -> !ptensor.tensor<[s0, 4], i64> {
// CHECK-NEXT:     %v = loop.load %a[d0, r0] : f32
// CHECK-NEXT:     loop.yield %v : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %3 = loop.scan max ins(%a = %u : !ptensor.tensor<[s0], ui8>) dim 0 -> !ptensor.tensor<[s0], ui8> attributes {fused} {
// CHECK-NEXT:     %v = loop.load %a[r0] : i8
// CHECK-NEXT:     loop.yield %v : i8
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return
// CHECK-NEXT: }
// GENERIC-LABEL: "func.func"() <{sym_name = "scan"
// GENERIC:       %0 = "loop.scan"(%x) <{kind = #ptensor<scan_kind sum>, dim = 1 : i64}> ({
func.func @scan(%x: !ptensor.tensor<[4, s0], f32>, %u: !ptensor.tensor<[s0], ui8>) {
  %0 = loop.scan sum ins(%a = %x : !ptensor.tensor<[4, s0], f32>) dim 1 -> !ptensor.tensor<[4, s0], f32> {
    %v = loop.load %a[d0, r0] : f32
    loop.yield %v : f32
  }
  %1 = loop.scan logsumexp ins(%a = %x : !ptensor.tensor<[4, s0], f32>) dim 0 -> !ptensor.tensor<[4, s0], f32> {
    %v = loop.load %a[r0, d0] : f32
    loop.yield %v : f32
  }
  %2 = loop.scan argmax ins(%a = %x : !ptensor.tensor<[4, s0], f32>) dim 0 -> !ptensor.tensor<[s0, 4], i64> {
    %v = loop.load %a[d0, r0] : f32
    loop.yield %v : f32
  }
  %3 = loop.scan max ins(%a = %u : !ptensor.tensor<[s0], ui8>) dim 0 -> !ptensor.tensor<[s0], ui8> attributes {fused} {
    %v = loop.load %a[r0] : i8
    loop.yield %v : i8
  }
  func.return
}

// Loads of buffers (inside kernels at the buffer level, loops may read them).
// CHECK-LABEL: func.func @buffer_source(
// CHECK-SAME:  %x: !buffer.buffer<[4, 8], f32, strides [1, 4]>) {
// CHECK-NEXT:   %0 = loop.pointwise ins(%a = %x : !buffer.buffer<[4, 8], f32, strides [1, 4]>) -> !ptensor.tensor<[4], f32> {
// CHECK-NEXT:     %v = loop.load %a[d0, 7] : f32
// CHECK-NEXT:     loop.yield %v : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   func.return
// CHECK-NEXT: }
func.func @buffer_source(%x: !buffer.buffer<[4, 8], f32, strides [1, 4]>) {
  %0 = loop.pointwise ins(%a = %x : !buffer.buffer<[4, 8], f32, strides [1, 4]>) -> !ptensor.tensor<[4], f32> {
    %v = loop.load %a[d0, 7] : f32
    loop.yield %v : f32
  }
  func.return
}

