// RUN: permalloy-opt %s -p fuse-attention | permalloy-opt | filecheck %s
// RUN: permalloy-opt %s -p 'fuse-attention{kernel=triton}' | filecheck %s --check-prefix=FLASH
// RUN: permalloy-opt %s -p 'fuse-attention{kernel=measured}' | permalloy-opt | filecheck %s --check-prefix=MEASURED
// RUN: not permalloy-opt %s -p 'fuse-attention{kernel=cuda}' 2>&1 | filecheck %s --check-prefix=BAD
// (The output parses back and verifies: the second permalloy-opt.)

// An unknown kernel is an error that lists the valid ones.
// BAD: kernel='cuda' is not valid; valid values: torch, triton, measured

// Scaled scores plus a relative position bias over heads: the products'
// merged batch is split again as the softmax's reshape shows, the key is
// transposed back, and the bias becomes the attention's additive mask. With
// `kernel=triton` the attention says that permalloy's flash kernel runs it;
// with `kernel=measured`, that the faster of it and torch's runs it.
// CHECK-LABEL: func.func @biased(
// CHECK-NEXT:    %[[Q:.*]] = ptensor.reshape %q : !ptensor.tensor<[8, 10, 16], f32> -> !ptensor.tensor<[2, 4, 10, 16], f32>
// CHECK-NEXT:    %[[KT:.*]] = ptensor.reshape %kt : !ptensor.tensor<[8, 16, 12], f32> -> !ptensor.tensor<[2, 4, 16, 12], f32>
// CHECK-NEXT:    %[[K:.*]] = ptensor.permute %[[KT]] [0, 1, 3, 2] : !ptensor.tensor<[2, 4, 16, 12], f32> -> !ptensor.tensor<[2, 4, 12, 16], f32>
// CHECK-NEXT:    %[[V:.*]] = ptensor.reshape %v : !ptensor.tensor<[8, 12, 16], f32> -> !ptensor.tensor<[2, 4, 12, 16], f32>
// CHECK-NEXT:    %[[O:.*]] = ptensor.attention %[[Q]], %[[K]], %[[V]] mask %bias scale 2.500000e-01 : {{.*}}, !ptensor.tensor<[4, 10, 12], f32> -> !ptensor.tensor<[2, 4, 10, 16], f32>
// FLASH-LABEL: func.func @biased(
// FLASH:         ptensor.attention {{.*}} scale 2.500000e-01 {kernel = "triton"} :
// MEASURED-LABEL: func.func @biased(
// MEASURED:         ptensor.attention {{.*}} scale 2.500000e-01 {kernel = "measured"} :
// CHECK-NEXT:    %[[R:.*]] = ptensor.reshape %[[O]] : !ptensor.tensor<[2, 4, 10, 16], f32> -> !ptensor.tensor<[8, 10, 16], f32>
// CHECK-NEXT:    func.return %[[R]]
func.func @biased(%q: !ptensor.tensor<[8, 10, 16], f32>, %kt: !ptensor.tensor<[8, 16, 12], f32>, %v: !ptensor.tensor<[8, 12, 16], f32>, %bias: !ptensor.tensor<[4, 10, 12], f32>) -> !ptensor.tensor<[8, 10, 16], f32> {
  %s = ptensor.bmm %q, %kt : !ptensor.tensor<[8, 10, 16], f32>, !ptensor.tensor<[8, 16, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %s4 = ptensor.reshape %s : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[2, 4, 10, 12], f32>
  %c = ptensor.full 0.25 : !ptensor.tensor<[], f32>
  %scaled = ptensor.binary mul %s4, %c : !ptensor.tensor<[2, 4, 10, 12], f32>, !ptensor.tensor<[], f32> -> !ptensor.tensor<[2, 4, 10, 12], f32>
  %x = ptensor.binary add %scaled, %bias : !ptensor.tensor<[2, 4, 10, 12], f32>, !ptensor.tensor<[4, 10, 12], f32> -> !ptensor.tensor<[2, 4, 10, 12], f32>
  %m = ptensor.reduce max %x dims [3] keepdim : !ptensor.tensor<[2, 4, 10, 12], f32> -> !ptensor.tensor<[2, 4, 10, 1], f32>
  %d = ptensor.binary sub %x, %m : !ptensor.tensor<[2, 4, 10, 12], f32>, !ptensor.tensor<[2, 4, 10, 1], f32> -> !ptensor.tensor<[2, 4, 10, 12], f32>
  %e = ptensor.unary exp %d : !ptensor.tensor<[2, 4, 10, 12], f32> -> !ptensor.tensor<[2, 4, 10, 12], f32>
  %t = ptensor.reduce sum %e dims [3] keepdim : !ptensor.tensor<[2, 4, 10, 12], f32> -> !ptensor.tensor<[2, 4, 10, 1], f32>
  %p = ptensor.binary div %e, %t : !ptensor.tensor<[2, 4, 10, 12], f32>, !ptensor.tensor<[2, 4, 10, 1], f32> -> !ptensor.tensor<[2, 4, 10, 12], f32>
  %p3 = ptensor.reshape %p : !ptensor.tensor<[2, 4, 10, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %o = ptensor.bmm %p3, %v : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 12, 16], f32> -> !ptensor.tensor<[8, 10, 16], f32>
  func.return %o : !ptensor.tensor<[8, 10, 16], f32>
}

// A causal mask written as `where(dropped, -inf, scores)` on 3-d products:
// a boolean mask that keeps where the condition does not drop, and a unit
// batch in front for the fused kernels' 4-d form.
// CHECK-LABEL: func.func @causal(
// CHECK-NEXT:    %[[KEEP:.*]] = ptensor.unary logical_not %dropped : !ptensor.tensor<[10, 12], i1> -> !ptensor.tensor<[10, 12], i1>
// CHECK:         ptensor.attention %{{.*}}, %{{.*}}, %{{.*}} mask %[[KEEP]] scale 1.000000e+00 : {{.*}} -> !ptensor.tensor<[1, 8, 10, 16], f32>
// CHECK-NOT:     ptensor.reduce
func.func @causal(%q: !ptensor.tensor<[8, 10, 16], f32>, %kt: !ptensor.tensor<[8, 16, 12], f32>, %v: !ptensor.tensor<[8, 12, 16], f32>, %dropped: !ptensor.tensor<[10, 12], i1>) -> !ptensor.tensor<[8, 10, 16], f32> {
  %s = ptensor.bmm %q, %kt : !ptensor.tensor<[8, 10, 16], f32>, !ptensor.tensor<[8, 16, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %inf = ptensor.full -inf : !ptensor.tensor<[], f32>
  %x = ptensor.where %dropped, %inf, %s : !ptensor.tensor<[10, 12], i1>, !ptensor.tensor<[], f32>, !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %m = ptensor.reduce max %x dims [2] keepdim : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 1], f32>
  %d = ptensor.binary sub %x, %m : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 10, 1], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %e = ptensor.unary exp %d : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %t = ptensor.reduce sum %e dims [2] keepdim : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 1], f32>
  %p = ptensor.binary div %e, %t : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 10, 1], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %o = ptensor.bmm %p, %v : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 12, 16], f32> -> !ptensor.tensor<[8, 10, 16], f32>
  func.return %o : !ptensor.tensor<[8, 10, 16], f32>
}

