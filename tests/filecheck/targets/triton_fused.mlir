// RUN: permalloy-opt %s -t triton | filecheck %s

// Fused kernels: stages over the same rows run in one program per block of
// rows, per-row results (the max and the sum of a softmax) stay in registers
// for the later stages. A stage that reads another row of an earlier result
// runs as a separate launch of the same function (a STAGE constant), through
// a temporary the launcher allocates.

buffer.kernel @fused_softmax_0(%a: !ptensor.tensor<[2, 4, 8], f32>) -> (!ptensor.tensor<[2, 4, 8], f32>) {
  %m = loop.reduce max ins(%x = %a : !ptensor.tensor<[2, 4, 8], f32>) over [8] -> !ptensor.tensor<[2, 4, 1], f32> {
    %v = loop.load %x[d0, d1, r0] : f32
    loop.yield %v : f32
  }
  %s = loop.reduce sum ins(%x = %a : !ptensor.tensor<[2, 4, 8], f32>, %mm = %m : !ptensor.tensor<[2, 4, 1], f32>) over [8] -> !ptensor.tensor<[2, 4, 1], f32> {
    %v = loop.load %x[d0, d1, r0] : f32
    %w = loop.load %mm[d0, d1, 0] : f32
    %d = arith.subf %v, %w : f32
    %e = math.exp %d : f32
    loop.yield %e : f32
  }
  %y = loop.pointwise ins(%x = %a : !ptensor.tensor<[2, 4, 8], f32>, %mm = %m : !ptensor.tensor<[2, 4, 1], f32>, %ss = %s : !ptensor.tensor<[2, 4, 1], f32>) -> !ptensor.tensor<[2, 4, 8], f32> {
    %v = loop.load %x[d0, d1, d2] : f32
    %w = loop.load %mm[d0, d1, 0] : f32
    %t = loop.load %ss[d0, d1, 0] : f32
    %d = arith.subf %v, %w : f32
    %e = math.exp %d : f32
    %q = arith.divf %e, %t : f32
    loop.yield %q : f32
  }
  buffer.yield %y : !ptensor.tensor<[2, 4, 8], f32>
}

buffer.kernel @fused_reversed_1(%a: !ptensor.tensor<[4, 16], f32>) -> (!ptensor.tensor<[4, 16], f32>) {
  %s = loop.reduce sum ins(%x = %a : !ptensor.tensor<[4, 16], f32>) over [16] -> !ptensor.tensor<[4], f32> {
    %v = loop.load %x[d0, r0] : f32
    loop.yield %v : f32
  }
  %y = loop.pointwise ins(%x = %a : !ptensor.tensor<[4, 16], f32>, %t = %s : !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4, 16], f32> {
    %v = loop.load %x[d0, d1] : f32
    %w = loop.load %t[3 - d0] : f32
    %q = arith.divf %v, %w : f32
    loop.yield %q : f32
  }
  buffer.yield %y : !ptensor.tensor<[4, 16], f32>
}

func.func @forward(%a: !buffer.buffer<[2, 4, 8], f32>, %b: !buffer.buffer<[4, 16], f32>) -> (!buffer.buffer<[2, 4, 8], f32>, !buffer.buffer<[4, 16], f32>) {
  %r = buffer.alloc : !buffer.buffer<[2, 4, 8], f32>
  buffer.launch @fused_softmax_0 ins(%a : !buffer.buffer<[2, 4, 8], f32>) outs(%r : !buffer.buffer<[2, 4, 8], f32>)
  %t = buffer.alloc : !buffer.buffer<[4, 16], f32>
  buffer.launch @fused_reversed_1 ins(%b : !buffer.buffer<[4, 16], f32>) outs(%t : !buffer.buffer<[4, 16], f32>)
  func.return %r, %t : !buffer.buffer<[2, 4, 8], f32>, !buffer.buffer<[4, 16], f32>
}

// CHECK-LABEL: // kernel @fused_softmax_0
// CHECK:       def triton_fused_softmax_0(in0, out0, XBLOCK: tl.constexpr):
// CHECK:           # rows: d1 < 8
// CHECK-NEXT:      xindex = pid * XBLOCK + tl.arange(0, XBLOCK)[:, None]
// CHECK-NEXT:      xmask = xindex < 8
// CHECK:           # stage 0:
// CHECK:           [[M:st[0-9]+]] = _row_max_nan(acc{{[0-9]+}})[:, None]
// CHECK:           # stage 1:
// CHECK-NOT:       tl.debug_barrier
// CHECK:           [[D:t[0-9]+]] = t{{[0-9]+}} - [[M]]
// CHECK:           [[S:st[0-9]+]] = _row_sum(acc{{[0-9]+}})[:, None]
// CHECK:           # stage 2:
// CHECK:           rindex = tl.arange(0, 8)[None, :]
// CHECK:           d2 = rindex
// CHECK:           t{{[0-9]+}} = t{{[0-9]+}} - [[M]]
// CHECK:           [[Q:t[0-9]+]] = t{{[0-9]+}} / [[S]]
// CHECK-NEXT:      tl.store(out0 + (d1 * 8 + d2), [[Q]], mask=xmask & rmask)
// CHECK:       def launch(tensors, symbols, config, compile_only=False):
// CHECK-NOT:       torch.empty

// CHECK-LABEL: // kernel @fused_reversed_1
// CHECK:       def triton_fused_reversed_1(in0, out0, tmp0, XBLOCK: tl.constexpr, STAGE: tl.constexpr):
// CHECK:           if STAGE == 0:
// CHECK:               tl.store(tmp0 + d0, st{{[0-9]+}}, mask=xmask)
// CHECK:           if STAGE == 1:
// CHECK:               tl.load(tmp0 + (3 - d0), mask=xmask, other=0)
// CHECK:       def launch(tensors, symbols, config, compile_only=False):
// CHECK:           tmp0 = torch.empty((4,), dtype=torch.float32, device=out0.device)
// CHECK:           triton_fused_reversed_1.run(in0, out0, tmp0, grid=(grid,), warmup=compile_only, XBLOCK=config['XBLOCK'], STAGE=0,
// A flat launch among launches over rows takes a block of its own size at least.
// CHECK:           triton_fused_reversed_1.run(in0, out0, tmp0, grid=(grid,), warmup=compile_only, XBLOCK=max(config['XBLOCK'], 64), STAGE=1,
