// RUN: permalloy-opt %s -p canonicalize | filecheck %s

// The ptensor ops' canonicalization patterns (dialects/ptensor/canonicalization.py),
// each fold next to the cases it leaves alone.

// A permute of a permute is one permute; back in the first order, none.
// CHECK-LABEL: func.func @compose_permutes(
// CHECK-NEXT:    %[[P:.*]] = ptensor.permute %x [2, 1, 0] : !ptensor.tensor<[2, 3, 4], f32> -> !ptensor.tensor<[4, 3, 2], f32>
// CHECK-NEXT:    func.return %[[P]], %x : !ptensor.tensor<[4, 3, 2], f32>, !ptensor.tensor<[2, 3, 4], f32>
func.func @compose_permutes(%x: !ptensor.tensor<[2, 3, 4], f32>) -> (!ptensor.tensor<[4, 3, 2], f32>, !ptensor.tensor<[2, 3, 4], f32>) {
  %a = ptensor.permute %x [0, 2, 1] : !ptensor.tensor<[2, 3, 4], f32> -> !ptensor.tensor<[2, 4, 3], f32>
  %b = ptensor.permute %a [1, 2, 0] : !ptensor.tensor<[2, 4, 3], f32> -> !ptensor.tensor<[4, 3, 2], f32>
  %c = ptensor.permute %x [1, 0, 2] : !ptensor.tensor<[2, 3, 4], f32> -> !ptensor.tensor<[3, 2, 4], f32>
  %d = ptensor.permute %c [1, 0, 2] : !ptensor.tensor<[3, 2, 4], f32> -> !ptensor.tensor<[2, 3, 4], f32>
  func.return %b, %d : !ptensor.tensor<[4, 3, 2], f32>, !ptensor.tensor<[2, 3, 4], f32>
}

// An identity permute disappears; one that moves a dimension stays, and so
// does the inner permute that another op still reads.
// CHECK-LABEL: func.func @permutes_that_stay(
// CHECK-NEXT:    %[[T:.*]] = ptensor.permute %x [1, 0] : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[8, s0], f32>
// CHECK-NEXT:    %[[E:.*]] = ptensor.unary exp %[[T]]
// CHECK-NEXT:    func.return %x, %[[E]], %x
func.func @permutes_that_stay(%x: !ptensor.tensor<[s0, 8], f32>) -> (!ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[8, s0], f32>, !ptensor.tensor<[s0, 8], f32>) {
  %i = ptensor.permute %x [0, 1] : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0, 8], f32>
  %t = ptensor.permute %x [1, 0] : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[8, s0], f32>
  %e = ptensor.unary exp %t : !ptensor.tensor<[8, s0], f32> -> !ptensor.tensor<[8, s0], f32>
  %b = ptensor.permute %t [1, 0] : !ptensor.tensor<[8, s0], f32> -> !ptensor.tensor<[s0, 8], f32>
  func.return %i, %e, %b : !ptensor.tensor<[s0, 8], f32>, !ptensor.tensor<[8, s0], f32>, !ptensor.tensor<[s0, 8], f32>
}

// A reshape of a reshape is one reshape, and none when it gives back the
// input's shape.
// CHECK-LABEL: func.func @compose_reshapes(
// CHECK-NEXT:    %[[R:.*]] = ptensor.reshape %x : !ptensor.tensor<[4, s0], f32> -> !ptensor.tensor<[2, 2, s0], f32>
// CHECK-NEXT:    func.return %[[R]], %x
func.func @compose_reshapes(%x: !ptensor.tensor<[4, s0], f32>) -> (!ptensor.tensor<[2, 2, s0], f32>, !ptensor.tensor<[4, s0], f32>) {
  %f = ptensor.reshape %x : !ptensor.tensor<[4, s0], f32> -> !ptensor.tensor<[4 * s0], f32>
  %r = ptensor.reshape %f : !ptensor.tensor<[4 * s0], f32> -> !ptensor.tensor<[2, 2, s0], f32>
  %b = ptensor.reshape %f : !ptensor.tensor<[4 * s0], f32> -> !ptensor.tensor<[4, s0], f32>
  func.return %r, %b : !ptensor.tensor<[2, 2, s0], f32>, !ptensor.tensor<[4, s0], f32>
}

