// RUN: permalloy-opt %s | permalloy-opt | filecheck %s
// RUN: permalloy-opt %s --print-op-generic | permalloy-opt | filecheck %s
// RUN: permalloy-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Every ptensor op, in its custom syntax, printed back exactly as written
// (after a round trip through the custom and through the generic format).

// CHECK-LABEL: func.func @elementwise(
// CHECK-SAME:      %x: !ptensor.tensor<[s0, 8], f32>, %y: !ptensor.tensor<[8], f32>, %c: !ptensor.tensor<[s0, 1], i1>, %i: !ptensor.tensor<[4], i32>) {
func.func @elementwise(%x: !ptensor.tensor<[s0, 8], f32>, %y: !ptensor.tensor<[8], f32>, %c: !ptensor.tensor<[s0, 1], i1>, %i: !ptensor.tensor<[4], i32>) {
  // CHECK-NEXT: %0 = ptensor.unary exp %x : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 8], f32>
  // CHECK-NEXT: %1 = ptensor.unary isnan %x : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 8], i1>
  // CHECK-NEXT: %2 = ptensor.unary bitwise_not %i : !ptensor.tensor<[4], i32> -> !ptensor.tensor<[4], i32>
  // CHECK-NEXT: %3 = ptensor.binary add %x, %y : !ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[8], f32> -> !ptensor.tensor<[s0, 8], f32>
  // CHECK-NEXT: %4 = ptensor.binary shift_left %i, %i : !ptensor.tensor<[4], i32>, !ptensor.tensor<[4], i32> -> !ptensor.tensor<[4], i32>
  // CHECK-NEXT: %5 = ptensor.compare lt %x, %y : !ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[8], f32> -> !ptensor.tensor<[s0, 8], i1>
  // CHECK-NEXT: %6 = ptensor.where %c, %x, %y : !ptensor.tensor<[s0, 1], i1>, !ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[8], f32> -> !ptensor.tensor<[s0, 8], f32>
  // CHECK-NEXT: %7 = ptensor.cast %x : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 8], bf16>
  // CHECK-NEXT: func.return
  %0 = ptensor.unary exp %x : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 8], f32>
  %1 = ptensor.unary isnan %x : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 8], i1>
  %2 = ptensor.unary bitwise_not %i : !ptensor.tensor<[4], i32> -> !ptensor.tensor<[4], i32>
  %3 = ptensor.binary add %x, %y : !ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[8], f32> -> !ptensor.tensor<[s0, 8], f32>
  %4 = ptensor.binary shift_left %i, %i : !ptensor.tensor<[4], i32>, !ptensor.tensor<[4], i32> -> !ptensor.tensor<[4], i32>
  %5 = ptensor.compare lt %x, %y : !ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[8], f32> -> !ptensor.tensor<[s0, 8], i1>
  %6 = ptensor.where %c, %x, %y : !ptensor.tensor<[s0, 1], i1>, !ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[8], f32> -> !ptensor.tensor<[s0, 8], f32>
  %7 = ptensor.cast %x : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 8], bf16>
  func.return
}

// GENERIC-LABEL: "func.func"() <{sym_name = "elementwise"
// GENERIC: %0 = "ptensor.unary"(%x) <{kind = #ptensor<unary_kind exp>}> : (!ptensor.tensor<[s0, 8], f32>) -> !ptensor.tensor<[s0, 8], f32>
// GENERIC: %3 = "ptensor.binary"(%x, %y) <{kind = #ptensor<binary_kind add>}> : (!ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[s0, 8], f32>
// GENERIC: %5 = "ptensor.compare"(%x, %y) <{predicate = #ptensor<predicate lt>}>

