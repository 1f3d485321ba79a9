// RUN: permalloy-opt %s --split-input-file -p fuse-loops | filecheck %s
// RUN: permalloy-opt %s --split-input-file -p fuse-loops | permalloy-opt --split-input-file | filecheck %s

// fuse-loops over a single row (a batch of one: a decoding step), where a
// row reduction is a reduction to one element. Such a kernel runs as one row
// program, so grouping shares it only among loop ops of at most 16384 points
// (results times reduced elements); a longer reduction to one element stays
// alone, to be split across threads or programs, and a longer loop op does
// not join it.

// An RMS norm over one row of 4096: the sum of squares and the scaling share
// a kernel.
// CHECK-LABEL: func.func @rms_norm_one_row(
// CHECK-NEXT:    %y = loop.fused ins(%[[X:.+]] = %x : !ptensor.tensor<[1, 4096], f32>, %[[W:.+]] = %w : !ptensor.tensor<[4096], f32>) -> (!ptensor.tensor<[1, 4096], f32>) {
// CHECK-NEXT:      %[[S:.+]] = loop.reduce sum ins(%{{.+}} = %[[X]] : !ptensor.tensor<[1, 4096], f32>) over [4096] -> !ptensor.tensor<[1, 1], f32> {
// CHECK:           %[[Y:.+]] = loop.pointwise ins(%{{.+}} = %[[X]] : !ptensor.tensor<[1, 4096], f32>, %{{.+}} = %[[S]] : !ptensor.tensor<[1, 1], f32>, %{{.+}} = %[[W]] : !ptensor.tensor<[4096], f32>) -> !ptensor.tensor<[1, 4096], f32> {
// CHECK:           loop.fused_yield %[[Y]] : !ptensor.tensor<[1, 4096], f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %y
func.func @rms_norm_one_row(%x: !ptensor.tensor<[1, 4096], f32>, %w: !ptensor.tensor<[4096], f32>) -> !ptensor.tensor<[1, 4096], f32> {
  %s = loop.reduce sum ins(%0 = %x : !ptensor.tensor<[1, 4096], f32>) over [4096] -> !ptensor.tensor<[1, 1], f32> {
    %1 = loop.load %0[d0, r0] : f32
    %2 = arith.mulf %1, %1 : f32
    loop.yield %2 : f32
  }
  %y = loop.pointwise ins(%0 = %x : !ptensor.tensor<[1, 4096], f32>, %1 = %s : !ptensor.tensor<[1, 1], f32>, %2 = %w : !ptensor.tensor<[4096], f32>) -> !ptensor.tensor<[1, 4096], f32> {
    %3 = loop.load %1[0, 0] : f32
    %4 = arith.constant 2.44140625e-04 : f32
    %5 = arith.mulf %3, %4 : f32
    %6 = math.rsqrt %5 : f32
    %7 = loop.load %0[0, d1] : f32
    %8 = arith.mulf %7, %6 : f32
    %9 = loop.load %2[d1] : f32
    %10 = arith.mulf %8, %9 : f32
    loop.yield %10 : f32
  }
  func.return %y : !ptensor.tensor<[1, 4096], f32>
}

// -----

// A softmax over one row of 4096: the max, the sum of exponentials and the
// division, one kernel.
// CHECK-LABEL: func.func @softmax_one_row(
// CHECK-NEXT:    %y = loop.fused ins(%[[X:.+]] = %x : !ptensor.tensor<[1, 4096], f32>) -> (!ptensor.tensor<[1, 4096], f32>) {
// CHECK-NEXT:      %[[M:.+]] = loop.reduce max ins(%{{.+}} = %[[X]] : !ptensor.tensor<[1, 4096], f32>) over [4096] -> !ptensor.tensor<[1, 1], f32> {
// CHECK:           %[[S:.+]] = loop.reduce sum ins(%{{.+}} = %[[X]] : !ptensor.tensor<[1, 4096], f32>, %{{.+}} = %[[M]] : !ptensor.tensor<[1, 1], f32>) over [4096] -> !ptensor.tensor<[1, 1], f32> {
// CHECK:           %[[Y:.+]] = loop.pointwise
// CHECK:           loop.fused_yield %[[Y]] : !ptensor.tensor<[1, 4096], f32>
func.func @softmax_one_row(%x: !ptensor.tensor<[1, 4096], f32>) -> !ptensor.tensor<[1, 4096], f32> {
  %m = loop.reduce max ins(%0 = %x : !ptensor.tensor<[1, 4096], f32>) over [4096] -> !ptensor.tensor<[1, 1], f32> {
    %1 = loop.load %0[d0, r0] : f32
    loop.yield %1 : f32
  }
  %s = loop.reduce sum ins(%0 = %x : !ptensor.tensor<[1, 4096], f32>, %1 = %m : !ptensor.tensor<[1, 1], f32>) over [4096] -> !ptensor.tensor<[1, 1], f32> {
    %2 = loop.load %0[d0, r0] : f32
    %3 = loop.load %1[d0, 0] : f32
    %4 = arith.subf %2, %3 : f32
    %5 = math.exp %4 : f32
    loop.yield %5 : f32
  }
  %y = loop.pointwise ins(%0 = %x : !ptensor.tensor<[1, 4096], f32>, %1 = %m : !ptensor.tensor<[1, 1], f32>, %2 = %s : !ptensor.tensor<[1, 1], f32>) -> !ptensor.tensor<[1, 4096], f32> {
    %3 = loop.load %0[0, d1] : f32
    %4 = loop.load %1[0, 0] : f32
    %5 = arith.subf %3, %4 : f32
    %6 = math.exp %5 : f32
    %7 = loop.load %2[0, 0] : f32
    %8 = arith.divf %6, %7 : f32
    loop.yield %8 : f32
  }
  func.return %y : !ptensor.tensor<[1, 4096], f32>
}

