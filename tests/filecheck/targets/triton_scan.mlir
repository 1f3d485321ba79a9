// RUN: permalloy-opt %s -t triton | filecheck %s

// Scans tile [rows, scanned]: a row that fits one block is scanned in one
// `tl.associative_scan` (`tl.cumsum` for sums), a longer or symbolic one in
// RBLOCK chunks, each chunk's prefixes combined with the running value of
// its row (the carry) that the chunk's last column then replaces. bf16
// accumulates in f32; cummax scans (value, position) pairs, the position
// following the value; logcumsumexp combines as torch does.

buffer.kernel @row_cumsum(%a: !ptensor.tensor<[s0, 100], bf16>) -> (!ptensor.tensor<[s0, 100], bf16>) {
  %r = loop.scan sum ins(%x = %a : !ptensor.tensor<[s0, 100], bf16>) dim 1 -> !ptensor.tensor<[s0, 100], bf16> {
    %v = loop.load %x[d0, r0] : bf16
    loop.yield %v : bf16
  }
  buffer.yield %r : !ptensor.tensor<[s0, 100], bf16>
}

buffer.kernel @column_cummax_positions(%a: !ptensor.tensor<[s0, s1], f32>) -> (!ptensor.tensor<[s0, s1], i64>) {
  %r = loop.scan argmax ins(%x = %a : !ptensor.tensor<[s0, s1], f32>) dim 0 -> !ptensor.tensor<[s0, s1], i64> {
    %v = loop.load %x[r0, d0] : f32
    loop.yield %v : f32
  }
  buffer.yield %r : !ptensor.tensor<[s0, s1], i64>
}

buffer.kernel @row_logcumsumexp(%a: !ptensor.tensor<[8, 5000], f32>) -> (!ptensor.tensor<[8, 5000], f32>) {
  %r = loop.scan logsumexp ins(%x = %a : !ptensor.tensor<[8, 5000], f32>) dim 1 -> !ptensor.tensor<[8, 5000], f32> {
    %v = loop.load %x[d0, r0] : f32
    loop.yield %v : f32
  }
  buffer.yield %r : !ptensor.tensor<[8, 5000], f32>
}

func.func @forward(%a: !buffer.buffer<[s0, 100], bf16>, %b: !buffer.buffer<[s0, s1], f32>, %c: !buffer.buffer<[8, 5000], f32>) -> (!buffer.buffer<[s0, 100], bf16>, !buffer.buffer<[s0, s1], i64>, !buffer.buffer<[8, 5000], f32>) {
  %r = buffer.alloc : !buffer.buffer<[s0, 100], bf16>
  buffer.launch @row_cumsum ins(%a : !buffer.buffer<[s0, 100], bf16>) outs(%r : !buffer.buffer<[s0, 100], bf16>)
  %i = buffer.alloc : !buffer.buffer<[s0, s1], i64>
  buffer.launch @column_cummax_positions ins(%b : !buffer.buffer<[s0, s1], f32>) outs(%i : !buffer.buffer<[s0, s1], i64>)
  %l = buffer.alloc : !buffer.buffer<[8, 5000], f32>
  buffer.launch @row_logcumsumexp ins(%c : !buffer.buffer<[8, 5000], f32>) outs(%l : !buffer.buffer<[8, 5000], f32>)
  func.return %r, %i, %l : !buffer.buffer<[s0, 100], bf16>, !buffer.buffer<[s0, s1], i64>, !buffer.buffer<[8, 5000], f32>
}

// CHECK-LABEL: // kernel @row_cumsum
// CHECK:       def _scan_sum(v):
// CHECK-NEXT:      return tl.cumsum(v, 1)
// CHECK:       def triton_row_cumsum(in0, out0, s0, XBLOCK: tl.constexpr, IDX64: tl.constexpr):
// CHECK:           rindex = tl.arange(0, 128)[None, :]
// CHECK-NEXT:      rmask = rindex < 100
// CHECK:           [[X:t[0-9]+]] = tl.load(in0 + (d0 * 100 + r0), mask=xmask & rmask, other=0)
// CHECK-NEXT:      [[V:v[0-9]+]] = tl.where(xmask & rmask, [[X]].to(tl.float32), tl.full([], 0.0, tl.float32))
// CHECK-NEXT:      [[S:s[0-9]+]] = _scan_sum([[V]])
// CHECK-NEXT:      [[OUT:st[0-9]+]] = _to_bf16([[S]])
// CHECK-NEXT:      tl.store(out0 + (d0 * 100 + r0), [[OUT]], mask=xmask & rmask)

// CHECK-LABEL: // kernel @column_cummax_positions
// CHECK:       def _cumargmax(a, ia, b, ib):
// CHECK-NEXT:      take = (b != b) | (b >= a)
// CHECK-NEXT:      return tl.where(take, b, a), tl.where(take, ib, ia)
// CHECK:       def _last_column(s):
// CHECK:       def triton_column_cummax_positions(in0, out0, s0, s1, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr, IDX64: tl.constexpr):
// CHECK:           xmask = xindex < s1
// CHECK:           [[C:carry[0-9]+]] = tl.full([XBLOCK, 1], 0, tl.float32) + tl.full([], float("-inf"), tl.float32)
// CHECK-NEXT:      [[CP:carry_pos[0-9]+]] = tl.full([XBLOCK, 1], 0, tl.int64)
// CHECK-NEXT:      for roffset in range(0, s0, RBLOCK):
// CHECK:               tl.load(in0 + (d0 + r0 * s1), mask=xmask & rmask, other=0)
// CHECK:               [[I:i[0-9]+]] = (xindex * 0 + rindex).to(tl.int64)
// CHECK-NEXT:          [[S:s[0-9]+]], [[SP:sp[0-9]+]] = tl.associative_scan((v{{[0-9]+}}, [[I]]), 1, _cumargmax)
// CHECK-NEXT:          [[S]], [[SP]] = _cumargmax([[C]], [[CP]], [[S]], [[SP]])
// CHECK-NEXT:          tl.store(out0 + (d0 + r0 * s1), [[SP]], mask=xmask & rmask)
// CHECK-NEXT:          [[C]] = _last_column([[S]])
// CHECK-NEXT:          [[CP]] = _last_column([[SP]])

// CHECK-LABEL: // kernel @row_logcumsumexp
// CHECK:       def _log_add_exp(a, b):
// CHECK:       def triton_row_logcumsumexp(in0, out0, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
// CHECK:           for roffset in range(0, 5000, RBLOCK):
// CHECK:               [[S:s[0-9]+]] = tl.associative_scan(v{{[0-9]+}}, 1, _log_add_exp)
// CHECK-NEXT:          [[S]] = _log_add_exp(carry{{[0-9]+}}, [[S]])
// CHECK-NEXT:          tl.store(out0 + (d0 * 5000 + r0), [[S]], mask=xmask & rmask)
