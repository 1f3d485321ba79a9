// RUN: permalloy-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s
// Every case is rejected: no split prints a module that verified.
// RUN: permalloy-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | not grep "^builtin.module"

// Every message of the ptensor verifiers (and of the custom parsers), one case
// per split. Parse-time errors carry their file:line:col.

// Types

// CHECK: ptensor_invalid.mlir:[[# @LINE + 2]]:
// CHECK: ptensor element type must be one of f16, bf16, f32, f64, i1, i8, ui8, i16, i32, i64, got index
func.func @f(%x: !ptensor.tensor<[4], index>) {
  func.return
}

// -----

// CHECK: ptensor_invalid.mlir:[[# @LINE + 2]]:
// CHECK: size -1 is negative
func.func @f(%x: !ptensor.tensor<[-1], f32>) {
  func.return
}

// -----

// CHECK: ptensor_invalid.mlir:[[# @LINE + 2]]:
// CHECK: size 'd0 + s0' may only use size symbols (s0, s1, ...), not d0
func.func @f(%x: !ptensor.tensor<[s0 + d0], f32>) {
  func.return
}

// -----

// CHECK: ptensor_invalid.mlir:[[# @LINE + 2]]:
// CHECK: unknown name 'n' in an integer expression
func.func @f(%x: !ptensor.tensor<[n], f32>) {
  func.return
}

// -----

// Shared checks: result shapes, element types, broadcasting

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: ptensor.unary: result shape [5] should be [4]
  %0 = ptensor.unary neg %x : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[5], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: ptensor.unary: element types differ (f32 and f16); insert a ptensor.cast
  %0 = ptensor.unary neg %x : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f16>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>, %y: !ptensor.tensor<[3], f32>) {
  // CHECK: Operation does not verify: shapes {{.*}} do not broadcast: size 4 against 3
  %0 = ptensor.binary add %x, %y : !ptensor.tensor<[4], f32>, !ptensor.tensor<[3], f32> -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

// ptensor.unary

func.func @f(%x: !ptensor.tensor<[4], i32>) {
  // CHECK: Operation does not verify: ptensor.unary exp takes a float tensor, got i32
  %0 = ptensor.unary exp %x : !ptensor.tensor<[4], i32> -> !ptensor.tensor<[4], i32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: ptensor.unary bitwise_not takes an integer or bool tensor
  %0 = ptensor.unary bitwise_not %x : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: ptensor.unary isnan gives an i1 tensor, got f32
  %0 = ptensor.unary isnan %x : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], i32>) {
  // CHECK: Operation does not verify: ptensor.unary logical_not gives an i1 tensor, got i32
  %0 = ptensor.unary logical_not %x : !ptensor.tensor<[4], i32> -> !ptensor.tensor<[4], i32>
  func.return
}

// -----

// ptensor.binary

func.func @f(%x: !ptensor.tensor<[4], f32>, %y: !ptensor.tensor<[4], f64>) {
  // CHECK: Operation does not verify: ptensor.binary: element types differ (f32 and f64); insert a ptensor.cast
  %0 = ptensor.binary add %x, %y : !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f64> -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[2, 4], f32>, %y: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: ptensor.binary: result shape [4] should be [2, 4]
  %0 = ptensor.binary mul %x, %y : !ptensor.tensor<[2, 4], f32>, !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], i32>) {
  // CHECK: Operation does not verify: ptensor.binary pow takes floats, got i32
  %0 = ptensor.binary pow %x, %x : !ptensor.tensor<[4], i32>, !ptensor.tensor<[4], i32> -> !ptensor.tensor<[4], i32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: ptensor.binary bitwise_and takes integers or bools, got f32
  %0 = ptensor.binary bitwise_and %x, %x : !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], i8>) {
  // CHECK: Operation does not verify: ptensor.binary logical_or takes i1, got i8
  %0 = ptensor.binary logical_or %x, %x : !ptensor.tensor<[4], i8>, !ptensor.tensor<[4], i8> -> !ptensor.tensor<[4], i8>
  func.return
}

// -----

// ptensor.compare

func.func @f(%x: !ptensor.tensor<[4], f32>, %y: !ptensor.tensor<[4], i32>) {
  // CHECK: Operation does not verify: ptensor.compare: element types differ (f32 and i32); insert a ptensor.cast
  %0 = ptensor.compare eq %x, %y : !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], i32> -> !ptensor.tensor<[4], i1>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: ptensor.compare gives an i1 tensor, got f32
  %0 = ptensor.compare ne %x, %x : !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[3, 1], f32>, %y: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: ptensor.compare: result shape [4] should be [3, 4]
  %0 = ptensor.compare gt %x, %y : !ptensor.tensor<[3, 1], f32>, !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], i1>
  func.return
}

// -----