// CHECK-LABEL: func.func @generators() {
func.func @generators() {
  // CHECK-NEXT: %0 = ptensor.full 0.5 : !ptensor.tensor<[s0, 4], f32>
  // CHECK-NEXT: %1 = ptensor.full -inf : !ptensor.tensor<[4], f16>
  // CHECK-NEXT: %2 = ptensor.full nan : !ptensor.tensor<[], f64>
  // CHECK-NEXT: %3 = ptensor.full -3 : !ptensor.tensor<[2, 2], i64>
  // CHECK-NEXT: %4 = ptensor.full 1 : !ptensor.tensor<[3], i1>
  // CHECK-NEXT: %5 = ptensor.full 1.0 {note = "kept"} : !ptensor.tensor<[3], f32>
  // CHECK-NEXT: %6 = ptensor.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32> -> !ptensor.tensor<[2], f32>
  // CHECK-NEXT: %7 = ptensor.iota start 0 step 1 : !ptensor.tensor<[s0], i64>
  // CHECK-NEXT: %8 = ptensor.iota start 0.5 step 0.25 : !ptensor.tensor<[4], f32>
  // CHECK-NEXT: %9 = ptensor.rand uniform : !ptensor.tensor<[4, 4], f32>
  // CHECK-NEXT: %10 = ptensor.rand normal : !ptensor.tensor<[s0], bf16>
  // CHECK-NEXT: %11 = ptensor.full 1.0e-05 : !ptensor.tensor<[], f32>
  // CHECK-NEXT: %12 = ptensor.full -3.4028234663852886e+38 : !ptensor.tensor<[], f32>
  // CHECK-NEXT: func.return
  %0 = ptensor.full 0.5 : !ptensor.tensor<[s0, 4], f32>
  %1 = ptensor.full -inf : !ptensor.tensor<[4], f16>
  %2 = ptensor.full nan : !ptensor.tensor<[], f64>
  %3 = ptensor.full -3 : !ptensor.tensor<[2, 2], i64>
  %4 = ptensor.full 1 : !ptensor.tensor<[3], i1>
  %5 = ptensor.full 1.0 {note = "kept"} : !ptensor.tensor<[3], f32>
  %6 = ptensor.constant dense<[1.0, 2.0]> : tensor<2xf32> -> !ptensor.tensor<[2], f32>
  %7 = ptensor.iota start 0 step 1 : !ptensor.tensor<[s0], i64>
  %8 = ptensor.iota start 0.5 step 0.25 : !ptensor.tensor<[4], f32>
  %9 = ptensor.rand uniform : !ptensor.tensor<[4, 4], f32>
  %10 = ptensor.rand normal : !ptensor.tensor<[s0], bf16>
  %11 = ptensor.full 1.0e-05 : !ptensor.tensor<[], f32>
  %12 = ptensor.full -3.4028234663852886e+38 : !ptensor.tensor<[], f32>
  func.return
}

// GENERIC-LABEL: "func.func"() <{sym_name = "generators"
// GENERIC: %0 = "ptensor.full"() <{value = 5.000000e-01 : f64}> : () -> !ptensor.tensor<[s0, 4], f32>
// GENERIC: %3 = "ptensor.full"() <{value = -3 : i64}> : () -> !ptensor.tensor<[2, 2], i64>
// GENERIC: %9 = "ptensor.rand"() <{distribution = #ptensor<distribution uniform>}> : () -> !ptensor.tensor<[4, 4], f32>

// CHECK-LABEL: func.func @reductions(%x: !ptensor.tensor<[4, s0], f32>) {
func.func @reductions(%x: !ptensor.tensor<[4, s0], f32>) {
  // CHECK-NEXT: %0 = ptensor.reduce sum %x dims [1] keepdim : !ptensor.tensor<[4, s0], f32> -> !ptensor.tensor<[4, 1], f32>
  // CHECK-NEXT: %1 = ptensor.reduce max %x dims [0, 1] : !ptensor.tensor<[4, s0], f32> -> !ptensor.tensor<[], f32>
  // CHECK-NEXT: %2 = ptensor.reduce argmax %x dims [1] : !ptensor.tensor<[4, s0], f32> -> !ptensor.tensor<[4], i64>
  // CHECK-NEXT: %3 = ptensor.reduce any %x dims [0] : !ptensor.tensor<[4, s0], f32> -> !ptensor.tensor<[s0], i1>
  // CHECK-NEXT: func.return
  %0 = ptensor.reduce sum %x dims [1] keepdim : !ptensor.tensor<[4, s0], f32> -> !ptensor.tensor<[4, 1], f32>
  %1 = ptensor.reduce max %x dims [0, 1] : !ptensor.tensor<[4, s0], f32> -> !ptensor.tensor<[], f32>
  %2 = ptensor.reduce argmax %x dims [1] : !ptensor.tensor<[4, s0], f32> -> !ptensor.tensor<[4], i64>
  %3 = ptensor.reduce any %x dims [0] : !ptensor.tensor<[4, s0], f32> -> !ptensor.tensor<[s0], i1>
  func.return
}

