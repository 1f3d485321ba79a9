// RUN: permalloy-opt %s -p pad-products | filecheck %s

// A language model's head: the transposed weight is padded to 50,264 rows
// before its transposition, and the result is the product's leading columns.
// CHECK-LABEL: func.func @vocabulary_head(
// CHECK:         %[[P:.*]] = ptensor.pad %w constant 0.0 low [0, 0] high [7, 0] : !ptensor.tensor<[50257, 768], bf16> -> !ptensor.tensor<[50264, 768], bf16>
// CHECK-NEXT:    %[[T:.*]] = ptensor.permute %[[P]] [1, 0] : !ptensor.tensor<[50264, 768], bf16> -> !ptensor.tensor<[768, 50264], bf16>
// CHECK-NEXT:    %[[Z:.*]] = ptensor.mm %x, %[[T]] : !ptensor.tensor<[4096, 768], bf16>, !ptensor.tensor<[768, 50264], bf16> -> !ptensor.tensor<[4096, 50264], bf16>
// CHECK-NEXT:    %[[Y:.*]] = ptensor.slice %[[Z]] dim 1 start 0 end 50257 step 1 : !ptensor.tensor<[4096, 50264], bf16> -> !ptensor.tensor<[4096, 50257], bf16>
// CHECK-NEXT:    ptensor.reshape %[[Y]]
func.func @vocabulary_head(%x: !ptensor.tensor<[4096, 768], bf16>, %w: !ptensor.tensor<[50257, 768], bf16>) -> !ptensor.tensor<[8, 512, 50257], bf16> {
  %t = ptensor.permute %w [1, 0] : !ptensor.tensor<[50257, 768], bf16> -> !ptensor.tensor<[768, 50257], bf16>
  %y = ptensor.mm %x, %t : !ptensor.tensor<[4096, 768], bf16>, !ptensor.tensor<[768, 50257], bf16> -> !ptensor.tensor<[4096, 50257], bf16>
  %v = ptensor.reshape %y : !ptensor.tensor<[4096, 50257], bf16> -> !ptensor.tensor<[8, 512, 50257], bf16>
  func.return %v : !ptensor.tensor<[8, 512, 50257], bf16>
}

// An unaligned contracted size pads both operands; a bias along the padded
// columns is padded too, and the scales stay.
// CHECK-LABEL: func.func @contraction_and_bias(
// CHECK:         %[[X:.*]] = ptensor.pad %x constant 0.0 low [0, 0] high [0, 7] : !ptensor.tensor<[512, 1001], f16> -> !ptensor.tensor<[512, 1008], f16>
// CHECK-NEXT:    %[[W:.*]] = ptensor.pad %w constant 0.0 low [0, 0] high [7, 7] : !ptensor.tensor<[1001, 1001], f16> -> !ptensor.tensor<[1008, 1008], f16>
// CHECK-NEXT:    %[[T:.*]] = ptensor.permute %[[W]] [1, 0]
// CHECK-NEXT:    %[[B:.*]] = ptensor.pad %bias constant 0.0 low [0] high [7] : !ptensor.tensor<[1001], f16> -> !ptensor.tensor<[1008], f16>
// CHECK-NEXT:    %[[Z:.*]] = ptensor.addmm %[[B]], %[[X]], %[[T]] beta 5.000000e-01 : !ptensor.tensor<[1008], f16>, !ptensor.tensor<[512, 1008], f16>, !ptensor.tensor<[1008, 1008], f16> -> !ptensor.tensor<[512, 1008], f16>
// CHECK-NEXT:    ptensor.slice %[[Z]] dim 1 start 0 end 1001 step 1
func.func @contraction_and_bias(%bias: !ptensor.tensor<[1001], f16>, %x: !ptensor.tensor<[512, 1001], f16>, %w: !ptensor.tensor<[1001, 1001], f16>) -> !ptensor.tensor<[512, 1001], f16> {
  %t = ptensor.permute %w [1, 0] : !ptensor.tensor<[1001, 1001], f16> -> !ptensor.tensor<[1001, 1001], f16>
  %y = ptensor.addmm %bias, %x, %t beta 0.5 : !ptensor.tensor<[1001], f16>, !ptensor.tensor<[512, 1001], f16>, !ptensor.tensor<[1001, 1001], f16> -> !ptensor.tensor<[512, 1001], f16>
  func.return %y : !ptensor.tensor<[512, 1001], f16>
}