// Half precision: the softmax runs in float32 between casts, and the scale
// too; the casts go with the math.
// CHECK-LABEL: func.func @half(
// CHECK:         ptensor.attention %{{.*}}, %{{.*}}, %{{.*}} mask %bias scale 1.250000e-01 : {{.*}} -> !ptensor.tensor<[1, 8, 10, 16], f16>
// CHECK-NOT:     ptensor.cast
func.func @half(%q: !ptensor.tensor<[8, 10, 16], f16>, %kt: !ptensor.tensor<[8, 16, 12], f16>, %v: !ptensor.tensor<[8, 12, 16], f16>, %bias: !ptensor.tensor<[10, 12], f16>) -> !ptensor.tensor<[8, 10, 16], f16> {
  %s = ptensor.bmm %q, %kt : !ptensor.tensor<[8, 10, 16], f16>, !ptensor.tensor<[8, 16, 12], f16> -> !ptensor.tensor<[8, 10, 12], f16>
  %w = ptensor.cast %s : !ptensor.tensor<[8, 10, 12], f16> -> !ptensor.tensor<[8, 10, 12], f32>
  %c = ptensor.full 0.125 : !ptensor.tensor<[], f32>
  %scaled = ptensor.binary mul %w, %c : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %n = ptensor.cast %scaled : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 12], f16>
  %b = ptensor.binary add %n, %bias : !ptensor.tensor<[8, 10, 12], f16>, !ptensor.tensor<[10, 12], f16> -> !ptensor.tensor<[8, 10, 12], f16>
  %x = ptensor.cast %b : !ptensor.tensor<[8, 10, 12], f16> -> !ptensor.tensor<[8, 10, 12], f32>
  %m = ptensor.reduce max %x dims [2] keepdim : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 1], f32>
  %d = ptensor.binary sub %x, %m : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 10, 1], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %e = ptensor.unary exp %d : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %t = ptensor.reduce sum %e dims [2] keepdim : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 1], f32>
  %p = ptensor.binary div %e, %t : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 10, 1], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %ph = ptensor.cast %p : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 12], f16>
  %o = ptensor.bmm %ph, %v : !ptensor.tensor<[8, 10, 12], f16>, !ptensor.tensor<[8, 12, 16], f16> -> !ptensor.tensor<[8, 10, 16], f16>
  func.return %o : !ptensor.tensor<[8, 10, 16], f16>
}