// GENERIC-LABEL: "func.func"() <{sym_name = "reductions"
// GENERIC: %0 = "ptensor.reduce"(%x) <{kind = #ptensor<reduce_kind sum>, dims = #ptensor.ints[1], keepdim}>

// CHECK-LABEL: func.func @scans(%x: !ptensor.tensor<[4, s0], f32>, %i: !ptensor.tensor<[s0], i64>) {
func.func @scans(%x: !ptensor.tensor<[4, s0], f32>, %i: !ptensor.tensor<[s0], i64>) {
  // CHECK-NEXT: %0 = ptensor.scan sum %x dim 1 : !ptensor.tensor<[4, s0], f32> -> !ptensor.tensor<[4, s0], f32>
  // CHECK-NEXT: %1 = ptensor.scan logsumexp %x dim 0 : !ptensor.tensor<[4, s0], f32> -> !ptensor.tensor<[4, s0], f32>
  // CHECK-NEXT: %2 = ptensor.scan argmin %x dim 1 : !ptensor.tensor<[4, s0], f32> -> !ptensor.tensor<[4, s0], i64>
  // CHECK-NEXT: %3 = ptensor.scan prod %i dim 0 : !ptensor.tensor<[s0], i64> -> !ptensor.tensor<[s0], i64>
  // CHECK-NEXT: func.return
  %0 = ptensor.scan sum %x dim 1 : !ptensor.tensor<[4, s0], f32> -> !ptensor.tensor<[4, s0], f32>
  %1 = ptensor.scan logsumexp %x dim 0 : !ptensor.tensor<[4, s0], f32> -> !ptensor.tensor<[4, s0], f32>
  %2 = ptensor.scan argmin %x dim 1 : !ptensor.tensor<[4, s0], f32> -> !ptensor.tensor<[4, s0], i64>
  %3 = ptensor.scan prod %i dim 0 : !ptensor.tensor<[s0], i64> -> !ptensor.tensor<[s0], i64>
  func.return
}

// GENERIC-LABEL: "func.func"() <{sym_name = "scans"
// GENERIC: %0 = "ptensor.scan"(%x) <{kind = #ptensor<scan_kind sum>, dim = 1 : i64}>

// CHECK-LABEL: func.func @views(%x: !ptensor.tensor<[4, 8], f32>, %s: !ptensor.tensor<[s0, 1], f32>) {
func.func @views(%x: !ptensor.tensor<[4, 8], f32>, %s: !ptensor.tensor<[s0, 1], f32>) {
  // CHECK-NEXT: %0 = ptensor.reshape %x : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[32], f32>
  // CHECK-NEXT: %1 = ptensor.permute %x [1, 0] : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[8, 4], f32>
  // CHECK-NEXT: %2 = ptensor.expand %s : !ptensor.tensor<[s0, 1], f32> -> !ptensor.tensor<[2, s0, 8], f32>
  // CHECK-NEXT: %3 = ptensor.slice %x dim 1 start 2 end 8 step 2 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 3], f32>
  // CHECK-NEXT: %4 = ptensor.slice %s dim 0 start 1 end s0 step 1 : !ptensor.tensor<[s0, 1], f32> -> !ptensor.tensor<[s0 - 1, 1], f32>
  // CHECK-NEXT: %5 = ptensor.select %x dim 0 index 2 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[8], f32>
  // CHECK-NEXT: %6 = ptensor.select %s dim 0 index s0 - 1 : !ptensor.tensor<[s0, 1], f32> -> !ptensor.tensor<[1], f32>
  // CHECK-NEXT: %7 = ptensor.squeeze %s dims [1] : !ptensor.tensor<[s0, 1], f32> -> !ptensor.tensor<[s0], f32>
  // CHECK-NEXT: %8 = ptensor.unsqueeze %x dim 2 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8, 1], f32>
  // CHECK-NEXT: %9 = ptensor.as_strided %x strides [1, 4] offset 0 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 4], f32>
  // CHECK-NEXT: %10 = ptensor.as_strided %s strides [s0, 1] offset s0 * 2 : !ptensor.tensor<[s0, 1], f32> -> !ptensor.tensor<[2, s0], f32>
  // CHECK-NEXT: func.return
  %0 = ptensor.reshape %x : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[32], f32>
  %1 = ptensor.permute %x [1, 0] : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[8, 4], f32>
  %2 = ptensor.expand %s : !ptensor.tensor<[s0, 1], f32> -> !ptensor.tensor<[2, s0, 8], f32>
  %3 = ptensor.slice %x dim 1 start 2 end 8 step 2 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 3], f32>
  %4 = ptensor.slice %s dim 0 start 1 end s0 step 1 : !ptensor.tensor<[s0, 1], f32> -> !ptensor.tensor<[s0 - 1, 1], f32>
  %5 = ptensor.select %x dim 0 index 2 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[8], f32>
  %6 = ptensor.select %s dim 0 index s0 - 1 : !ptensor.tensor<[s0, 1], f32> -> !ptensor.tensor<[1], f32>
  %7 = ptensor.squeeze %s dims [1] : !ptensor.tensor<[s0, 1], f32> -> !ptensor.tensor<[s0], f32>
  %8 = ptensor.unsqueeze %x dim 2 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8, 1], f32>
  %9 = ptensor.as_strided %x strides [1, 4] offset 0 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 4], f32>
  %10 = ptensor.as_strided %s strides [s0, 1] offset 2 * s0 : !ptensor.tensor<[s0, 1], f32> -> !ptensor.tensor<[2, s0], f32>
  func.return
}

