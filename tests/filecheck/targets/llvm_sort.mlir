// RUN: permalloy-opt %s -t llvm | filecheck %s

// A sort runs its rows across threads (an OpenMP worker), each row on its
// thread: the keys of its values (an f32's bits made unsigned-ordered:
// -0.0 as 0.0, negative values' bits flipped, others' sign bit set, NaN the
// largest; complemented when descending) shifted above their positions go
// to a stack buffer, which a function of the module sorts (a radix sort of
// the value bytes for rows of 64, with a copy back when it ended in the
// scratch buffer), and the low bits of the first keys are the positions
// stored. 64-bit values take i128 keys; a row of 16 is sorted by insertion.
// A topk of 3 of a row of 64 keeps the 3 smallest keys as it goes instead.

buffer.kernel @sort_rows(%a: !ptensor.tensor<[4, 64], f32>) -> (!ptensor.tensor<[4, 64], i64>) {
  %p = loop.sort descending ins(%x = %a : !ptensor.tensor<[4, 64], f32>) dim 1 over [64] -> !ptensor.tensor<[4, 64], i64> {
    %v = loop.load %x[d0, r0] : f32
    loop.yield %v : f32
  }
  buffer.yield %p : !ptensor.tensor<[4, 64], i64>
}

buffer.kernel @short_rows(%a: !ptensor.tensor<[16, 4], i64>) -> (!ptensor.tensor<[4, 16], i64>) {
  %p = loop.sort ascending ins(%x = %a : !ptensor.tensor<[16, 4], i64>) dim 1 over [16] -> !ptensor.tensor<[4, 16], i64> {
    %v = loop.load %x[r0, d0] : i64
    loop.yield %v : i64
  }
  buffer.yield %p : !ptensor.tensor<[4, 16], i64>
}

buffer.kernel @top_three(%a: !ptensor.tensor<[4, 64], f16>) -> (!ptensor.tensor<[4, 3], i64>) {
  %p = loop.sort descending ins(%x = %a : !ptensor.tensor<[4, 64], f16>) dim 1 over [64] -> !ptensor.tensor<[4, 3], i64> {
    %v = loop.load %x[d0, r0] : f16
    loop.yield %v : f16
  }
  buffer.yield %p : !ptensor.tensor<[4, 3], i64>
}

func.func @forward(%a: !buffer.buffer<[4, 64], f32>, %b: !buffer.buffer<[16, 4], i64>, %c: !buffer.buffer<[4, 64], f16>) -> (!buffer.buffer<[4, 64], i64>, !buffer.buffer<[4, 16], i64>, !buffer.buffer<[4, 3], i64>) {
  %p = buffer.alloc : !buffer.buffer<[4, 64], i64>
  buffer.launch @sort_rows ins(%a : !buffer.buffer<[4, 64], f32>) outs(%p : !buffer.buffer<[4, 64], i64>)
  %q = buffer.alloc : !buffer.buffer<[4, 16], i64>
  buffer.launch @short_rows ins(%b : !buffer.buffer<[16, 4], i64>) outs(%q : !buffer.buffer<[4, 16], i64>)
  %t = buffer.alloc : !buffer.buffer<[4, 3], i64>
  buffer.launch @top_three ins(%c : !buffer.buffer<[4, 64], f16>) outs(%t : !buffer.buffer<[4, 3], i64>)
  func.return %p, %q, %t : !buffer.buffer<[4, 64], i64>, !buffer.buffer<[4, 16], i64>, !buffer.buffer<[4, 3], i64>
}

