// RUN: permalloy-opt %s -t llvm | filecheck %s

// Stages that share a row loop over a single row: the row dimension collapses
// away, so the loads of what an earlier stage writes name no row variable.
// They still depend on the row loop through memory and are read inside it,
// after the stage that writes them, never hoisted above the loop.

buffer.kernel @scale_by_rsqrt(%a: !ptensor.tensor<[1, 1], f32>, %b: !ptensor.tensor<[1, s0], f32>) -> (!ptensor.tensor<[1, s0], f32>) {
  %r = loop.pointwise ins(%x = %a : !ptensor.tensor<[1, 1], f32>) -> !ptensor.tensor<[1, 1], f32> {
    %v = loop.load %x[0, 0] : f32
    %s = math.rsqrt %v : f32
    loop.yield %s : f32
  }
  %y = loop.pointwise ins(%x = %b : !ptensor.tensor<[1, s0], f32>, %z = %r : !ptensor.tensor<[1, 1], f32>) -> !ptensor.tensor<[1, s0], f32> {
    %v = loop.load %x[0, d1] : f32
    %w = loop.load %z[0, 0] : f32
    %m = arith.mulf %v, %w : f32
    loop.yield %m : f32
  }
  buffer.yield %y : !ptensor.tensor<[1, s0], f32>
}

buffer.kernel @row_norm(%a: !ptensor.tensor<[1, s0], f32>) -> (!ptensor.tensor<[1, s0], f32>) {
  %r = loop.reduce sum ins(%x = %a : !ptensor.tensor<[1, s0], f32>) over [s0] -> !ptensor.tensor<[1, 1], f32> {
    %v = loop.load %x[0, r0] : f32
    loop.yield %v : f32
  }
  %y = loop.pointwise ins(%x = %a : !ptensor.tensor<[1, s0], f32>, %z = %r : !ptensor.tensor<[1, 1], f32>) -> !ptensor.tensor<[1, s0], f32> {
    %v = loop.load %x[0, d1] : f32
    %w = loop.load %z[0, 0] : f32
    %m = arith.divf %v, %w : f32
    loop.yield %m : f32
  }
  buffer.yield %y : !ptensor.tensor<[1, s0], f32>
}

func.func @forward(%a: !buffer.buffer<[1, 1], f32>, %b: !buffer.buffer<[1, s0], f32>) -> (!buffer.buffer<[1, s0], f32>, !buffer.buffer<[1, s0], f32>) {
  %c = buffer.alloc : !buffer.buffer<[1, s0], f32>
  buffer.launch @scale_by_rsqrt ins(%a, %b : !buffer.buffer<[1, 1], f32>, !buffer.buffer<[1, s0], f32>) outs(%c : !buffer.buffer<[1, s0], f32>)
  %d = buffer.alloc : !buffer.buffer<[1, s0], f32>
  buffer.launch @row_norm ins(%b : !buffer.buffer<[1, s0], f32>) outs(%d : !buffer.buffer<[1, s0], f32>)
  func.return %c, %d : !buffer.buffer<[1, s0], f32>, !buffer.buffer<[1, s0], f32>
}

// The temporary is slot 3 (after the two inputs and the output): written by
// the first stage, then loaded in the same row, after the write.
// CHECK-LABEL: kernel @scale_by_rsqrt
// CHECK:       define internal void @"scale_by_rsqrt.run0"
// CHECK:         %[[SLOT:.+]] = getelementptr ptr, ptr %{{.+}}, i64 3
// CHECK-NEXT:    %[[T:.+]] = load ptr, ptr %[[SLOT]]
// CHECK-NOT:     load float, ptr %[[T]]
// CHECK:       row.body:
// CHECK:         call void @"llvm.masked.scatter
// CHECK:       tail.end:
// CHECK:         %[[P:.+]] = getelementptr float, ptr %[[T]], i64 0
// CHECK-NEXT:    %[[W:.+]] = load float, ptr %[[P]]
// CHECK:       x.body{{.*}}:
// CHECK:         fmul <{{.*}}> %{{.+}}, %{{.+}}

// The reduction's result is slot 2 (after the input and the output): loaded
// where the row's two branches (an empty or a non-empty reduction) meet, and
// stored at the end of the reduction (a block printed further down).
// CHECK-LABEL: kernel @row_norm
// CHECK:       define internal void @"row_norm.run0"
// CHECK:         %[[SLOT:.+]] = getelementptr ptr, ptr %{{.+}}, i64 2
// CHECK-NEXT:    %[[T:.+]] = load ptr, ptr %[[SLOT]]
// CHECK-NOT:     load float, ptr %[[T]]
// CHECK:       row.body:
// CHECK:       row.body.endif:
// CHECK-NEXT:    %[[P:.+]] = getelementptr float, ptr %[[T]], i64 0
// CHECK-NEXT:    load float, ptr %[[P]]
// CHECK:         call reassoc float @"llvm.vector.reduce.fadd
// CHECK-NEXT:    %[[Q:.+]] = getelementptr float, ptr %[[T]], i64 0
// CHECK-NEXT:    store float %{{.+}}, ptr %[[Q]]
