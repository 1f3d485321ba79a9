// RUN: permalloy-opt %s --split-input-file -p convert-loop-to-buffer | filecheck %s
// RUN: permalloy-opt %s --split-input-file -p convert-loop-to-buffer | permalloy-opt --split-input-file | filecheck %s

// convert-loop-to-buffer: the host program over buffers, from the output of
// convert-ptensor-to-loop: kernels and launches, extern calls, views with
// strides and offsets, and the copy that a reshape needs when it cannot
// reinterpret memory. (tests/e2e/test_lowering_differential.py runs such
// programs before and after the pass.)

// Each loop op becomes a module-level buffer.kernel holding it, a buffer.alloc
// for its result and a buffer.launch; function arguments and results become
// buffers (dense by default). Kernel names say what they compute and are unique
// across the functions of the module.
// Kernels come just before the function that launches them, in launch order.
// CHECK-LABEL: builtin.module {
// A kernel holds its loop op, reading the kernel's arguments.
// CHECK:         buffer.kernel @pointwise_exp_0(%[[A:.+]]: !ptensor.tensor<[s0, 8], f32>) -> (!ptensor.tensor<[s0, 8], f32>) {
// CHECK-NEXT:      %e = loop.pointwise ins(%[[X:.+]] = %[[A]] : !ptensor.tensor<[s0, 8], f32>) -> !ptensor.tensor<[s0, 8], f32> {
// CHECK-NEXT:        %[[V:.+]] = loop.load %[[X]][d0, d1] : f32
// CHECK-NEXT:        %[[E:.+]] = math.exp %[[V]] : f32
// CHECK-NEXT:        loop.yield %[[E]] : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      buffer.yield %e : !ptensor.tensor<[s0, 8], f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    buffer.kernel @pointwise_1(%{{.+}}: !ptensor.tensor<[s0, 8], f32>, %{{.+}}: !ptensor.tensor<[8], f32>) -> (!ptensor.tensor<[s0, 8], f32>) {
// CHECK:         buffer.kernel @reduce_max_2(%{{.+}}: !ptensor.tensor<[s0, 8], f32>) -> (!ptensor.tensor<[s0], f32>) {
// CHECK-LABEL:   func.func @kernels(%x: !buffer.buffer<[s0, 8], f32>, %y: !buffer.buffer<[8], f32>) -> (!buffer.buffer<[s0, 8], f32>, !buffer.buffer<[s0], f32>) {
// CHECK-NEXT:      %e = buffer.alloc : !buffer.buffer<[s0, 8], f32>
// CHECK-NEXT:      buffer.launch @pointwise_exp_0 ins(%x : !buffer.buffer<[s0, 8], f32>) outs(%e : !buffer.buffer<[s0, 8], f32>)
// CHECK-NEXT:      %a = buffer.alloc : !buffer.buffer<[s0, 8], f32>
// CHECK-NEXT:      buffer.launch @pointwise_1 ins(%e, %y : !buffer.buffer<[s0, 8], f32>, !buffer.buffer<[8], f32>) outs(%a : !buffer.buffer<[s0, 8], f32>)
// CHECK-NEXT:      %s = buffer.alloc : !buffer.buffer<[s0], f32>
// CHECK-NEXT:      buffer.launch @reduce_max_2 ins(%a : !buffer.buffer<[s0, 8], f32>) outs(%s : !buffer.buffer<[s0], f32>)
// CHECK-NEXT:      func.return %a, %s : !buffer.buffer<[s0, 8], f32>, !buffer.buffer<[s0], f32>
// CHECK-NEXT:    }
// CHECK:         buffer.kernel @pointwise_exp_3(%{{.+}}: !ptensor.tensor<[4], f32>) -> (!ptensor.tensor<[4], f32>) {
// CHECK-LABEL:   func.func @second(%x: !buffer.buffer<[4], f32>) -> !buffer.buffer<[4], f32> {
// CHECK-NEXT:      %e = buffer.alloc : !buffer.buffer<[4], f32>
// CHECK-NEXT:      buffer.launch @pointwise_exp_3 ins(%x : !buffer.buffer<[4], f32>) outs(%e : !buffer.buffer<[4], f32>)
func.func @kernels(%x: !ptensor.tensor<[s0, 8], f32>, %y: !ptensor.tensor<[8], f32>) -> (!ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[s0], f32>) {
  %e = loop.pointwise ins(%0 = %x : !ptensor.tensor<[s0, 8], f32>) -> !ptensor.tensor<[s0, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  %a = loop.pointwise ins(%0 = %e : !ptensor.tensor<[s0, 8], f32>, %1 = %y : !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[s0, 8], f32> {
    %2 = loop.load %0[d0, d1] : f32
    %3 = loop.load %1[d1] : f32
    %4 = arith.addf %2, %3 : f32
    loop.yield %4 : f32
  }
  %s = loop.reduce max ins(%0 = %a : !ptensor.tensor<[s0, 8], f32>) over [8] -> !ptensor.tensor<[s0], f32> {
    %1 = loop.load %0[d0, r0] : f32
    loop.yield %1 : f32
  }
  func.return %a, %s : !ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[s0], f32>
}
func.func @second(%x: !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32> {
  %e = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32> {
    %1 = loop.load %0[d0] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  func.return %e : !ptensor.tensor<[4], f32>
}

// -----

// Library ops, fallbacks and constants become buffer.extern calls: the ptensor
// op runs on the contents of its operand buffers and gives new buffers.
// CHECK-LABEL: func.func @externs(%x: !buffer.buffer<[4, 8], f32>, %w: !buffer.buffer<[8, 2], f32>) -> (!buffer.buffer<[4, 2], f32>, !buffer.buffer<[4, 8], f32>) {
// CHECK-NEXT:    %m = buffer.extern ins(%[[P:.+]] = %x : !buffer.buffer<[4, 8], f32>, %[[Q:.+]] = %w : !buffer.buffer<[8, 2], f32>) -> (!buffer.buffer<[4, 2], f32>) {
// CHECK-NEXT:      %[[M:.+]] = ptensor.mm %[[P]], %[[Q]] : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8, 2], f32> -> !ptensor.tensor<[4, 2], f32>
// CHECK-NEXT:      buffer.yield %[[M]] : !ptensor.tensor<[4, 2], f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %k = buffer.extern ins() -> (!buffer.buffer<[2], f32>) {
// CHECK-NEXT:      %[[K:.+]] = ptensor.constant
// CHECK-NEXT:      buffer.yield %[[K]] : !ptensor.tensor<[2], f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %b = buffer.alloc : !buffer.buffer<[4, 2], f32>
// CHECK-NEXT:    buffer.launch @pointwise_0 ins(%m, %k : !buffer.buffer<[4, 2], f32>, !buffer.buffer<[2], f32>) outs(%b : !buffer.buffer<[4, 2], f32>)
// CHECK-NEXT:    %c = buffer.extern ins(%[[P:.+]] = %x : !buffer.buffer<[4, 8], f32>) -> (!buffer.buffer<[4, 8], f32>) {
// CHECK-NEXT:      %[[C:.+]] = ptensor.fallback "aten.cumsum.default"(%[[P]])
// CHECK-NEXT:      buffer.yield %[[C]] : !ptensor.tensor<[4, 8], f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %b, %c : !buffer.buffer<[4, 2], f32>, !buffer.buffer<[4, 8], f32>
func.func @externs(%x: !ptensor.tensor<[4, 8], f32>, %w: !ptensor.tensor<[8, 2], f32>) -> (!ptensor.tensor<[4, 2], f32>, !ptensor.tensor<[4, 8], f32>) {
  %m = ptensor.mm %x, %w : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8, 2], f32> -> !ptensor.tensor<[4, 2], f32>
  %k = ptensor.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32> -> !ptensor.tensor<[2], f32>
  %b = loop.pointwise ins(%0 = %m : !ptensor.tensor<[4, 2], f32>, %1 = %k : !ptensor.tensor<[2], f32>) -> !ptensor.tensor<[4, 2], f32> {
    %2 = loop.load %0[d0, d1] : f32
    %3 = loop.load %1[d1] : f32
    %4 = arith.addf %2, %3 : f32
    loop.yield %4 : f32
  }
  %c = ptensor.fallback "aten.cumsum.default"(%x) [#ptensor.operand<0>, 1 : i64] : (!ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32>
  func.return %b, %c : !ptensor.tensor<[4, 2], f32>, !ptensor.tensor<[4, 8], f32>
}

// -----

// Views left for the host program become buffer.view with the layout they
// give the memory of their source: strides and offsets counted from the start
// of the source's allocation (a transpose swaps strides, a slice with a step
// scales one and moves the offset, a select moves the offset, an expand gives
// stride 0, as_strided reads the source's memory as given).
// CHECK-LABEL: func.func @views(
// CHECK-NEXT:    %t = buffer.view %x : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[8, 4], f32, strides [1, 8]>
// CHECK-NEXT:    buffer.extern ins(%{{.+}} = %t : !buffer.buffer<[8, 4], f32, strides [1, 8]>)
// CHECK:         %s = buffer.view %x : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[4, 4], f32, strides [8, 2], offset 1>
// CHECK:         %r = buffer.view %x : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[8], f32, offset 16>
// CHECK:         %u = buffer.view %t : !buffer.buffer<[8, 4], f32, strides [1, 8]> -> !buffer.buffer<[1, 8, 4], f32, strides [8, 1, 8]>
// CHECK-NEXT:    %e = buffer.view %u : !buffer.buffer<[1, 8, 4], f32, strides [8, 1, 8]> -> !buffer.buffer<[3, 8, 4], f32, strides [0, 1, 8]>
// CHECK:         %q = buffer.view %v : !buffer.buffer<[8, 1], f32> -> !buffer.buffer<[8], f32>
// CHECK:         %a = buffer.view %x : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[2, 3], f32, strides [5, 2], offset 3>
// CHECK-NOT:     buffer.copy
func.func @views(%x: !ptensor.tensor<[4, 8], f32>, %v: !ptensor.tensor<[8, 1], f32>) -> (!ptensor.tensor<[8, 4], f32>, !ptensor.tensor<[4, 4], f32>, !ptensor.tensor<[8], f32>, !ptensor.tensor<[3, 8, 4], f32>, !ptensor.tensor<[8], f32>, !ptensor.tensor<[2, 3], f32>) {
  %t = ptensor.permute %x [1, 0] : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[8, 4], f32>
  %0 = ptensor.fallback "aten.clone.default"(%t) [#ptensor.operand<0>] : (!ptensor.tensor<[8, 4], f32>) -> !ptensor.tensor<[8, 4], f32>
  %s = ptensor.slice %x dim 1 start 1 end 8 step 2 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 4], f32>
  %1 = ptensor.fallback "aten.clone.default"(%s) [#ptensor.operand<0>] : (!ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f32>
  %r = ptensor.select %x dim 0 index 2 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[8], f32>
  %2 = ptensor.fallback "aten.clone.default"(%r) [#ptensor.operand<0>] : (!ptensor.tensor<[8], f32>) -> !ptensor.tensor<[8], f32>
  %u = ptensor.unsqueeze %t dim 0 : !ptensor.tensor<[8, 4], f32> -> !ptensor.tensor<[1, 8, 4], f32>
  %e = ptensor.expand %u : !ptensor.tensor<[1, 8, 4], f32> -> !ptensor.tensor<[3, 8, 4], f32>
  %3 = ptensor.fallback "aten.clone.default"(%e) [#ptensor.operand<0>] : (!ptensor.tensor<[3, 8, 4], f32>) -> !ptensor.tensor<[3, 8, 4], f32>
  %q = ptensor.squeeze %v dims [1] : !ptensor.tensor<[8, 1], f32> -> !ptensor.tensor<[8], f32>
  %4 = ptensor.fallback "aten.clone.default"(%q) [#ptensor.operand<0>] : (!ptensor.tensor<[8], f32>) -> !ptensor.tensor<[8], f32>
  %a = ptensor.as_strided %x strides [5, 2] offset 3 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[2, 3], f32>
  %5 = ptensor.fallback "aten.clone.default"(%a) [#ptensor.operand<0>] : (!ptensor.tensor<[2, 3], f32>) -> !ptensor.tensor<[2, 3], f32>
  func.return %0, %1, %2, %3, %4, %5 : !ptensor.tensor<[8, 4], f32>, !ptensor.tensor<[4, 4], f32>, !ptensor.tensor<[8], f32>, !ptensor.tensor<[3, 8, 4], f32>, !ptensor.tensor<[8], f32>, !ptensor.tensor<[2, 3], f32>
}

// -----

// A reshape is a view when the dimensions it merges are contiguous with each
// other (%f: merging strides 12 and 4 over sizes 2 and 3); otherwise the source
// is first copied into a dense buffer, which the reshape then views (%g).
// CHECK-LABEL: func.func @reshapes(
// CHECK-NEXT:    %p = buffer.view %x : !buffer.buffer<[2, 3, 4], f32> -> !buffer.buffer<[4, 2, 3], f32, strides [1, 12, 4]>
// CHECK-NEXT:    %f = buffer.view %p : !buffer.buffer<[4, 2, 3], f32, strides [1, 12, 4]> -> !buffer.buffer<[4, 6], f32, strides [1, 4]>
// CHECK-NEXT:    %m = buffer.extern ins(%{{.+}} = %f : !buffer.buffer<[4, 6], f32, strides [1, 4]>, %{{.+}} = %w : !buffer.buffer<[6, 5], f32>)
// CHECK:         %t = buffer.view %y : !buffer.buffer<[4, 6], f32> -> !buffer.buffer<[6, 4], f32, strides [1, 6]>
// CHECK-NEXT:    %[[DENSE:.+]] = buffer.alloc : !buffer.buffer<[6, 4], f32>
// CHECK-NEXT:    buffer.copy %t, %[[DENSE]] : !buffer.buffer<[6, 4], f32, strides [1, 6]>, !buffer.buffer<[6, 4], f32>
// CHECK-NEXT:    %g = buffer.view %[[DENSE]] : !buffer.buffer<[6, 4], f32> -> !buffer.buffer<[3, 8], f32>
// CHECK-NEXT:    %n = buffer.extern ins(%{{.+}} = %g : !buffer.buffer<[3, 8], f32>, %{{.+}} = %z : !buffer.buffer<[8, 5], f32>)
func.func @reshapes(%x: !ptensor.tensor<[2, 3, 4], f32>, %y: !ptensor.tensor<[4, 6], f32>, %w: !ptensor.tensor<[6, 5], f32>, %z: !ptensor.tensor<[8, 5], f32>) -> (!ptensor.tensor<[4, 5], f32>, !ptensor.tensor<[3, 5], f32>) {
  %p = ptensor.permute %x [2, 0, 1] : !ptensor.tensor<[2, 3, 4], f32> -> !ptensor.tensor<[4, 2, 3], f32>
  %f = ptensor.reshape %p : !ptensor.tensor<[4, 2, 3], f32> -> !ptensor.tensor<[4, 6], f32>
  %m = ptensor.mm %f, %w : !ptensor.tensor<[4, 6], f32>, !ptensor.tensor<[6, 5], f32> -> !ptensor.tensor<[4, 5], f32>
  %t = ptensor.permute %y [1, 0] : !ptensor.tensor<[4, 6], f32> -> !ptensor.tensor<[6, 4], f32>
  %g = ptensor.reshape %t : !ptensor.tensor<[6, 4], f32> -> !ptensor.tensor<[3, 8], f32>
  %n = ptensor.mm %g, %z : !ptensor.tensor<[3, 8], f32>, !ptensor.tensor<[8, 5], f32> -> !ptensor.tensor<[3, 5], f32>
  func.return %m, %n : !ptensor.tensor<[4, 5], f32>, !ptensor.tensor<[3, 5], f32>
}

// -----

// `ptensor.strides` gives an argument the layout it arrives with, and a
// result the layout it must be returned with: a kernel writes such a result in
// place; an extern's result is copied into a buffer of that layout.
// CHECK-LABEL: func.func @layouts(
// CHECK-SAME:      %x: !buffer.buffer<[4, 8], f32, strides [1, 4]> {ptensor.strides = #ptensor.exprs[1, 4]}, %w: !buffer.buffer<[8, 2], f32>)
// CHECK-SAME:      -> (!buffer.buffer<[4, 8], f32, strides [1, 4]> {ptensor.strides = #ptensor.exprs[1, 4]}, !buffer.buffer<[4, 2], f32, strides [1, 4]> {ptensor.strides = #ptensor.exprs[1, 4]}) {
// CHECK-NEXT:    %n = buffer.alloc : !buffer.buffer<[4, 8], f32, strides [1, 4]>
// CHECK-NEXT:    buffer.launch @pointwise_0 ins(%x : !buffer.buffer<[4, 8], f32, strides [1, 4]>) outs(%n : !buffer.buffer<[4, 8], f32, strides [1, 4]>)
// CHECK-NEXT:    %m = buffer.extern ins(%{{.+}} = %n : !buffer.buffer<[4, 8], f32, strides [1, 4]>, %{{.+}} = %w : !buffer.buffer<[8, 2], f32>) -> (!buffer.buffer<[4, 2], f32>) {
// CHECK:         %[[R:.+]] = buffer.alloc : !buffer.buffer<[4, 2], f32, strides [1, 4]>
// CHECK-NEXT:    buffer.copy %m, %[[R]] : !buffer.buffer<[4, 2], f32>, !buffer.buffer<[4, 2], f32, strides [1, 4]>
// CHECK-NEXT:    func.return %n, %[[R]] : !buffer.buffer<[4, 8], f32, strides [1, 4]>, !buffer.buffer<[4, 2], f32, strides [1, 4]>
func.func @layouts(%x: !ptensor.tensor<[4, 8], f32> {ptensor.strides = #ptensor.exprs[1, 4]}, %w: !ptensor.tensor<[8, 2], f32>) -> (!ptensor.tensor<[4, 8], f32> {ptensor.strides = #ptensor.exprs[1, 4]}, !ptensor.tensor<[4, 2], f32> {ptensor.strides = #ptensor.exprs[1, 4]}) {
  %n = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = arith.negf %1 : f32
    loop.yield %2 : f32
  }
  %m = ptensor.mm %n, %w : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8, 2], f32> -> !ptensor.tensor<[4, 2], f32>
  func.return %n, %m : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 2], f32>
}

// -----

// A scan is a kernel like any loop op, named after its kind; its result is
// allocated with the shape of its input.
// CHECK-LABEL: builtin.module {
// CHECK:         buffer.kernel @scan_sum_0(%[[A:.+]]: !ptensor.tensor<[s0, 8], i64>) -> (!ptensor.tensor<[s0, 8], i64>) {
// CHECK-NEXT:      %c = loop.scan sum ins(%[[X:.+]] = %[[A]] : !ptensor.tensor<[s0, 8], i64>) dim 1 -> !ptensor.tensor<[s0, 8], i64> {
// CHECK-LABEL:   func.func @scan(%x: !buffer.buffer<[s0, 8], i64>) -> !buffer.buffer<[s0, 8], i64> {
// CHECK-NEXT:      %c = buffer.alloc : !buffer.buffer<[s0, 8], i64>
// CHECK-NEXT:      buffer.launch @scan_sum_0 ins(%x : !buffer.buffer<[s0, 8], i64>) outs(%c : !buffer.buffer<[s0, 8], i64>)
// CHECK-NEXT:      func.return %c : !buffer.buffer<[s0, 8], i64>
func.func @scan(%x: !ptensor.tensor<[s0, 8], i64>) -> !ptensor.tensor<[s0, 8], i64> {
  %c = loop.scan sum ins(%0 = %x : !ptensor.tensor<[s0, 8], i64>) dim 1 -> !ptensor.tensor<[s0, 8], i64> {
    %1 = loop.load %0[d0, r0] : i64
    loop.yield %1 : i64
  }
  func.return %c : !ptensor.tensor<[s0, 8], i64>
}

// -----

// Attention's result is laid out as torch's fused kernels write it, token by
// token with each token's heads together, so the transpose and reshape that
// join the heads are a view, not a copy.
// CHECK-LABEL: func.func @attention_heads_joined(
// CHECK:         %o = buffer.extern ins({{.+}}) -> (!buffer.buffer<[2, 4, 16, 8], f32, strides [512, 8, 32, 1]>) {
// CHECK-NOT:     buffer.copy
// CHECK:         buffer.view %o : !buffer.buffer<[2, 4, 16, 8], f32, strides [512, 8, 32, 1]> -> !buffer.buffer<[2, 16, 4, 8], f32>
// CHECK-NOT:     buffer.copy
// CHECK:         func.return
func.func @attention_heads_joined(%q: !ptensor.tensor<[2, 4, 16, 8], f32>, %k: !ptensor.tensor<[2, 4, 16, 8], f32>, %v: !ptensor.tensor<[2, 4, 16, 8], f32>) -> !ptensor.tensor<[2, 16, 32], f32> {
  %o = ptensor.attention %q, %k, %v : !ptensor.tensor<[2, 4, 16, 8], f32>, !ptensor.tensor<[2, 4, 16, 8], f32>, !ptensor.tensor<[2, 4, 16, 8], f32> -> !ptensor.tensor<[2, 4, 16, 8], f32>
  %t = ptensor.permute %o [0, 2, 1, 3] : !ptensor.tensor<[2, 4, 16, 8], f32> -> !ptensor.tensor<[2, 16, 4, 8], f32>
  %j = ptensor.reshape %t : !ptensor.tensor<[2, 16, 4, 8], f32> -> !ptensor.tensor<[2, 16, 32], f32>
  %r = loop.pointwise ins(%0 = %j : !ptensor.tensor<[2, 16, 32], f32>) -> !ptensor.tensor<[2, 16, 32], f32> {
    %1 = loop.load %0[d0, d1, d2] : f32
    %2 = arith.addf %1, %1 : f32
    loop.yield %2 : f32
  }
  func.return %r : !ptensor.tensor<[2, 16, 32], f32>
}

// -----

// A torch call's result whose `orders` give another memory order than
// row-major (the fused attention a training graph calls whole) is kept in
// that order: joining its heads is a view, not a copy.
// CHECK-LABEL: func.func @torch_call_in_its_order(
// CHECK:         %o, %m = buffer.extern ins({{.+}}) -> (!buffer.buffer<[2, 4, 16, 8], f32, strides [512, 8, 32, 1]>, !buffer.buffer<[2, 4, 16], f32>) {
// CHECK-NOT:     buffer.copy
// CHECK:         buffer.view %o : !buffer.buffer<[2, 4, 16, 8], f32, strides [512, 8, 32, 1]> -> !buffer.buffer<[2, 16, 4, 8], f32>
// CHECK-NOT:     buffer.copy
// CHECK:         func.return
func.func @torch_call_in_its_order(%q: !ptensor.tensor<[2, 4, 16, 8], f32>) -> (!ptensor.tensor<[2, 16, 32], f32>, !ptensor.tensor<[2, 4, 16], f32>) {
  %o, %m = ptensor.fallback "aten._scaled_dot_product_efficient_attention.default"(%q) [#ptensor.operand<0>, #ptensor.operand<0>, #ptensor.operand<0>, #ptensor.none, true] orders [array<i64: 0, 2, 1, 3>, array<i64>] : (!ptensor.tensor<[2, 4, 16, 8], f32>) -> (!ptensor.tensor<[2, 4, 16, 8], f32>, !ptensor.tensor<[2, 4, 16], f32>)
  %t = ptensor.permute %o [0, 2, 1, 3] : !ptensor.tensor<[2, 4, 16, 8], f32> -> !ptensor.tensor<[2, 16, 4, 8], f32>
  %j = ptensor.reshape %t : !ptensor.tensor<[2, 16, 4, 8], f32> -> !ptensor.tensor<[2, 16, 32], f32>
  %r = loop.pointwise ins(%0 = %j : !ptensor.tensor<[2, 16, 32], f32>) -> !ptensor.tensor<[2, 16, 32], f32> {
    %1 = loop.load %0[d0, d1, d2] : f32
    %2 = arith.addf %1, %1 : f32
    loop.yield %2 : f32
  }
  func.return %r, %m : !ptensor.tensor<[2, 16, 32], f32>, !ptensor.tensor<[2, 4, 16], f32>
}

// -----

// A result of free layout (a training forward's tensor saved for its
// backward) is returned as the strided view it is when its elements do not
// overlap and the memory it spans is at most four times its size: the query
// and key, slices of one projection, are not copied. A slice spanning more
// (one token of each row) is copied, and so is any other result.
// CHECK-LABEL: func.func @saved_views(
// CHECK-SAME:      -> (!buffer.buffer<[2, 4, 16, 8], f32, strides [1536, 8, 96, 1]> {ptensor.free_layout}, !buffer.buffer<[2, 4, 16, 8], f32, strides [1536, 8, 96, 1], offset 32> {ptensor.free_layout}, !buffer.buffer<[2, 96], f32> {ptensor.free_layout}, !buffer.buffer<[2, 4, 16, 8], f32>)
// CHECK:         %p = buffer.alloc : !buffer.buffer<[2, 16, 96], f32>
// CHECK-COUNT-2: buffer.copy
// CHECK-NOT:     buffer.copy
// CHECK:         func.return
func.func @saved_views(%x: !ptensor.tensor<[2, 16, 96], f32>) -> (!ptensor.tensor<[2, 4, 16, 8], f32> {ptensor.free_layout}, !ptensor.tensor<[2, 4, 16, 8], f32> {ptensor.free_layout}, !ptensor.tensor<[2, 96], f32> {ptensor.free_layout}, !ptensor.tensor<[2, 4, 16, 8], f32>) {
  %p = loop.pointwise ins(%0 = %x : !ptensor.tensor<[2, 16, 96], f32>) -> !ptensor.tensor<[2, 16, 96], f32> {
    %1 = loop.load %0[d0, d1, d2] : f32
    %2 = arith.addf %1, %1 : f32
    loop.yield %2 : f32
  }
  %qs = ptensor.slice %p dim 2 start 0 end 32 step 1 : !ptensor.tensor<[2, 16, 96], f32> -> !ptensor.tensor<[2, 16, 32], f32>
  %qr = ptensor.reshape %qs : !ptensor.tensor<[2, 16, 32], f32> -> !ptensor.tensor<[2, 16, 4, 8], f32>
  %q = ptensor.permute %qr [0, 2, 1, 3] : !ptensor.tensor<[2, 16, 4, 8], f32> -> !ptensor.tensor<[2, 4, 16, 8], f32>
  %ks = ptensor.slice %p dim 2 start 32 end 64 step 1 : !ptensor.tensor<[2, 16, 96], f32> -> !ptensor.tensor<[2, 16, 32], f32>
  %kr = ptensor.reshape %ks : !ptensor.tensor<[2, 16, 32], f32> -> !ptensor.tensor<[2, 16, 4, 8], f32>
  %k = ptensor.permute %kr [0, 2, 1, 3] : !ptensor.tensor<[2, 16, 4, 8], f32> -> !ptensor.tensor<[2, 4, 16, 8], f32>
  %ts = ptensor.slice %p dim 1 start 15 end 16 step 1 : !ptensor.tensor<[2, 16, 96], f32> -> !ptensor.tensor<[2, 1, 96], f32>
  %t = ptensor.reshape %ts : !ptensor.tensor<[2, 1, 96], f32> -> !ptensor.tensor<[2, 96], f32>
  func.return %q, %k, %t, %q : !ptensor.tensor<[2, 4, 16, 8], f32>, !ptensor.tensor<[2, 4, 16, 8], f32>, !ptensor.tensor<[2, 96], f32>, !ptensor.tensor<[2, 4, 16, 8], f32>
}