// ptensor.where

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: ptensor.where: the condition must be i1, got f32
  %0 = ptensor.where %x, %x, %x : !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%c: !ptensor.tensor<[4], i1>, %x: !ptensor.tensor<[4], f32>, %y: !ptensor.tensor<[4], f16>) {
  // CHECK: Operation does not verify: ptensor.where: element types differ (f32 and f16); insert a ptensor.cast
  %0 = ptensor.where %c, %x, %y : !ptensor.tensor<[4], i1>, !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f16> -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%c: !ptensor.tensor<[2, 1], i1>, %x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: ptensor.where: result shape [4] should be [2, 4]
  %0 = ptensor.where %c, %x, %x : !ptensor.tensor<[2, 1], i1>, !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

// ptensor.cast

func.func @f(%x: !ptensor.tensor<[s0, 4], f32>) {
  // CHECK: Operation does not verify: ptensor.cast: result shape [s0, 2] should be [s0, 4]
  %0 = ptensor.cast %x : !ptensor.tensor<[s0, 4], f32> -> !ptensor.tensor<[s0, 2], f16>
  func.return
}

// -----

// ptensor.full

func.func @f() {
  // CHECK: Operation does not verify: ptensor.full of a float tensor needs a float value
  %0 = "ptensor.full"() <{value = 1 : i64}> : () -> !ptensor.tensor<[2], f32>
  func.return
}

// -----

func.func @f() {
  // CHECK: ptensor_invalid.mlir:{{[0-9]+}}:{{[0-9]+}}
  // CHECK: ptensor.full gives a !ptensor.tensor
  %0 = ptensor.full 1.0 : tensor<2xf32>
  func.return
}

// -----

// ptensor.constant

func.func @f() {
  // CHECK: Operation does not verify: ptensor.constant: the value must have a builtin tensor type
  %0 = ptensor.constant dense<[1.0, 2.0]> : vector<2xf32> -> !ptensor.tensor<[2], f32>
  func.return
}

// -----

func.func @f() {
  // CHECK: Operation does not verify: ptensor.constant: the value's shape [2] differs from the result's [3]
  %0 = ptensor.constant dense<[1.0, 2.0]> : tensor<2xf32> -> !ptensor.tensor<[3], f32>
  func.return
}

// -----

func.func @f() {
  // CHECK: Operation does not verify: ptensor.constant: the value's shape [2] differs from the result's [s0]
  %0 = ptensor.constant dense<[1.0, 2.0]> : tensor<2xf32> -> !ptensor.tensor<[s0], f32>
  func.return
}

// -----

func.func @f() {
  // CHECK: Operation does not verify: ptensor.constant: the value's element type differs from the result's
  %0 = ptensor.constant dense<[1.0, 2.0]> : tensor<2xf64> -> !ptensor.tensor<[2], f32>
  func.return
}

// -----

// ptensor.iota and ptensor.rand

func.func @f() {
  // CHECK: Operation does not verify: ptensor.iota gives a 1-D tensor
  %0 = ptensor.iota start 0 step 1 : !ptensor.tensor<[2, 2], i64>
  func.return
}

// -----

func.func @f() {
  // CHECK: ptensor_invalid.mlir:{{[0-9]+}}:{{[0-9]+}}
  // CHECK: ptensor.iota gives a !ptensor.tensor
  %0 = ptensor.iota start 0 step 1 : tensor<4xi64>
  func.return
}

// -----

func.func @f() {
  // CHECK: Operation does not verify: ptensor.rand gives a float tensor
  %0 = ptensor.rand uniform : !ptensor.tensor<[4], i32>
  func.return
}

// -----

// ptensor.reduce

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: reduction dimension 2 is out of range for rank 2
  %0 = ptensor.reduce sum %x dims [2] : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: reduction dimensions [1, 1] repeat a dimension
  %0 = ptensor.reduce sum %x dims [1, 1] : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.reduce: result shape [4] should be [4, 1]
  %0 = ptensor.reduce sum %x dims [1] keepdim : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.reduce argmax reduces one dimension
  %0 = ptensor.reduce argmax %x dims [0, 1] : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[], i64>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.reduce argmin gives i64
  %0 = ptensor.reduce argmin %x dims [1] : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4], i32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.reduce all gives i1
  %0 = ptensor.reduce all %x dims [1] : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

// ptensor.scan

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: scan dimension 2 is out of range for rank 2
  %0 = ptensor.scan sum %x dim 2 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[], f32>) {
  // CHECK: Operation does not verify: ptensor.scan takes a tensor of at least one dimension
  %0 = ptensor.scan sum %x dim 0 : !ptensor.tensor<[], f32> -> !ptensor.tensor<[], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.scan: result shape [4] should be [4, 8]
  %0 = ptensor.scan max %x dim 1 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.scan argmax gives i64
  %0 = ptensor.scan argmax %x dim 1 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], i32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], i64>) {
  // CHECK: Operation does not verify: ptensor.scan logsumexp takes a float tensor
  %0 = ptensor.scan logsumexp %x dim 1 : !ptensor.tensor<[4, 8], i64> -> !ptensor.tensor<[4, 8], i64>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], i32>) {
  // CHECK: Operation does not verify: ptensor.scan: element types differ (i32 and i64); insert a ptensor.cast
  %0 = ptensor.scan sum %x dim 0 : !ptensor.tensor<[4, 8], i32> -> !ptensor.tensor<[4, 8], i64>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.reduce: element types differ (f32 and f64); insert a ptensor.cast
  %0 = ptensor.reduce prod %x dims [1] : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4], f64>
  func.return
}

// -----

