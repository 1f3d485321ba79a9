// RUN: permalloy-opt %s --allow-unregistered-dialect | permalloy-opt --allow-unregistered-dialect | filecheck %s
// RUN: permalloy-opt %s --allow-unregistered-dialect --print-op-generic | permalloy-opt --allow-unregistered-dialect | filecheck %s

// `#sym.expr<...>`: integer expressions over size symbols (s), parallel
// indices (d), reduction indices (r) and index values (v). Each is parsed,
// simplified by sympy and printed in one canonical spelling, which parses back
// to the same expression.

// CHECK-LABEL: builtin.module {

// Precedence: `*`, `floordiv`, `ceildiv` and `mod` bind tighter than `+` and
// `-`; both levels associate to the left; parentheses group.
// CHECK-NEXT: "test.expr"() {e = #sym.expr<d0 * 8 + d1>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<d0 * 8 + d1>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<d0 + 8>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<d0 * 8 + 8>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<14>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<20>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<d0 - d1 - s0>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<d0 - d1 + s0>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<(d0 + s0) * (d1 + 1)>} : () -> ()
"test.expr"() {e = #sym.expr<d0 * 8 + d1>} : () -> ()
"test.expr"() {e = #sym.expr<d1 + 8 * d0>} : () -> ()
"test.expr"() {e = #sym.expr<d0 + 1 * 8>} : () -> ()
"test.expr"() {e = #sym.expr<(d0 + 1) * 8>} : () -> ()
"test.expr"() {e = #sym.expr<2 + 3 * 4>} : () -> ()
"test.expr"() {e = #sym.expr<(2 + 3) * 4>} : () -> ()
"test.expr"() {e = #sym.expr<d0 - d1 - s0>} : () -> ()
"test.expr"() {e = #sym.expr<d0 - (d1 - s0)>} : () -> ()
"test.expr"() {e = #sym.expr<(d0 + s0) * (d1 + 1)>} : () -> ()

// floordiv rounds down, ceildiv rounds up, mod takes the sign of the divisor;
// constant operands fold.
// CHECK-NEXT: "test.expr"() {e = #sym.expr<(s0 + 1) floordiv 2>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<(d0 floordiv 4) * 4>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<d0>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<d0 floordiv (s0 * 4)>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<d0 floordiv 2 floordiv 3>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<d0 floordiv (d1 floordiv 2)>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<(d0 + 7) ceildiv 8>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<d0 mod 8>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<d0 mod (s0 + 1)>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<(d0 floordiv 8) * 8 + d0 mod 8>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<s0>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<3>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<-4>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<4>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<-3>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<2>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<-2>} : () -> ()
// A leading minus binds to its first operand, so a negated division prints
// in parentheses (the padding that rounds s0 up to a multiple of 16).
// CHECK-NEXT: "test.expr"() {e = #sym.expr<-(s0 mod 16) + 16>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<-(d0 floordiv 2) * 3 + s0>} : () -> ()
"test.expr"() {e = #sym.expr<(s0 + 1) floordiv 2>} : () -> ()
"test.expr"() {e = #sym.expr<d0 floordiv 4 * 4>} : () -> ()
"test.expr"() {e = #sym.expr<d0 * 4 floordiv 4>} : () -> ()
"test.expr"() {e = #sym.expr<d0 floordiv (4 * s0)>} : () -> ()
"test.expr"() {e = #sym.expr<(d0 floordiv 2) floordiv 3>} : () -> ()
"test.expr"() {e = #sym.expr<d0 floordiv (d1 floordiv 2)>} : () -> ()
"test.expr"() {e = #sym.expr<(d0 + 7) ceildiv 8>} : () -> ()
"test.expr"() {e = #sym.expr<d0 mod 8>} : () -> ()
"test.expr"() {e = #sym.expr<d0 mod (s0 + 1)>} : () -> ()
"test.expr"() {e = #sym.expr<d0 mod 8 + d0 floordiv 8 * 8>} : () -> ()
"test.expr"() {e = #sym.expr<s0 floordiv 1>} : () -> ()
"test.expr"() {e = #sym.expr<7 floordiv 2>} : () -> ()
"test.expr"() {e = #sym.expr<-7 floordiv 2>} : () -> ()
"test.expr"() {e = #sym.expr<7 ceildiv 2>} : () -> ()
"test.expr"() {e = #sym.expr<-7 ceildiv 2>} : () -> ()
"test.expr"() {e = #sym.expr<-7 mod 3>} : () -> ()
"test.expr"() {e = #sym.expr<7 mod -3>} : () -> ()
"test.expr"() {e = #sym.expr<16 - s0 mod 16>} : () -> ()
"test.expr"() {e = #sym.expr<s0 - 3 * (d0 floordiv 2)>} : () -> ()

// min and max take one or more arguments, printed in a sorted order.
// CHECK-NEXT: "test.expr"() {e = #sym.expr<min(4, s0)>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<max(0, d0 - 1)>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<min(16, s0, s1) + 1>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<5>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<s0>} : () -> ()
"test.expr"() {e = #sym.expr<min(s0, 4)>} : () -> ()
"test.expr"() {e = #sym.expr<max(d0 - 1, 0)>} : () -> ()
"test.expr"() {e = #sym.expr<min(s0, s1, 16) + 1>} : () -> ()
"test.expr"() {e = #sym.expr<max(3, 5)>} : () -> ()
"test.expr"() {e = #sym.expr<min(s0 + 1, s0)>} : () -> ()

// Negative terms, unary minus, and terms that cancel or combine.
// CHECK-NEXT: "test.expr"() {e = #sym.expr<-d0>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<-d0 - 1>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<-(d0 floordiv 2)>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<-d0 * 2 + s0>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<-d0 * s0 - 1>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<d0 * (-2)>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<-3>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<3>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<d0 * 2>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<s0 * s0>} : () -> ()
// CHECK-NEXT: "test.expr"() {e = #sym.expr<0>} : () -> ()
"test.expr"() {e = #sym.expr<-d0>} : () -> ()
"test.expr"() {e = #sym.expr<-(d0 + 1)>} : () -> ()
"test.expr"() {e = #sym.expr<-(d0 floordiv 2)>} : () -> ()
"test.expr"() {e = #sym.expr<s0 - 2 * d0>} : () -> ()
"test.expr"() {e = #sym.expr<-d0 * s0 - 1>} : () -> ()
"test.expr"() {e = #sym.expr<d0 * -2>} : () -> ()
"test.expr"() {e = #sym.expr<-3>} : () -> ()
"test.expr"() {e = #sym.expr<- -3>} : () -> ()
"test.expr"() {e = #sym.expr<d0 + d0>} : () -> ()
"test.expr"() {e = #sym.expr<s0 * s0>} : () -> ()
"test.expr"() {e = #sym.expr<d0 - d0>} : () -> ()

// Every kind of name, and expressions inside ptensor sizes.
// CHECK-NEXT: "test.expr"() {e = #sym.expr<d2 + r0 * s1 + v0>} : () -> ()
// CHECK-NEXT: "test.expr"() {t = !ptensor.tensor<[s0 + 1, s1 * 2, s0 floordiv 2], f32>} : () -> ()
// CHECK-NEXT: }
"test.expr"() {e = #sym.expr<r0 * s1 + v0 + d2>} : () -> ()
"test.expr"() {t = !ptensor.tensor<[s0 + 1, 2 * s1, s0 floordiv 2], f32>} : () -> ()
