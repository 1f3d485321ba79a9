// RUN: permalloy-opt %s -t llvm | filecheck %s

// A pointwise kernel becomes an entry that forks through OpenMP, a worker
// taking its share of the elements, and a loop nest whose inner loop runs on
// vectors of the host's width with one masked tail chunk. exp is an inline
// polynomial: no call to the C library in the vector loop.

buffer.kernel @axpy_exp(%a: !ptensor.tensor<[s0, 1000], f32>, %b: !ptensor.tensor<[1000], f32>) -> (!ptensor.tensor<[s0, 1000], f32>) {
  %y = loop.pointwise ins(%x = %a : !ptensor.tensor<[s0, 1000], f32>, %z = %b : !ptensor.tensor<[1000], f32>) -> !ptensor.tensor<[s0, 1000], f32> {
    %v = loop.load %x[d0, d1] : f32
    %w = loop.load %z[d1] : f32
    %c = arith.constant 2.0 : f32
    %m = arith.mulf %v, %c : f32
    %e = math.exp %m : f32
    %s = arith.addf %e, %w : f32
    loop.yield %s : f32
  }
  buffer.yield %y : !ptensor.tensor<[s0, 1000], f32>
}

func.func @forward(%a: !buffer.buffer<[s0, 1000], f32>, %b: !buffer.buffer<[1000], f32>) -> !buffer.buffer<[s0, 1000], f32> {
  %c = buffer.alloc : !buffer.buffer<[s0, 1000], f32>
  buffer.launch @axpy_exp ins(%a, %b : !buffer.buffer<[s0, 1000], f32>, !buffer.buffer<[1000], f32>) outs(%c : !buffer.buffer<[s0, 1000], f32>)
  func.return %c : !buffer.buffer<[s0, 1000], f32>
}

// CHECK-LABEL: kernel @axpy_exp
// CHECK:       define internal void @"axpy_exp.run0"(ptr %{{.*}}, ptr %{{.*}}, i64 %{{.*}}, i64 %{{.*}})
// CHECK:       x.body:
// CHECK-NOT:   call {{.*}}@"expf"
// CHECK:         load <[[N:[0-9]+]] x float>
// CHECK:         call <[[N]] x float> @"llvm.roundeven.v[[N]]f32"
// CHECK:         call <[[N]] x float> @"llvm.fmuladd.v[[N]]f32"
// CHECK:         store <[[N]] x float>
// CHECK:       tail.then:
// Masked loads are at most one register wide (wider ones are split and joined).
// CHECK:         call <[[R:[0-9]+]] x float> @"llvm.masked.load.v[[R]]f32.p0"
// CHECK:         call void @"llvm.masked.store.v[[N]]f32.p0"
// CHECK:       define internal void @"axpy_exp.worker0"(ptr %{{.*}})
// CHECK:         call i32 @"omp_get_thread_num"()
// CHECK:         call void @"axpy_exp.run0"
// CHECK:       define i32 @"axpy_exp"(ptr %{{.*}}, ptr %{{.*}}, i32 %{{.*}})
// CHECK:         call void @"GOMP_parallel"(ptr @"axpy_exp.worker0", ptr %"args"
// CHECK:         call void @"axpy_exp.run0"(ptr %{{.*}}, ptr %{{.*}}, i64 0,
// CHECK-NOT:   declare float @"expf"