// GENERIC-LABEL: "func.func"() <{sym_name = "views"
// GENERIC: %3 = "ptensor.slice"(%x) <{dim = 1 : i64, start = #sym.expr<2>, end = #sym.expr<8>, step = 2 : i64}>
// GENERIC: %10 = "ptensor.as_strided"(%s) <{strides = #ptensor.exprs[s0, 1], offset = #sym.expr<s0 * 2>}>

// CHECK-LABEL: func.func @data_movement(
func.func @data_movement(%a: !ptensor.tensor<[2, 8], f32>, %b: !ptensor.tensor<[s0, 8], f32>, %idx: !ptensor.tensor<[2, 3], i64>, %ids: !ptensor.tensor<[5], i64>, %v: !ptensor.tensor<[5, 8], f32>) {
  // CHECK-NEXT: %0 = ptensor.cat %a, %b dim 0 : !ptensor.tensor<[2, 8], f32>, !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0 + 2, 8], f32>
  // CHECK-NEXT: %1 = ptensor.pad %a constant 0.0 low [0, 1] high [0, 2] : !ptensor.tensor<[2, 8], f32> -> !ptensor.tensor<[2, 11], f32>
  // CHECK-NEXT: %2 = ptensor.pad %a reflect low [1, 1] high [1, 1] : !ptensor.tensor<[2, 8], f32> -> !ptensor.tensor<[4, 10], f32>
  // CHECK-NEXT: %3 = ptensor.pad %a replicate low [0, -1] high [0, 0] : !ptensor.tensor<[2, 8], f32> -> !ptensor.tensor<[2, 7], f32>
  // CHECK-NEXT: %4 = ptensor.gather %a, %idx dim 1 : !ptensor.tensor<[2, 8], f32>, !ptensor.tensor<[2, 3], i64> -> !ptensor.tensor<[2, 3], f32>
  // CHECK-NEXT: %5 = ptensor.index %b[%ids] dims [0] : !ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[5], i64> -> !ptensor.tensor<[5, 8], f32>
  // CHECK-NEXT: %6 = ptensor.scatter_add %a, %idx, %a dim 1 : !ptensor.tensor<[2, 8], f32>, !ptensor.tensor<[2, 3], i64>, !ptensor.tensor<[2, 8], f32> -> !ptensor.tensor<[2, 8], f32>
  // CHECK-NEXT: %7 = ptensor.index_put %b[%ids] dims [0], %v accumulate : !ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[5, 8], f32>, [!ptensor.tensor<[5], i64>] -> !ptensor.tensor<[s0, 8], f32>
  // CHECK-NEXT: %8 = ptensor.index_put %b[%ids] dims [0], %v : !ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[5, 8], f32>, [!ptensor.tensor<[5], i64>] -> !ptensor.tensor<[s0, 8], f32>
  // CHECK-NEXT: %9 = ptensor.pad %b constant 0.0 low [0, 0] high [-(s0 mod 16) + 16, 0] : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0 - s0 mod 16 + 16, 8], f32>
  // CHECK-NEXT: func.return
  %0 = ptensor.cat %a, %b dim 0 : !ptensor.tensor<[2, 8], f32>, !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[2 + s0, 8], f32>
  %1 = ptensor.pad %a constant 0.0 low [0, 1] high [0, 2] : !ptensor.tensor<[2, 8], f32> -> !ptensor.tensor<[2, 11], f32>
  %2 = ptensor.pad %a reflect low [1, 1] high [1, 1] : !ptensor.tensor<[2, 8], f32> -> !ptensor.tensor<[4, 10], f32>
  %3 = ptensor.pad %a replicate low [0, -1] high [0, 0] : !ptensor.tensor<[2, 8], f32> -> !ptensor.tensor<[2, 7], f32>
  %4 = ptensor.gather %a, %idx dim 1 : !ptensor.tensor<[2, 8], f32>, !ptensor.tensor<[2, 3], i64> -> !ptensor.tensor<[2, 3], f32>
  %5 = ptensor.index %b[%ids] dims [0] : !ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[5], i64> -> !ptensor.tensor<[5, 8], f32>
  %6 = ptensor.scatter_add %a, %idx, %a dim 1 : !ptensor.tensor<[2, 8], f32>, !ptensor.tensor<[2, 3], i64>, !ptensor.tensor<[2, 8], f32> -> !ptensor.tensor<[2, 8], f32>
  %7 = ptensor.index_put %b[%ids] dims [0], %v accumulate : !ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[5, 8], f32>, [!ptensor.tensor<[5], i64>] -> !ptensor.tensor<[s0, 8], f32>
  %8 = ptensor.index_put %b[%ids] dims [0], %v : !ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[5, 8], f32>, [!ptensor.tensor<[5], i64>] -> !ptensor.tensor<[s0, 8], f32>
  %9 = ptensor.pad %b constant 0.0 low [0, 0] high [16 - s0 mod 16, 0] : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0 + 16 - s0 mod 16, 8], f32>
  func.return
}