// A reshape whose sizes are not the same expressions stays: [s0, s1] and
// [s1, s0] have as many elements, but are one shape only when s0 = s1.
// CHECK-LABEL: func.func @reshape_that_stays(
// CHECK-NEXT:    %[[R:.*]] = ptensor.reshape %x : !ptensor.tensor<[s0, s1], f32> -> !ptensor.tensor<[s1, s0], f32>
// CHECK-NEXT:    func.return %[[R]]
func.func @reshape_that_stays(%x: !ptensor.tensor<[s0, s1], f32>) -> !ptensor.tensor<[s1, s0], f32> {
  %r = ptensor.reshape %x : !ptensor.tensor<[s0, s1], f32> -> !ptensor.tensor<[s1, s0], f32>
  func.return %r : !ptensor.tensor<[s1, s0], f32>
}

// Views to their input's own type that show every element in order
// disappear: a reshape, an expand, a slice from 0 to the end, a squeeze of
// no dimension, a row-major as_strided.
// CHECK-LABEL: func.func @identity_views(
// CHECK-NEXT:    func.return %x, %x, %x, %x, %x
func.func @identity_views(%x: !ptensor.tensor<[s0, 1, 8], f32>) -> (!ptensor.tensor<[s0, 1, 8], f32>, !ptensor.tensor<[s0, 1, 8], f32>, !ptensor.tensor<[s0, 1, 8], f32>, !ptensor.tensor<[s0, 1, 8], f32>, !ptensor.tensor<[s0, 1, 8], f32>) {
  %r = ptensor.reshape %x : !ptensor.tensor<[s0, 1, 8], f32> -> !ptensor.tensor<[s0, 1, 8], f32>
  %e = ptensor.expand %x : !ptensor.tensor<[s0, 1, 8], f32> -> !ptensor.tensor<[s0, 1, 8], f32>
  %s = ptensor.slice %x dim 0 start 0 end s0 step 1 : !ptensor.tensor<[s0, 1, 8], f32> -> !ptensor.tensor<[s0, 1, 8], f32>
  %q = ptensor.squeeze %x dims [] : !ptensor.tensor<[s0, 1, 8], f32> -> !ptensor.tensor<[s0, 1, 8], f32>
  %a = ptensor.as_strided %x strides [8, 5, 1] offset 0 : !ptensor.tensor<[s0, 1, 8], f32> -> !ptensor.tensor<[s0, 1, 8], f32>
  func.return %r, %e, %s, %q, %a : !ptensor.tensor<[s0, 1, 8], f32>, !ptensor.tensor<[s0, 1, 8], f32>, !ptensor.tensor<[s0, 1, 8], f32>, !ptensor.tensor<[s0, 1, 8], f32>, !ptensor.tensor<[s0, 1, 8], f32>
}

// Views that change something stay: an expand that repeats, a slice with
// an offset, a step or a shorter end, a strided or offset as_strided.
// CHECK-LABEL: func.func @views_that_stay(
// CHECK-NEXT:    ptensor.expand %x
// CHECK-NEXT:    ptensor.slice %x dim 1 start 1 end 8 step 1
// CHECK-NEXT:    ptensor.slice %x dim 1 start 0 end 8 step 2
// CHECK-NEXT:    ptensor.slice %x dim 1 start 0 end 6 step 1
// CHECK-NEXT:    ptensor.as_strided %x strides [1, 4] offset 0
// CHECK-NEXT:    ptensor.as_strided %y strides [8, 1] offset 8
// CHECK-NEXT:    func.return
func.func @views_that_stay(%x: !ptensor.tensor<[4, 8], f32>, %y: !ptensor.tensor<[8, 8], f32>) -> (!ptensor.tensor<[3, 4, 8], f32>, !ptensor.tensor<[4, 7], f32>, !ptensor.tensor<[4, 4], f32>, !ptensor.tensor<[4, 6], f32>, !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>) {
  %e = ptensor.expand %x : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[3, 4, 8], f32>
  %s1 = ptensor.slice %x dim 1 start 1 end 8 step 1 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 7], f32>
  %s2 = ptensor.slice %x dim 1 start 0 end 8 step 2 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 4], f32>
  %s3 = ptensor.slice %x dim 1 start 0 end 6 step 1 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 6], f32>
  %a1 = ptensor.as_strided %x strides [1, 4] offset 0 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>
  %a2 = ptensor.as_strided %y strides [8, 1] offset 8 : !ptensor.tensor<[8, 8], f32> -> !ptensor.tensor<[4, 8], f32>
  func.return %e, %s1, %s2, %s3, %a1, %a2 : !ptensor.tensor<[3, 4, 8], f32>, !ptensor.tensor<[4, 7], f32>, !ptensor.tensor<[4, 4], f32>, !ptensor.tensor<[4, 6], f32>, !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>
}

