// RUN: permalloy-opt %s -p scatter-embedding-gradients | filecheck %s
// RUN: permalloy-opt %s -p scatter-embedding-gradients,convert-ptensor-to-loop | filecheck %s --check-prefix=LOOP
// RUN: permalloy-opt %s -p "scatter-embedding-gradients,convert-ptensor-to-loop{deterministic-scatters=true}" | filecheck %s --check-prefix=DETERMINISTIC

// A word table looked up less than once per row: the gradient is a scatter
// adding each lookup's row into a zero table, the rows of the padding index
// adding zeros.
// CHECK-LABEL: func.func @words(
// CHECK-NEXT:    %[[ZEROS:.*]] = ptensor.full 0.0 : !ptensor.tensor<[100, 64], f32>
// CHECK-NEXT:    %[[PAD:.*]] = ptensor.full 0 : !ptensor.tensor<[], i64>
// CHECK-NEXT:    %[[ZERO:.*]] = ptensor.full 0.0 : !ptensor.tensor<[], f32>
// CHECK-NEXT:    %[[HITS:.*]] = ptensor.compare eq %i, %[[PAD]] : !ptensor.tensor<[2, 4], i64>, !ptensor.tensor<[], i64> -> !ptensor.tensor<[2, 4], i1>
// CHECK-NEXT:    %[[ROWS:.*]] = ptensor.reshape %[[HITS]] : !ptensor.tensor<[2, 4], i1> -> !ptensor.tensor<[2, 4, 1], i1>
// CHECK-NEXT:    %[[KEPT:.*]] = ptensor.where %[[ROWS]], %[[ZERO]], %d
// CHECK-NEXT:    %[[G:.*]] = ptensor.index_put %[[ZEROS]][%i] dims [0], %[[KEPT]] accumulate : !ptensor.tensor<[100, 64], f32>, !ptensor.tensor<[2, 4, 64], f32>, [!ptensor.tensor<[2, 4], i64>] -> !ptensor.tensor<[100, 64], f32>
// CHECK-NEXT:    func.return %[[G]]
// LOOP-LABEL: func.func @words(
// LOOP-NOT:     ptensor.embedding_backward
// LOOP:         loop.scatter sum
// LOOP-NOT:     ptensor.embedding_backward
// LOOP:         func.return
// DETERMINISTIC-LABEL: func.func @words(
// DETERMINISTIC: ptensor.index_put
// DETERMINISTIC-NOT: loop.scatter
// DETERMINISTIC: func.return
func.func @words(%d: !ptensor.tensor<[2, 4, 64], f32>, %i: !ptensor.tensor<[2, 4], i64>) -> !ptensor.tensor<[100, 64], f32> {
  %g = ptensor.embedding_backward %d, %i padding 0 : !ptensor.tensor<[2, 4, 64], f32>, !ptensor.tensor<[2, 4], i64> -> !ptensor.tensor<[100, 64], f32>
  func.return %g : !ptensor.tensor<[100, 64], f32>
}

// Without a padding index (-1) every lookup adds its row; sixteen lookups per
// row are still scattered.
// CHECK-LABEL: func.func @positions(
// CHECK-NEXT:    %[[ZEROS:.*]] = ptensor.full 0.0 : !ptensor.tensor<[4, 8], f64>
// CHECK-NEXT:    %[[G:.*]] = ptensor.index_put %[[ZEROS]][%i] dims [0], %d accumulate
// CHECK-NEXT:    func.return %[[G]]
func.func @positions(%d: !ptensor.tensor<[64, 8], f64>, %i: !ptensor.tensor<[64], i32>) -> !ptensor.tensor<[4, 8], f64> {
  %g = ptensor.embedding_backward %d, %i padding -1 : !ptensor.tensor<[64, 8], f64>, !ptensor.tensor<[64], i32> -> !ptensor.tensor<[4, 8], f64>
  func.return %g : !ptensor.tensor<[4, 8], f64>
}