// GENERIC-LABEL: "func.func"() <{sym_name = "data_movement"
// GENERIC: %1 = "ptensor.pad"(%a) <{mode = #ptensor<pad_mode constant>, low = #ptensor.exprs[0, 1], high = #ptensor.exprs[0, 2], value = 0.000000e+00 : f64}>
// GENERIC: %2 = "ptensor.pad"(%a) <{mode = #ptensor<pad_mode reflect>, low = #ptensor.exprs[1, 1], high = #ptensor.exprs[1, 1]}>

// CHECK-LABEL: func.func @library(
func.func @library(%a: !ptensor.tensor<[4, 8], f32>, %b: !ptensor.tensor<[8, 16], f32>, %bias: !ptensor.tensor<[16], f32>, %ba: !ptensor.tensor<[2, 4, 8], f32>, %bb: !ptensor.tensor<[2, 8, 16], f32>, %img: !ptensor.tensor<[1, 3, 8, 8], f32>, %w: !ptensor.tensor<[6, 3, 3, 3], f32>, %cb: !ptensor.tensor<[6], f32>, %q: !ptensor.tensor<[2, s0, 16], f32>, %mask: !ptensor.tensor<[s0, s0], i1>) {
  // CHECK-NEXT: %0 = ptensor.mm %a, %b : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8, 16], f32> -> !ptensor.tensor<[4, 16], f32>
  // CHECK-NEXT: %1 = ptensor.bmm %ba, %bb : !ptensor.tensor<[2, 4, 8], f32>, !ptensor.tensor<[2, 8, 16], f32> -> !ptensor.tensor<[2, 4, 16], f32>
  // CHECK-NEXT: %2 = ptensor.addmm %bias, %a, %b : !ptensor.tensor<[16], f32>, !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8, 16], f32> -> !ptensor.tensor<[4, 16], f32>
  // CHECK-NEXT: %3 = ptensor.addmm %bias, %a, %b beta 5.000000e-01 alpha 2.000000e+00 : !ptensor.tensor<[16], f32>, !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8, 16], f32> -> !ptensor.tensor<[4, 16], f32>
  // CHECK-NEXT: %4 = ptensor.convolution %img, %w, %cb stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[1, 3, 8, 8], f32>, !ptensor.tensor<[6, 3, 3, 3], f32>, !ptensor.tensor<[6], f32> -> !ptensor.tensor<[1, 6, 8, 8], f32>
  // CHECK-NEXT: %5 = ptensor.convolution %img, %w stride [2, 2] padding [0, 0] dilation [1, 1] groups 1 : !ptensor.tensor<[1, 3, 8, 8], f32>, !ptensor.tensor<[6, 3, 3, 3], f32> -> !ptensor.tensor<[1, 6, 3, 3], f32>
  // CHECK-NEXT: %6 = ptensor.convolution %img, %w stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 transposed output_padding [1, 1] : !ptensor.tensor<[1, 3, 8, 8], f32>, !ptensor.tensor<[6, 3, 3, 3], f32> -> !ptensor.tensor<[1, 3, 16, 16], f32>
  // CHECK-NEXT: %7 = ptensor.attention %q, %q, %q : !ptensor.tensor<[2, s0, 16], f32>, !ptensor.tensor<[2, s0, 16], f32>, !ptensor.tensor<[2, s0, 16], f32> -> !ptensor.tensor<[2, s0, 16], f32>
  // CHECK-NEXT: %8 = ptensor.attention %q, %q, %q mask %mask causal scale 1.250000e-01 : !ptensor.tensor<[2, s0, 16], f32>, !ptensor.tensor<[2, s0, 16], f32>, !ptensor.tensor<[2, s0, 16], f32>, !ptensor.tensor<[s0, s0], i1> -> !ptensor.tensor<[2, s0, 16], f32>
  // CHECK-NEXT: func.return
  %0 = ptensor.mm %a, %b : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8, 16], f32> -> !ptensor.tensor<[4, 16], f32>
  %1 = ptensor.bmm %ba, %bb : !ptensor.tensor<[2, 4, 8], f32>, !ptensor.tensor<[2, 8, 16], f32> -> !ptensor.tensor<[2, 4, 16], f32>
  %2 = ptensor.addmm %bias, %a, %b : !ptensor.tensor<[16], f32>, !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8, 16], f32> -> !ptensor.tensor<[4, 16], f32>
  %3 = ptensor.addmm %bias, %a, %b beta 0.5 alpha 2.0 : !ptensor.tensor<[16], f32>, !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8, 16], f32> -> !ptensor.tensor<[4, 16], f32>
  %4 = ptensor.convolution %img, %w, %cb stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[1, 3, 8, 8], f32>, !ptensor.tensor<[6, 3, 3, 3], f32>, !ptensor.tensor<[6], f32> -> !ptensor.tensor<[1, 6, 8, 8], f32>
  %5 = ptensor.convolution %img, %w stride [2, 2] padding [0, 0] dilation [1, 1] groups 1 : !ptensor.tensor<[1, 3, 8, 8], f32>, !ptensor.tensor<[6, 3, 3, 3], f32> -> !ptensor.tensor<[1, 6, 3, 3], f32>
  %6 = ptensor.convolution %img, %w stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 transposed output_padding [1, 1] : !ptensor.tensor<[1, 3, 8, 8], f32>, !ptensor.tensor<[6, 3, 3, 3], f32> -> !ptensor.tensor<[1, 3, 16, 16], f32>
  %7 = ptensor.attention %q, %q, %q : !ptensor.tensor<[2, s0, 16], f32>, !ptensor.tensor<[2, s0, 16], f32>, !ptensor.tensor<[2, s0, 16], f32> -> !ptensor.tensor<[2, s0, 16], f32>
  %8 = ptensor.attention %q, %q, %q mask %mask causal scale 0.125 : !ptensor.tensor<[2, s0, 16], f32>, !ptensor.tensor<[2, s0, 16], f32>, !ptensor.tensor<[2, s0, 16], f32>, !ptensor.tensor<[s0, s0], i1> -> !ptensor.tensor<[2, s0, 16], f32>
  func.return
}

