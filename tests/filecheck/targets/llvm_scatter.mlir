// RUN: permalloy-opt %s -t llvm | filecheck %s

// A scatter walks its points in order on one thread (the entry calls its
// run function directly, with no OpenMP worker): each point loads the
// element it lands on, combines its value into it and stores it back. A
// float max takes the value when it is greater or NaN.

buffer.kernel @scatter_max(%a: !ptensor.tensor<[3, 4], i64>, %b: !ptensor.tensor<[3, 4], f32>, %c: !ptensor.tensor<[5, 4], f32>) -> (!ptensor.tensor<[5, 4], f32>) {
  %y = loop.scatter max init(%c : !ptensor.tensor<[5, 4], f32>) ins(%i = %a : !ptensor.tensor<[3, 4], i64>, %s = %b : !ptensor.tensor<[3, 4], f32>) over [3, 4] -> !ptensor.tensor<[5, 4], f32> {
    %k = loop.load %i[d0, d1] : i64
    %p = arith.index_cast %k : i64 to index
    %v = loop.load %s[d0, d1] : f32
    loop.scatter_yield %v at [v0, d1] (%p) : f32
  }
  buffer.yield %y : !ptensor.tensor<[5, 4], f32>
}

func.func @forward(%a: !buffer.buffer<[3, 4], i64>, %b: !buffer.buffer<[3, 4], f32>, %c: !buffer.buffer<[5, 4], f32>) -> !buffer.buffer<[5, 4], f32> {
  %y = buffer.alloc : !buffer.buffer<[5, 4], f32>
  buffer.copy %c, %y : !buffer.buffer<[5, 4], f32>, !buffer.buffer<[5, 4], f32>
  buffer.launch @scatter_max ins(%a, %b, %c : !buffer.buffer<[3, 4], i64>, !buffer.buffer<[3, 4], f32>, !buffer.buffer<[5, 4], f32>) outs(%y : !buffer.buffer<[5, 4], f32>)
  func.return %y : !buffer.buffer<[5, 4], f32>
}

// CHECK-LABEL: define internal void @"scatter_max.run0"
// CHECK:       row.body:
// CHECK:         %[[K:.+]] = load i64, ptr
// CHECK:         %[[AT:.+]] = mul i64 4, %[[K]]
// CHECK:         %[[V:.+]] = load float, ptr
// CHECK:         %[[OLD:.+]] = load float, ptr %[[PTR:.+]]
// CHECK-NEXT:    %[[GT:.+]] = fcmp ogt float %[[V]], %[[OLD]]
// CHECK-NEXT:    %[[NAN:.+]] = fcmp uno float %[[V]], %[[V]]
// CHECK-NEXT:    %[[TAKE:.+]] = or i1 %[[GT]], %[[NAN]]
// CHECK-NEXT:    %[[NEW:.+]] = select  i1 %[[TAKE]], float %[[V]], float %[[OLD]]
// CHECK-NEXT:    store float %[[NEW]], ptr %[[PTR]]
// CHECK-NOT:   define internal void @"scatter_max.worker0"
// CHECK-LABEL: define i32 @"scatter_max"
// CHECK-NOT:     GOMP_parallel
// CHECK:         call void @"scatter_max.run0"
