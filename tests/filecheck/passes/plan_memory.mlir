// RUN: permalloy-opt %s -p plan-memory | filecheck %s
// RUN: permalloy-opt %s -p plan-memory | permalloy-opt | filecheck %s
// RUN: permalloy-opt %s -p 'plan-memory{in-place=false}' | filecheck %s --check-prefix=NOINPLACE
// RUN: permalloy-opt %s -p 'plan-memory{reuse=false}' | filecheck %s --check-prefix=NOREUSE

// plan-memory: in-place updates, reuse of dead allocations, frees after the
// last use and the planned peak, on host programs as convert-loop-to-buffer
// gives them. The kernels come first; each function below is one case.
// (tests/unit/test_plan_memory.py runs every function of this file before and
// after the pass.)

builtin.module {
  buffer.kernel @exp(%0: !ptensor.tensor<[4, 4], f32>) -> (!ptensor.tensor<[4, 4], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f32> {
      %3 = loop.load %2[d0, d1] : f32
      %4 = math.exp %3 : f32
      loop.yield %4 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[4, 4], f32>
  }
  buffer.kernel @add(%0: !ptensor.tensor<[4, 4], f32>, %1: !ptensor.tensor<[4, 4], f32>) -> (!ptensor.tensor<[4, 4], f32>) {
    %2 = loop.pointwise ins(%3 = %0 : !ptensor.tensor<[4, 4], f32>, %4 = %1 : !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f32> {
      %5 = loop.load %3[d0, d1] : f32
      %6 = loop.load %4[d0, d1] : f32
      %7 = arith.addf %5, %6 : f32
      loop.yield %7 : f32
    }
    buffer.yield %2 : !ptensor.tensor<[4, 4], f32>
  }
  buffer.kernel @transpose(%0: !ptensor.tensor<[4, 4], f32>) -> (!ptensor.tensor<[4, 4], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f32> {
      %3 = loop.load %2[d1, d0] : f32
      loop.yield %3 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[4, 4], f32>
  }
  buffer.kernel @minus_first(%0: !ptensor.tensor<[4, 4], f32>) -> (!ptensor.tensor<[4, 4], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f32> {
      %3 = loop.load %2[d0, d1] : f32
      %4 = loop.load %2[d0, 0] : f32
      %5 = arith.subf %3, %4 : f32
      loop.yield %5 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[4, 4], f32>
  }
  buffer.kernel @exp_and_neg(%0: !ptensor.tensor<[4, 4], f32>) -> (!ptensor.tensor<[4, 4], f32>, !ptensor.tensor<[4, 4], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f32> {
      %3 = loop.load %2[d0, d1] : f32
      %4 = math.exp %3 : f32
      loop.yield %4 : f32
    }
    %5 = loop.pointwise ins(%6 = %0 : !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f32> {
      %7 = loop.load %6[d0, d1] : f32
      %8 = arith.negf %7 : f32
      loop.yield %8 : f32
    }
    buffer.yield %1, %5 : !ptensor.tensor<[4, 4], f32>, !ptensor.tensor<[4, 4], f32>
  }
  buffer.kernel @fill_8x4() -> (!ptensor.tensor<[8, 4], f32>) {
    %0 = loop.pointwise ins() -> !ptensor.tensor<[8, 4], f32> {
      %1 = arith.constant 1.000000e+00 : f32
      loop.yield %1 : f32
    }
    buffer.yield %0 : !ptensor.tensor<[8, 4], f32>
  }
  buffer.kernel @fill_4x4() -> (!ptensor.tensor<[4, 4], f32>) {
    %0 = loop.pointwise ins() -> !ptensor.tensor<[4, 4], f32> {
      %1 = arith.constant 2.000000e+00 : f32
      loop.yield %1 : f32
    }
    buffer.yield %0 : !ptensor.tensor<[4, 4], f32>
  }
  buffer.kernel @fill_4x4_i32() -> (!ptensor.tensor<[4, 4], i32>) {
    %0 = loop.pointwise ins() -> !ptensor.tensor<[4, 4], i32> {
      %1 = arith.constant 3 : i32
      loop.yield %1 : i32
    }
    buffer.yield %0 : !ptensor.tensor<[4, 4], i32>
  }
  buffer.kernel @fill_16x4() -> (!ptensor.tensor<[16, 4], f32>) {
    %0 = loop.pointwise ins() -> !ptensor.tensor<[16, 4], f32> {
      %1 = arith.constant 4.000000e+00 : f32
      loop.yield %1 : f32
    }
    buffer.yield %0 : !ptensor.tensor<[16, 4], f32>
  }
  buffer.kernel @corner(%0: !ptensor.tensor<[8, 4], f32>, %1: !ptensor.tensor<[4, 4], f32>) -> (!ptensor.tensor<[4], f32>) {
    %2 = loop.pointwise ins(%3 = %0 : !ptensor.tensor<[8, 4], f32>, %4 = %1 : !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4], f32> {
      %5 = loop.load %3[d0, 0] : f32
      %6 = loop.load %4[d0, 0] : f32
      %7 = arith.addf %5, %6 : f32
      loop.yield %7 : f32
    }
    buffer.yield %2 : !ptensor.tensor<[4], f32>
  }
  buffer.kernel @exp_s(%0: !ptensor.tensor<[s0, 4], f32>) -> (!ptensor.tensor<[s0, 4], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[s0, 4], f32>) -> !ptensor.tensor<[s0, 4], f32> {
      %3 = loop.load %2[d0, d1] : f32
      %4 = math.exp %3 : f32
      loop.yield %4 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[s0, 4], f32>
  }
  buffer.kernel @reverse_s(%0: !ptensor.tensor<[s0, 4], f32>) -> (!ptensor.tensor<[s0, 4], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[s0, 4], f32>) -> !ptensor.tensor<[s0, 4], f32> {
      %3 = loop.load %2[d0, 3 - d1] : f32
      loop.yield %3 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[s0, 4], f32>
  }
  buffer.kernel @widen_s(%0: !ptensor.tensor<[s0, 4], f32>) -> (!ptensor.tensor<[s0, 8], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[s0, 4], f32>) -> !ptensor.tensor<[s0, 8], f32> {
      %3 = loop.load %2[d0, d1 mod 4] : f32
      loop.yield %3 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[s0, 8], f32>
  }

// A pointwise kernel whose input dies at its launch and is read only where it
// writes runs in place; the result of the first launch carries the whole
// chain, and, returned, is never freed.
// CHECK-LABEL: func.func @in_place(%x: !buffer.buffer<[4, 4], f32>) -> !buffer.buffer<[4, 4], f32> attributes {permalloy.peak_intermediate_bytes = 64 : i64} {
// CHECK-NEXT:    %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    buffer.launch @exp ins(%x : !buffer.buffer<[4, 4], f32>) outs(%a : !buffer.buffer<[4, 4], f32>)
// CHECK-NEXT:    buffer.launch @exp ins(%a : !buffer.buffer<[4, 4], f32>) outs(%a : !buffer.buffer<[4, 4], f32>)
// CHECK-NEXT:    buffer.launch @add ins(%a, %x : !buffer.buffer<[4, 4], f32>, !buffer.buffer<[4, 4], f32>) outs(%a : !buffer.buffer<[4, 4], f32>)
// CHECK-NEXT:    func.return %a : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:  }
// Without in-place updates, the third allocation takes the memory of the
// first, dead after the second launch.
// NOINPLACE-LABEL: func.func @in_place(
// NOINPLACE-NEXT:    %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
// NOINPLACE-NEXT:    buffer.launch @exp ins(%x : {{.*}}) outs(%a : {{.*}})
// NOINPLACE-NEXT:    %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
// NOINPLACE-NEXT:    buffer.launch @exp ins(%a : {{.*}}) outs(%b : {{.*}})
// NOINPLACE-NEXT:    %c = buffer.view %a : !buffer.buffer<[4, 4], f32> -> !buffer.buffer<[4, 4], f32>
// NOINPLACE-NEXT:    buffer.launch @add ins(%b, %x : {{.*}}) outs(%c : {{.*}})
// NOINPLACE-NEXT:    buffer.dealloc %b : !buffer.buffer<[4, 4], f32>
// NOINPLACE-NEXT:    func.return %c
// NOREUSE-LABEL: func.func @in_place(
// NOREUSE-NEXT:    %a = buffer.alloc
// NOREUSE-NEXT:    buffer.launch @exp ins(%x : {{.*}}) outs(%a : {{.*}})
// NOREUSE-NEXT:    buffer.launch @exp ins(%a : {{.*}}) outs(%a : {{.*}})
// NOREUSE-NEXT:    buffer.launch @add ins(%a, %x : {{.*}}) outs(%a : {{.*}})
func.func @in_place(%x: !buffer.buffer<[4, 4], f32>) -> !buffer.buffer<[4, 4], f32> {
  %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp ins(%x : !buffer.buffer<[4, 4], f32>) outs(%a : !buffer.buffer<[4, 4], f32>)
  %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp ins(%a : !buffer.buffer<[4, 4], f32>) outs(%b : !buffer.buffer<[4, 4], f32>)
  %c = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @add ins(%b, %x : !buffer.buffer<[4, 4], f32>, !buffer.buffer<[4, 4], f32>) outs(%c : !buffer.buffer<[4, 4], f32>)
  func.return %c : !buffer.buffer<[4, 4], f32>
}

// A transposing kernel reads elements it has already written over: a new
// buffer, and the input freed right after its last use.
// CHECK-LABEL: func.func @transposed_read(
// CHECK-SAME:    attributes {permalloy.peak_intermediate_bytes = 128 : i64}
// CHECK-NEXT:    %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    buffer.launch @exp ins(%x : {{.*}}) outs(%a : {{.*}})
// CHECK-NEXT:    %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    buffer.launch @transpose ins(%a : {{.*}}) outs(%b : {{.*}})
// CHECK-NEXT:    buffer.dealloc %a : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    func.return %b
func.func @transposed_read(%x: !buffer.buffer<[4, 4], f32>) -> !buffer.buffer<[4, 4], f32> {
  %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp ins(%x : !buffer.buffer<[4, 4], f32>) outs(%a : !buffer.buffer<[4, 4], f32>)
  %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @transpose ins(%a : !buffer.buffer<[4, 4], f32>) outs(%b : !buffer.buffer<[4, 4], f32>)
  func.return %b : !buffer.buffer<[4, 4], f32>
}

// Reading [d0, 0] besides [d0, d1]: column 0 would be overwritten before the
// rest of its row reads it.
// CHECK-LABEL: func.func @read_elsewhere_too(
// CHECK:         %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    buffer.launch @minus_first ins(%a : {{.*}}) outs(%b : {{.*}})
// CHECK-NEXT:    buffer.dealloc %a
func.func @read_elsewhere_too(%x: !buffer.buffer<[4, 4], f32>) -> !buffer.buffer<[4, 4], f32> {
  %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp ins(%x : !buffer.buffer<[4, 4], f32>) outs(%a : !buffer.buffer<[4, 4], f32>)
  %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @minus_first ins(%a : !buffer.buffer<[4, 4], f32>) outs(%b : !buffer.buffer<[4, 4], f32>)
  func.return %b : !buffer.buffer<[4, 4], f32>
}

// Graph inputs belong to the caller: never written, never freed.
// CHECK-LABEL: func.func @graph_input(
// CHECK-SAME:    attributes {permalloy.peak_intermediate_bytes = 64 : i64}
// CHECK-NEXT:    %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    buffer.launch @exp ins(%x : {{.*}}) outs(%a : {{.*}})
// CHECK-NEXT:    func.return %a
func.func @graph_input(%x: !buffer.buffer<[4, 4], f32>) -> !buffer.buffer<[4, 4], f32> {
  %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp ins(%x : !buffer.buffer<[4, 4], f32>) outs(%a : !buffer.buffer<[4, 4], f32>)
  func.return %a : !buffer.buffer<[4, 4], f32>
}

// %a is read again after the second launch: that launch gets a new buffer;
// the third, where %a dies, writes over %a.
// CHECK-LABEL: func.func @still_used(
// CHECK-NEXT:    %a = buffer.alloc
// CHECK-NEXT:    buffer.launch @exp ins(%x : {{.*}}) outs(%a : {{.*}})
// CHECK-NEXT:    %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    buffer.launch @exp ins(%a : {{.*}}) outs(%b : {{.*}})
// CHECK-NEXT:    buffer.launch @add ins(%a, %b : {{.*}}) outs(%a : {{.*}})
// CHECK-NEXT:    buffer.dealloc %b
// CHECK-NEXT:    func.return %a
func.func @still_used(%x: !buffer.buffer<[4, 4], f32>) -> !buffer.buffer<[4, 4], f32> {
  %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp ins(%x : !buffer.buffer<[4, 4], f32>) outs(%a : !buffer.buffer<[4, 4], f32>)
  %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp ins(%a : !buffer.buffer<[4, 4], f32>) outs(%b : !buffer.buffer<[4, 4], f32>)
  %c = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @add ins(%a, %b : !buffer.buffer<[4, 4], f32>, !buffer.buffer<[4, 4], f32>) outs(%c : !buffer.buffer<[4, 4], f32>)
  func.return %c : !buffer.buffer<[4, 4], f32>
}

// The same buffer passed as two inputs, and a buffer passed with a transposed
// view of itself: no in-place update.
// CHECK-LABEL: func.func @read_twice(
// CHECK:         %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    buffer.launch @add ins(%a, %a : {{.*}}) outs(%b : {{.*}})
// CHECK-NEXT:    buffer.dealloc %a
// CHECK-LABEL: func.func @viewed_twice(
// CHECK:         %t = buffer.view %a : !buffer.buffer<[4, 4], f32> -> !buffer.buffer<[4, 4], f32, strides [1, 4]>
// CHECK-NEXT:    %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    buffer.launch @add ins(%a, %t : {{.*}}) outs(%b : {{.*}})
// CHECK-NEXT:    buffer.dealloc %a
func.func @read_twice(%x: !buffer.buffer<[4, 4], f32>) -> !buffer.buffer<[4, 4], f32> {
  %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp ins(%x : !buffer.buffer<[4, 4], f32>) outs(%a : !buffer.buffer<[4, 4], f32>)
  %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @add ins(%a, %a : !buffer.buffer<[4, 4], f32>, !buffer.buffer<[4, 4], f32>) outs(%b : !buffer.buffer<[4, 4], f32>)
  func.return %b : !buffer.buffer<[4, 4], f32>
}
func.func @viewed_twice(%x: !buffer.buffer<[4, 4], f32>) -> !buffer.buffer<[4, 4], f32> {
  %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp ins(%x : !buffer.buffer<[4, 4], f32>) outs(%a : !buffer.buffer<[4, 4], f32>)
  %t = buffer.view %a : !buffer.buffer<[4, 4], f32> -> !buffer.buffer<[4, 4], f32, strides [1, 4]>
  %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @add ins(%a, %t : !buffer.buffer<[4, 4], f32>, !buffer.buffer<[4, 4], f32, strides [1, 4]>) outs(%b : !buffer.buffer<[4, 4], f32>)
  func.return %b : !buffer.buffer<[4, 4], f32>
}

// A result with another layout than its dying input's: no in-place update.
// CHECK-LABEL: func.func @other_layout(
// CHECK:         %b = buffer.alloc : !buffer.buffer<[4, 4], f32, strides [1, 4]>
// CHECK-NEXT:    buffer.launch @exp ins(%a : {{.*}}) outs(%b : {{.*}})
// CHECK-NEXT:    buffer.dealloc %a
func.func @other_layout(%x: !buffer.buffer<[4, 4], f32>) -> !buffer.buffer<[4, 4], f32, strides [1, 4]> {
  %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp ins(%x : !buffer.buffer<[4, 4], f32>) outs(%a : !buffer.buffer<[4, 4], f32>)
  %b = buffer.alloc : !buffer.buffer<[4, 4], f32, strides [1, 4]>
  buffer.launch @exp ins(%a : !buffer.buffer<[4, 4], f32>) outs(%b : !buffer.buffer<[4, 4], f32, strides [1, 4]>)
  func.return %b : !buffer.buffer<[4, 4], f32, strides [1, 4]>
}

// A kernel with two results is not updated in place.
// CHECK-LABEL: func.func @two_results(
// CHECK:         %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    %c = buffer.alloc : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    buffer.launch @exp_and_neg ins(%a : {{.*}}) outs(%b, %c : {{.*}})
// CHECK-NEXT:    buffer.dealloc %a
func.func @two_results(%x: !buffer.buffer<[4, 4], f32>) -> (!buffer.buffer<[4, 4], f32>, !buffer.buffer<[4, 4], f32>) {
  %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp ins(%x : !buffer.buffer<[4, 4], f32>) outs(%a : !buffer.buffer<[4, 4], f32>)
  %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
  %c = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp_and_neg ins(%a : !buffer.buffer<[4, 4], f32>) outs(%b, %c : !buffer.buffer<[4, 4], f32>, !buffer.buffer<[4, 4], f32>)
  func.return %b, %c : !buffer.buffer<[4, 4], f32>, !buffer.buffer<[4, 4], f32>
}

// A library call's result is a new tensor the program owns: the pointwise
// kernel after it writes over it.
// CHECK-LABEL: func.func @library_result(
// CHECK-SAME:    attributes {permalloy.peak_intermediate_bytes = 64 : i64}
// CHECK:         buffer.launch @exp ins(%m : {{.*}}) outs(%m : {{.*}})
// CHECK-NEXT:    func.return %m
func.func @library_result(%x: !buffer.buffer<[4, 4], f32>) -> !buffer.buffer<[4, 4], f32> {
  %m = buffer.extern ins(%0 = %x : !buffer.buffer<[4, 4], f32>, %1 = %x : !buffer.buffer<[4, 4], f32>) -> (!buffer.buffer<[4, 4], f32>) {
    %2 = ptensor.mm %0, %1 : !ptensor.tensor<[4, 4], f32>, !ptensor.tensor<[4, 4], f32> -> !ptensor.tensor<[4, 4], f32>
    buffer.yield %2 : !ptensor.tensor<[4, 4], f32>
  }
  %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp ins(%m : !buffer.buffer<[4, 4], f32>) outs(%a : !buffer.buffer<[4, 4], f32>)
  func.return %a : !buffer.buffer<[4, 4], f32>
}

// A fallback may return a view of its input (unfold does): its result is
// neither written over nor given to a later allocation, only freed.
// CHECK-LABEL: func.func @fallback_result(
// CHECK:         %u = buffer.extern
// CHECK:         %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    buffer.launch @exp ins(%u : {{.*}}) outs(%a : {{.*}})
// CHECK-NEXT:    buffer.dealloc %u
// CHECK-NEXT:    %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    buffer.launch @exp ins(%a : {{.*}}) outs(%b : {{.*}})
// CHECK-NEXT:    func.return %a, %b
func.func @fallback_result(%x: !buffer.buffer<[16], f32>) -> (!buffer.buffer<[4, 4], f32>, !buffer.buffer<[4, 4], f32>) {
  %u = buffer.extern ins(%0 = %x : !buffer.buffer<[16], f32>) -> (!buffer.buffer<[4, 4], f32>) {
    %1 = ptensor.fallback "aten.unfold.default"(%0) [#ptensor.operand<0>, 0 : i64, 4 : i64, 4 : i64] : (!ptensor.tensor<[16], f32>) -> !ptensor.tensor<[4, 4], f32>
    buffer.yield %1 : !ptensor.tensor<[4, 4], f32>
  }
  %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp ins(%u : !buffer.buffer<[4, 4], f32>) outs(%a : !buffer.buffer<[4, 4], f32>)
  %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp ins(%a : !buffer.buffer<[4, 4], f32>) outs(%b : !buffer.buffer<[4, 4], f32>)
  func.return %a, %b : !buffer.buffer<[4, 4], f32>, !buffer.buffer<[4, 4], f32>
}

// Reuse: %big (128 bytes) and %small (64 bytes) die at the third launch. %n
// (64 bytes) takes the smaller, as a view; %i (i32) takes neither, whatever
// its size; %h (256 bytes) fits in neither; %k takes %big. Returned through
// %n and %k, neither donor is freed. Peak: 128 + 64 + 16 + 64 + 256 bytes.
// CHECK-LABEL: func.func @reuse(
// CHECK-SAME:    attributes {permalloy.peak_intermediate_bytes = 528 : i64}
// CHECK-NEXT:    %big = buffer.alloc : !buffer.buffer<[8, 4], f32>
// CHECK-NEXT:    buffer.launch @fill_8x4 ins() outs(%big : {{.*}})
// CHECK-NEXT:    %small = buffer.alloc : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    buffer.launch @fill_4x4 ins() outs(%small : {{.*}})
// CHECK-NEXT:    %c = buffer.alloc : !buffer.buffer<[4], f32>
// CHECK-NEXT:    buffer.launch @corner ins(%big, %small : {{.*}}) outs(%c : {{.*}})
// CHECK-NEXT:    %n = buffer.view %small : !buffer.buffer<[4, 4], f32> -> !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    buffer.launch @fill_4x4 ins() outs(%n : {{.*}})
// CHECK-NEXT:    %i = buffer.alloc : !buffer.buffer<[4, 4], i32>
// CHECK-NEXT:    buffer.launch @fill_4x4_i32 ins() outs(%i : {{.*}})
// CHECK-NEXT:    %h = buffer.alloc : !buffer.buffer<[16, 4], f32>
// CHECK-NEXT:    buffer.launch @fill_16x4 ins() outs(%h : {{.*}})
// CHECK-NEXT:    %k = buffer.view %big : !buffer.buffer<[8, 4], f32> -> !buffer.buffer<[8, 4], f32>
// CHECK-NEXT:    buffer.launch @fill_8x4 ins() outs(%k : {{.*}})
// CHECK-NEXT:    func.return %c, %n, %i, %k, %h
// Without reuse every allocation is its own and the two dead ones are freed
// after their last use; the peak is the same, 16 + 64 + 64 + 256 + 128 bytes.
// NOREUSE-LABEL: func.func @reuse(
// NOREUSE-SAME:    attributes {permalloy.peak_intermediate_bytes = 528 : i64}
// NOREUSE:         buffer.launch @corner
// NOREUSE-DAG:     buffer.dealloc %big
// NOREUSE-DAG:     buffer.dealloc %small
// NOREUSE-NEXT:    %n = buffer.alloc
// NOREUSE-NOT:     buffer.view
// NOREUSE:         func.return
func.func @reuse(%x: !buffer.buffer<[4, 4], f32>) -> (!buffer.buffer<[4], f32>, !buffer.buffer<[4, 4], f32>, !buffer.buffer<[4, 4], i32>, !buffer.buffer<[8, 4], f32>, !buffer.buffer<[16, 4], f32>) {
  %big = buffer.alloc : !buffer.buffer<[8, 4], f32>
  buffer.launch @fill_8x4 ins() outs(%big : !buffer.buffer<[8, 4], f32>)
  %small = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @fill_4x4 ins() outs(%small : !buffer.buffer<[4, 4], f32>)
  %c = buffer.alloc : !buffer.buffer<[4], f32>
  buffer.launch @corner ins(%big, %small : !buffer.buffer<[8, 4], f32>, !buffer.buffer<[4, 4], f32>) outs(%c : !buffer.buffer<[4], f32>)
  %n = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @fill_4x4 ins() outs(%n : !buffer.buffer<[4, 4], f32>)
  %i = buffer.alloc : !buffer.buffer<[4, 4], i32>
  buffer.launch @fill_4x4_i32 ins() outs(%i : !buffer.buffer<[4, 4], i32>)
  %h = buffer.alloc : !buffer.buffer<[16, 4], f32>
  buffer.launch @fill_16x4 ins() outs(%h : !buffer.buffer<[16, 4], f32>)
  %k = buffer.alloc : !buffer.buffer<[8, 4], f32>
  buffer.launch @fill_8x4 ins() outs(%k : !buffer.buffer<[8, 4], f32>)
  func.return %c, %n, %i, %k, %h : !buffer.buffer<[4], f32>, !buffer.buffer<[4, 4], f32>, !buffer.buffer<[4, 4], i32>, !buffer.buffer<[8, 4], f32>, !buffer.buffer<[16, 4], f32>
}

// A buffer dies at its last use through a view (here by an extern call): it
// is freed right after it. The product writes into a buffer the program
// allocates (`buffer.writes_last_input`), which is then updated in place.
// CHECK-LABEL: func.func @through_view(
// CHECK-SAME:    attributes {permalloy.peak_intermediate_bytes = 128 : i64}
// CHECK:         %t = buffer.view %a
// CHECK-NEXT:    %m = buffer.alloc : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    %{{.+}} = buffer.extern ins(%{{.+}} = %t : {{.*}}, %{{.+}} = %x : {{.*}}, %{{.+}} = %m : !buffer.buffer<[4, 4], f32>) -> (!buffer.buffer<[4, 4], f32>) attributes {buffer.writes_last_input}
// CHECK:         }
// CHECK-NEXT:    buffer.dealloc %a : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    buffer.launch @exp ins(%m : {{.*}}) outs(%m : {{.*}})
// CHECK-NEXT:    func.return %m
func.func @through_view(%x: !buffer.buffer<[4, 4], f32>) -> !buffer.buffer<[4, 4], f32> {
  %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp ins(%x : !buffer.buffer<[4, 4], f32>) outs(%a : !buffer.buffer<[4, 4], f32>)
  %t = buffer.view %a : !buffer.buffer<[4, 4], f32> -> !buffer.buffer<[4, 4], f32, strides [1, 4]>
  %m = buffer.extern ins(%0 = %t : !buffer.buffer<[4, 4], f32, strides [1, 4]>, %1 = %x : !buffer.buffer<[4, 4], f32>) -> (!buffer.buffer<[4, 4], f32>) {
    %2 = ptensor.mm %0, %1 : !ptensor.tensor<[4, 4], f32>, !ptensor.tensor<[4, 4], f32> -> !ptensor.tensor<[4, 4], f32>
    buffer.yield %2 : !ptensor.tensor<[4, 4], f32>
  }
  %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp ins(%m : !buffer.buffer<[4, 4], f32>) outs(%b : !buffer.buffer<[4, 4], f32>)
  func.return %b : !buffer.buffer<[4, 4], f32>
}

// An allocation nothing uses may still take a dead buffer's memory; the
// donor is freed after that view.
// CHECK-LABEL: func.func @unused(
// CHECK:         buffer.launch @transpose ins(%a : {{.*}}) outs(%b : {{.*}})
// CHECK-NEXT:    %c = buffer.view %a : !buffer.buffer<[4, 4], f32> -> !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    buffer.dealloc %a
// CHECK-NEXT:    func.return %b
func.func @unused(%x: !buffer.buffer<[4, 4], f32>) -> !buffer.buffer<[4, 4], f32> {
  %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp ins(%x : !buffer.buffer<[4, 4], f32>) outs(%a : !buffer.buffer<[4, 4], f32>)
  %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @transpose ins(%a : !buffer.buffer<[4, 4], f32>) outs(%b : !buffer.buffer<[4, 4], f32>)
  %c = buffer.alloc : !buffer.buffer<[4, 4], f32>
  func.return %b : !buffer.buffer<[4, 4], f32>
}

// Symbolic sizes: a dead [s0, 4] buffer holds a new [s0, 4] one, never an
// [s0, 8] one; the peak is an expression of s0 (plan_memory_symbolic.mlir
// has more symbolic cases).
// CHECK-LABEL: func.func @symbolic(%x: !buffer.buffer<[s0, 4], f32>) -> (!buffer.buffer<[s0, 4], f32>, !buffer.buffer<[s0, 8], f32>)
// CHECK-SAME:    attributes {permalloy.peak_intermediate_bytes = #sym.expr<s0 * 48>} {
// CHECK-NEXT:    %a = buffer.alloc : !buffer.buffer<[s0, 4], f32>
// CHECK-NEXT:    buffer.launch @exp_s ins(%x : {{.*}}) outs(%a : {{.*}})
// CHECK-NEXT:    %b = buffer.alloc : !buffer.buffer<[s0, 4], f32>
// CHECK-NEXT:    buffer.launch @reverse_s ins(%a : {{.*}}) outs(%b : {{.*}})
// CHECK-NEXT:    %c = buffer.view %a : !buffer.buffer<[s0, 4], f32> -> !buffer.buffer<[s0, 4], f32>
// CHECK-NEXT:    buffer.launch @reverse_s ins(%b : {{.*}}) outs(%c : {{.*}})
// CHECK-NEXT:    buffer.dealloc %b
// CHECK-NEXT:    %w = buffer.alloc : !buffer.buffer<[s0, 8], f32>
// CHECK-NEXT:    buffer.launch @widen_s ins(%c : {{.*}}) outs(%w : {{.*}})
// CHECK-NEXT:    func.return %c, %w
func.func @symbolic(%x: !buffer.buffer<[s0, 4], f32>) -> (!buffer.buffer<[s0, 4], f32>, !buffer.buffer<[s0, 8], f32>) {
  %a = buffer.alloc : !buffer.buffer<[s0, 4], f32>
  buffer.launch @exp_s ins(%x : !buffer.buffer<[s0, 4], f32>) outs(%a : !buffer.buffer<[s0, 4], f32>)
  %b = buffer.alloc : !buffer.buffer<[s0, 4], f32>
  buffer.launch @reverse_s ins(%a : !buffer.buffer<[s0, 4], f32>) outs(%b : !buffer.buffer<[s0, 4], f32>)
  %c = buffer.alloc : !buffer.buffer<[s0, 4], f32>
  buffer.launch @reverse_s ins(%b : !buffer.buffer<[s0, 4], f32>) outs(%c : !buffer.buffer<[s0, 4], f32>)
  %w = buffer.alloc : !buffer.buffer<[s0, 8], f32>
  buffer.launch @widen_s ins(%c : !buffer.buffer<[s0, 4], f32>) outs(%w : !buffer.buffer<[s0, 8], f32>)
  func.return %c, %w : !buffer.buffer<[s0, 4], f32>, !buffer.buffer<[s0, 8], f32>
}

// A matrix product's result takes the memory of a dead buffer like any
// allocation: the second product writes where the first one's result was,
// and a column-major result (one NCHW image's pixels by channels) is written
// as it is. A convolution, with no `out=` form, still gets a new tensor.
// CHECK-LABEL: func.func @product_results(
// CHECK:         %p = buffer.alloc : !buffer.buffer<[4, 4], f32, strides [1, 4]>
// CHECK-NEXT:    buffer.extern ins({{.*}}, %{{.+}} = %p : {{.*}}) -> ({{.*}}) attributes {buffer.writes_last_input}
// CHECK:         %q = buffer.view %p : !buffer.buffer<[4, 4], f32, strides [1, 4]> -> !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    buffer.extern ins({{.*}}, %{{.+}} = %q : {{.*}}) -> ({{.*}}) attributes {buffer.writes_last_input}
// CHECK:         %c = buffer.extern
// CHECK-NOT:     buffer.writes_last_input
// CHECK:         func.return
func.func @product_results(%x: !buffer.buffer<[4, 4], f32>, %w: !buffer.buffer<[4, 4], f32>, %i: !buffer.buffer<[1, 4, 3, 3], f32>, %k: !buffer.buffer<[4, 4, 3, 3], f32>) -> (!buffer.buffer<[4, 4], f32>, !buffer.buffer<[1, 4, 1, 1], f32>) {
  %p = buffer.extern ins(%0 = %x : !buffer.buffer<[4, 4], f32>, %1 = %w : !buffer.buffer<[4, 4], f32>) -> (!buffer.buffer<[4, 4], f32, strides [1, 4]>) {
    %2 = ptensor.mm %0, %1 : !ptensor.tensor<[4, 4], f32>, !ptensor.tensor<[4, 4], f32> -> !ptensor.tensor<[4, 4], f32>
    buffer.yield %2 : !ptensor.tensor<[4, 4], f32>
  }
  %e = buffer.alloc : !buffer.buffer<[4, 4], f32>
  buffer.launch @exp ins(%p : !buffer.buffer<[4, 4], f32, strides [1, 4]>) outs(%e : !buffer.buffer<[4, 4], f32>)
  %q = buffer.extern ins(%0 = %e : !buffer.buffer<[4, 4], f32>, %1 = %w : !buffer.buffer<[4, 4], f32>) -> (!buffer.buffer<[4, 4], f32>) {
    %2 = ptensor.mm %0, %1 : !ptensor.tensor<[4, 4], f32>, !ptensor.tensor<[4, 4], f32> -> !ptensor.tensor<[4, 4], f32>
    buffer.yield %2 : !ptensor.tensor<[4, 4], f32>
  }
  %c = buffer.extern ins(%0 = %i : !buffer.buffer<[1, 4, 3, 3], f32>, %1 = %k : !buffer.buffer<[4, 4, 3, 3], f32>) -> (!buffer.buffer<[1, 4, 1, 1], f32>) {
    %2 = ptensor.convolution %0, %1 stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : !ptensor.tensor<[1, 4, 3, 3], f32>, !ptensor.tensor<[4, 4, 3, 3], f32> -> !ptensor.tensor<[1, 4, 1, 1], f32>
    buffer.yield %2 : !ptensor.tensor<[1, 4, 1, 1], f32>
  }
  func.return %q, %c : !buffer.buffer<[4, 4], f32>, !buffer.buffer<[1, 4, 1, 1], f32>
}

// A batch of products whose results are column-major matrices (a 1x1
// convolution's input gradient as a product over channels-last images) is
// written as it is; a batch whose matrices are neither row- nor
// column-major gets a new tensor from the library.
// CHECK-LABEL: func.func @batched_column_major(
// CHECK:         %p = buffer.alloc : !buffer.buffer<[2, 3, 5], f32, strides [15, 1, 3]>
// CHECK-NEXT:    buffer.extern ins({{.*}}, %{{.+}} = %p : {{.*}}) -> ({{.*}}) attributes {buffer.writes_last_input}
// CHECK:         %r = buffer.extern
// CHECK-NOT:     buffer.writes_last_input
// CHECK:         func.return
func.func @batched_column_major(%a: !buffer.buffer<[2, 3, 4], f32>, %b: !buffer.buffer<[2, 4, 5], f32>) -> (!buffer.buffer<[2, 3, 5], f32, strides [15, 1, 3]>, !buffer.buffer<[2, 3, 5], f32, strides [5, 10, 1]>) {
  %p = buffer.extern ins(%0 = %a : !buffer.buffer<[2, 3, 4], f32>, %1 = %b : !buffer.buffer<[2, 4, 5], f32>) -> (!buffer.buffer<[2, 3, 5], f32, strides [15, 1, 3]>) {
    %2 = ptensor.bmm %0, %1 : !ptensor.tensor<[2, 3, 4], f32>, !ptensor.tensor<[2, 4, 5], f32> -> !ptensor.tensor<[2, 3, 5], f32>
    buffer.yield %2 : !ptensor.tensor<[2, 3, 5], f32>
  }
  %r = buffer.extern ins(%0 = %a : !buffer.buffer<[2, 3, 4], f32>, %1 = %b : !buffer.buffer<[2, 4, 5], f32>) -> (!buffer.buffer<[2, 3, 5], f32, strides [5, 10, 1]>) {
    %2 = ptensor.bmm %0, %1 : !ptensor.tensor<[2, 3, 4], f32>, !ptensor.tensor<[2, 4, 5], f32> -> !ptensor.tensor<[2, 3, 5], f32>
    buffer.yield %2 : !ptensor.tensor<[2, 3, 5], f32>
  }
  func.return %p, %r : !buffer.buffer<[2, 3, 5], f32, strides [15, 1, 3]>, !buffer.buffer<[2, 3, 5], f32, strides [5, 10, 1]>
}
}