// GENERIC-LABEL: "func.func"() <{sym_name = "library"
// GENERIC: %4 = "ptensor.convolution"(%img, %w, %cb) <{stride = #ptensor.ints[1, 1], padding = #ptensor.ints[1, 1], dilation = #ptensor.ints[1, 1], groups = 1 : i64}>
// GENERIC: %8 = "ptensor.attention"(%q, %q, %q, %mask) <{causal, scale = 1.250000e-01 : f64}>

// CHECK-LABEL: func.func @library_backward(
func.func @library_backward(%dy: !ptensor.tensor<[1, 6, 8, 8], f32>, %img: !ptensor.tensor<[1, 3, 8, 8], f32>, %w: !ptensor.tensor<[6, 3, 3, 3], f32>) {
  // CHECK-NEXT: %0, %1, %2 = ptensor.convolution_backward %dy, %img, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 output_mask [1, 1, 1] : !ptensor.tensor<[1, 6, 8, 8], f32>, !ptensor.tensor<[1, 3, 8, 8], f32>, !ptensor.tensor<[6, 3, 3, 3], f32> -> !ptensor.tensor<[1, 3, 8, 8], f32>, !ptensor.tensor<[6, 3, 3, 3], f32>, !ptensor.tensor<[6], f32>
  // CHECK-NEXT: %3 = ptensor.convolution_backward %dy, %img, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 output_mask [0, 1, 0] : !ptensor.tensor<[1, 6, 8, 8], f32>, !ptensor.tensor<[1, 3, 8, 8], f32>, !ptensor.tensor<[6, 3, 3, 3], f32> -> !ptensor.tensor<[6, 3, 3, 3], f32>
  // CHECK-NEXT: func.return
  %0, %1, %2 = ptensor.convolution_backward %dy, %img, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 output_mask [1, 1, 1] : !ptensor.tensor<[1, 6, 8, 8], f32>, !ptensor.tensor<[1, 3, 8, 8], f32>, !ptensor.tensor<[6, 3, 3, 3], f32> -> !ptensor.tensor<[1, 3, 8, 8], f32>, !ptensor.tensor<[6, 3, 3, 3], f32>, !ptensor.tensor<[6], f32>
  %3 = ptensor.convolution_backward %dy, %img, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 output_mask [0, 1, 0] : !ptensor.tensor<[1, 6, 8, 8], f32>, !ptensor.tensor<[1, 3, 8, 8], f32>, !ptensor.tensor<[6, 3, 3, 3], f32> -> !ptensor.tensor<[6, 3, 3, 3], f32>
  func.return
}