// A 4-d `matmul` views the product back as 4-d: the view reads the attention
// itself (through the merged batch, a round trip the attention's layout
// would copy).
// CHECK-LABEL: func.func @viewed_back(
// CHECK:         %[[O:.*]] = ptensor.attention
// CHECK-NEXT:    func.return %[[O]] : !ptensor.tensor<[2, 4, 10, 16], f32>
func.func @viewed_back(%q: !ptensor.tensor<[8, 10, 16], f32>, %kt: !ptensor.tensor<[8, 16, 12], f32>, %v: !ptensor.tensor<[8, 12, 16], f32>) -> !ptensor.tensor<[2, 4, 10, 16], f32> {
  %s = ptensor.bmm %q, %kt : !ptensor.tensor<[8, 10, 16], f32>, !ptensor.tensor<[8, 16, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %s4 = ptensor.reshape %s : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[2, 4, 10, 12], f32>
  %m = ptensor.reduce max %s4 dims [3] keepdim : !ptensor.tensor<[2, 4, 10, 12], f32> -> !ptensor.tensor<[2, 4, 10, 1], f32>
  %d = ptensor.binary sub %s4, %m : !ptensor.tensor<[2, 4, 10, 12], f32>, !ptensor.tensor<[2, 4, 10, 1], f32> -> !ptensor.tensor<[2, 4, 10, 12], f32>
  %e = ptensor.unary exp %d : !ptensor.tensor<[2, 4, 10, 12], f32> -> !ptensor.tensor<[2, 4, 10, 12], f32>
  %t = ptensor.reduce sum %e dims [3] keepdim : !ptensor.tensor<[2, 4, 10, 12], f32> -> !ptensor.tensor<[2, 4, 10, 1], f32>
  %p = ptensor.binary div %e, %t : !ptensor.tensor<[2, 4, 10, 12], f32>, !ptensor.tensor<[2, 4, 10, 1], f32> -> !ptensor.tensor<[2, 4, 10, 12], f32>
  %p3 = ptensor.reshape %p : !ptensor.tensor<[2, 4, 10, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %o = ptensor.bmm %p3, %v : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 12, 16], f32> -> !ptensor.tensor<[8, 10, 16], f32>
  %o4 = ptensor.reshape %o : !ptensor.tensor<[8, 10, 16], f32> -> !ptensor.tensor<[2, 4, 10, 16], f32>
  func.return %o4 : !ptensor.tensor<[2, 4, 10, 16], f32>
}

// Two conditions and a bias: each mask op has its operands' broadcast shape.
// CHECK-LABEL: func.func @two_conditions_bias(
// CHECK:         ptensor.binary logical_and %{{.*}}, %{{.*}} : !ptensor.tensor<[10, 12], i1>, !ptensor.tensor<[10, 12], i1> -> !ptensor.tensor<[10, 12], i1>
// CHECK:         %[[MASK:.*]] = ptensor.where %{{.*}}, %bias, %{{.*}} : !ptensor.tensor<[10, 12], i1>, !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[], f32> -> !ptensor.tensor<[8, 10, 12], f32>
// CHECK:         ptensor.attention %{{.*}}, %{{.*}}, %{{.*}} mask %[[MASK]]
func.func @two_conditions_bias(%q: !ptensor.tensor<[8, 10, 16], f32>, %kt: !ptensor.tensor<[8, 16, 12], f32>, %v: !ptensor.tensor<[8, 12, 16], f32>, %c1: !ptensor.tensor<[10, 12], i1>, %c2: !ptensor.tensor<[10, 12], i1>, %bias: !ptensor.tensor<[8, 10, 12], f32>) -> !ptensor.tensor<[8, 10, 16], f32> {
  %s = ptensor.bmm %q, %kt : !ptensor.tensor<[8, 10, 16], f32>, !ptensor.tensor<[8, 16, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %b = ptensor.binary add %s, %bias : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %inf = ptensor.full -inf : !ptensor.tensor<[], f32>
  %w1 = ptensor.where %c1, %inf, %b : !ptensor.tensor<[10, 12], i1>, !ptensor.tensor<[], f32>, !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %x = ptensor.where %c2, %inf, %w1 : !ptensor.tensor<[10, 12], i1>, !ptensor.tensor<[], f32>, !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %m = ptensor.reduce max %x dims [2] keepdim : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 1], f32>
  %d = ptensor.binary sub %x, %m : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 10, 1], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %e = ptensor.unary exp %d : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %t = ptensor.reduce sum %e dims [2] keepdim : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 1], f32>
  %p = ptensor.binary div %e, %t : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 10, 1], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %o = ptensor.bmm %p, %v : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 12, 16], f32> -> !ptensor.tensor<[8, 10, 16], f32>
  func.return %o : !ptensor.tensor<[8, 10, 16], f32>
}

