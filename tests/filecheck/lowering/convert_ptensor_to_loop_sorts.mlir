// RUN: permalloy-opt %s -p convert-ptensor-to-loop | filecheck %s
// RUN: permalloy-opt %s -p "convert-ptensor-to-loop{sort-max-length=16 sort-max-bits=32}" | filecheck %s --check-prefix=LIMITS
// RUN: permalloy-opt %s -p "convert-ptensor-to-loop{deterministic-scatters=true}" | filecheck %s --check-prefix=DETERMINISTIC
// RUN: permalloy-opt %s -p convert-ptensor-to-loop,cse,dce,fuse-loops,cse,dce,convert-loop-to-buffer | filecheck %s --check-prefix=BUFFER

// A sort becomes a loop.sort of positions along its dimension (the row is
// r0, the other dimensions d0, ...) and, where the values are read, a
// loop.pointwise gathering the input at those positions; a topk keeps the
// first k positions, descending for the largest. The sort's body yields
// the value in its storage type; unsigned integers and booleans are
// widened to a signed integer. A row of one element is its own sort.
// Sorts of rows longer than sort-max-length, of values wider than
// sort-max-bits, or of symbolic length stay for torch. A scatter of a
// source assigns each value where it lands; with deterministic-scatters it
// stays for torch. A sort is a kernel of its own; its producer's body is
// inlined into it.

