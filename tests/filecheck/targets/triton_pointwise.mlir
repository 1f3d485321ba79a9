// RUN: permalloy-opt %s -t triton | filecheck %s

// Pointwise kernels: one @triton.jit function per kernel, named after it,
// with its loop IR quoted and a launcher. A contiguous domain is one flat
// index with a tail mask; a transpose gets 2-D tiles over rows and inner
// positions; math that Triton lacks on every backend goes through helpers
// (libdevice on GPUs); symbolic sizes are kernel arguments.

buffer.kernel @pointwise_tanh_0(%a: !ptensor.tensor<[s0, 8], f32>, %b: !ptensor.tensor<[8], f32>) -> (!ptensor.tensor<[s0, 8], f32>) {
  %y = loop.pointwise ins(%x = %a : !ptensor.tensor<[s0, 8], f32>, %w = %b : !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[s0, 8], f32> {
    %v = loop.load %x[d0, d1] : f32
    %u = loop.load %w[d1] : f32
    %t = math.tanh %v : f32
    %s = arith.mulf %t, %u : f32
    loop.yield %s : f32
  }
  buffer.yield %y : !ptensor.tensor<[s0, 8], f32>
}

buffer.kernel @pointwise_transpose_1(%a: !ptensor.tensor<[48, 64], f32>) -> (!ptensor.tensor<[64, 48], f32>) {
  %y = loop.pointwise ins(%x = %a : !ptensor.tensor<[48, 64], f32>) -> !ptensor.tensor<[64, 48], f32> {
    %v = loop.load %x[d1, d0] : f32
    %e = math.exp %v : f32
    loop.yield %e : f32
  }
  buffer.yield %y : !ptensor.tensor<[64, 48], f32>
}

buffer.kernel @pointwise_cast_2(%a: !ptensor.tensor<[16], ui8>) -> (!ptensor.tensor<[16], bf16>) {
  %y = loop.pointwise ins(%x = %a : !ptensor.tensor<[16], ui8>) -> !ptensor.tensor<[16], bf16> {
    %v = loop.load %x[d0] : i8
    %f = arith.uitofp %v : i8 to f32
    %h = arith.truncf %f : f32 to bf16
    loop.yield %h : bf16
  }
  buffer.yield %y : !ptensor.tensor<[16], bf16>
}

func.func @forward(%a: !buffer.buffer<[s0, 8], f32>, %b: !buffer.buffer<[8], f32>, %c: !buffer.buffer<[48, 64], f32>, %d: !buffer.buffer<[16], ui8>) -> (!buffer.buffer<[s0, 8], f32>, !buffer.buffer<[64, 48], f32>, !buffer.buffer<[16], bf16>) {
  %r = buffer.alloc : !buffer.buffer<[s0, 8], f32>
  buffer.launch @pointwise_tanh_0 ins(%a, %b : !buffer.buffer<[s0, 8], f32>, !buffer.buffer<[8], f32>) outs(%r : !buffer.buffer<[s0, 8], f32>)
  %t = buffer.alloc : !buffer.buffer<[64, 48], f32>
  buffer.launch @pointwise_transpose_1 ins(%c : !buffer.buffer<[48, 64], f32>) outs(%t : !buffer.buffer<[64, 48], f32>)
  %h = buffer.alloc : !buffer.buffer<[16], bf16>
  buffer.launch @pointwise_cast_2 ins(%d : !buffer.buffer<[16], ui8>) outs(%h : !buffer.buffer<[16], bf16>)
  func.return %r, %t, %h : !buffer.buffer<[s0, 8], f32>, !buffer.buffer<[64, 48], f32>, !buffer.buffer<[16], bf16>
}

// CHECK-LABEL: // kernel @pointwise_tanh_0
// CHECK:       from triton.language.extra import libdevice
// CHECK:       def _tanh(x):
// CHECK-NEXT:      return libdevice.tanh(x)
// CHECK:       @triton.jit
// CHECK-NEXT:  def triton_pointwise_tanh_0(in0, in1, out0, s0, XBLOCK: tl.constexpr, IDX64: tl.constexpr):
// CHECK:           # in0: float32 [s0, 8] strides [8, 1]
// CHECK:           xindex = pid * XBLOCK + tl.arange(0, XBLOCK)
// CHECK-NEXT:      xmask = xindex < s0 * 8
// CHECK-NEXT:      d0 = (xindex // 8)
// CHECK-NEXT:      d1 = xindex % 8
// CHECK:           # %{{.*}} = math.tanh %{{.*}} : f32
// CHECK:           [[V:t[0-9]+]] = tl.load(in0 + (d0 * 8 + d1), mask=xmask, other=0)
// CHECK-NEXT:      [[W:t[0-9]+]] = tl.load(in1 + d1, mask=xmask, other=0)
// CHECK-NEXT:      [[T:t[0-9]+]] = _tanh([[V]])
// CHECK-NEXT:      [[S:t[0-9]+]] = [[T]] * [[W]]
// CHECK-NEXT:      tl.store(out0 + (d0 * 8 + d1), [[S]], mask=xmask)
// CHECK:       def launch(tensors, symbols, config, compile_only=False):
// CHECK:           idx64 = max(
// CHECK:           grid = triton.cdiv((8 * s0), config['XBLOCK'])
// CHECK:           triton_pointwise_tanh_0.run(in0, in1, out0, s0, grid=(grid,), warmup=compile_only, XBLOCK=config['XBLOCK'], IDX64=idx64, num_warps=config['num_warps'], num_stages=config['num_stages'])

// CHECK-LABEL: // kernel @pointwise_transpose_1
// CHECK:       def triton_pointwise_transpose_1(in0, out0, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr):
// CHECK:           xindex = (pid % xblocks) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
// CHECK:           rindex = (pid // xblocks) * RBLOCK + tl.arange(0, RBLOCK)[None, :]
// CHECK:           tl.load(in0 + (d0 + d1 * 64), mask=xmask & rmask, other=0)
// CHECK:           tl.store(out0 + (d0 * 48 + d1), {{.*}}, mask=xmask & rmask)
// CHECK:           grid = triton.cdiv(64, config['XBLOCK']) * triton.cdiv(48, config['RBLOCK'])

// CHECK-LABEL: // kernel @pointwise_cast_2
// CHECK:       def _to_bf16(x):
// CHECK:       def triton_pointwise_cast_2(
// CHECK:           [[U:t[0-9]+]] = tl.load(in0 + d0, mask=xmask, other=0).to(tl.int8, bitcast=True)
// CHECK-NEXT:      [[F:t[0-9]+]] = [[U]].to(tl.uint8, bitcast=True).to(tl.float32)
// CHECK-NEXT:      [[H:t[0-9]+]] = _to_bf16([[F]])
// CHECK-NEXT:      tl.store(out0 + d0, [[H]], mask=xmask)