// The plainest form: 3-d products, the product itself the softmax's input.
// CHECK-LABEL: func.func @plain(
// CHECK:         ptensor.attention %{{.*}}, %{{.*}}, %{{.*}} scale 1.000000e+00 :
// CHECK-NOT:     ptensor.bmm
func.func @plain(%q: !ptensor.tensor<[8, 10, 16], f32>, %kt: !ptensor.tensor<[8, 16, 12], f32>, %v: !ptensor.tensor<[8, 12, 16], f32>) -> !ptensor.tensor<[8, 10, 16], f32> {
  %x = ptensor.bmm %q, %kt : !ptensor.tensor<[8, 10, 16], f32>, !ptensor.tensor<[8, 16, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %m = ptensor.reduce max %x dims [2] keepdim : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 1], f32>
  %d = ptensor.binary sub %x, %m : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 10, 1], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %e = ptensor.unary exp %d : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %t = ptensor.reduce sum %e dims [2] keepdim : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 1], f32>
  %p = ptensor.binary div %e, %t : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 10, 1], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %o = ptensor.bmm %p, %v : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 12, 16], f32> -> !ptensor.tensor<[8, 10, 16], f32>
  func.return %o : !ptensor.tensor<[8, 10, 16], f32>
}

// Refusals. A condition of more dimensions than the scores widens them: the
// math stays.
// CHECK-LABEL: func.func @bigcond(
// CHECK-NOT:     ptensor.attention
// CHECK:         func.return
func.func @bigcond(%q: !ptensor.tensor<[8, 10, 16], f32>, %kt: !ptensor.tensor<[8, 16, 12], f32>, %v: !ptensor.tensor<[8, 12, 16], f32>, %c: !ptensor.tensor<[2, 8, 10, 12], i1>) -> !ptensor.tensor<[16, 10, 16], f32> {
  %s = ptensor.bmm %q, %kt : !ptensor.tensor<[8, 10, 16], f32>, !ptensor.tensor<[8, 16, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %inf = ptensor.full -inf : !ptensor.tensor<[], f32>
  %x = ptensor.where %c, %inf, %s : !ptensor.tensor<[2, 8, 10, 12], i1>, !ptensor.tensor<[], f32>, !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[2, 8, 10, 12], f32>
  %m = ptensor.reduce max %x dims [3] keepdim : !ptensor.tensor<[2, 8, 10, 12], f32> -> !ptensor.tensor<[2, 8, 10, 1], f32>
  %d = ptensor.binary sub %x, %m : !ptensor.tensor<[2, 8, 10, 12], f32>, !ptensor.tensor<[2, 8, 10, 1], f32> -> !ptensor.tensor<[2, 8, 10, 12], f32>
  %e = ptensor.unary exp %d : !ptensor.tensor<[2, 8, 10, 12], f32> -> !ptensor.tensor<[2, 8, 10, 12], f32>
  %t = ptensor.reduce sum %e dims [3] keepdim : !ptensor.tensor<[2, 8, 10, 12], f32> -> !ptensor.tensor<[2, 8, 10, 1], f32>
  %p = ptensor.binary div %e, %t : !ptensor.tensor<[2, 8, 10, 12], f32>, !ptensor.tensor<[2, 8, 10, 1], f32> -> !ptensor.tensor<[2, 8, 10, 12], f32>
  %p3 = ptensor.reshape %p : !ptensor.tensor<[2, 8, 10, 12], f32> -> !ptensor.tensor<[16, 10, 12], f32>
  %v2 = ptensor.cat %v, %v dim 0 : !ptensor.tensor<[8, 12, 16], f32>, !ptensor.tensor<[8, 12, 16], f32> -> !ptensor.tensor<[16, 12, 16], f32>
  %o = ptensor.bmm %p3, %v2 : !ptensor.tensor<[16, 10, 12], f32>, !ptensor.tensor<[16, 12, 16], f32> -> !ptensor.tensor<[16, 10, 16], f32>
  func.return %o : !ptensor.tensor<[16, 10, 16], f32>
}

// The probabilities are returned too (as a training graph saves
// them): the math stays.
// CHECK-LABEL: func.func @probabilities_returned(
// CHECK-NOT:     ptensor.attention
// CHECK:         func.return
func.func @probabilities_returned(%q: !ptensor.tensor<[8, 10, 16], f32>, %kt: !ptensor.tensor<[8, 16, 12], f32>, %v: !ptensor.tensor<[8, 12, 16], f32>) -> (!ptensor.tensor<[8, 10, 16], f32>, !ptensor.tensor<[8, 10, 12], f32>) {
  %s = ptensor.bmm %q, %kt : !ptensor.tensor<[8, 10, 16], f32>, !ptensor.tensor<[8, 16, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %m = ptensor.reduce max %s dims [2] keepdim : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 1], f32>
  %d = ptensor.binary sub %s, %m : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 10, 1], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %e = ptensor.unary exp %d : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %t = ptensor.reduce sum %e dims [2] keepdim : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 1], f32>
  %p = ptensor.binary div %e, %t : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 10, 1], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %o = ptensor.bmm %p, %v : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 12, 16], f32> -> !ptensor.tensor<[8, 10, 16], f32>
  func.return %o, %p : !ptensor.tensor<[8, 10, 16], f32>, !ptensor.tensor<[8, 10, 12], f32>
}

