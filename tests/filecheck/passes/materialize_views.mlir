// RUN: permalloy-opt %s -p materialize-views | filecheck %s
// RUN: permalloy-opt %s -p materialize-views | permalloy-opt | filecheck %s
// RUN: permalloy-opt %s -p materialize-views,fuse-loops | filecheck %s --check-prefix=FUSED
// RUN: permalloy-opt %s -p materialize-views,fuse-loops,convert-loop-to-buffer | filecheck %s --check-prefix=BUFFER

// materialize-views: a window partition (reshape, permute, reshape) of a
// kernel's result read by a matrix product cannot reinterpret that result's
// row-major memory; a pointwise op copies it in the product's order (the
// views, read by nothing else, go), and fusion takes the producer in, so
// the host program copies nothing.
// CHECK-LABEL: func.func @windows(
// CHECK:         %y = loop.pointwise {{.*}} -> !ptensor.tensor<[1, 4, 4, 8], f32>
// CHECK-NOT:     ptensor.reshape
// CHECK:         %flat = loop.pointwise ins(%{{.+}} = %y : !ptensor.tensor<[1, 4, 4, 8], f32>) -> !ptensor.tensor<[16, 8], f32> {
// CHECK-NEXT:      %{{.+}} = loop.load %{{.+}}[0, d0 floordiv 2 mod 2 + (d0 floordiv 8) * 2, (d0 floordiv 4 mod 2) * 2 + d0 mod 2, d1] : f32
// CHECK:         %m = ptensor.mm %flat, %w
// FUSED-LABEL: func.func @windows(
// FUSED-NOT:     -> !ptensor.tensor<[1, 4, 4, 8], f32> {
// FUSED:         loop.pointwise ins({{.*}}%x : !ptensor.tensor<[1, 4, 4, 8], f32>) -> !ptensor.tensor<[16, 8], f32>
// FUSED:           math.exp
// BUFFER-LABEL: func.func @windows(
// BUFFER-NOT:    buffer.copy
// BUFFER:        buffer.launch
// BUFFER-NOT:    buffer.copy
// BUFFER:        func.return

// Refusals: a transposed weight and a slice of rows (the product reads
// them through their strides) stay views; a returned view the host would
// copy is a copy kernel too.
// CHECK-LABEL: func.func @kept(
// CHECK:         %y = loop.pointwise
// CHECK-NOT:     loop.pointwise
// CHECK:         %m = ptensor.mm %rows, %wt
// CHECK-NEXT:    %flat = loop.pointwise ins(%{{.+}} = %y : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[32], f32> {
// CHECK-NEXT:      loop.load %{{.+}}[d0 mod 4, d0 floordiv 4] : f32
// CHECK:         func.return %m, %flat

func.func @windows(%x: !ptensor.tensor<[1, 4, 4, 8], f32>, %w: !ptensor.tensor<[8, 3], f32>) -> !ptensor.tensor<[16, 3], f32> {
  %y = loop.pointwise ins(%a = %x : !ptensor.tensor<[1, 4, 4, 8], f32>) -> !ptensor.tensor<[1, 4, 4, 8], f32> {
    %v = loop.load %a[d0, d1, d2, d3] : f32
    %e = math.exp %v : f32
    loop.yield %e : f32
  }
  %split = ptensor.reshape %y : !ptensor.tensor<[1, 4, 4, 8], f32> -> !ptensor.tensor<[1, 2, 2, 2, 2, 8], f32>
  %swapped = ptensor.permute %split [0, 1, 3, 2, 4, 5] : !ptensor.tensor<[1, 2, 2, 2, 2, 8], f32> -> !ptensor.tensor<[1, 2, 2, 2, 2, 8], f32>
  %flat = ptensor.reshape %swapped : !ptensor.tensor<[1, 2, 2, 2, 2, 8], f32> -> !ptensor.tensor<[16, 8], f32>
  %m = ptensor.mm %flat, %w : !ptensor.tensor<[16, 8], f32>, !ptensor.tensor<[8, 3], f32> -> !ptensor.tensor<[16, 3], f32>
  func.return %m : !ptensor.tensor<[16, 3], f32>
}

func.func @kept(%x: !ptensor.tensor<[4, 8], f32>, %w: !ptensor.tensor<[3, 8], f32>) -> (!ptensor.tensor<[2, 3], f32>, !ptensor.tensor<[32], f32>) {
  %y = loop.pointwise ins(%a = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %v = loop.load %a[d0, d1] : f32
    %e = math.exp %v : f32
    loop.yield %e : f32
  }
  %wt = ptensor.permute %w [1, 0] : !ptensor.tensor<[3, 8], f32> -> !ptensor.tensor<[8, 3], f32>
  %rows = ptensor.slice %y dim 0 start 1 end 3 step 1 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[2, 8], f32>
  %m = ptensor.mm %rows, %wt : !ptensor.tensor<[2, 8], f32>, !ptensor.tensor<[8, 3], f32> -> !ptensor.tensor<[2, 3], f32>
  %t = ptensor.permute %y [1, 0] : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[8, 4], f32>
  %flat = ptensor.reshape %t : !ptensor.tensor<[8, 4], f32> -> !ptensor.tensor<[32], f32>
  func.return %m, %flat : !ptensor.tensor<[2, 3], f32>, !ptensor.tensor<[32], f32>
}