// GENERIC-LABEL: "func.func"() <{sym_name = "library_backward"
// GENERIC: %3 = "ptensor.convolution_backward"(%dy, %img, %w) <{stride = #ptensor.ints[1, 1], padding = #ptensor.ints[1, 1], dilation = #ptensor.ints[1, 1], groups = 1 : i64, output_mask = #ptensor.ints[0, 1, 0]}>

// CHECK-LABEL: func.func @embedding_backward(
func.func @embedding_backward(%d: !ptensor.tensor<[s0, 8, 64], f32>, %i: !ptensor.tensor<[s0, 8], i64>) {
  // CHECK-NEXT: %0 = ptensor.embedding_backward %d, %i padding -1 : !ptensor.tensor<[s0, 8, 64], f32>, !ptensor.tensor<[s0, 8], i64> -> !ptensor.tensor<[1000, 64], f32>
  // CHECK-NEXT: %1 = ptensor.embedding_backward %d, %i padding 0 scale_by_frequency : !ptensor.tensor<[s0, 8, 64], f32>, !ptensor.tensor<[s0, 8], i64> -> !ptensor.tensor<[32, 64], f32>
  // CHECK-NEXT: func.return
  %0 = ptensor.embedding_backward %d, %i padding -1 : !ptensor.tensor<[s0, 8, 64], f32>, !ptensor.tensor<[s0, 8], i64> -> !ptensor.tensor<[1000, 64], f32>
  %1 = ptensor.embedding_backward %d, %i padding 0 scale_by_frequency : !ptensor.tensor<[s0, 8, 64], f32>, !ptensor.tensor<[s0, 8], i64> -> !ptensor.tensor<[32, 64], f32>
  func.return
}

// GENERIC-LABEL: "func.func"() <{sym_name = "embedding_backward"
// GENERIC: %1 = "ptensor.embedding_backward"(%d, %i) <{padding_idx = 0 : i64, scale_by_frequency}>