// -----

// 16384 points is the most a single-row kernel takes: a norm over one row of
// 16384 is one kernel.
// CHECK-LABEL: func.func @norm_at_the_limit(
// CHECK-NEXT:    %y = loop.fused
// CHECK-NEXT:      loop.reduce sum {{.+}} over [16384] -> !ptensor.tensor<[1, 1], f32>
func.func @norm_at_the_limit(%x: !ptensor.tensor<[1, 16384], f32>) -> !ptensor.tensor<[1, 16384], f32> {
  %s = loop.reduce sum ins(%0 = %x : !ptensor.tensor<[1, 16384], f32>) over [16384] -> !ptensor.tensor<[1, 1], f32> {
    %1 = loop.load %0[d0, r0] : f32
    %2 = arith.mulf %1, %1 : f32
    loop.yield %2 : f32
  }
  %y = loop.pointwise ins(%0 = %x : !ptensor.tensor<[1, 16384], f32>, %1 = %s : !ptensor.tensor<[1, 1], f32>) -> !ptensor.tensor<[1, 16384], f32> {
    %2 = loop.load %1[0, 0] : f32
    %3 = math.rsqrt %2 : f32
    %4 = loop.load %0[0, d1] : f32
    %5 = arith.mulf %4, %3 : f32
    loop.yield %5 : f32
  }
  func.return %y : !ptensor.tensor<[1, 16384], f32>
}

// -----

// Past it, the reduction to one element stays alone (the LLVM target splits
// it across threads) and the scaling is a kernel of its own.
// CHECK-LABEL: func.func @norm_past_the_limit(
// CHECK-NOT:     loop.fused
// CHECK:         %s = loop.reduce sum ins(%{{.+}} = %x : !ptensor.tensor<[1, 16385], f32>) over [16385] -> !ptensor.tensor<[1, 1], f32> {
// CHECK:         %y = loop.pointwise ins(%{{.+}} = %x : !ptensor.tensor<[1, 16385], f32>, %{{.+}} = %s : !ptensor.tensor<[1, 1], f32>) -> !ptensor.tensor<[1, 16385], f32> {
// CHECK-NOT:     loop.fused
// CHECK:         func.return %y
func.func @norm_past_the_limit(%x: !ptensor.tensor<[1, 16385], f32>) -> !ptensor.tensor<[1, 16385], f32> {
  %s = loop.reduce sum ins(%0 = %x : !ptensor.tensor<[1, 16385], f32>) over [16385] -> !ptensor.tensor<[1, 1], f32> {
    %1 = loop.load %0[d0, r0] : f32
    %2 = arith.mulf %1, %1 : f32
    loop.yield %2 : f32
  }
  %y = loop.pointwise ins(%0 = %x : !ptensor.tensor<[1, 16385], f32>, %1 = %s : !ptensor.tensor<[1, 1], f32>) -> !ptensor.tensor<[1, 16385], f32> {
    %2 = loop.load %1[0, 0] : f32
    %3 = math.rsqrt %2 : f32
    %4 = loop.load %0[0, d1] : f32
    %5 = arith.mulf %4, %3 : f32
    loop.yield %5 : f32
  }
  func.return %y : !ptensor.tensor<[1, 16385], f32>
}

// -----

