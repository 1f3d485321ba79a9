// RUN: permalloy-opt %s --allow-unregistered-dialect --split-input-file --parsing-diagnostics | filecheck %s
// Every case is rejected: no split prints a module that parsed.
// RUN: permalloy-opt %s --allow-unregistered-dialect --split-input-file --parsing-diagnostics | not grep "^builtin.module"

// Malformed `#sym.expr<...>` texts, each reported at its file:line:col.

// Unknown names: only s<N>, d<N>, r<N> and v<N> exist.

// CHECK: sym_invalid.mlir:[[# @LINE + 3]]:32
// CHECK-NEXT: "test.expr"() {e = #sym.expr<n0>} : () -> ()
// CHECK: unknown name 'n0' in an integer expression: names are s<N> (size symbols), d<N> (parallel indices), r<N> (reduction indices) or v<N> (index values)
"test.expr"() {e = #sym.expr<n0>} : () -> ()

// -----

// CHECK: sym_invalid.mlir:[[# @LINE + 2]]:
// CHECK: unknown name 's' in an integer expression
"test.expr"() {e = #sym.expr<s>} : () -> ()

// -----

// CHECK: sym_invalid.mlir:[[# @LINE + 2]]:
// CHECK: unknown name 'true' in an integer expression
"test.expr"() {e = #sym.expr<true>} : () -> ()

// -----

// Operators are keywords between operands, not names.
// CHECK: sym_invalid.mlir:[[# @LINE + 2]]:
// CHECK: unknown name 'floordiv' in an integer expression
"test.expr"() {e = #sym.expr<floordiv 2>} : () -> ()

// -----

// CHECK: sym_invalid.mlir:[[# @LINE + 2]]:33
// CHECK: '>' expected
"test.expr"() {e = #sym.expr<d0 / 2>} : () -> ()

// -----

// Missing operands and unbalanced parentheses.

// CHECK: sym_invalid.mlir:[[# @LINE + 2]]:30
// CHECK: expected an integer expression (an integer, a symbol such as s0 or d0, '-', '(' or min/max)
"test.expr"() {e = #sym.expr<>} : () -> ()

// -----

// CHECK: sym_invalid.mlir:[[# @LINE + 2]]:35
// CHECK: expected an integer expression
"test.expr"() {e = #sym.expr<d0 * >} : () -> ()

// -----

// CHECK: sym_invalid.mlir:[[# @LINE + 2]]:35
// CHECK: expected an integer expression
"test.expr"() {e = #sym.expr<d0 + + 1>} : () -> ()

// -----

// CHECK: sym_invalid.mlir:[[# @LINE + 2]]:37
// CHECK: Expected ')' to close a parenthesized expression
"test.expr"() {e = #sym.expr<(d0 + 1>} : () -> ()

// -----

// CHECK: sym_invalid.mlir:[[# @LINE + 2]]:33
// CHECK: '>' expected
"test.expr"() {e = #sym.expr<d0 d1>} : () -> ()

// -----

// CHECK: sym_invalid.mlir:[[# @LINE + 2]]:30
// CHECK: expected an integer expression
"test.expr"() {e = #sym.expr<1.5>} : () -> ()

// -----

// min and max need parenthesized arguments.

// CHECK: sym_invalid.mlir:[[# @LINE + 2]]:33
// CHECK: '(' expected
"test.expr"() {e = #sym.expr<min>} : () -> ()

// -----

// CHECK: sym_invalid.mlir:[[# @LINE + 2]]:37
// CHECK: expected an integer expression
"test.expr"() {e = #sym.expr<max(d0,)>} : () -> ()

// -----

// Division by zero is reported where the attribute starts.

// CHECK: sym_invalid.mlir:[[# @LINE + 2]]:20
// CHECK: floordiv by zero in an index expression
"test.expr"() {e = #sym.expr<d0 floordiv 0>} : () -> ()

// -----

// CHECK: sym_invalid.mlir:[[# @LINE + 2]]:20
// CHECK: ceildiv by zero in an index expression
"test.expr"() {e = #sym.expr<d0 ceildiv 0>} : () -> ()

// -----

// CHECK: sym_invalid.mlir:[[# @LINE + 2]]:20
// CHECK: Modulo by zero
"test.expr"() {e = #sym.expr<d0 mod 0>} : () -> ()
