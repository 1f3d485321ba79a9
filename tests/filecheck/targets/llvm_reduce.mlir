// RUN: permalloy-opt %s -t llvm | filecheck %s

// Reductions keep vector accumulators: along the contiguous dimension (row
// sums) lanes are reduced horizontally at the end of a row; along an outer
// dimension (column sums) each lane is one output element, for a tile of
// columns walked row by row, stored as vectors at the end.
// Float sums accumulate in blocks that are added to the total.

buffer.kernel @row_sum(%a: !ptensor.tensor<[s0, s1], f32>) -> (!ptensor.tensor<[s0], f32>) {
  %r = loop.reduce sum ins(%x = %a : !ptensor.tensor<[s0, s1], f32>) over [s1] -> !ptensor.tensor<[s0], f32> {
    %v = loop.load %x[d0, r0] : f32
    loop.yield %v : f32
  }
  buffer.yield %r : !ptensor.tensor<[s0], f32>
}

buffer.kernel @column_max(%a: !ptensor.tensor<[s0, s1], f32>) -> (!ptensor.tensor<[s1], f32>) {
  %r = loop.reduce max ins(%x = %a : !ptensor.tensor<[s0, s1], f32>) over [s0] -> !ptensor.tensor<[s1], f32> {
    %v = loop.load %x[r0, d0] : f32
    loop.yield %v : f32
  }
  buffer.yield %r : !ptensor.tensor<[s1], f32>
}

buffer.kernel @row_argmax(%a: !ptensor.tensor<[8, 300], f32>) -> (!ptensor.tensor<[8], i64>) {
  %r = loop.reduce argmax ins(%x = %a : !ptensor.tensor<[8, 300], f32>) over [300] -> !ptensor.tensor<[8], i64> {
    %v = loop.load %x[d0, r0] : f32
    loop.yield %v : f32
  }
  buffer.yield %r : !ptensor.tensor<[8], i64>
}

func.func @forward(%a: !buffer.buffer<[s0, s1], f32>, %b: !buffer.buffer<[8, 300], f32>) -> (!buffer.buffer<[s0], f32>, !buffer.buffer<[s1], f32>, !buffer.buffer<[8], i64>) {
  %r = buffer.alloc : !buffer.buffer<[s0], f32>
  buffer.launch @row_sum ins(%a : !buffer.buffer<[s0, s1], f32>) outs(%r : !buffer.buffer<[s0], f32>)
  %c = buffer.alloc : !buffer.buffer<[s1], f32>
  buffer.launch @column_max ins(%a : !buffer.buffer<[s0, s1], f32>) outs(%c : !buffer.buffer<[s1], f32>)
  %i = buffer.alloc : !buffer.buffer<[8], i64>
  buffer.launch @row_argmax ins(%b : !buffer.buffer<[8, 300], f32>) outs(%i : !buffer.buffer<[8], i64>)
  func.return %r, %c, %i : !buffer.buffer<[s0], f32>, !buffer.buffer<[s1], f32>, !buffer.buffer<[8], i64>
}

// CHECK-LABEL: kernel @row_sum
// CHECK:       xb.body{{.*}}:
// CHECK:       x.body{{.*}}:
// CHECK:         %[[V:.+]] = load <[[N:[0-9]+]] x float>
// CHECK:         fadd <[[N]] x float> %{{.*}}, %[[V]]
// CHECK:         call reassoc float @"llvm.vector.reduce.fadd.v[[N]]f32"(float {{.*}}, <[[N]] x float>
// CHECK:         store float
// CHECK:       call void @"GOMP_parallel"

// CHECK-LABEL: kernel @column_max
// CHECK:       tile.body:
// CHECK:       r0.body:
// CHECK:       x.body{{.*}}:
// CHECK:         load <[[M:[0-9]+]] x float>
// CHECK:         fcmp ogt <[[M]] x float>
// CHECK:         select <[[M]] x i1> %{{.*}}, <[[M]] x float>
// CHECK:         store <[[M]] x float>

// CHECK-LABEL: kernel @row_argmax
// CHECK:         fcmp ogt <[[K:[0-9]+]] x float>
// CHECK:         select <[[K]] x i1> %{{.*}}, <[[K]] x i64>
// CHECK:         call float @"llvm.vector.reduce.fmaximum.v[[K]]f32"
// CHECK:         call i64 @"llvm.vector.reduce.smin.v[[K]]i64"
