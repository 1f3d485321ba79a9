// RUN: permalloy-opt %s -t triton | filecheck %s

// A scatter runs over blocks of its flattened domain and combines with
// atomics: a sum with tl.atomic_add, an integer max with tl.atomic_max, a
// float max in a compare-and-swap loop on the element's bits (taking the
// value when it is greater or NaN) until every lane's swap succeeded; a
// 16-bit element's loop swaps the 32-bit word holding it, replacing only its
// bits (a product of halves computed in f32, rounded once).

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

buffer.kernel @scatter_prod_half(%a: !ptensor.tensor<[3, 4], i64>, %b: !ptensor.tensor<[3, 4], f16>, %c: !ptensor.tensor<[5, 4], f16>) -> (!ptensor.tensor<[5, 4], f16>) {
  %y = loop.scatter prod init(%c : !ptensor.tensor<[5, 4], f16>) ins(%i = %a : !ptensor.tensor<[3, 4], i64>, %s = %b : !ptensor.tensor<[3, 4], f16>) over [3, 4] -> !ptensor.tensor<[5, 4], f16> {
    %k = loop.load %i[d0, d1] : i64
    %p = arith.index_cast %k : i64 to index
    %v = loop.load %s[d0, d1] : f16
    loop.scatter_yield %v at [v0, d1] (%p) : f16
  }
  buffer.yield %y : !ptensor.tensor<[5, 4], f16>
}

func.func @forward(%h: !buffer.buffer<[3, 4], f16>, %hc: !buffer.buffer<[5, 4], f16>, %n: !buffer.buffer<[5, 4], i64>, %a: !buffer.buffer<[3, 4], i64>, %b: !buffer.buffer<[3, 4], f32>, %c: !buffer.buffer<[5, 4], f32>) -> !buffer.buffer<[5, 4], f32> {
  %y = buffer.alloc : !buffer.buffer<[5, 4], f32>
  buffer.copy %c, %y : !buffer.buffer<[5, 4], f32>, !buffer.buffer<[5, 4], f32>
  buffer.launch @scatter_max ins(%a, %b, %c : !buffer.buffer<[3, 4], i64>, !buffer.buffer<[3, 4], f32>, !buffer.buffer<[5, 4], f32>) outs(%y : !buffer.buffer<[5, 4], f32>)
  buffer.launch @scatter_add ins(%a, %b, %c : !buffer.buffer<[3, 4], i64>, !buffer.buffer<[3, 4], f32>, !buffer.buffer<[5, 4], f32>) outs(%y : !buffer.buffer<[5, 4], f32>)
  buffer.launch @scatter_max_int ins(%a, %n : !buffer.buffer<[3, 4], i64>, !buffer.buffer<[5, 4], i64>) outs(%n : !buffer.buffer<[5, 4], i64>)
  buffer.launch @scatter_prod_half ins(%a, %h, %hc : !buffer.buffer<[3, 4], i64>, !buffer.buffer<[3, 4], f16>, !buffer.buffer<[5, 4], f16>) outs(%hc : !buffer.buffer<[5, 4], f16>)
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
// CHECK-NEXT:        [[NEW:new[0-9]+]] = tl.where([[TODO]], tl.where({{.+}} > [[OLD]], {{.+}}, tl.where({{.+}} != {{.+}}, {{.+}}, [[OLD]])), [[OLD]])
// CHECK-NEXT:        [[SEEN:seen[0-9]+]] = tl.atomic_cas([[SAFE]].to(tl.pointer_type(tl.int32)), [[OLD]].to(tl.int32, bitcast=True), [[NEW]].to(tl.int32, bitcast=True), sem='relaxed').to(tl.float32, bitcast=True)
// CHECK-NEXT:        [[TODO]] = [[TODO]] & ([[SEEN]].to(tl.int32, bitcast=True) != [[OLD]].to(tl.int32, bitcast=True))
// CHECK-NEXT:        [[OLD]] = [[SEEN]]

// CHECK-LABEL: def triton_scatter_add(
// CHECK:         [[P:p[0-9]+]] = out0 + (d1 + {{t[0-9]+}} * 4)
// CHECK-NEXT:    tl.atomic_add([[P]], {{t[0-9]+}}, mask=xmask, sem='relaxed')

// CHECK-LABEL: def triton_scatter_max_int(
// CHECK:         tl.atomic_max({{p[0-9]+}}, {{t[0-9]+}}, mask=xmask, sem='relaxed')

// CHECK-LABEL: def triton_scatter_prod_half(
// CHECK:         [[A:a[0-9]+]] = tl.where(xmask, {{p[0-9]+}}, out0).to(tl.int64, bitcast=True)
// CHECK-NEXT:    [[WORD:word[0-9]+]] = ([[A]] & -4).to(tl.pointer_type(tl.int32), bitcast=True)
// CHECK-NEXT:    [[SHIFT:shift[0-9]+]] = (([[A]] & 3) * 8).to(tl.int32)
// CHECK-NEXT:    [[OLD:old[0-9]+]] = tl.load([[WORD]], mask=xmask, other=0)
// CHECK:         while _any_lane([[TODO:todo[0-9]+]]):
// CHECK-NEXT:        [[E:e[0-9]+]] = (([[OLD]] >> [[SHIFT]]) & 65535).to(tl.int16).to(tl.float16, bitcast=True)
// CHECK-NEXT:        [[NEW:new[0-9]+]] = (([[E]].to(tl.float32) * {{v[0-9]+}}.to(tl.float32)).to(tl.float16)).to(tl.int16, bitcast=True).to(tl.int32) & 65535
// CHECK-NEXT:        [[NEW]] = tl.where([[TODO]], ([[OLD]] & ~(65535 << [[SHIFT]])) | ([[NEW]] << [[SHIFT]]), [[OLD]])
// CHECK-NEXT:        [[SEEN:seen[0-9]+]] = tl.atomic_cas([[WORD]], [[OLD]], [[NEW]], sem='relaxed')
