// RUN: permalloy-opt %s | permalloy-opt | filecheck %s
// RUN: permalloy-opt %s --print-op-generic | permalloy-opt | filecheck %s
// RUN: permalloy-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: permalloy-opt %s -o %t.custom && permalloy-opt %t.custom -o %t.again && diff %t.custom %t.again
// RUN: permalloy-opt %s --print-op-generic | permalloy-opt -o %t.generic && diff %t.custom %t.generic

// Every buffer op and the buffer type, in their custom syntax, printed back
// exactly as written (after a round trip through the custom and through the
// generic format, both of which print, parse and print again identically).

// A dense layout prints without its strides, whether written or not; an
// offset of 0 is left out.
// GENERIC-LABEL: "func.func"() <{sym_name = "layouts"
// GENERIC-SAME:  !buffer.buffer<[4, 8], f32>, !buffer.buffer<[8, 4], f32, strides [1, 8]>, !buffer.buffer<[s0, 4], bf16, strides [8, 2], offset s0 + 1>, !buffer.buffer<[], i1>, !buffer.buffer<[s0, s1], ui8>
// GENERIC-LABEL: "buffer.kernel"() <{sym_name = "neg", function_type = (!ptensor.tensor<[s0], f32>) -> !ptensor.tensor<[s0], f32>}> ({
// GENERIC-NEXT:  ^bb0(%a: !ptensor.tensor<[s0], f32>):
// GENERIC:         "buffer.yield"(%y) : (!ptensor.tensor<[s0], f32>) -> ()
// GENERIC-NEXT:  }) : () -> ()
// GENERIC-LABEL: "func.func"() <{sym_name = "host"
// GENERIC:       %y = "buffer.alloc"() : () -> !buffer.buffer<[s0], f32>
// GENERIC-NEXT:  "buffer.launch"(%x, %y) <{kernel = @neg, operandSegmentSizes = array<i32: 1, 1>}> : (!buffer.buffer<[s0], f32>, !buffer.buffer<[s0], f32>) -> ()
// GENERIC:       %t = "buffer.view"(%m) : (!buffer.buffer<[4, 8], f32>) -> !buffer.buffer<[8, 4], f32, strides [1, 8]>
// GENERIC:       "buffer.copy"(%t, %d) : (!buffer.buffer<[8, 4], f32, strides [1, 8]>, !buffer.buffer<[8, 4], f32>) -> ()
// GENERIC:       %c = "buffer.extern"(%d, %m) ({
// GENERIC-NEXT:  ^bb0(%p: !ptensor.tensor<[8, 4], f32>, %q: !ptensor.tensor<[4, 8], f32>):
// GENERIC:       "buffer.dealloc"(%d) : (!buffer.buffer<[8, 4], f32>) -> ()

// CHECK-LABEL: func.func @layouts(
// CHECK-SAME:  %a: !buffer.buffer<[4, 8], f32>, %b: !buffer.buffer<[8, 4], f32, strides [1, 8]>, %c: !buffer.buffer<[s0, 4], bf16, strides [8, 2], offset s0 + 1>, %d: !buffer.buffer<[], i1>, %e: !buffer.buffer<[s0, s1], ui8>) {
// CHECK-NEXT:   func.return
// CHECK-NEXT: }
func.func @layouts(%a: !buffer.buffer<[4, 8], f32, strides [8, 1], offset 0>, %b: !buffer.buffer<[8, 4], f32, strides [1, 8]>, %c: !buffer.buffer<[s0, 4], bf16, strides [8, 2], offset 1 + s0>, %d: !buffer.buffer<[], i1>, %e: !buffer.buffer<[s0, s1], ui8, strides [s1, 1]>) {
  func.return
}


