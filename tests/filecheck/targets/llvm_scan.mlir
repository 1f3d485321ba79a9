// RUN: permalloy-opt %s -t llvm | filecheck %s

// Scans walk their scanned dimension r0 in order and store every prefix.
// Along the contiguous dimension (cumsum of rows) each row keeps a scalar
// running value, rows running in parallel; across it (cumsum of columns)
// a chunk of columns keeps a vector of running values. f32 sums accumulate
// in f64, as torch's CPU kernel does; cummax's positions follow the values
// (the later on ties, NaN first).

buffer.kernel @row_cumsum(%a: !ptensor.tensor<[s0, s1], f32>) -> (!ptensor.tensor<[s0, s1], f32>) {
  %r = loop.scan sum ins(%x = %a : !ptensor.tensor<[s0, s1], f32>) dim 1 -> !ptensor.tensor<[s0, s1], f32> {
    %v = loop.load %x[d0, r0] : f32
    loop.yield %v : f32
  }
  buffer.yield %r : !ptensor.tensor<[s0, s1], f32>
}

buffer.kernel @column_cummax_positions(%a: !ptensor.tensor<[s0, s1], f32>) -> (!ptensor.tensor<[s0, s1], i64>) {
  %r = loop.scan argmax ins(%x = %a : !ptensor.tensor<[s0, s1], f32>) dim 0 -> !ptensor.tensor<[s0, s1], i64> {
    %v = loop.load %x[r0, d0] : f32
    loop.yield %v : f32
  }
  buffer.yield %r : !ptensor.tensor<[s0, s1], i64>
}

func.func @forward(%a: !buffer.buffer<[s0, s1], f32>) -> (!buffer.buffer<[s0, s1], f32>, !buffer.buffer<[s0, s1], i64>) {
  %r = buffer.alloc : !buffer.buffer<[s0, s1], f32>
  buffer.launch @row_cumsum ins(%a : !buffer.buffer<[s0, s1], f32>) outs(%r : !buffer.buffer<[s0, s1], f32>)
  %i = buffer.alloc : !buffer.buffer<[s0, s1], i64>
  buffer.launch @column_cummax_positions ins(%a : !buffer.buffer<[s0, s1], f32>) outs(%i : !buffer.buffer<[s0, s1], i64>)
  func.return %r, %i : !buffer.buffer<[s0, s1], f32>, !buffer.buffer<[s0, s1], i64>
}

// CHECK-LABEL: kernel @row_cumsum
// CHECK:       row.body:
// CHECK:         store double {{.*}}0x0, ptr %[[ACC:".+"]]
// CHECK:       r0.body:
// CHECK:         %[[V:".+"]] = load float, ptr
// CHECK-NEXT:    %[[RUNNING:".+"]] = load double, ptr %[[ACC]]
// CHECK-NEXT:    %[[WIDE:".+"]] = fpext float %[[V]] to double
// CHECK-NEXT:    %[[SUM:".+"]] = fadd double %[[RUNNING]], %[[WIDE]]
// CHECK-NEXT:    store double %[[SUM]], ptr %[[ACC]]
// CHECK-NEXT:    %[[OUT:".+"]] = fptrunc double %[[SUM]] to float
// CHECK:         store float %[[OUT]]
// CHECK:       call void @"GOMP_parallel"(ptr @"row_cumsum.worker0"

// CHECK-LABEL: kernel @column_cummax_positions
// CHECK:       x.body:
// CHECK-NEXT:    store <[[N:[0-9]+]] x float> splat (float 0xfff0000000000000), ptr %[[BEST:".+"]]
// CHECK-NEXT:    store <[[N]] x i64> splat (i64 0), ptr %[[AT:".+"]]
// CHECK:       r0.body:
// CHECK:         %[[V:".+"]] = load <[[N]] x float>, ptr
// CHECK:         %[[NAN:".+"]] = fcmp uno <[[N]] x float> %[[V]], %[[V]]
// CHECK-NEXT:    %[[GE:".+"]] = fcmp oge <[[N]] x float> %[[V]], %{{.+}}
// CHECK-NEXT:    %[[TAKE:".+"]] = or <[[N]] x i1> %[[NAN]], %[[GE]]
// CHECK:         %[[POSITIONS:".+"]] = select <[[N]] x i1> %[[TAKE]], <[[N]] x i64>
// CHECK:         store <[[N]] x i64> %[[POSITIONS]], ptr %{{.+}}, align 8