// CHECK-LABEL: func.func @fft(
func.func @fft(%x: !ptensor.tensor<[s0, 8], f32>, %z: !ptensor.tensor<[s0, 8, 2], f64>) {
  // CHECK-NEXT: %0 = ptensor.fft r2c %x dims [0, 1] normalization 0 onesided : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 5, 2], f32>
  // CHECK-NEXT: %1 = ptensor.fft r2c %x dims [1] normalization 1 : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 8, 2], f32>
  // CHECK-NEXT: %2 = ptensor.fft c2c %z dims [1] normalization 2 forward : !ptensor.tensor<[s0, 8, 2], f64> -> !ptensor.tensor<[s0, 8, 2], f64>
  // CHECK-NEXT: %3 = ptensor.fft c2c %z dims [0] normalization 0 : !ptensor.tensor<[s0, 8, 2], f64> -> !ptensor.tensor<[s0, 8, 2], f64>
  // CHECK-NEXT: %4 = ptensor.fft c2r %0 dims [0, 1] normalization 2 : !ptensor.tensor<[s0, 5, 2], f32> -> !ptensor.tensor<[s0, 9], f32>
  // CHECK-NEXT: func.return
  %0 = ptensor.fft r2c %x dims [0, 1] normalization 0 onesided : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 5, 2], f32>
  %1 = ptensor.fft r2c %x dims [1] normalization 1 : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 8, 2], f32>
  %2 = ptensor.fft c2c %z dims [1] normalization 2 forward : !ptensor.tensor<[s0, 8, 2], f64> -> !ptensor.tensor<[s0, 8, 2], f64>
  %3 = ptensor.fft c2c %z dims [0] normalization 0 : !ptensor.tensor<[s0, 8, 2], f64> -> !ptensor.tensor<[s0, 8, 2], f64>
  %4 = ptensor.fft c2r %0 dims [0, 1] normalization 2 : !ptensor.tensor<[s0, 5, 2], f32> -> !ptensor.tensor<[s0, 9], f32>
  func.return
}

// GENERIC-LABEL: "func.func"() <{sym_name = "fft"
// GENERIC: %0 = "ptensor.fft"(%x) <{kind = #ptensor<fft_kind r2c>, dims = #ptensor.ints[0, 1], normalization = 0 : i64, onesided}>

// CHECK-LABEL: func.func @fallback(%x: !ptensor.tensor<[4, 8], f32>) {
func.func @fallback(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK-NEXT: %0 = ptensor.fallback "aten.cumsum.default"(%x) [#ptensor.operand<0>, 1 : i64] : (!ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32>
  // CHECK-NEXT: %1, %2 = ptensor.fallback "aten.sort.default"(%x) [#ptensor.operand<0>, -1 : i64, false] kwargs {stable = #ptensor.none, dtype = f32, sizes = [1 : i64, 2 : i64], name = "x"} : (!ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], i64>)
  // CHECK-NEXT: ptensor.fallback "aten._assert_async.msg"() [1.500000e+00 : f64, "message"] : () -> ()
  // CHECK-NEXT: %3, %4 = ptensor.fallback "aten.f.default"(%x) [#ptensor.operand<0>] orders [array<i64: 1, 0>, array<i64>] : (!ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4], f32>)
  // CHECK-NEXT: func.return
  %0 = ptensor.fallback "aten.cumsum.default"(%x) [#ptensor.operand<0>, 1] : (!ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32>
  %1, %2 = ptensor.fallback "aten.sort.default"(%x) [#ptensor.operand<0>, -1, false] kwargs {stable = #ptensor.none, dtype = f32, sizes = [1, 2], name = "x"} : (!ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], i64>)
  ptensor.fallback "aten._assert_async.msg"() [1.5, "message"] : () -> ()
  %3, %4 = ptensor.fallback "aten.f.default"(%x) [#ptensor.operand<0>] orders [array<i64: 1, 0>, array<i64>] : (!ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4], f32>)
  func.return
}

// GENERIC-LABEL: "func.func"() <{sym_name = "fallback"
// GENERIC: %0 = "ptensor.fallback"(%x) <{target = "aten.cumsum.default", args = [#ptensor.operand<0>, 1 : i64]}>