// Views

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.reshape: [4, 8] and [30] have different numbers of elements
  %0 = ptensor.reshape %x : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[30], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.reshape: element types differ (f32 and f16); insert a ptensor.cast
  %0 = ptensor.reshape %x : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[32], f16>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.permute: [0, 0] is not a permutation of 2 dimensions
  %0 = ptensor.permute %x [0, 0] : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.permute: result shape [4, 8] should be [8, 4]
  %0 = ptensor.permute %x [1, 0] : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[1, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.expand cannot remove dimensions
  %0 = ptensor.expand %x : !ptensor.tensor<[1, 8], f32> -> !ptensor.tensor<[8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[1, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.expand: dimension 1 of size 8 cannot expand to 16
  %0 = ptensor.expand %x : !ptensor.tensor<[1, 8], f32> -> !ptensor.tensor<[4, 16], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: slice dimension 2 is out of range for rank 2
  %0 = ptensor.slice %x dim 2 start 0 end 1 step 1 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.slice: step must be positive, got 0
  %0 = ptensor.slice %x dim 1 start 0 end 8 step 0 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.slice: result shape [4, 4] should be [4, 3]
  %0 = ptensor.slice %x dim 1 start 2 end 8 step 2 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[s0], f32>) {
  // CHECK: Operation does not verify: ptensor.slice: result shape [s0] should be [s0 - 1]
  %0 = ptensor.slice %x dim 0 start 1 end s0 step 1 : !ptensor.tensor<[s0], f32> -> !ptensor.tensor<[s0], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[8], f32>) {
  // CHECK: Operation does not verify: select dimension 1 is out of range for rank 1
  %0 = ptensor.select %x dim 1 index 0 : !ptensor.tensor<[8], f32> -> !ptensor.tensor<[], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[8], f32>) {
  // CHECK: Operation does not verify: ptensor.select: index 8 is out of range for size 8
  %0 = ptensor.select %x dim 0 index 8 : !ptensor.tensor<[8], f32> -> !ptensor.tensor<[], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.select: result shape [4, 8] should be [8]
  %0 = ptensor.select %x dim 0 index 1 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 1], f32>) {
  // CHECK: Operation does not verify: squeezed dimension 3 is out of range for rank 2
  %0 = ptensor.squeeze %x dims [3] : !ptensor.tensor<[4, 1], f32> -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 1], f32>) {
  // CHECK: Operation does not verify: ptensor.squeeze: dimension 0 has size 4, not 1
  %0 = ptensor.squeeze %x dims [0] : !ptensor.tensor<[4, 1], f32> -> !ptensor.tensor<[1], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 1], f32>) {
  // CHECK: Operation does not verify: ptensor.squeeze: result shape [4, 1] should be [4]
  %0 = ptensor.squeeze %x dims [1] : !ptensor.tensor<[4, 1], f32> -> !ptensor.tensor<[4, 1], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.unsqueeze: dimension 3 is out of range for rank 2
  %0 = ptensor.unsqueeze %x dim 3 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8, 1], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.unsqueeze: result shape [4, 8, 1] should be [1, 4, 8]
  %0 = ptensor.unsqueeze %x dim 0 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8, 1], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.as_strided: 1 strides for a result of rank 2
  %0 = ptensor.as_strided %x strides [1] offset 0 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.as_strided: element types differ (f32 and i32); insert a ptensor.cast
  %0 = ptensor.as_strided %x strides [8, 1] offset 0 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], i32>
  func.return
}

// -----

// ptensor.cat