// A scale applied after the bias scales the bias too: not the attention's
// `softmax(q @ k^T * scale + mask)`, so the math stays.
// CHECK-LABEL: func.func @scale_after_bias(
// CHECK-NOT:     ptensor.attention
// CHECK:         func.return
func.func @scale_after_bias(%q: !ptensor.tensor<[8, 10, 16], f32>, %kt: !ptensor.tensor<[8, 16, 12], f32>, %v: !ptensor.tensor<[8, 12, 16], f32>, %bias: !ptensor.tensor<[10, 12], f32>) -> !ptensor.tensor<[8, 10, 16], f32> {
  %s = ptensor.bmm %q, %kt : !ptensor.tensor<[8, 10, 16], f32>, !ptensor.tensor<[8, 16, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %b = ptensor.binary add %s, %bias : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[10, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %c = ptensor.full 0.25 : !ptensor.tensor<[], f32>
  %x = ptensor.binary mul %b, %c : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %m = ptensor.reduce max %x dims [2] keepdim : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 1], f32>
  %d = ptensor.binary sub %x, %m : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 10, 1], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %e = ptensor.unary exp %d : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %t = ptensor.reduce sum %e dims [2] keepdim : !ptensor.tensor<[8, 10, 12], f32> -> !ptensor.tensor<[8, 10, 1], f32>
  %p = ptensor.binary div %e, %t : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 10, 1], f32> -> !ptensor.tensor<[8, 10, 12], f32>
  %o = ptensor.bmm %p, %v : !ptensor.tensor<[8, 10, 12], f32>, !ptensor.tensor<[8, 12, 16], f32> -> !ptensor.tensor<[8, 10, 16], f32>
  func.return %o : !ptensor.tensor<[8, 10, 16], f32>
}
