// RUN: permalloy-opt %s -p convert-ptensor-to-loop | filecheck %s
// RUN: permalloy-opt %s -p "convert-ptensor-to-loop{deterministic-scatters=true}" | filecheck %s --check-prefix=DETERMINISTIC
// RUN: permalloy-opt %s -p convert-ptensor-to-loop,cse,dce,fuse-loops,cse,dce,convert-loop-to-buffer | filecheck %s --check-prefix=BUFFER

// The scatters become loop.scatter ops over their index's shape (the
// indexed shape for index_put), each point loading its index entry and its
// value and yielding them at the position it lands on. Without include_self
// the destinations first get the kind's identity (-inf for max). index_put
// counts negative positions from the end. With deterministic-scatters the
// float sums stay for torch, the max does not. A scatter's launch combines
// into a copy of its init, or into the init's own buffer when nothing else
// reads it.

// CHECK-LABEL: func.func @scatter_max
// CHECK:         %[[CLEARED:.+]] = loop.scatter assign init(%x : !ptensor.tensor<[5, 4], f32>) ins(%[[I:.+]] = %i : !ptensor.tensor<[3, 4], i64>) over [3, 4] -> !ptensor.tensor<[5, 4], f32> {
// CHECK:           %[[INF:.+]] = arith.constant 0xff800000 : f32
// CHECK:           loop.scatter_yield %[[INF]] at [v0, d1] (%{{.+}}) : f32
// CHECK:         loop.scatter max init(%[[CLEARED]] : !ptensor.tensor<[5, 4], f32>) ins({{.+}}) over [3, 4] -> !ptensor.tensor<[5, 4], f32> {
// CHECK:           loop.scatter_yield %{{.+}} at [v0, d1] (%{{.+}}) : f32
// DETERMINISTIC-LABEL: func.func @scatter_max
// DETERMINISTIC:         loop.scatter max
func.func @scatter_max(%x: !ptensor.tensor<[5, 4], f32>, %i: !ptensor.tensor<[3, 4], i64>, %s: !ptensor.tensor<[3, 4], f32>) -> !ptensor.tensor<[5, 4], f32> {
  %e = ptensor.unary exp %s : !ptensor.tensor<[3, 4], f32> -> !ptensor.tensor<[3, 4], f32>
  %y = ptensor.scatter_reduce max %x, %i, %e dim 0 : !ptensor.tensor<[5, 4], f32>, !ptensor.tensor<[3, 4], i64>, !ptensor.tensor<[3, 4], f32> -> !ptensor.tensor<[5, 4], f32>
  func.return %y : !ptensor.tensor<[5, 4], f32>
}

// CHECK-LABEL: func.func @scatter_add
// CHECK:         loop.scatter sum init(%x : !ptensor.tensor<[5, 4], f32>) ins({{.+}}) over [3, 2] -> !ptensor.tensor<[5, 4], f32> {
// CHECK:           loop.scatter_yield %{{.+}} at [d0, v0] (%{{.+}}) : f32
// DETERMINISTIC-LABEL: func.func @scatter_add
// DETERMINISTIC:         ptensor.scatter_add
// BUFFER-LABEL: func.func @scatter_add
// BUFFER:         %[[Y:.+]] = buffer.alloc : !buffer.buffer<[5, 4], f32>
// BUFFER-NEXT:    buffer.copy %x, %[[Y]]
// BUFFER-NEXT:    buffer.launch @scatter_sum_{{[0-9]+}} ins(%i, %s, %x : {{.+}}) outs(%[[Y]] : !buffer.buffer<[5, 4], f32>)
func.func @scatter_add(%x: !ptensor.tensor<[5, 4], f32>, %i: !ptensor.tensor<[3, 2], i64>, %s: !ptensor.tensor<[3, 4], f32>) -> !ptensor.tensor<[5, 4], f32> {
  %y = ptensor.scatter_add %x, %i, %s dim 1 : !ptensor.tensor<[5, 4], f32>, !ptensor.tensor<[3, 2], i64>, !ptensor.tensor<[3, 4], f32> -> !ptensor.tensor<[5, 4], f32>
  func.return %y : !ptensor.tensor<[5, 4], f32>
}

// CHECK-LABEL: func.func @index_put
// CHECK:         loop.scatter sum init(%d : !ptensor.tensor<[5, 4], i64>) ins({{.+}}) over [6, 4] -> !ptensor.tensor<[5, 4], i64> {
// CHECK:           %[[NEG:.+]] = arith.cmpi slt
// CHECK:           %[[POS:.+]] = arith.select %[[NEG]]
// CHECK:           %[[ABOVE:.+]] = arith.cmpi sgt, %[[POS]]
// CHECK:           %[[BELOW:.+]] = arith.cmpi slt
// CHECK-NEXT:      %[[KEPT:.+]] = arith.select %[[BELOW]]
// CHECK:           loop.scatter_yield %{{.+}} at [v0, d1] (%[[KEPT]]) : i64
// DETERMINISTIC-LABEL: func.func @index_put
// DETERMINISTIC:         loop.scatter sum
// BUFFER-LABEL: func.func @index_put
// BUFFER:         %[[T:[a-z0-9_]+]] = buffer.alloc : !buffer.buffer<[5, 4], i64>
// BUFFER-NEXT:    buffer.launch @pointwise_{{[0-9]+}} ins(%x : {{.+}}) outs(%[[T]] : {{.+}})
// BUFFER-NEXT:    buffer.launch @scatter_sum_{{[0-9]+}} ins(%r, %v, %[[T]] : {{.+}}) outs(%[[T]] : !buffer.buffer<[5, 4], i64>)
func.func @index_put(%x: !ptensor.tensor<[5, 4], i64>, %r: !ptensor.tensor<[6], i64>, %v: !ptensor.tensor<[4], i64>) -> !ptensor.tensor<[5, 4], i64> {
  %d = ptensor.binary add %x, %x : !ptensor.tensor<[5, 4], i64>, !ptensor.tensor<[5, 4], i64> -> !ptensor.tensor<[5, 4], i64>
  %y = ptensor.index_put %d[%r] dims [0], %v accumulate : !ptensor.tensor<[5, 4], i64>, !ptensor.tensor<[4], i64>, [!ptensor.tensor<[6], i64>] -> !ptensor.tensor<[5, 4], i64>
  func.return %y : !ptensor.tensor<[5, 4], i64>
}
