// RUN: permalloy-opt %s -p plan-memory | filecheck %s
// RUN: permalloy-opt %s -p plan-memory | permalloy-opt | filecheck %s

// plan-memory over symbolic sizes: every decision holds for all positive
// values of the size symbols. A donor is large enough when the difference of
// the byte counts is provably non-negative, the smallest donor is one that
// provably fits in every other, an in-place update needs provably equal
// layouts, and the planned peak is a #sym.expr (a max of the totals no other
// covers). tests/unit/test_plan_memory.py runs every function of this file
// before and after the pass.

builtin.module {
  buffer.kernel @exp_2d(%0: !ptensor.tensor<[s0, s1], f32>) -> (!ptensor.tensor<[s0, s1], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[s0, s1], f32>) -> !ptensor.tensor<[s0, s1], f32> {
      %3 = loop.load %2[d0, d1] : f32
      %4 = math.exp %3 : f32
      loop.yield %4 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[s0, s1], f32>
  }
  buffer.kernel @transpose_2d(%0: !ptensor.tensor<[s0, s1], f32>) -> (!ptensor.tensor<[s1, s0], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[s0, s1], f32>) -> !ptensor.tensor<[s1, s0], f32> {
      %3 = loop.load %2[d1, d0] : f32
      loop.yield %3 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[s1, s0], f32>
  }
  buffer.kernel @pad_2d(%0: !ptensor.tensor<[s1, s0], f32>) -> (!ptensor.tensor<[s1, s0 + 1], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[s1, s0], f32>) -> !ptensor.tensor<[s1, s0 + 1], f32> {
      %3 = loop.load %2[d0, min(d1, s0 - 1)] : f32
      loop.yield %3 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[s1, s0 + 1], f32>
  }
  buffer.kernel @flat_exp(%0: !ptensor.tensor<[s0 * (s1 + 1)], f32>, %sizes: !ptensor.tensor<[s0, s1], f32>) -> (!ptensor.tensor<[s0 * s1 + s0], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[s0 * (s1 + 1)], f32>) -> !ptensor.tensor<[s0 * s1 + s0], f32> {
      %3 = loop.load %2[d0] : f32
      %4 = math.exp %3 : f32
      loop.yield %4 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[s0 * s1 + s0], f32>
  }
  buffer.kernel @flat_reverse(%0: !ptensor.tensor<[s0 * (s1 + 1)], f32>, %sizes: !ptensor.tensor<[s0, s1], f32>) -> (!ptensor.tensor<[s0 * (s1 + 1)], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[s0 * (s1 + 1)], f32>) -> !ptensor.tensor<[s0 * (s1 + 1)], f32> {
      %3 = loop.load %2[s0 * (s1 + 1) - 1 - d0] : f32
      loop.yield %3 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[s0 * (s1 + 1)], f32>
  }
  buffer.kernel @half_rows(%0: !ptensor.tensor<[s0, 8], f32>) -> (!ptensor.tensor<[s0 floordiv 2, 8], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[s0, 8], f32>) -> !ptensor.tensor<[s0 floordiv 2, 8], f32> {
      %3 = loop.load %2[d0 * 2, d1] : f32
      loop.yield %3 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[s0 floordiv 2, 8], f32>
  }
  buffer.kernel @half_narrow(%0: !ptensor.tensor<[s0 floordiv 2, 8], f32>, %sizes: !ptensor.tensor<[s0, 8], f32>) -> (!ptensor.tensor<[s0 floordiv 2, 4], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[s0 floordiv 2, 8], f32>) -> !ptensor.tensor<[s0 floordiv 2, 4], f32> {
      %3 = loop.load %2[d0, 7 - d1] : f32
      loop.yield %3 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[s0 floordiv 2, 4], f32>
  }
  buffer.kernel @rows_s0(%0: !ptensor.tensor<[s0, 4], f32>) -> (!ptensor.tensor<[s0, 4], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[s0, 4], f32>) -> !ptensor.tensor<[s0, 4], f32> {
      %3 = loop.load %2[s0 - 1 - d0, d1] : f32
      loop.yield %3 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[s0, 4], f32>
  }
  buffer.kernel @rows_s1(%0: !ptensor.tensor<[s1, 4], f32>) -> (!ptensor.tensor<[s1, 4], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[s1, 4], f32>) -> !ptensor.tensor<[s1, 4], f32> {
      %3 = loop.load %2[s1 - 1 - d0, d1] : f32
      loop.yield %3 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[s1, 4], f32>
  }
  buffer.kernel @sum_rows(%0: !ptensor.tensor<[s0, 4], f32>, %1: !ptensor.tensor<[s1, 4], f32>) -> (!ptensor.tensor<[4], f32>) {
    %2 = loop.reduce sum ins(%3 = %0 : !ptensor.tensor<[s0, 4], f32>) over [s0] -> !ptensor.tensor<[4], f32> {
      %4 = loop.load %3[r0, d0] : f32
      loop.yield %4 : f32
    }
    buffer.yield %2 : !ptensor.tensor<[4], f32>
  }

// A dead [s0, s1] buffer holds the [s1, s0] transpose of its successor's
// result (the same bytes for every s0, s1), never an [s1, s0 + 1] one.
// CHECK-LABEL: func.func @reuse_equal_bytes(
// CHECK-SAME:    attributes {permalloy.peak_intermediate_bytes = #sym.expr<s0 * s1 * 12 + s1 * 4>} {
// CHECK-NEXT:    %a = buffer.alloc : !buffer.buffer<[s0, s1], f32>
// CHECK-NEXT:    buffer.launch @exp_2d ins(%x : {{.*}}) outs(%a : {{.*}})
// CHECK-NEXT:    %t = buffer.alloc : !buffer.buffer<[s1, s0], f32>
// CHECK-NEXT:    buffer.launch @transpose_2d ins(%a : {{.*}}) outs(%t : {{.*}})
// CHECK-NEXT:    %u = buffer.view %a : !buffer.buffer<[s0, s1], f32> -> !buffer.buffer<[s1, s0], f32>
// CHECK-NEXT:    buffer.launch @transpose_2d ins(%x : {{.*}}) outs(%u : {{.*}})
// CHECK-NEXT:    %p = buffer.alloc : !buffer.buffer<[s1, s0 + 1], f32>
// CHECK-NEXT:    buffer.launch @pad_2d ins(%t : {{.*}}) outs(%p : {{.*}})
// CHECK-NEXT:    buffer.dealloc %t
// CHECK-NEXT:    func.return %u, %p
func.func @reuse_equal_bytes(%x: !buffer.buffer<[s0, s1], f32>) -> (!buffer.buffer<[s1, s0], f32>, !buffer.buffer<[s1, s0 + 1], f32>) {
  %a = buffer.alloc : !buffer.buffer<[s0, s1], f32>
  buffer.launch @exp_2d ins(%x : !buffer.buffer<[s0, s1], f32>) outs(%a : !buffer.buffer<[s0, s1], f32>)
  %t = buffer.alloc : !buffer.buffer<[s1, s0], f32>
  buffer.launch @transpose_2d ins(%a : !buffer.buffer<[s0, s1], f32>) outs(%t : !buffer.buffer<[s1, s0], f32>)
  %u = buffer.alloc : !buffer.buffer<[s1, s0], f32>
  buffer.launch @transpose_2d ins(%x : !buffer.buffer<[s0, s1], f32>) outs(%u : !buffer.buffer<[s1, s0], f32>)
  %p = buffer.alloc : !buffer.buffer<[s1, s0 + 1], f32>
  buffer.launch @pad_2d ins(%t : !buffer.buffer<[s1, s0], f32>) outs(%p : !buffer.buffer<[s1, s0 + 1], f32>)
  func.return %u, %p : !buffer.buffer<[s1, s0], f32>, !buffer.buffer<[s1, s0 + 1], f32>
}

// In place over an [s0, s1] buffer; and over a buffer whose size is written
// s0 * (s1 + 1) while the result's is s0 * s1 + s0: the same layout, written
// through a view. (The kernels' extra argument gives their interpreter the
// values of s0 and s1.)
// CHECK-LABEL: func.func @in_place_equal_layouts(
// CHECK-SAME:    attributes {permalloy.peak_intermediate_bytes = #sym.expr<s0 * 4 + s0 * s1 * 4>} {
// CHECK-NEXT:    %r = buffer.alloc : !buffer.buffer<[(s1 + 1) * s0], f32>
// CHECK-NEXT:    buffer.launch @flat_reverse ins(%x, %sizes : {{.*}}) outs(%r : {{.*}})
// CHECK-NEXT:    %e = buffer.view %r : !buffer.buffer<[(s1 + 1) * s0], f32> -> !buffer.buffer<[s0 + s0 * s1], f32>
// CHECK-NEXT:    buffer.launch @flat_exp ins(%r, %sizes : {{.*}}) outs(%e : {{.*}})
// CHECK-NEXT:    func.return %e
func.func @in_place_equal_layouts(%sizes: !buffer.buffer<[s0, s1], f32>, %x: !buffer.buffer<[s0 * (s1 + 1)], f32>) -> !buffer.buffer<[s0 * s1 + s0], f32> {
  %r = buffer.alloc : !buffer.buffer<[s0 * (s1 + 1)], f32>
  buffer.launch @flat_reverse ins(%x, %sizes : !buffer.buffer<[s0 * (s1 + 1)], f32>, !buffer.buffer<[s0, s1], f32>) outs(%r : !buffer.buffer<[s0 * (s1 + 1)], f32>)
  %e = buffer.alloc : !buffer.buffer<[s0 * s1 + s0], f32>
  buffer.launch @flat_exp ins(%r, %sizes : !buffer.buffer<[s0 * (s1 + 1)], f32>, !buffer.buffer<[s0, s1], f32>) outs(%e : !buffer.buffer<[s0 * s1 + s0], f32>)
  func.return %e : !buffer.buffer<[s0 * s1 + s0], f32>
}

// Sizes with floordiv: a dead [s0 floordiv 2, 8] buffer holds a new
// [s0 floordiv 2, 4] one.
// CHECK-LABEL: func.func @floordiv_donor(
// CHECK-SAME:    attributes {permalloy.peak_intermediate_bytes = #sym.expr<(s0 floordiv 2) * 80>} {
// CHECK-NEXT:    %h = buffer.alloc : !buffer.buffer<[s0 floordiv 2, 8], f32>
// CHECK-NEXT:    buffer.launch @half_rows ins(%x : {{.*}}) outs(%h : {{.*}})
// CHECK-NEXT:    %g = buffer.alloc : !buffer.buffer<[s0 floordiv 2, 8], f32>
// CHECK-NEXT:    buffer.launch @half_rows ins(%x : {{.*}}) outs(%g : {{.*}})
// CHECK-NEXT:    %n = buffer.alloc : !buffer.buffer<[s0 floordiv 2, 4], f32>
// CHECK-NEXT:    buffer.launch @half_narrow ins(%h, %x : {{.*}}) outs(%n : {{.*}})
// CHECK-NEXT:    %m = buffer.view %h : !buffer.buffer<[s0 floordiv 2, 8], f32> -> !buffer.buffer<[s0 floordiv 2, 4], f32>
// CHECK-NEXT:    buffer.launch @half_narrow ins(%g, %x : {{.*}}) outs(%m : {{.*}})
// CHECK-NEXT:    buffer.dealloc %g
// CHECK-NEXT:    func.return %n, %m
func.func @floordiv_donor(%x: !buffer.buffer<[s0, 8], f32>) -> (!buffer.buffer<[s0 floordiv 2, 4], f32>, !buffer.buffer<[s0 floordiv 2, 4], f32>) {
  %h = buffer.alloc : !buffer.buffer<[s0 floordiv 2, 8], f32>
  buffer.launch @half_rows ins(%x : !buffer.buffer<[s0, 8], f32>) outs(%h : !buffer.buffer<[s0 floordiv 2, 8], f32>)
  %g = buffer.alloc : !buffer.buffer<[s0 floordiv 2, 8], f32>
  buffer.launch @half_rows ins(%x : !buffer.buffer<[s0, 8], f32>) outs(%g : !buffer.buffer<[s0 floordiv 2, 8], f32>)
  %n = buffer.alloc : !buffer.buffer<[s0 floordiv 2, 4], f32>
  buffer.launch @half_narrow ins(%h, %x : !buffer.buffer<[s0 floordiv 2, 8], f32>, !buffer.buffer<[s0, 8], f32>) outs(%n : !buffer.buffer<[s0 floordiv 2, 4], f32>)
  %m = buffer.alloc : !buffer.buffer<[s0 floordiv 2, 4], f32>
  buffer.launch @half_narrow ins(%g, %x : !buffer.buffer<[s0 floordiv 2, 8], f32>, !buffer.buffer<[s0, 8], f32>) outs(%m : !buffer.buffer<[s0 floordiv 2, 4], f32>)
  func.return %n, %m : !buffer.buffer<[s0 floordiv 2, 4], f32>, !buffer.buffer<[s0 floordiv 2, 4], f32>
}

// Buffers over two unrelated symbols: neither holds the other (a dead
// [s0, 4] one holds a [4] one), and the peak is the larger of two totals
// that no ordering of s0 and s1 decides.
// CHECK-LABEL: func.func @incomparable_peak(
// CHECK-SAME:    attributes {permalloy.peak_intermediate_bytes = #sym.expr<max(s0 * 16 + s1 * 32, s0 * 32 + s1 * 16)>} {
// CHECK-NEXT:    %a = buffer.alloc : !buffer.buffer<[s0, 4], f32>
// CHECK-NEXT:    buffer.launch @rows_s0 ins(%x : {{.*}}) outs(%a : {{.*}})
// CHECK-NEXT:    %b = buffer.alloc : !buffer.buffer<[s0, 4], f32>
// CHECK-NEXT:    buffer.launch @rows_s0 ins(%a : {{.*}}) outs(%b : {{.*}})
// CHECK-NEXT:    %c = buffer.alloc : !buffer.buffer<[s1, 4], f32>
// CHECK-NEXT:    buffer.launch @rows_s1 ins(%y : {{.*}}) outs(%c : {{.*}})
// CHECK-NEXT:    %s = buffer.view %a : !buffer.buffer<[s0, 4], f32> -> !buffer.buffer<[4], f32>
// CHECK-NEXT:    buffer.launch @sum_rows ins(%b, %c : {{.*}}) outs(%s : {{.*}})
// CHECK-NEXT:    buffer.dealloc %b
// CHECK-NEXT:    %d = buffer.alloc : !buffer.buffer<[s1, 4], f32>
// CHECK-NEXT:    buffer.launch @rows_s1 ins(%c : {{.*}}) outs(%d : {{.*}})
// CHECK-NEXT:    buffer.dealloc %c
// CHECK-NEXT:    func.return %s, %d
func.func @incomparable_peak(%x: !buffer.buffer<[s0, 4], f32>, %y: !buffer.buffer<[s1, 4], f32>) -> (!buffer.buffer<[4], f32>, !buffer.buffer<[s1, 4], f32>) {
  %a = buffer.alloc : !buffer.buffer<[s0, 4], f32>
  buffer.launch @rows_s0 ins(%x : !buffer.buffer<[s0, 4], f32>) outs(%a : !buffer.buffer<[s0, 4], f32>)
  %b = buffer.alloc : !buffer.buffer<[s0, 4], f32>
  buffer.launch @rows_s0 ins(%a : !buffer.buffer<[s0, 4], f32>) outs(%b : !buffer.buffer<[s0, 4], f32>)
  %c = buffer.alloc : !buffer.buffer<[s1, 4], f32>
  buffer.launch @rows_s1 ins(%y : !buffer.buffer<[s1, 4], f32>) outs(%c : !buffer.buffer<[s1, 4], f32>)
  %s = buffer.alloc : !buffer.buffer<[4], f32>
  buffer.launch @sum_rows ins(%b, %c : !buffer.buffer<[s0, 4], f32>, !buffer.buffer<[s1, 4], f32>) outs(%s : !buffer.buffer<[4], f32>)
  %d = buffer.alloc : !buffer.buffer<[s1, 4], f32>
  buffer.launch @rows_s1 ins(%c : !buffer.buffer<[s1, 4], f32>) outs(%d : !buffer.buffer<[s1, 4], f32>)
  func.return %s, %d : !buffer.buffer<[4], f32>, !buffer.buffer<[s1, 4], f32>
}
}
