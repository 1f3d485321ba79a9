// RUN: permalloy-opt %s -t triton | filecheck %s

// A sort runs a program per block of rows with each row in one block of a
// power of two: each element's int64 key is the int32 image of its value
// (an f32's bits with -0.0 as 0.0, the bits below the sign flipped for
// negative values, NaN the largest; complemented when descending) above its
// position, padding lanes the largest key; `_sort_rows` sorts the keys
// (`tl.sort`) and their low 32 bits are the positions stored. A topk of 3
// of a row of 64 selects the 4 smallest keys (`tl.topk`) and stores the
// first 3 positions. f16 values are compared as f32.

buffer.kernel @sort_rows(%a: !ptensor.tensor<[4, 64], f32>) -> (!ptensor.tensor<[4, 64], i64>) {
  %p = loop.sort descending ins(%x = %a : !ptensor.tensor<[4, 64], f32>) dim 1 over [64] -> !ptensor.tensor<[4, 64], i64> {
    %v = loop.load %x[d0, r0] : f32
    loop.yield %v : f32
  }
  buffer.yield %p : !ptensor.tensor<[4, 64], i64>
}
buffer.kernel @top_three(%a: !ptensor.tensor<[4, 64], f16>) -> (!ptensor.tensor<[4, 3], i64>) {
  %p = loop.sort descending ins(%x = %a : !ptensor.tensor<[4, 64], f16>) dim 1 over [64] -> !ptensor.tensor<[4, 3], i64> {
    %v = loop.load %x[d0, r0] : f16
    loop.yield %v : f16
  }
  buffer.yield %p : !ptensor.tensor<[4, 3], i64>
}

func.func @forward(%a: !buffer.buffer<[4, 64], f32>, %c: !buffer.buffer<[4, 64], f16>) -> (!buffer.buffer<[4, 64], i64>, !buffer.buffer<[4, 3], i64>) {
  %p = buffer.alloc : !buffer.buffer<[4, 64], i64>
  buffer.launch @sort_rows ins(%a : !buffer.buffer<[4, 64], f32>) outs(%p : !buffer.buffer<[4, 64], i64>)
  %t = buffer.alloc : !buffer.buffer<[4, 3], i64>
  buffer.launch @top_three ins(%c : !buffer.buffer<[4, 64], f16>) outs(%t : !buffer.buffer<[4, 3], i64>)
  func.return %p, %t : !buffer.buffer<[4, 64], i64>, !buffer.buffer<[4, 3], i64>
}

// CHECK-LABEL: // kernel @sort_rows
// CHECK:       def _sort_rows(x, N: tl.constexpr):
// CHECK-NEXT:      return tl.sort(x, 1)
// CHECK:       def triton_sort_rows(in0, out0, XBLOCK: tl.constexpr):
// CHECK:           rindex = tl.arange(0, 64)[None, :]
// CHECK:           [[V:t[0-9]+]] = tl.load(in0 + (d0 * 64 + r0), mask=xmask & rmask, other=0)
// CHECK:           [[BITS:bits[0-9]+]] = tl.where([[F:v[0-9]+]] == 0, 0, [[F]].to(tl.int32, bitcast=True))
// CHECK-NEXT:      [[IMG:img[0-9]+]] = tl.where([[F]] != [[F]], 0x7FFFFFFF, [[BITS]] ^ (([[BITS]] >> 31) & 0x7FFFFFFF))
// CHECK-NEXT:      [[DESC:img[0-9]+]] = ~[[IMG]]
// CHECK-NEXT:      [[KEY:key[0-9]+]] = tl.where(xmask & rmask, ([[DESC]].to(tl.int64) << 32) | rindex.to(tl.int64), 0x7FFFFFFFFFFFFFFF)
// CHECK-NEXT:      [[SORTED:sorted[0-9]+]] = _sort_rows([[KEY]], 64)
// CHECK-NEXT:      [[POS:pos[0-9]+]] = [[SORTED]] & 0xFFFFFFFF
// CHECK-NEXT:      tl.store(out0 + (d0 * 64 + r0), [[POS]], mask=xmask & (rindex < 64))

// CHECK-LABEL: // kernel @top_three
// CHECK:       def _smallest_rows(x, N: tl.constexpr, K: tl.constexpr):
// CHECK-NEXT:      return ~tl.topk(~x, K, 1)
// CHECK:           [[F:v[0-9]+]] = t{{[0-9]+}}.to(tl.float32)
// CHECK:           [[SORTED:sorted[0-9]+]] = _smallest_rows(key{{[0-9]+}}, 64, 4)
// CHECK-NEXT:      [[J:j[0-9]+]] = tl.arange(0, 4)[None, :]
// CHECK-NEXT:      [[POS:pos[0-9]+]] = [[SORTED]] & 0xFFFFFFFF
// CHECK-NEXT:      tl.store(out0 + (d0 * 3 + [[J]]), [[POS]], mask=xmask & ([[J]] < 3))
