// RUN: permalloy-opt %s -t llvm | filecheck %s

// Scans walk their scanned dimension r0 in order and store every prefix.
// Along the contiguous dimension (cumsum of rows) each row keeps a scalar
// running value, rows running in parallel; across it (cumsum of columns)
// a chunk of columns keeps a vector of running values. f32 sums accumulate
// in f64, as torch's CPU kernel does; cummax's positions follow the values
// (the later on ties, NaN first). A pointwise epilogue reading the scan's
// rows shares its row loop: each row is scanned into a temporary, then read
// back while it is in cache.

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

buffer.kernel @position_ids(%a: !ptensor.tensor<[s0, s1], i64>) -> (!ptensor.tensor<[s0, s1], i64>) {
  %c = loop.scan sum ins(%x = %a : !ptensor.tensor<[s0, s1], i64>) dim 1 -> !ptensor.tensor<[s0, s1], i64> {
    %v = loop.load %x[d0, r0] : i64
    loop.yield %v : i64
  }
  %p = loop.pointwise ins(%x = %c : !ptensor.tensor<[s0, s1], i64>) -> !ptensor.tensor<[s0, s1], i64> {
    %v = loop.load %x[d0, d1] : i64
    %one = arith.constant 1 : i64
    %w = arith.subi %v, %one : i64
    loop.yield %w : i64
  }
  buffer.yield %p : !ptensor.tensor<[s0, s1], i64>
}

func.func @forward(%a: !buffer.buffer<[s0, s1], f32>, %m: !buffer.buffer<[s0, s1], i64>) -> (!buffer.buffer<[s0, s1], f32>, !buffer.buffer<[s0, s1], i64>, !buffer.buffer<[s0, s1], i64>) {
  %r = buffer.alloc : !buffer.buffer<[s0, s1], f32>
  buffer.launch @row_cumsum ins(%a : !buffer.buffer<[s0, s1], f32>) outs(%r : !buffer.buffer<[s0, s1], f32>)
  %i = buffer.alloc : !buffer.buffer<[s0, s1], i64>
  buffer.launch @column_cummax_positions ins(%a : !buffer.buffer<[s0, s1], f32>) outs(%i : !buffer.buffer<[s0, s1], i64>)
  %p = buffer.alloc : !buffer.buffer<[s0, s1], i64>
  buffer.launch @position_ids ins(%m : !buffer.buffer<[s0, s1], i64>) outs(%p : !buffer.buffer<[s0, s1], i64>)
  func.return %r, %i, %p : !buffer.buffer<[s0, s1], f32>, !buffer.buffer<[s0, s1], i64>, !buffer.buffer<[s0, s1], i64>
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

// CHECK-LABEL: kernel @position_ids
// CHECK:       define internal void @"position_ids.run0"
// CHECK:       row.body:
// CHECK:       r0.body:
// CHECK:         add i64
// CHECK:         store i64
// CHECK:       r0.end:
// CHECK:       x.body:
// CHECK:         load <[[N:[0-9]+]] x i64>
// CHECK:         sub <[[N]] x i64>
// CHECK:         store <[[N]] x i64>
// CHECK-NOT:   define internal void @"position_ids.run1"
// CHECK:       define i32 @"position_ids"