// A softmax over one row of 1048576 (a loss over a million elements): its
// max and sum are reductions to one element each, split across threads, so
// none of the three shares a kernel.
// CHECK-LABEL: func.func @softmax_of_a_long_row(
// CHECK-NOT:     loop.fused
// CHECK:         %m = loop.reduce max
// CHECK:         %s = loop.reduce sum
// CHECK:         %y = loop.pointwise
// CHECK-NOT:     loop.fused
// CHECK:         func.return %y
func.func @softmax_of_a_long_row(%x: !ptensor.tensor<[1, 1048576], f32>) -> !ptensor.tensor<[1, 1048576], f32> {
  %m = loop.reduce max ins(%0 = %x : !ptensor.tensor<[1, 1048576], f32>) over [1048576] -> !ptensor.tensor<[1, 1], f32> {
    %1 = loop.load %0[d0, r0] : f32
    loop.yield %1 : f32
  }
  %s = loop.reduce sum ins(%0 = %x : !ptensor.tensor<[1, 1048576], f32>, %1 = %m : !ptensor.tensor<[1, 1], f32>) over [1048576] -> !ptensor.tensor<[1, 1], f32> {
    %2 = loop.load %0[d0, r0] : f32
    %3 = loop.load %1[d0, 0] : f32
    %4 = arith.subf %2, %3 : f32
    %5 = math.exp %4 : f32
    loop.yield %5 : f32
  }
  %y = loop.pointwise ins(%0 = %x : !ptensor.tensor<[1, 1048576], f32>, %1 = %m : !ptensor.tensor<[1, 1], f32>, %2 = %s : !ptensor.tensor<[1, 1], f32>) -> !ptensor.tensor<[1, 1048576], f32> {
    %3 = loop.load %0[0, d1] : f32
    %4 = loop.load %1[0, 0] : f32
    %5 = arith.subf %3, %4 : f32
    %6 = math.exp %5 : f32
    %7 = loop.load %2[0, 0] : f32
    %8 = arith.divf %6, %7 : f32
    loop.yield %8 : f32
  }
  func.return %y : !ptensor.tensor<[1, 1048576], f32>
}

// -----

// A short reduction to one element (the reduction of split-reductions'
// partial sums) may not take a long row with it: the scaling of a million
// elements would run in its one program.
// CHECK-LABEL: func.func @short_reduction_long_epilogue(
// CHECK-NOT:     loop.fused
// CHECK:         %s = loop.reduce sum ins(%{{.+}} = %p : !ptensor.tensor<[1, 64], f32>) over [64] -> !ptensor.tensor<[1, 1], f32> {
// CHECK:         %y = loop.pointwise
// CHECK-NOT:     loop.fused
func.func @short_reduction_long_epilogue(%p: !ptensor.tensor<[1, 64], f32>, %x: !ptensor.tensor<[1, 1048576], f32>) -> !ptensor.tensor<[1, 1048576], f32> {
  %s = loop.reduce sum ins(%0 = %p : !ptensor.tensor<[1, 64], f32>) over [64] -> !ptensor.tensor<[1, 1], f32> {
    %1 = loop.load %0[d0, r0] : f32
    loop.yield %1 : f32
  }
  %y = loop.pointwise ins(%0 = %x : !ptensor.tensor<[1, 1048576], f32>, %1 = %s : !ptensor.tensor<[1, 1], f32>) -> !ptensor.tensor<[1, 1048576], f32> {
    %2 = loop.load %1[0, 0] : f32
    %3 = math.rsqrt %2 : f32
    %4 = loop.load %0[0, d1] : f32
    %5 = arith.mulf %4, %3 : f32
    loop.yield %5 : f32
  }
  func.return %y : !ptensor.tensor<[1, 1048576], f32>
}

// -----

// A row of symbolic length may be long: the reduction to one element stays
// alone.
// CHECK-LABEL: func.func @norm_of_a_symbolic_row(
// CHECK-NOT:     loop.fused
// CHECK:         %s = loop.reduce sum
// CHECK:         %y = loop.pointwise
// CHECK-NOT:     loop.fused
func.func @norm_of_a_symbolic_row(%x: !ptensor.tensor<[1, s0], f32>) -> !ptensor.tensor<[1, s0], f32> {
  %s = loop.reduce sum ins(%0 = %x : !ptensor.tensor<[1, s0], f32>) over [s0] -> !ptensor.tensor<[1, 1], f32> {
    %1 = loop.load %0[d0, r0] : f32
    %2 = arith.mulf %1, %1 : f32
    loop.yield %2 : f32
  }
  %y = loop.pointwise ins(%0 = %x : !ptensor.tensor<[1, s0], f32>, %1 = %s : !ptensor.tensor<[1, 1], f32>) -> !ptensor.tensor<[1, s0], f32> {
    %2 = loop.load %1[0, 0] : f32
    %3 = math.rsqrt %2 : f32
    %4 = loop.load %0[0, d1] : f32
    %5 = arith.mulf %4, %3 : f32
    loop.yield %5 : f32
  }
  func.return %y : !ptensor.tensor<[1, s0], f32>
}