// A kernel: value-semantic loop ops over its arguments, yielding its results.
// CHECK-LABEL: buffer.kernel @neg(
// CHECK-SAME:  %a: !ptensor.tensor<[s0], f32>) -> (!ptensor.tensor<[s0], f32>) {
// CHECK-NEXT:   %y = loop.pointwise ins(%x = %a : !ptensor.tensor<[s0], f32>) -> !ptensor.tensor<[s0], f32> {
// CHECK-NEXT:     %v = loop.load %x[d0] : f32
// CHECK-NEXT:     %n = arith.negf %v : f32
// CHECK-NEXT:     loop.yield %n : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   buffer.yield %y : !ptensor.tensor<[s0], f32>
// CHECK-NEXT: }
buffer.kernel @neg(%a: !ptensor.tensor<[s0], f32>) -> (!ptensor.tensor<[s0], f32>) {
  %y = loop.pointwise ins(%x = %a : !ptensor.tensor<[s0], f32>) -> !ptensor.tensor<[s0], f32> {
    %v = loop.load %x[d0] : f32
    %n = arith.negf %v : f32
    loop.yield %n : f32
  }
  buffer.yield %y : !ptensor.tensor<[s0], f32>
}


// Two results, no loop op at all, and an attribute dictionary.
// CHECK-LABEL: buffer.kernel @pair(
// CHECK-SAME:  %a: !ptensor.tensor<[4], f32>, %b: !ptensor.tensor<[4], i1>) -> (!ptensor.tensor<[4], f32>, !ptensor.tensor<[4], i1>) attributes {origin = "fused"} {
// CHECK-NEXT:   buffer.yield %a, %b : !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], i1>
// CHECK-NEXT: }
buffer.kernel @pair(%a: !ptensor.tensor<[4], f32>, %b: !ptensor.tensor<[4], i1>) -> (!ptensor.tensor<[4], f32>, !ptensor.tensor<[4], i1>) attributes {origin = "fused"} {
  buffer.yield %a, %b : !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], i1>
}


// A kernel with neither arguments nor results.
// CHECK-LABEL: buffer.kernel @nothing(
// CHECK-SAME:  ) -> () {
// CHECK-NEXT:   buffer.yield
// CHECK-NEXT: }
buffer.kernel @nothing() -> () {
  buffer.yield
}