// A cast to the input's dtype disappears; one to another dtype stays.
// CHECK-LABEL: func.func @casts(
// CHECK-NEXT:    %[[H:.*]] = ptensor.cast %x : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f16>
// CHECK-NEXT:    func.return %x, %[[H]]
func.func @casts(%x: !ptensor.tensor<[4], f32>) -> (!ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f16>) {
  %same = ptensor.cast %x : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f32>
  %half = ptensor.cast %x : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f16>
  func.return %same, %half : !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f16>
}

// Size arithmetic as the importer writes it (a size's value as an element
// of an iota, negated, cast to f64, divided) folds once the size is a
// constant: here (-5) / 2 and 12 / 3. With a size symbol (the length of
// %x) it stays.
// CHECK-LABEL: func.func @size_arithmetic(
// CHECK-NEXT:    %[[A:.*]] = ptensor.full -2.5 : !ptensor.tensor<[], f64>
// CHECK-NEXT:    %[[B:.*]] = ptensor.full 4.0 : !ptensor.tensor<[], f64>
// CHECK-NEXT:    %[[I:.*]] = ptensor.iota start 0 step 1 : !ptensor.tensor<[s0 + 1], i64>
// CHECK-NEXT:    %[[S:.*]] = ptensor.select %[[I]] dim 0 index s0 : !ptensor.tensor<[s0 + 1], i64> -> !ptensor.tensor<[], i64>
// CHECK-NEXT:    %[[C:.*]] = ptensor.cast %[[S]] : !ptensor.tensor<[], i64> -> !ptensor.tensor<[], f64>
// CHECK-NEXT:    func.return %[[A]], %[[B]], %[[C]]
func.func @size_arithmetic(%x: !ptensor.tensor<[s0], f32>) -> (!ptensor.tensor<[], f64>, !ptensor.tensor<[], f64>, !ptensor.tensor<[], f64>) {
  %iota = ptensor.iota start 0 step 1 : !ptensor.tensor<[6], i64>
  %five = ptensor.select %iota dim 0 index 5 : !ptensor.tensor<[6], i64> -> !ptensor.tensor<[], i64>
  %minus = ptensor.unary neg %five : !ptensor.tensor<[], i64> -> !ptensor.tensor<[], i64>
  %f = ptensor.cast %minus : !ptensor.tensor<[], i64> -> !ptensor.tensor<[], f64>
  %two = ptensor.full 2.0 : !ptensor.tensor<[], f64>
  %a = ptensor.binary div %f, %two : !ptensor.tensor<[], f64>, !ptensor.tensor<[], f64> -> !ptensor.tensor<[], f64>
  %twelve = ptensor.full 12 : !ptensor.tensor<[], i64>
  %three = ptensor.full 3 : !ptensor.tensor<[], i64>
  %m = ptensor.binary mul %twelve, %three : !ptensor.tensor<[], i64>, !ptensor.tensor<[], i64> -> !ptensor.tensor<[], i64>
  %mf = ptensor.cast %m : !ptensor.tensor<[], i64> -> !ptensor.tensor<[], f64>
  %nine = ptensor.full 9.0 : !ptensor.tensor<[], f64>
  %b = ptensor.binary div %mf, %nine : !ptensor.tensor<[], f64>, !ptensor.tensor<[], f64> -> !ptensor.tensor<[], f64>
  %symbolic = ptensor.iota start 0 step 1 : !ptensor.tensor<[s0 + 1], i64>
  %size = ptensor.select %symbolic dim 0 index s0 : !ptensor.tensor<[s0 + 1], i64> -> !ptensor.tensor<[], i64>
  %c = ptensor.cast %size : !ptensor.tensor<[], i64> -> !ptensor.tensor<[], f64>
  func.return %a, %b, %c : !ptensor.tensor<[], f64>, !ptensor.tensor<[], f64>, !ptensor.tensor<[], f64>
}