// A batched product pads its columns; an aligned column count and an
// unaligned row count need no slice.
// CHECK-LABEL: func.func @batched(
// CHECK:         %[[B:.*]] = ptensor.pad %b constant 0.0 low [0, 0, 0] high [0, 0, 7] : !ptensor.tensor<[4, 256, 601], bf16> -> !ptensor.tensor<[4, 256, 608], bf16>
// CHECK-NEXT:    %[[Z:.*]] = ptensor.bmm %a, %[[B]] : !ptensor.tensor<[4, 513, 256], bf16>, !ptensor.tensor<[4, 256, 608], bf16> -> !ptensor.tensor<[4, 513, 608], bf16>
// CHECK-NEXT:    ptensor.slice %[[Z]] dim 2 start 0 end 601 step 1
func.func @batched(%a: !ptensor.tensor<[4, 513, 256], bf16>, %b: !ptensor.tensor<[4, 256, 601], bf16>) -> !ptensor.tensor<[4, 513, 601], bf16> {
  %y = ptensor.bmm %a, %b : !ptensor.tensor<[4, 513, 256], bf16>, !ptensor.tensor<[4, 256, 601], bf16> -> !ptensor.tensor<[4, 513, 601], bf16>
  func.return %y : !ptensor.tensor<[4, 513, 601], bf16>
}

// Refusals: float32 products, products bound by memory (attention's scores
// over 197 tokens), products with a symbolic row count (a decoding step's
// single row would pay the weight's pad for nothing) and aligned products
// keep their operands.
// CHECK-LABEL: func.func @float32(
// CHECK-NEXT:    ptensor.mm %x, %w
func.func @float32(%x: !ptensor.tensor<[4096, 768], f32>, %w: !ptensor.tensor<[768, 1001], f32>) -> !ptensor.tensor<[4096, 1001], f32> {
  %y = ptensor.mm %x, %w : !ptensor.tensor<[4096, 768], f32>, !ptensor.tensor<[768, 1001], f32> -> !ptensor.tensor<[4096, 1001], f32>
  func.return %y : !ptensor.tensor<[4096, 1001], f32>
}

// CHECK-LABEL: func.func @bound_by_memory(
// CHECK-NEXT:    ptensor.bmm %q, %k
func.func @bound_by_memory(%q: !ptensor.tensor<[192, 197, 64], bf16>, %k: !ptensor.tensor<[192, 64, 197], bf16>) -> !ptensor.tensor<[192, 197, 197], bf16> {
  %y = ptensor.bmm %q, %k : !ptensor.tensor<[192, 197, 64], bf16>, !ptensor.tensor<[192, 64, 197], bf16> -> !ptensor.tensor<[192, 197, 197], bf16>
  func.return %y : !ptensor.tensor<[192, 197, 197], bf16>
}

// CHECK-LABEL: func.func @symbolic_rows(
// CHECK-NEXT:    ptensor.mm %x, %w
func.func @symbolic_rows(%x: !ptensor.tensor<[s0, 768], bf16>, %w: !ptensor.tensor<[768, 1001], bf16>) -> !ptensor.tensor<[s0, 1001], bf16> {
  %y = ptensor.mm %x, %w : !ptensor.tensor<[s0, 768], bf16>, !ptensor.tensor<[768, 1001], bf16> -> !ptensor.tensor<[s0, 1001], bf16>
  func.return %y : !ptensor.tensor<[s0, 1001], bf16>
}

// CHECK-LABEL: func.func @aligned(
// CHECK-NEXT:    ptensor.mm %x, %w
func.func @aligned(%x: !ptensor.tensor<[4097, 768], bf16>, %w: !ptensor.tensor<[768, 1024], bf16>) -> !ptensor.tensor<[4097, 1024], bf16> {
  %y = ptensor.mm %x, %w : !ptensor.tensor<[4097, 768], bf16>, !ptensor.tensor<[768, 1024], bf16> -> !ptensor.tensor<[4097, 1024], bf16>
  func.return %y : !ptensor.tensor<[4097, 1024], bf16>
}