func.func @f() {
  // CHECK: Operation does not verify: ptensor.cat needs at least one input
  %0 = "ptensor.cat"() <{dim = 0 : i64}> : () -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: concatenation dimension 1 is out of range for rank 1
  %0 = ptensor.cat %x, %x dim 1 : !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32> -> !ptensor.tensor<[8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>, %y: !ptensor.tensor<[1, 4], f32>) {
  // CHECK: Operation does not verify: ptensor.cat: inputs differ in rank
  %0 = ptensor.cat %x, %y dim 0 : !ptensor.tensor<[4], f32>, !ptensor.tensor<[1, 4], f32> -> !ptensor.tensor<[8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[2, 4], f32>, %y: !ptensor.tensor<[2, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.cat: dimension 1 has size 4, expected 8
  %0 = ptensor.cat %x, %y dim 0 : !ptensor.tensor<[2, 4], f32>, !ptensor.tensor<[2, 8], f32> -> !ptensor.tensor<[4, 8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[2, 4], f32>, %y: !ptensor.tensor<[s0, 4], f32>) {
  // CHECK: Operation does not verify: ptensor.cat: the result's dimension 0 should have size s0 + 2
  %0 = ptensor.cat %x, %y dim 0 : !ptensor.tensor<[2, 4], f32>, !ptensor.tensor<[s0, 4], f32> -> !ptensor.tensor<[s0, 4], f32>
  func.return
}

// -----

// ptensor.pad

func.func @f(%x: !ptensor.tensor<[4, 4], f32>) {
  // CHECK: Operation does not verify: ptensor.pad: low and high need 2 entries each
  %0 = ptensor.pad %x constant 0.0 low [1] high [1] : !ptensor.tensor<[4, 4], f32> -> !ptensor.tensor<[6, 6], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: ptensor.pad: a value is given exactly for constant padding
  %0 = "ptensor.pad"(%x) <{mode = #ptensor<pad_mode reflect>, low = #ptensor.exprs[1], high = #ptensor.exprs[1], value = 0.0 : f64}> : (!ptensor.tensor<[4], f32>) -> !ptensor.tensor<[6], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[s0], f32>) {
  // CHECK: Operation does not verify: ptensor.pad: reflect padding takes integer amounts
  %0 = ptensor.pad %x reflect low [0] high [16 - s0 mod 16] : !ptensor.tensor<[s0], f32> -> !ptensor.tensor<[s0 + 16 - s0 mod 16], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: ptensor.pad: result shape [6] should be [7]
  %0 = ptensor.pad %x replicate low [1] high [2] : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[6], f32>
  func.return
}

// -----

// ptensor.gather

func.func @f(%x: !ptensor.tensor<[4, 8], f32>, %i: !ptensor.tensor<[4, 2], i64>) {
  // CHECK: Operation does not verify: gather dimension 2 is out of range for rank 2
  %0 = ptensor.gather %x, %i dim 2 : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 2], i64> -> !ptensor.tensor<[4, 2], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>, %i: !ptensor.tensor<[4, 2], f32>) {
  // CHECK: Operation does not verify: ptensor.gather: the index must be integer
  %0 = ptensor.gather %x, %i dim 1 : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 2], f32> -> !ptensor.tensor<[4, 2], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>, %i: !ptensor.tensor<[2], i64>) {
  // CHECK: Operation does not verify: ptensor.gather: index and input differ in rank
  %0 = ptensor.gather %x, %i dim 1 : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[2], i64> -> !ptensor.tensor<[2], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>, %i: !ptensor.tensor<[4, 2], i64>) {
  // CHECK: Operation does not verify: ptensor.gather: result shape [4, 8] should be [4, 2]
  %0 = ptensor.gather %x, %i dim 1 : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 2], i64> -> !ptensor.tensor<[4, 8], f32>
  func.return
}

// -----

// ptensor.index

func.func @f(%x: !ptensor.tensor<[4, 8], f32>, %i: !ptensor.tensor<[2], i64>) {
  // CHECK: Operation does not verify: ptensor.index: one index tensor per indexed dimension
  %0 = ptensor.index %x[%i] dims [0, 1] : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[2], i64> -> !ptensor.tensor<[2], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>, %i: !ptensor.tensor<[2], i64>) {
  // CHECK: Operation does not verify: ptensor.index: dims must be increasing
  %0 = ptensor.index %x[%i, %i] dims [1, 0] : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[2], i64>, !ptensor.tensor<[2], i64> -> !ptensor.tensor<[2], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>, %i: !ptensor.tensor<[2], i64>) {
  // CHECK: Operation does not verify: indexed dimension 2 is out of range for rank 2
  %0 = ptensor.index %x[%i] dims [2] : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[2], i64> -> !ptensor.tensor<[4, 8, 2], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>, %i: !ptensor.tensor<[2], f32>) {
  // CHECK: Operation does not verify: ptensor.index: index tensors must be integer, got f32
  %0 = ptensor.index %x[%i] dims [0] : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[2], f32> -> !ptensor.tensor<[2, 8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>, %i: !ptensor.tensor<[2], i64>) {
  // CHECK: Operation does not verify: ptensor.index: result shape [2, 4] should be [4, 2]
  %0 = ptensor.index %x[%i] dims [1] : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[2], i64> -> !ptensor.tensor<[2, 4], f32>
  func.return
}

// -----

// ptensor.scatter_add

func.func @f(%x: !ptensor.tensor<[8], f32>, %i: !ptensor.tensor<[2], i64>, %s: !ptensor.tensor<[2], f32>) {
  // CHECK: Operation does not verify: scatter dimension 1 is out of range for rank 1
  %0 = ptensor.scatter_add %x, %i, %s dim 1 : !ptensor.tensor<[8], f32>, !ptensor.tensor<[2], i64>, !ptensor.tensor<[2], f32> -> !ptensor.tensor<[8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[8], f32>, %i: !ptensor.tensor<[2], f32>, %s: !ptensor.tensor<[2], f32>) {
  // CHECK: Operation does not verify: ptensor.scatter_add: the index must be integer
  %0 = ptensor.scatter_add %x, %i, %s dim 0 : !ptensor.tensor<[8], f32>, !ptensor.tensor<[2], f32>, !ptensor.tensor<[2], f32> -> !ptensor.tensor<[8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[8], f32>, %i: !ptensor.tensor<[1, 2], i64>, %s: !ptensor.tensor<[2], f32>) {
  // CHECK: Operation does not verify: ptensor.scatter_add: input, index and source differ in rank
  %0 = ptensor.scatter_add %x, %i, %s dim 0 : !ptensor.tensor<[8], f32>, !ptensor.tensor<[1, 2], i64>, !ptensor.tensor<[2], f32> -> !ptensor.tensor<[8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[8], f32>, %i: !ptensor.tensor<[2], i64>, %s: !ptensor.tensor<[2], f32>) {
  // CHECK: Operation does not verify: ptensor.scatter_add: result shape [2] should be [8]
  %0 = ptensor.scatter_add %x, %i, %s dim 0 : !ptensor.tensor<[8], f32>, !ptensor.tensor<[2], i64>, !ptensor.tensor<[2], f32> -> !ptensor.tensor<[2], f32>
  func.return
}

// -----

// ptensor.index_put

func.func @f(%x: !ptensor.tensor<[4, 8], f32>, %i: !ptensor.tensor<[2], i64>, %v: !ptensor.tensor<[8], f32>) {
  // CHECK: Operation does not verify: ptensor.index_put: one index tensor per indexed dimension
  %0 = ptensor.index_put %x[%i] dims [0, 1], %v : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8], f32>, [!ptensor.tensor<[2], i64>] -> !ptensor.tensor<[4, 8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>, %i: !ptensor.tensor<[2], i64>, %v: !ptensor.tensor<[8], f32>) {
  // CHECK: Operation does not verify: indexed dimension 5 is out of range for rank 2
  %0 = ptensor.index_put %x[%i] dims [5], %v : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8], f32>, [!ptensor.tensor<[2], i64>] -> !ptensor.tensor<[4, 8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>, %i: !ptensor.tensor<[2], i64>, %v: !ptensor.tensor<[3], f32>) {
  // CHECK: Operation does not verify: ptensor.index_put: values: shapes {{.*}} do not broadcast: size 3 against 8
  %0 = ptensor.index_put %x[%i] dims [0], %v : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[3], f32>, [!ptensor.tensor<[2], i64>] -> !ptensor.tensor<[4, 8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>, %i: !ptensor.tensor<[2], i64>, %v: !ptensor.tensor<[8], f32>) {
  // CHECK: Operation does not verify: ptensor.index_put: result shape [2, 8] should be [4, 8]
  %0 = ptensor.index_put %x[%i] dims [0], %v accumulate : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8], f32>, [!ptensor.tensor<[2], i64>] -> !ptensor.tensor<[2, 8], f32>
  func.return
}

// -----

// Library ops

func.func @f(%x: !ptensor.tensor<[4, 4], i32>) {
  // CHECK: Operation does not verify: ptensor.mm takes float tensors
  %0 = ptensor.mm %x, %x : !ptensor.tensor<[4, 4], i32>, !ptensor.tensor<[4, 4], i32> -> !ptensor.tensor<[4, 4], i32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 4], f32>, %y: !ptensor.tensor<[4, 4], f16>) {
  // CHECK: Operation does not verify: ptensor.mm: element types differ (f32 and f16); insert a ptensor.cast
  %0 = ptensor.mm %x, %y : !ptensor.tensor<[4, 4], f32>, !ptensor.tensor<[4, 4], f16> -> !ptensor.tensor<[4, 4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[2, 4, 4], f32>) {
  // CHECK: Operation does not verify: ptensor.mm takes 2-D tensors
  %0 = ptensor.mm %x, %x : !ptensor.tensor<[2, 4, 4], f32>, !ptensor.tensor<[2, 4, 4], f32> -> !ptensor.tensor<[2, 4, 4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.mm: inner sizes 8 and 4 differ
  %0 = ptensor.mm %x, %x : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], f32>, %y: !ptensor.tensor<[8, 16], f32>) {
  // CHECK: Operation does not verify: ptensor.mm: result shape [4, 4] should be [4, 16]
  %0 = ptensor.mm %x, %y : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8, 16], f32> -> !ptensor.tensor<[4, 4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 4], f32>) {
  // CHECK: Operation does not verify: ptensor.bmm takes 3-D tensors
  %0 = ptensor.bmm %x, %x : !ptensor.tensor<[4, 4], f32>, !ptensor.tensor<[4, 4], f32> -> !ptensor.tensor<[4, 4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[2, 4, 8], f32>, %y: !ptensor.tensor<[3, 8, 4], f32>) {
  // CHECK: Operation does not verify: ptensor.bmm: shapes [2, 4, 8] and [3, 8, 4] do not multiply
  %0 = ptensor.bmm %x, %y : !ptensor.tensor<[2, 4, 8], f32>, !ptensor.tensor<[3, 8, 4], f32> -> !ptensor.tensor<[2, 4, 4], f32>
  func.return
}

// -----

func.func @f(%b: !ptensor.tensor<[4], f32>, %x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: ptensor.addmm takes 2-D matrices
  %0 = ptensor.addmm %b, %x, %x : !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%b: !ptensor.tensor<[8], f32>, %x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.addmm: inner sizes differ
  %0 = ptensor.addmm %b, %x, %x : !ptensor.tensor<[8], f32>, !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>
  func.return
}

// -----

func.func @f(%b: !ptensor.tensor<[3], f32>, %x: !ptensor.tensor<[4, 8], f32>, %y: !ptensor.tensor<[8, 16], f32>) {
  // CHECK: Operation does not verify: ptensor.addmm: bias: shapes {{.*}} do not broadcast: size 3 against 16
  %0 = ptensor.addmm %b, %x, %y : !ptensor.tensor<[3], f32>, !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8, 16], f32> -> !ptensor.tensor<[4, 16], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 4], f32>) {
  // CHECK: Operation does not verify: ptensor.convolution takes an input of rank 3 or more
  %0 = ptensor.convolution %x, %x stride [] padding [] dilation [] groups 1 : !ptensor.tensor<[4, 4], f32>, !ptensor.tensor<[4, 4], f32> -> !ptensor.tensor<[4, 4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[1, 3, 8, 8], f32>, %w: !ptensor.tensor<[6, 3, 3], f32>) {
  // CHECK: Operation does not verify: ptensor.convolution: weight rank differs
  %0 = ptensor.convolution %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : !ptensor.tensor<[1, 3, 8, 8], f32>, !ptensor.tensor<[6, 3, 3], f32> -> !ptensor.tensor<[1, 6, 6, 6], f32>
  func.return
}

// -----

func.func @f(%dy: !ptensor.tensor<[1, 6, 8, 8], f32>, %x: !ptensor.tensor<[1, 3, 8, 8], f32>, %w: !ptensor.tensor<[6, 3, 3, 3], f32>) {
  // CHECK: Operation does not verify: ptensor.convolution_backward: output_mask [1, 1, 0] asks for 2 results, not 1
  %0 = ptensor.convolution_backward %dy, %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 output_mask [1, 1, 0] : !ptensor.tensor<[1, 6, 8, 8], f32>, !ptensor.tensor<[1, 3, 8, 8], f32>, !ptensor.tensor<[6, 3, 3, 3], f32> -> !ptensor.tensor<[1, 3, 8, 8], f32>
  func.return
}

// -----

func.func @f(%dy: !ptensor.tensor<[1, 6, 8, 8], f32>, %x: !ptensor.tensor<[1, 3, 8, 8], f32>, %w: !ptensor.tensor<[6, 3, 3, 3], f32>) {
  // CHECK: Operation does not verify: ptensor.convolution_backward: result shape
  %0 = ptensor.convolution_backward %dy, %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 output_mask [0, 0, 1] : !ptensor.tensor<[1, 6, 8, 8], f32>, !ptensor.tensor<[1, 3, 8, 8], f32>, !ptensor.tensor<[6, 3, 3, 3], f32> -> !ptensor.tensor<[3], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[1, 3, 8, 8], f32>, %w: !ptensor.tensor<[6, 3, 3, 3], f32>) {
  // CHECK: Operation does not verify: ptensor.convolution: stride needs 2 entries
  %0 = ptensor.convolution %x, %w stride [1] padding [0, 0] dilation [1, 1] groups 1 : !ptensor.tensor<[1, 3, 8, 8], f32>, !ptensor.tensor<[6, 3, 3, 3], f32> -> !ptensor.tensor<[1, 6, 6, 6], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[1, 3, 8, 8], f32>, %w: !ptensor.tensor<[6, 3, 3, 3], f32>) {
  // CHECK: Operation does not verify: ptensor.convolution: result shape [1, 6, 8, 8] should be [1, 6, 6, 6]
  %0 = ptensor.convolution %x, %w stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : !ptensor.tensor<[1, 3, 8, 8], f32>, !ptensor.tensor<[6, 3, 3, 3], f32> -> !ptensor.tensor<[1, 6, 8, 8], f32>
  func.return
}

// -----

func.func @f(%q: !ptensor.tensor<[16], f32>) {
  // CHECK: Operation does not verify: ptensor.attention: query must have rank 2 or more
  %0 = ptensor.attention %q, %q, %q : !ptensor.tensor<[16], f32>, !ptensor.tensor<[16], f32>, !ptensor.tensor<[16], f32> -> !ptensor.tensor<[16], f32>
  func.return
}

// -----

func.func @f(%q: !ptensor.tensor<[4, 16], f32>, %k: !ptensor.tensor<[1, 4, 16], f32>) {
  // CHECK: Operation does not verify: ptensor.attention: query, key and value differ in rank
  %0 = ptensor.attention %q, %k, %k : !ptensor.tensor<[4, 16], f32>, !ptensor.tensor<[1, 4, 16], f32>, !ptensor.tensor<[1, 4, 16], f32> -> !ptensor.tensor<[4, 16], f32>
  func.return
}

// -----

func.func @f(%q: !ptensor.tensor<[4, 16], f32>, %k: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.attention: query and key differ in their last size
  %0 = ptensor.attention %q, %k, %k : !ptensor.tensor<[4, 16], f32>, !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>
  func.return
}

// -----

func.func @f(%q: !ptensor.tensor<[4, 16], f32>, %v: !ptensor.tensor<[5, 16], f32>) {
  // CHECK: Operation does not verify: ptensor.attention: key and value differ in sequence length
  %0 = ptensor.attention %q, %q, %v : !ptensor.tensor<[4, 16], f32>, !ptensor.tensor<[4, 16], f32>, !ptensor.tensor<[5, 16], f32> -> !ptensor.tensor<[4, 16], f32>
  func.return
}

// -----

func.func @f(%q: !ptensor.tensor<[4, 16], f32>) {
  // CHECK: Operation does not verify: ptensor.attention: kernel must be one of triton, measured where given, got "cuda"
  %0 = ptensor.attention %q, %q, %q scale 1.0 {kernel = "cuda"} : !ptensor.tensor<[4, 16], f32>, !ptensor.tensor<[4, 16], f32>, !ptensor.tensor<[4, 16], f32> -> !ptensor.tensor<[4, 16], f32>
  func.return
}

// -----

func.func @f(%q: !ptensor.tensor<[4, 16], f32>, %v: !ptensor.tensor<[4, 32], f32>) {
  // CHECK: Operation does not verify: ptensor.attention: result shape [4, 16] should be [4, 32]
  %0 = ptensor.attention %q, %q, %v : !ptensor.tensor<[4, 16], f32>, !ptensor.tensor<[4, 16], f32>, !ptensor.tensor<[4, 32], f32> -> !ptensor.tensor<[4, 16], f32>
  func.return
}

// -----

// ptensor.fallback

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: ptensor.fallback: #ptensor.operand<1> refers past the 1 operands
  %0 = ptensor.fallback "aten.foo.default"(%x) [#ptensor.operand<0>, #ptensor.operand<1>] : (!ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: ptensor.fallback: every operand must appear in the arguments
  %0 = ptensor.fallback "aten.foo.default"(%x, %x) [#ptensor.operand<0>] : (!ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 2], f32>) {
  // CHECK: Operation does not verify: ptensor.fallback: orders gives 2 orders for 1 results
  %0 = ptensor.fallback "aten.foo.default"(%x) [#ptensor.operand<0>] orders [array<i64: 1, 0>, array<i64>] : (!ptensor.tensor<[4, 2], f32>) -> !ptensor.tensor<[4, 2], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 2], f32>) {
  // CHECK: Operation does not verify: ptensor.fallback: order [1, 1] of result 0 is not a permutation of its 2 dimensions
  %0 = ptensor.fallback "aten.foo.default"(%x) [#ptensor.operand<0>] orders [array<i64: 1, 1>] : (!ptensor.tensor<[4, 2], f32>) -> !ptensor.tensor<[4, 2], f32>
  func.return
}

// -----

// Custom syntax: operand and result types

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: ptensor_invalid.mlir:[[# @LINE + 2]]:
  // CHECK: expected 1 operand types, got 2
  %0 = ptensor.slice %x dim 0 start 0 end 2 step 1 : !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32> -> !ptensor.tensor<[2], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: ptensor_invalid.mlir:{{[0-9]+}}:{{[0-9]+}}
  // CHECK: expected a !ptensor.tensor result, got tensor<2xf32>
  %0 = ptensor.select %x dim 0 index 1 : !ptensor.tensor<[4], f32> -> tensor<2xf32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4], f32>) {
  // CHECK: ptensor_invalid.mlir:[[# @LINE + 2]]:
  // CHECK: operand is used with type !ptensor.tensor<[8], f32>, but has been previously used or defined with type !ptensor.tensor<[4], f32>
  %0 = ptensor.as_strided %x strides [1] offset 0 : !ptensor.tensor<[8], f32> -> !ptensor.tensor<[4], f32>
  func.return
}

// -----

// ptensor.embedding_backward

func.func @f(%d: !ptensor.tensor<[4, 64], f32>, %i: !ptensor.tensor<[4], f32>) {
  // CHECK: Operation does not verify: ptensor.embedding_backward: indices are integers
  %0 = ptensor.embedding_backward %d, %i padding -1 : !ptensor.tensor<[4, 64], f32>, !ptensor.tensor<[4], f32> -> !ptensor.tensor<[10, 64], f32>
  func.return
}

// -----

func.func @f(%d: !ptensor.tensor<[4, 64], f32>, %i: !ptensor.tensor<[4], i64>) {
  // CHECK: Operation does not verify: ptensor.embedding_backward: the result is a [num_weights, D] table
  %0 = ptensor.embedding_backward %d, %i padding -1 : !ptensor.tensor<[4, 64], f32>, !ptensor.tensor<[4], i64> -> !ptensor.tensor<[10, 64, 1], f32>
  func.return
}

// -----

func.func @f(%d: !ptensor.tensor<[4, 64], f32>, %i: !ptensor.tensor<[5], i64>) {
  // CHECK: Operation does not verify: ptensor.embedding_backward: grad_output shape [4, 64] should be [5, 64] (the indices' shape, then the table's row width)
  %0 = ptensor.embedding_backward %d, %i padding -1 : !ptensor.tensor<[4, 64], f32>, !ptensor.tensor<[5], i64> -> !ptensor.tensor<[10, 64], f32>
  func.return
}

// -----

func.func @f(%d: !ptensor.tensor<[4, 64], i64>, %i: !ptensor.tensor<[4], i64>) {
  // CHECK: Operation does not verify: ptensor.embedding_backward takes float tensors
  %0 = ptensor.embedding_backward %d, %i padding -1 : !ptensor.tensor<[4, 64], i64>, !ptensor.tensor<[4], i64> -> !ptensor.tensor<[10, 64], i64>
  func.return
}

// -----

// ptensor.fft

func.func @f(%x: !ptensor.tensor<[4, 8], f32>) {
  // CHECK: Operation does not verify: ptensor.fft: result shape [4, 8, 2] should be [4, 5, 2]
  %0 = ptensor.fft r2c %x dims [1] normalization 0 onesided : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8, 2], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8, 2], f32>) {
  // CHECK: Operation does not verify: ptensor.fft: result shape [4, 8] should be [4, 8, 2]
  %0 = ptensor.fft c2c %x dims [1] normalization 0 forward : !ptensor.tensor<[4, 8, 2], f32> -> !ptensor.tensor<[4, 8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8, 3], f32>) {
  // CHECK: Operation does not verify: ptensor.fft c2c: complex tensors are [..., 2] pairs
  %0 = ptensor.fft c2c %x dims [1] normalization 0 : !ptensor.tensor<[4, 8, 3], f32> -> !ptensor.tensor<[4, 8, 3], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8, 2], f32>) {
  // CHECK: Operation does not verify: ptensor.fft dimension 2 is out of range for rank 2
  %0 = ptensor.fft c2c %x dims [2] normalization 0 : !ptensor.tensor<[4, 8, 2], f32> -> !ptensor.tensor<[4, 8, 2], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8, 2], f32>) {
  // CHECK: Operation does not verify: ptensor.fft: normalization 3 is not one of (0, 1, 2)
  %0 = ptensor.fft c2c %x dims [1] normalization 3 : !ptensor.tensor<[4, 8, 2], f32> -> !ptensor.tensor<[4, 8, 2], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8, 2], f32>) {
  // CHECK: Operation does not verify: ptensor.fft: only c2c has a direction (r2c is forwards, c2r backwards)
  %0 = ptensor.fft c2r %x dims [1] normalization 0 forward : !ptensor.tensor<[4, 8, 2], f32> -> !ptensor.tensor<[4, 14], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8, 2], f32>) {
  // CHECK: Operation does not verify: ptensor.fft: only r2c is onesided
  %0 = ptensor.fft c2c %x dims [1] normalization 0 onesided : !ptensor.tensor<[4, 8, 2], f32> -> !ptensor.tensor<[4, 8, 2], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 5, 2], f32>) {
  // CHECK: Operation does not verify: ptensor.fft c2r: input size 4 of dimension 0 should be the result's 3
  %0 = ptensor.fft c2r %x dims [1] normalization 0 : !ptensor.tensor<[4, 5, 2], f32> -> !ptensor.tensor<[3, 8], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[4, 8], i32>) {
  // CHECK: Operation does not verify: ptensor.fft takes float tensors
  %0 = ptensor.fft r2c %x dims [1] normalization 0 : !ptensor.tensor<[4, 8], i32> -> !ptensor.tensor<[4, 8, 2], i32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[2, 8, 5, 5], f32>, %w: !ptensor.tensor<[8, 1, 3, 3], f32>) {
  // CHECK: Operation does not verify: ptensor.convolution: depthwise_tile must be four positive integers, got #ptensor.ints[4, 8, 0, 4]
  %0 = ptensor.convolution %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 {depthwise_tile = #ptensor.ints[4, 8, 0, 4]} : !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[8, 1, 3, 3], f32> -> !ptensor.tensor<[2, 8, 5, 5], f32>
  func.return
}

// -----

func.func @f(%x: !ptensor.tensor<[2, 8, 5, 5], f32>, %w: !ptensor.tensor<[4, 2, 3, 3], f32>) {
  // CHECK: Operation does not verify: ptensor.convolution: depthwise_tile is given only to a 2-d depthwise convolution
  %0 = ptensor.convolution %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 4 {depthwise_tile = #ptensor.ints[4, 8, 32, 4]} : !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[4, 2, 3, 3], f32> -> !ptensor.tensor<[2, 4, 5, 5], f32>
  func.return
}

// -----

func.func @f(%dy: !ptensor.tensor<[2, 8, 5, 5], f32>, %x: !ptensor.tensor<[2, 8, 5, 5], f32>, %w: !ptensor.tensor<[8, 1, 3, 3], f32>) {
  // CHECK: Operation does not verify: ptensor.convolution_backward: depthwise_weight_block must be two positive integers, got #ptensor.ints[32, 0]
  %0 = ptensor.convolution_backward %dy, %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 output_mask [0, 1, 0] {depthwise_weight_block = #ptensor.ints[32, 0]} : !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[8, 1, 3, 3], f32> -> !ptensor.tensor<[8, 1, 3, 3], f32>
  func.return
}

// -----

func.func @f(%dy: !ptensor.tensor<[2, 8, 5, 5], f32>, %x: !ptensor.tensor<[2, 8, 5, 5], f32>, %w: !ptensor.tensor<[8, 1, 3, 3], f32>) {
  // CHECK: Operation does not verify: ptensor.convolution_backward: depthwise_weight_block takes powers of two (channels, warps), got #ptensor.ints[24, 4]
  %0 = ptensor.convolution_backward %dy, %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 output_mask [0, 1, 0] {depthwise_weight_block = #ptensor.ints[24, 4]} : !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[8, 1, 3, 3], f32> -> !ptensor.tensor<[8, 1, 3, 3], f32>
  func.return
}

// -----

func.func @f(%dy: !ptensor.tensor<[2, 8, 5, 5], f32>, %x: !ptensor.tensor<[2, 8, 5, 5], f32>, %w: !ptensor.tensor<[8, 1, 3, 3], f32>) {
  // CHECK: Operation does not verify: ptensor.convolution_backward: depthwise_weight_block is given only to a 2-d depthwise convolution's backward that computes the weight's gradient
  %0 = ptensor.convolution_backward %dy, %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 output_mask [1, 0, 0] {depthwise_weight_block = #ptensor.ints[32, 4]} : !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[2, 8, 5, 5], f32>, !ptensor.tensor<[8, 1, 3, 3], f32> -> !ptensor.tensor<[2, 8, 5, 5], f32>
  func.return
}