// Constants are folded only where the result is exact: a cast that
// rounds (f32 to f16), truncates (2.5 to an integer) or overflows (300 to i8), an
// integer product that overflows, a division by zero, and arithmetic in
// f32 (computed in f32 by the kernels) stay.
// CHECK-LABEL: func.func @folds_that_stay(
// CHECK-NEXT:    %[[A:.*]] = ptensor.full 0.1 : !ptensor.tensor<[], f32>
// CHECK-NEXT:    %[[B:.*]] = ptensor.cast %[[A]] : !ptensor.tensor<[], f32> -> !ptensor.tensor<[], f16>
// CHECK-NEXT:    %[[C:.*]] = ptensor.full 2.5 : !ptensor.tensor<[], f64>
// CHECK-NEXT:    %[[D:.*]] = ptensor.cast %[[C]] : !ptensor.tensor<[], f64> -> !ptensor.tensor<[], i64>
// CHECK-NEXT:    %[[E:.*]] = ptensor.full 300 : !ptensor.tensor<[], i32>
// CHECK-NEXT:    %[[F:.*]] = ptensor.cast %[[E]] : !ptensor.tensor<[], i32> -> !ptensor.tensor<[], i8>
// CHECK-NEXT:    %[[G:.*]] = ptensor.full 4611686018427387904 : !ptensor.tensor<[], i64>
// CHECK-NEXT:    %[[H:.*]] = ptensor.binary mul %[[G]], %[[G]]
// CHECK-NEXT:    %[[Z:.*]] = ptensor.full 0.0 : !ptensor.tensor<[], f64>
// CHECK-NEXT:    %[[I:.*]] = ptensor.binary div %[[C]], %[[Z]]
// CHECK-NEXT:    %[[J:.*]] = ptensor.binary add %[[A]], %[[A]] : !ptensor.tensor<[], f32>
// CHECK-NEXT:    func.return %[[B]], %[[D]], %[[F]], %[[H]], %[[I]], %[[J]]
func.func @folds_that_stay() -> (!ptensor.tensor<[], f16>, !ptensor.tensor<[], i64>, !ptensor.tensor<[], i8>, !ptensor.tensor<[], i64>, !ptensor.tensor<[], f64>, !ptensor.tensor<[], f32>) {
  %a = ptensor.full 0.1 : !ptensor.tensor<[], f32>
  %b = ptensor.cast %a : !ptensor.tensor<[], f32> -> !ptensor.tensor<[], f16>
  %c = ptensor.full 2.5 : !ptensor.tensor<[], f64>
  %d = ptensor.cast %c : !ptensor.tensor<[], f64> -> !ptensor.tensor<[], i64>
  %e = ptensor.full 300 : !ptensor.tensor<[], i32>
  %f = ptensor.cast %e : !ptensor.tensor<[], i32> -> !ptensor.tensor<[], i8>
  %g = ptensor.full 4611686018427387904 : !ptensor.tensor<[], i64>
  %h = ptensor.binary mul %g, %g : !ptensor.tensor<[], i64>, !ptensor.tensor<[], i64> -> !ptensor.tensor<[], i64>
  %z = ptensor.full 0.0 : !ptensor.tensor<[], f64>
  %i = ptensor.binary div %c, %z : !ptensor.tensor<[], f64>, !ptensor.tensor<[], f64> -> !ptensor.tensor<[], f64>
  %j = ptensor.binary add %a, %a : !ptensor.tensor<[], f32>, !ptensor.tensor<[], f32> -> !ptensor.tensor<[], f32>
  func.return %b, %d, %f, %h, %i, %j : !ptensor.tensor<[], f16>, !ptensor.tensor<[], i64>, !ptensor.tensor<[], i8>, !ptensor.tensor<[], i64>, !ptensor.tensor<[], f64>, !ptensor.tensor<[], f32>
}