// The host program: allocation, launches (also in place), views, copies,
// extern calls and deallocation.
// CHECK-LABEL: func.func @host(
// CHECK-SAME:  %x: !buffer.buffer<[s0], f32>, %m: !buffer.buffer<[4, 8], f32>, %f: !buffer.buffer<[4], f32>, %g: !buffer.buffer<[4], i1>) -> (!buffer.buffer<[s0], f32>, !buffer.buffer<[8, 8], f32>) {
// CHECK-NEXT:   %y = buffer.alloc : !buffer.buffer<[s0], f32>
// CHECK-NEXT:   buffer.launch @neg ins(%x : !buffer.buffer<[s0], f32>) outs(%y : !buffer.buffer<[s0], f32>)
// CHECK-NEXT:   buffer.launch @neg ins(%y : !buffer.buffer<[s0], f32>) outs(%y : !buffer.buffer<[s0], f32>) {note = "in place"}
// CHECK-NEXT:   buffer.launch @pair ins(%f, %g : !buffer.buffer<[4], f32>, !buffer.buffer<[4], i1>) outs(%f, %g : !buffer.buffer<[4], f32>, !buffer.buffer<[4], i1>)
// CHECK-NEXT:   %t = buffer.view %m : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[8, 4], f32, strides [1, 8]>
// CHECK-NEXT:   %r = buffer.view %m {note = "row"} : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[8], f32, offset 16>
// CHECK-NEXT:   %d = buffer.alloc {align = 64 : i64} : !buffer.buffer<[8, 4], f32>
// CHECK-NEXT:   buffer.copy %t, %d : !buffer.buffer<[8, 4], f32, strides [1, 8]>, !buffer.buffer<[8, 4], f32>
// CHECK-NEXT:   %c = buffer.extern ins(%p = %d : !buffer.buffer<[8, 4], f32>, %q = %m : !buffer.buffer<[4, 8], f32>) -> (!buffer.buffer<[8, 8], f32>) {
// CHECK-NEXT:     %z = ptensor.mm %p, %q : !ptensor.tensor<[8, 4], f32>, !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[8, 8], f32>
// CHECK-NEXT:     buffer.yield %z : !ptensor.tensor<[8, 8], f32>
// CHECK-NEXT:   }
// CHECK-NEXT:   %s, %i = buffer.extern ins(%p = %t : !buffer.buffer<[8, 4], f32, strides [1, 8]>) -> (!buffer.buffer<[8, 4], f32>, !buffer.buffer<[8, 4], i64>) attributes {op = "sort"} {
// CHECK-NEXT:     %v, %w = ptensor.fallback "aten.sort.default"(%p) [#ptensor.operand<0>, 1 : i64] : (!ptensor.tensor<[8, 4], f32>) -> (!ptensor.tensor<[8, 4], f32>, !ptensor.tensor<[8, 4], i64>)
// CHECK-NEXT:     buffer.yield %v, %w : !ptensor.tensor<[8, 4], f32>, !ptensor.tensor<[8, 4], i64>
// CHECK-NEXT:   }
// CHECK-NEXT:   buffer.dealloc %d : !buffer.buffer<[8, 4], f32>
// CHECK-NEXT:   func.return %y, %c : !buffer.buffer<[s0], f32>, !buffer.buffer<[8, 8], f32>
// CHECK-NEXT: }
func.func @host(%x: !buffer.buffer<[s0], f32>, %m: !buffer.buffer<[4, 8], f32>, %f: !buffer.buffer<[4], f32>, %g: !buffer.buffer<[4], i1>) -> (!buffer.buffer<[s0], f32>, !buffer.buffer<[8, 8], f32>) {
  %y = buffer.alloc : !buffer.buffer<[s0], f32>
  buffer.launch @neg ins(%x : !buffer.buffer<[s0], f32>) outs(%y : !buffer.buffer<[s0], f32>)
  buffer.launch @neg ins(%y : !buffer.buffer<[s0], f32>) outs(%y : !buffer.buffer<[s0], f32>) {note = "in place"}
  buffer.launch @pair ins(%f, %g : !buffer.buffer<[4], f32>, !buffer.buffer<[4], i1>) outs(%f, %g : !buffer.buffer<[4], f32>, !buffer.buffer<[4], i1>)
  %t = buffer.view %m : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[8, 4], f32, strides [1, 8]>
  %r = buffer.view %m {note = "row"} : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[8], f32, offset 16>
  %d = buffer.alloc {align = 64 : i64} : !buffer.buffer<[8, 4], f32>
  buffer.copy %t, %d : !buffer.buffer<[8, 4], f32, strides [1, 8]>, !buffer.buffer<[8, 4], f32>
  %c = buffer.extern ins(%p = %d : !buffer.buffer<[8, 4], f32>, %q = %m : !buffer.buffer<[4, 8], f32>) -> (!buffer.buffer<[8, 8], f32>) {
    %z = ptensor.mm %p, %q : !ptensor.tensor<[8, 4], f32>, !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[8, 8], f32>
    buffer.yield %z : !ptensor.tensor<[8, 8], f32>
  }
  %s, %i = buffer.extern ins(%p = %t : !buffer.buffer<[8, 4], f32, strides [1, 8]>) -> (!buffer.buffer<[8, 4], f32>, !buffer.buffer<[8, 4], i64>) attributes {op = "sort"} {
    %v, %w = ptensor.fallback "aten.sort.default"(%p) [#ptensor.operand<0>, 1 : i64] : (!ptensor.tensor<[8, 4], f32>) -> (!ptensor.tensor<[8, 4], f32>, !ptensor.tensor<[8, 4], i64>)
    buffer.yield %v, %w : !ptensor.tensor<[8, 4], f32>, !ptensor.tensor<[8, 4], i64>
  }
  buffer.dealloc %d : !buffer.buffer<[8, 4], f32>
  func.return %y, %c : !buffer.buffer<[s0], f32>, !buffer.buffer<[8, 8], f32>
}

