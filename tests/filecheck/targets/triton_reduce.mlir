// RUN: permalloy-opt %s -t triton | filecheck %s

// Reductions tile [rows, reduction]: a reduction that fits one block is
// persistent (its block the next power of two, masked), a longer or symbolic
// one accumulates RBLOCK chunks into a [XBLOCK, RBLOCK] accumulator that is
// reduced at the end. f16/bf16 accumulate in f32; max/min propagate NaN;
// argmax keeps each lane's first best position.

buffer.kernel @row_sum(%a: !ptensor.tensor<[s0, 100], bf16>) -> (!ptensor.tensor<[s0], bf16>) {
  %r = loop.reduce sum ins(%x = %a : !ptensor.tensor<[s0, 100], bf16>) over [100] -> !ptensor.tensor<[s0], bf16> {
    %v = loop.load %x[d0, r0] : bf16
    loop.yield %v : bf16
  }
  buffer.yield %r : !ptensor.tensor<[s0], bf16>
}

buffer.kernel @column_max(%a: !ptensor.tensor<[s0, s1], f32>) -> (!ptensor.tensor<[s1], f32>) {
  %r = loop.reduce max ins(%x = %a : !ptensor.tensor<[s0, s1], f32>) over [s0] -> !ptensor.tensor<[s1], f32> {
    %v = loop.load %x[r0, d0] : f32
    loop.yield %v : f32
  }
  buffer.yield %r : !ptensor.tensor<[s1], f32>
}

buffer.kernel @row_argmax(%a: !ptensor.tensor<[8, 5000], f32>) -> (!ptensor.tensor<[8], i64>) {
  %r = loop.reduce argmax ins(%x = %a : !ptensor.tensor<[8, 5000], f32>) over [5000] -> !ptensor.tensor<[8], i64> {
    %v = loop.load %x[d0, r0] : f32
    loop.yield %v : f32
  }
  buffer.yield %r : !ptensor.tensor<[8], i64>
}

func.func @forward(%a: !buffer.buffer<[s0, 100], bf16>, %b: !buffer.buffer<[s0, s1], f32>, %c: !buffer.buffer<[8, 5000], f32>) -> (!buffer.buffer<[s0], bf16>, !buffer.buffer<[s1], f32>, !buffer.buffer<[8], i64>) {
  %r = buffer.alloc : !buffer.buffer<[s0], bf16>
  buffer.launch @row_sum ins(%a : !buffer.buffer<[s0, 100], bf16>) outs(%r : !buffer.buffer<[s0], bf16>)
  %m = buffer.alloc : !buffer.buffer<[s1], f32>
  buffer.launch @column_max ins(%b : !buffer.buffer<[s0, s1], f32>) outs(%m : !buffer.buffer<[s1], f32>)
  %i = buffer.alloc : !buffer.buffer<[8], i64>
  buffer.launch @row_argmax ins(%c : !buffer.buffer<[8, 5000], f32>) outs(%i : !buffer.buffer<[8], i64>)
  func.return %r, %m, %i : !buffer.buffer<[s0], bf16>, !buffer.buffer<[s1], f32>, !buffer.buffer<[8], i64>
}

// CHECK-LABEL: // kernel @row_sum
// CHECK:       def triton_row_sum(in0, out0, s0, XBLOCK: tl.constexpr, IDX64: tl.constexpr):
// CHECK:           xindex = pid * XBLOCK + tl.arange(0, XBLOCK)[:, None]
// CHECK:           rindex = tl.arange(0, 128)[None, :]
// CHECK-NEXT:      rmask = rindex < 100
// CHECK:           [[V:t[0-9]+]] = tl.load(in0 + (d0 * 100 + r0), mask=xmask & rmask, other=0)
// CHECK-NEXT:      [[A:acc[0-9]+]] = tl.where(xmask & rmask, [[V]].to(tl.float32), tl.full([], 0.0, tl.float32))
// CHECK-NEXT:      [[S:st[0-9]+]] = _to_bf16(_row_sum([[A]]))[:, None]
// CHECK-NEXT:      tl.store(out0 + d0, [[S]], mask=xmask)

// CHECK-LABEL: // kernel @column_max
// CHECK:       def _max_nan(a, b):
// CHECK:       def _row_max_nan(acc):
// CHECK-NEXT:      return tl.reduce(acc, 1, _max_nan)
// CHECK:       def triton_column_max(in0, out0, s0, s1, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr, IDX64: tl.constexpr):
// CHECK:           [[A:acc[0-9]+]] = tl.full([XBLOCK, RBLOCK], 0, tl.float32) + tl.full([], float("-inf"), tl.float32)
// CHECK-NEXT:      for roffset in range(0, s0, RBLOCK):
// CHECK-NEXT:          rindex = roffset + tl.arange(0, RBLOCK)[None, :]
// CHECK-NEXT:          rmask = rindex < s0
// CHECK:               tl.load(in0 + (d0 + r0 * s1), mask=xmask & rmask, other=0)
// CHECK:               [[A]] = tl.where(xmask & rmask, _max_nan([[A]], v{{[0-9]+}}), [[A]])
// CHECK:           st{{[0-9]+}} = _row_max_nan([[A]])[:, None]

// CHECK-LABEL: // kernel @row_argmax
// CHECK:       def triton_row_argmax(in0, out0, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
// CHECK:           [[P:pos[0-9]+]] = tl.full([XBLOCK, RBLOCK], 0, tl.int64) + tl.full([], 4611686018427387904, tl.int64)
// CHECK:           for roffset in range(0, 5000, RBLOCK):
// CHECK:               [[B:best[0-9]+]], [[AT:at[0-9]+]] = _argmax(acc{{[0-9]+}}, [[P]], v{{[0-9]+}}, i{{[0-9]+}})
// CHECK:               [[P]] = tl.where(xmask & rmask, [[AT]], [[P]])
// CHECK:           st{{[0-9]+}} = _row_argmax(acc{{[0-9]+}}, [[P]])[:, None]
