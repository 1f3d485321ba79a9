// RUN: permalloy-opt %s -t llvm | filecheck %s

// An integer division whose divisor may be zero records a zero divisor of an
// active lane in the kernel's status word (a stack slot of the entry, passed
// after the arguments in the pointer array); the entry returns it, and the
// launch raises as torch does. A nonzero constant divisor needs no check.

buffer.kernel @divide(%a: !ptensor.tensor<[s0], i64>, %b: !ptensor.tensor<[s0], i64>) -> (!ptensor.tensor<[s0], i64>) {
  %y = loop.pointwise ins(%x = %a : !ptensor.tensor<[s0], i64>, %z = %b : !ptensor.tensor<[s0], i64>) -> !ptensor.tensor<[s0], i64> {
    %v = loop.load %x[d0] : i64
    %w = loop.load %z[d0] : i64
    %q = arith.floordivsi %v, %w : i64
    loop.yield %q : i64
  }
  buffer.yield %y : !ptensor.tensor<[s0], i64>
}

buffer.kernel @halve(%a: !ptensor.tensor<[s0], i64>) -> (!ptensor.tensor<[s0], i64>) {
  %y = loop.pointwise ins(%x = %a : !ptensor.tensor<[s0], i64>) -> !ptensor.tensor<[s0], i64> {
    %v = loop.load %x[d0] : i64
    %c = arith.constant 2 : i64
    %q = arith.floordivsi %v, %c : i64
    loop.yield %q : i64
  }
  buffer.yield %y : !ptensor.tensor<[s0], i64>
}

func.func @forward(%a: !buffer.buffer<[s0], i64>, %b: !buffer.buffer<[s0], i64>) -> (!buffer.buffer<[s0], i64>, !buffer.buffer<[s0], i64>) {
  %q = buffer.alloc : !buffer.buffer<[s0], i64>
  buffer.launch @divide ins(%a, %b : !buffer.buffer<[s0], i64>, !buffer.buffer<[s0], i64>) outs(%q : !buffer.buffer<[s0], i64>)
  %h = buffer.alloc : !buffer.buffer<[s0], i64>
  buffer.launch @halve ins(%a : !buffer.buffer<[s0], i64>) outs(%h : !buffer.buffer<[s0], i64>)
  func.return %q, %h : !buffer.buffer<[s0], i64>, !buffer.buffer<[s0], i64>
}

// CHECK-LABEL: kernel @divide
// CHECK:       define internal void @"divide.run0"
// CHECK-COUNT-3: = load ptr, ptr
// CHECK:         %[[STATUS:.+]] = load ptr, ptr %{{.*}}
// CHECK:       zero_divisor.then:
// CHECK-NEXT:    store i32 1, ptr %[[STATUS]]
// CHECK:       define i32 @"divide"(ptr %{{.*}}, ptr %{{.*}}, i32 %{{.*}})
// CHECK:         %"status" = alloca i32
// CHECK:         store i32 0, ptr %"status"
// CHECK:         store ptr %"status", ptr
// CHECK:         %[[RESULT:.+]] = load i32, ptr %"status"
// CHECK-NEXT:    ret i32 %[[RESULT]]

// CHECK-LABEL: kernel @halve
// CHECK-NOT:   zero_divisor
// CHECK:       define i32 @"halve"
// CHECK-NOT:   status
// CHECK:         ret i32 0
