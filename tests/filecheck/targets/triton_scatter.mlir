// RUN: permalloy-opt %s -t triton | filecheck %s

// A scatter runs over blocks of its flattened domain and combines with
// atomics: a sum with tl.atomic_add, an integer max with tl.atomic_max, a
// float max in a compare-and-swap loop on the element's bits (taking the
// value when it is greater or NaN) until every lane's swap succeeded.

buffer.kernel @scatter_max(%a: !ptensor.tensor<[3, 4], i64>, %b: !ptensor.tensor<[3, 4], f32>, %c: !ptensor.tensor<[5, 4], f32>) -> (!ptensor.tensor<[5, 4], f32>) {
  %y = loop.scatter max init(%c : !ptensor.tensor<[5, 4], f32>) ins(%i = %a : !ptensor.tensor<[3, 4], i64>, %s = %b : !ptensor.tensor<[3, 4], f32>) over [3, 4] -> !ptensor.tensor<[5, 4], f32> {
    %k = loop.load %i[d0, d1] : i64
    %p = arith.index_cast %k : i64 to index
    %v = loop.load %s[d0, d1] : f32
    loop.scatter_yield %v at [v0, d1] (%p) : f32
  }
  buffer.yield %y : !ptensor.tensor<[5, 4], f32>
}

buffer.kernel @scatter_add(%a: !ptensor.tensor<[3, 4], i64>, %b: !ptensor.tensor<[3, 4], f32>, %c: !ptensor.tensor<[5, 4], f32>) -> (!ptensor.tensor<[5, 4], f32>) {
  %y = loop.scatter sum init(%c : !ptensor.tensor<[5, 4], f32>) ins(%i = %a : !ptensor.tensor<[3, 4], i64>, %s = %b : !ptensor.tensor<[3, 4], f32>) over [3, 4] -> !ptensor.tensor<[5, 4], f32> {
    %k = loop.load %i[d0, d1] : i64
    %p = arith.index_cast %k : i64 to index
    %v = loop.load %s[d0, d1] : f32
    loop.scatter_yield %v at [v0, d1] (%p) : f32
  }
  buffer.yield %y : !ptensor.tensor<[5, 4], f32>
}

buffer.kernel @scatter_max_int(%a: !ptensor.tensor<[3, 4], i64>, %c: !ptensor.tensor<[5, 4], i64>) -> (!ptensor.tensor<[5, 4], i64>) {
  %y = loop.scatter max init(%c : !ptensor.tensor<[5, 4], i64>) ins(%i = %a : !ptensor.tensor<[3, 4], i64>) over [3, 4] -> !ptensor.tensor<[5, 4], i64> {
    %k = loop.load %i[d0, d1] : i64
    %p = arith.index_cast %k : i64 to index
    loop.scatter_yield %k at [v0, d1] (%p) : i64
  }
  buffer.yield %y : !ptensor.tensor<[5, 4], i64>
}

func.func @forward(%n: !buffer.buffer<[5, 4], i64>, %a: !buffer.buffer<[3, 4], i64>, %b: !buffer.buffer<[3, 4], f32>, %c: !buffer.buffer<[5, 4], f32>) -> !buffer.buffer<[5, 4], f32> {
  %y = buffer.alloc : !buffer.buffer<[5, 4], f32>
  buffer.copy %c, %y : !buffer.buffer<[5, 4], f32>, !buffer.buffer<[5, 4], f32>
  buffer.launch @scatter_max ins(%a, %b, %c : !buffer.buffer<[3, 4], i64>, !buffer.buffer<[3, 4], f32>, !buffer.buffer<[5, 4], f32>) outs(%y : !buffer.buffer<[5, 4], f32>)
  buffer.launch @scatter_add ins(%a, %b, %c : !buffer.buffer<[3, 4], i64>, !buffer.buffer<[3, 4], f32>, !buffer.buffer<[5, 4], f32>) outs(%y : !buffer.buffer<[5, 4], f32>)
  buffer.launch @scatter_max_int ins(%a, %n : !buffer.buffer<[3, 4], i64>, !buffer.buffer<[5, 4], i64>) outs(%n : !buffer.buffer<[5, 4], i64>)
  func.return %y : !buffer.buffer<[5, 4], f32>
}

// CHECK-LABEL: def triton_scatter_max(
// CHECK:         xmask = xindex < 12
// CHECK:         tl.load(in0 + (d0 * 4 + d1), mask=xmask, other=0)
// CHECK:         tl.load(in1 + (d0 * 4 + d1), mask=xmask, other=0)
// CHECK:         [[P:p[0-9]+]] = out0 + (d1 + {{t[0-9]+}} * 4)
// CHECK:         [[SAFE:p[0-9]+]] = tl.where(xmask, [[P]], out0)
// CHECK:         [[OLD:old[0-9]+]] = tl.load([[SAFE]], mask=xmask, other=0)
// CHECK:         [[TODO:todo[0-9]+]] = xmask
// CHECK-NEXT:    while _any_lane([[TODO]]):
// CHECK-NEXT:        [[NEW:new[0-9]+]] = tl.where([[TODO]], tl.where(({{.+}} > [[OLD]]) | ({{.+}} != {{.+}}), {{.+}}, [[OLD]]), [[OLD]])
// CHECK-NEXT:        [[SEEN:seen[0-9]+]] = tl.atomic_cas([[SAFE]], [[OLD]].to(tl.int32, bitcast=True), [[NEW]].to(tl.int32, bitcast=True), sem='relaxed').to(tl.float32, bitcast=True)
// CHECK-NEXT:        [[TODO]] = [[TODO]] & ([[SEEN]].to(tl.int32, bitcast=True) != [[OLD]].to(tl.int32, bitcast=True))
// CHECK-NEXT:        [[OLD]] = [[SEEN]]

// CHECK-LABEL: def triton_scatter_add(
// CHECK:         [[P:p[0-9]+]] = out0 + (d1 + {{t[0-9]+}} * 4)
// CHECK-NEXT:    tl.atomic_add([[P]], {{t[0-9]+}}, mask=xmask, sem='relaxed')

// CHECK-LABEL: def triton_scatter_max_int(
// CHECK:         tl.atomic_max({{p[0-9]+}}, {{t[0-9]+}}, mask=xmask, sem='relaxed')