// CHECK-LABEL: func.func @sort_rows
// CHECK:         %[[P:.+]] = loop.sort descending ins(%[[A:.+]] = %x : !ptensor.tensor<[4, 8], f16>) dim 1 over [8] -> !ptensor.tensor<[4, 8], i64> {
// CHECK-NEXT:      %[[V:.+]] = loop.load %[[A]][d0, r0] : f16
// CHECK-NEXT:      loop.yield %[[V]] : f16
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.pointwise ins(%[[Q:.+]] = %[[P]] : !ptensor.tensor<[4, 8], i64>, %[[B:.+]] = %x : !ptensor.tensor<[4, 8], f16>) -> !ptensor.tensor<[4, 8], f16> {
// CHECK-NEXT:      %[[K:.+]] = loop.load %[[Q]][d0, d1] : i64
// CHECK-NEXT:      %[[I:.+]] = arith.index_cast %[[K]] : i64 to index
// CHECK-NEXT:      loop.load %[[B]][d0, v0] (%[[I]]) : f16
// LIMITS-LABEL: func.func @sort_rows
// LIMITS:         loop.sort descending
// BUFFER-LABEL:  func.func @sort_rows
// BUFFER:          buffer.launch @sort_{{[0-9]+}} ins(%x : !buffer.buffer<[4, 8], f16>) outs(%{{.+}} : !buffer.buffer<[4, 8], i64>)
func.func @sort_rows(%x: !ptensor.tensor<[4, 8], f16>) -> (!ptensor.tensor<[4, 8], f16>, !ptensor.tensor<[4, 8], i64>) {
  %v, %i = ptensor.sort %x dim 1 descending stable : !ptensor.tensor<[4, 8], f16> -> !ptensor.tensor<[4, 8], f16>, !ptensor.tensor<[4, 8], i64>
  func.return %v, %i : !ptensor.tensor<[4, 8], f16>, !ptensor.tensor<[4, 8], i64>
}

// The positions alone: no gather. A transposed input is read where it lives.
// CHECK-LABEL: func.func @argsort_of_columns
// CHECK:         loop.sort ascending ins(%[[A:.+]] = %x : !ptensor.tensor<[4, 8], ui8>) dim 0 over [8] -> !ptensor.tensor<[8, 4], i64> {
// CHECK-NEXT:      %[[V:.+]] = loop.load %[[A]][d0, r0] : i8
// CHECK-NEXT:      %[[W:.+]] = arith.extui %[[V]] : i8 to i16
// CHECK-NEXT:      loop.yield %[[W]] : i16
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @argsort_of_columns(%x: !ptensor.tensor<[4, 8], ui8>) -> !ptensor.tensor<[8, 4], i64> {
  %t = ptensor.permute %x [1, 0] : !ptensor.tensor<[4, 8], ui8> -> !ptensor.tensor<[8, 4], ui8>
  %v, %i = ptensor.sort %t dim 0 : !ptensor.tensor<[8, 4], ui8> -> !ptensor.tensor<[8, 4], ui8>, !ptensor.tensor<[8, 4], i64>
  func.return %i : !ptensor.tensor<[8, 4], i64>
}

// CHECK-LABEL: func.func @topk
// CHECK:         %[[P:.+]] = loop.sort descending ins(%{{.+}} = %x : !ptensor.tensor<[4, 32], i1>) dim 1 over [32] -> !ptensor.tensor<[4, 3], i64> {
// CHECK:           arith.extui %{{.+}} : i1 to i8
// CHECK:         loop.pointwise ins(%{{.+}} = %[[P]] : !ptensor.tensor<[4, 3], i64>, %{{.+}} = %x : !ptensor.tensor<[4, 32], i1>) -> !ptensor.tensor<[4, 3], i1>
// LIMITS-LABEL: func.func @topk
// LIMITS:         ptensor.topk %x k 3 dim 1 largest sorted
func.func @topk(%x: !ptensor.tensor<[4, 32], i1>) -> (!ptensor.tensor<[4, 3], i1>, !ptensor.tensor<[4, 3], i64>) {
  %v, %i = ptensor.topk %x k 3 dim 1 largest sorted : !ptensor.tensor<[4, 32], i1> -> !ptensor.tensor<[4, 3], i1>, !ptensor.tensor<[4, 3], i64>
  func.return %v, %i : !ptensor.tensor<[4, 3], i1>, !ptensor.tensor<[4, 3], i64>
}

// CHECK-LABEL: func.func @rows_of_one
// CHECK:         loop.pointwise ins() -> !ptensor.tensor<[5, 1], i64> {
// CHECK-NEXT:      %[[Z:.+]] = arith.constant 0 : i64
// CHECK-NEXT:      loop.yield %[[Z]] : i64
func.func @rows_of_one(%x: !ptensor.tensor<[5, 1], f32>) -> !ptensor.tensor<[5, 1], i64> {
  %v, %i = ptensor.sort %x dim 1 : !ptensor.tensor<[5, 1], f32> -> !ptensor.tensor<[5, 1], f32>, !ptensor.tensor<[5, 1], i64>
  func.return %i : !ptensor.tensor<[5, 1], i64>
}

// CHECK-LABEL: func.func @wide_and_symbolic
// CHECK:         loop.sort ascending ins(%{{.+}} = %x : !ptensor.tensor<[3, 20], f64>) dim 1 over [20]
// CHECK:         ptensor.sort %y dim 1 : !ptensor.tensor<[3, s0], f32>
// LIMITS-LABEL: func.func @wide_and_symbolic
// LIMITS:         ptensor.sort %x dim 1 : !ptensor.tensor<[3, 20], f64>
// LIMITS:         ptensor.sort %y dim 1 : !ptensor.tensor<[3, s0], f32>
func.func @wide_and_symbolic(%x: !ptensor.tensor<[3, 20], f64>, %y: !ptensor.tensor<[3, s0], f32>) -> (!ptensor.tensor<[3, 20], f64>, !ptensor.tensor<[3, s0], f32>) {
  %v, %i = ptensor.sort %x dim 1 : !ptensor.tensor<[3, 20], f64> -> !ptensor.tensor<[3, 20], f64>, !ptensor.tensor<[3, 20], i64>
  %w, %j = ptensor.sort %y dim 1 : !ptensor.tensor<[3, s0], f32> -> !ptensor.tensor<[3, s0], f32>, !ptensor.tensor<[3, s0], i64>
  func.return %v, %w : !ptensor.tensor<[3, 20], f64>, !ptensor.tensor<[3, s0], f32>
}

// CHECK-LABEL: func.func @fused_producer
// BUFFER-LABEL:  buffer.kernel @sort_{{[0-9]+}}(%{{.+}}: !ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4, 8], i64>) {
// BUFFER-NEXT:     loop.sort ascending
// BUFFER-NEXT:       loop.load
// BUFFER-NEXT:       math.exp
// BUFFER-LABEL:  func.func @fused_producer
func.func @fused_producer(%x: !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], i64> {
  %e = ptensor.unary exp %x : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>
  %v, %i = ptensor.sort %e dim 1 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], i64>
  func.return %i : !ptensor.tensor<[4, 8], i64>
}

// CHECK-LABEL: func.func @scatter_source
// CHECK:         loop.scatter assign init(%x : !ptensor.tensor<[4, 8], f32>) ins({{.+}}) over [4, 2] -> !ptensor.tensor<[4, 8], f32> {
// CHECK:           loop.scatter_yield %{{.+}} at [d0, v0] (%{{.+}}) : f32
// DETERMINISTIC-LABEL: func.func @scatter_source
// DETERMINISTIC:         ptensor.scatter %x, %i, %s dim 1
func.func @scatter_source(%x: !ptensor.tensor<[4, 8], f32>, %i: !ptensor.tensor<[4, 2], i64>, %s: !ptensor.tensor<[4, 2], f32>) -> !ptensor.tensor<[4, 8], f32> {
  %y = ptensor.scatter %x, %i, %s dim 1 : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 2], i64>, !ptensor.tensor<[4, 2], f32> -> !ptensor.tensor<[4, 8], f32>
  func.return %y : !ptensor.tensor<[4, 8], f32>
}