// CHECK-LABEL: define internal void @"sort_rows.run0"
// CHECK:         %"keys" = alloca i64, i64 64
// CHECK:       r0.body:
// CHECK:         %[[V:.+]] = load float, ptr
// CHECK-NEXT:    %[[BITS:.+]] = bitcast float %[[V]] to i32
// CHECK-NEXT:    %[[ZERO:.+]] = fcmp oeq float %[[V]], {{ *}}0x0
// CHECK-NEXT:    %[[CANON:.+]] = select  i1 %[[ZERO]], i32 0, i32 %[[BITS]]
// CHECK-NEXT:    %[[NEG:.+]] = icmp slt i32 %[[CANON]], 0
// CHECK-NEXT:    %[[FLIP:.+]] = xor i32 %[[CANON]], -1
// CHECK-NEXT:    %[[SIGN:.+]] = or i32 %[[CANON]], -2147483648
// CHECK-NEXT:    %[[ORD:.+]] = select  i1 %[[NEG]], i32 %[[FLIP]], i32 %[[SIGN]]
// CHECK-NEXT:    %[[NAN:.+]] = fcmp uno float %[[V]], %[[V]]
// CHECK-NEXT:    %[[IMG:.+]] = select  i1 %[[NAN]], i32 -1, i32 %[[ORD]]
// CHECK-NEXT:    %[[DESC:.+]] = xor i32 %[[IMG]], -1
// CHECK-NEXT:    %[[WIDE:.+]] = zext i32 %[[DESC]] to i64
// CHECK-NEXT:    %[[HIGH:.+]] = shl i64 %[[WIDE]], 32
// CHECK-NEXT:    %[[KEY:.+]] = or i64 %[[HIGH]], %{{.+}}
// CHECK:         store i64 %[[KEY]], ptr
// CHECK:       r0.end:
// CHECK-NEXT:    call void @"sort_rows.sort_64_64"(ptr %"keys")
// CHECK:       j.body:
// CHECK:         %[[SORTED:.+]] = load i64, ptr
// CHECK-NEXT:    %[[LOW:.+]] = trunc i64 %[[SORTED]] to i32
// CHECK-NEXT:    %[[POS:.+]] = zext i32 %[[LOW]] to i64
// CHECK:         store i64 %[[POS]], ptr
// CHECK-LABEL: define internal void @"sort_rows.sort_64_64"
// CHECK:         %"scratch" = alloca i64, i64 64
// CHECK:         %"counts" = alloca i32, i64 1024
// CHECK:       pass0.then:
// CHECK:       pass3.then:
// CHECK:       copy.then:
// CHECK-NEXT:    %[[FINAL:.+]] = load ptr, ptr %"source"
// CHECK-NEXT:    call void @"llvm.memcpy.p0.p0.i64"(ptr %{{.+}}, ptr %[[FINAL]], i64 512, i1 0)
// CHECK-LABEL: define internal void @"sort_rows.worker0"
// CHECK-LABEL: define i32 @"sort_rows"
// CHECK:         call void @"GOMP_parallel"(ptr @"sort_rows.worker0"

// CHECK-LABEL: define internal void @"short_rows.run0"
// CHECK:         %"keys" = alloca i128, i64 16
// CHECK:         %[[V:.+]] = load i64, ptr %{{.+}}, align 8
// CHECK-NEXT:    %[[IMG:.+]] = xor i64 %[[V]], -9223372036854775808
// CHECK-NEXT:    %[[WIDE:.+]] = zext i64 %[[IMG]] to i128
// CHECK-NEXT:    %[[HIGH:.+]] = shl i128 %[[WIDE]], 64
// CHECK:         call void @"short_rows.sort_128_16"(ptr %"keys")
// CHECK:         trunc i128 %{{.+}} to i64
// CHECK-LABEL: define internal void @"short_rows.sort_128_16"
// CHECK:       shift.look:
// CHECK:         icmp ugt i128

// CHECK-LABEL: define internal void @"top_three.run0"
// CHECK:         %"keys" = alloca i64, i64 3
// CHECK:         fpext half %{{.+}} to float
// CHECK:         %[[LAST:.+]] = getelementptr i64, ptr %"keys", i64 2
// CHECK:         icmp ult i64 %{{.+}}, %{{.+}}
// CHECK:       keep.then:
// CHECK-NOT:     call void @"top_three.sort
// CHECK-LABEL: define internal void @"top_three.worker0"