// A two-row table looked up more than sixteen times per row (token types):
// each row sums the lookups of its index, the padding index's rows zeroed
// first.
// CHECK-LABEL: func.func @types(
// CHECK:         %[[PADDED:.*]] = ptensor.where %{{.*}}, %{{.*}}, %d : !ptensor.tensor<[33, 1], i1>, !ptensor.tensor<[], f32>, !ptensor.tensor<[33, 8], f32> -> !ptensor.tensor<[33, 8], f32>
// CHECK-NEXT:    %[[GRAD:.*]] = ptensor.reshape %[[PADDED]] : !ptensor.tensor<[33, 8], f32> -> !ptensor.tensor<[1, 33, 8], f32>
// CHECK-NEXT:    %[[ROWS:.*]] = ptensor.iota start 0 step 1 : !ptensor.tensor<[2], i64>
// CHECK-NEXT:    %[[COLUMN:.*]] = ptensor.reshape %[[ROWS]] : !ptensor.tensor<[2], i64> -> !ptensor.tensor<[2, 1], i64>
// CHECK-NEXT:    %[[ZERO:.*]] = ptensor.full 0.0 : !ptensor.tensor<[], f32>
// CHECK-NEXT:    %[[HITS:.*]] = ptensor.compare eq %i, %[[COLUMN]] : !ptensor.tensor<[33], i64>, !ptensor.tensor<[2, 1], i64> -> !ptensor.tensor<[2, 33], i1>
// CHECK-NEXT:    %[[HIT_ROWS:.*]] = ptensor.reshape %[[HITS]] : !ptensor.tensor<[2, 33], i1> -> !ptensor.tensor<[2, 33, 1], i1>
// CHECK-NEXT:    %[[CHOSEN:.*]] = ptensor.where %[[HIT_ROWS]], %[[GRAD]], %[[ZERO]] : !ptensor.tensor<[2, 33, 1], i1>, !ptensor.tensor<[1, 33, 8], f32>, !ptensor.tensor<[], f32> -> !ptensor.tensor<[2, 33, 8], f32>
// CHECK-NEXT:    %[[G:.*]] = ptensor.reduce sum %[[CHOSEN]] dims [1] : !ptensor.tensor<[2, 33, 8], f32> -> !ptensor.tensor<[2, 8], f32>
// CHECK-NEXT:    func.return %[[G]]
// LOOP-LABEL: func.func @types(
// LOOP-NOT:     ptensor.embedding_backward
// LOOP:         loop.reduce sum
// LOOP-NOT:     ptensor.embedding_backward
// LOOP:         func.return
func.func @types(%d: !ptensor.tensor<[33, 8], f32>, %i: !ptensor.tensor<[33], i64>) -> !ptensor.tensor<[2, 8], f32> {
  %g = ptensor.embedding_backward %d, %i padding 1 : !ptensor.tensor<[33, 8], f32>, !ptensor.tensor<[33], i64> -> !ptensor.tensor<[2, 8], f32>
  func.return %g : !ptensor.tensor<[2, 8], f32>
}

// Refusals, each kept as the library call: more than sixteen lookups per row
// of a table of more than eight rows, scaling by frequency, a half-precision
// table (the library sums in float32), and symbolic sizes.
// CHECK-LABEL: func.func @kept(
// CHECK-NEXT:    ptensor.embedding_backward %d, %i padding -1 :
// CHECK-NEXT:    ptensor.embedding_backward %d, %i padding -1 scale_by_frequency :
// CHECK-NEXT:    ptensor.embedding_backward %h, %i padding -1 :
// CHECK-NEXT:    ptensor.embedding_backward %s, %si padding -1 :
// CHECK-NEXT:    func.return
func.func @kept(%d: !ptensor.tensor<[161, 8], f32>, %i: !ptensor.tensor<[161], i64>, %h: !ptensor.tensor<[161, 8], bf16>, %s: !ptensor.tensor<[s0, 8], f32>, %si: !ptensor.tensor<[s0], i64>) -> (!ptensor.tensor<[10, 8], f32>, !ptensor.tensor<[100, 8], f32>, !ptensor.tensor<[100, 8], bf16>, !ptensor.tensor<[100, 8], f32>) {
  %a = ptensor.embedding_backward %d, %i padding -1 : !ptensor.tensor<[161, 8], f32>, !ptensor.tensor<[161], i64> -> !ptensor.tensor<[10, 8], f32>
  %b = ptensor.embedding_backward %d, %i padding -1 scale_by_frequency : !ptensor.tensor<[161, 8], f32>, !ptensor.tensor<[161], i64> -> !ptensor.tensor<[100, 8], f32>
  %c = ptensor.embedding_backward %h, %i padding -1 : !ptensor.tensor<[161, 8], bf16>, !ptensor.tensor<[161], i64> -> !ptensor.tensor<[100, 8], bf16>
  %e = ptensor.embedding_backward %s, %si padding -1 : !ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[s0], i64> -> !ptensor.tensor<[100, 8], f32>
  func.return %a, %b, %c, %e : !ptensor.tensor<[10, 8], f32>, !ptensor.tensor<[100, 8], f32>, !ptensor.tensor<[100, 8], bf16>, !ptensor.tensor<[100, 8], f32>
}
