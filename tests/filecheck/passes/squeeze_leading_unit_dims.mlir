// RUN: permalloy-opt %s -p squeeze-leading-unit-dims | filecheck %s
// RUN: permalloy-opt %s -p squeeze-leading-unit-dims | permalloy-opt | filecheck %s
// RUN: permalloy-opt %s -p squeeze-leading-unit-dims,fuse-loops | filecheck %s --check-prefix=FUSED

// squeeze-leading-unit-dims: batch norm's [1, 8, 1, 1] statistics read by
// the [8] running statistics are computed over [8, 1, 1], and the loop ops
// reading them drop their leading index; the returned statistic is a
// reshape back to [1, 8, 1, 1]. Then fusion groups the statistics with the
// running statistics' update.
// CHECK-LABEL: func.func @statistics(
// CHECK-NEXT:    %s = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4, 8, 6, 6], f32>) over [4, 6, 6] -> !ptensor.tensor<[8, 1, 1], f32> {
// CHECK-NEXT:      loop.load %a[r0, d0, r1, r2]
// CHECK:         %mean = loop.pointwise ins(%b = %s : !ptensor.tensor<[8, 1, 1], f32>) -> !ptensor.tensor<[8, 1, 1], f32> {
// CHECK-NEXT:      loop.load %b[d0, 0, 0]
// CHECK:         %[[R:.+]] = ptensor.reshape %mean : !ptensor.tensor<[8, 1, 1], f32> -> !ptensor.tensor<[1, 8, 1, 1], f32>
// CHECK-NEXT:    %update = loop.pointwise ins(%c = %mean : !ptensor.tensor<[8, 1, 1], f32>, %r = %running : !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[8], f32> {
// CHECK-NEXT:      loop.load %c[d0, 0, 0]
// CHECK:         %centered = loop.pointwise ins(%d = %x : !ptensor.tensor<[4, 8, 6, 6], f32>, %e = %mean : !ptensor.tensor<[8, 1, 1], f32>)
// CHECK:           loop.load %e[d1, 0, 0]
// CHECK:         func.return %update, %centered, %[[R]]
// FUSED-LABEL: func.func @statistics(
// FUSED-NEXT:    %{{.+}}, %{{.+}} = loop.fused
// FUSED:           loop.reduce sum
// FUSED:           -> !ptensor.tensor<[8], f32>
// FUSED:           loop.fused_yield
// FUSED:         loop.pointwise {{.*}} -> !ptensor.tensor<[4, 8, 6, 6], f32>

// Refusal: a norm of one row keeps its shape, as its [1, 1] statistic and
// its [1, 16] result share their one row already.
// CHECK-LABEL: func.func @one_row(
// CHECK-NOT:     ptensor.reshape
// CHECK:         -> !ptensor.tensor<[1, 1], f32>
// CHECK:         -> !ptensor.tensor<[1, 16], f32>

func.func @statistics(%x: !ptensor.tensor<[4, 8, 6, 6], f32>, %running: !ptensor.tensor<[8], f32>) -> (!ptensor.tensor<[8], f32>, !ptensor.tensor<[4, 8, 6, 6], f32>, !ptensor.tensor<[1, 8, 1, 1], f32>) {
  %s = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4, 8, 6, 6], f32>) over [4, 6, 6] -> !ptensor.tensor<[1, 8, 1, 1], f32> {
    %v = loop.load %a[r0, d1, r1, r2] : f32
    loop.yield %v : f32
  }
  %mean = loop.pointwise ins(%b = %s : !ptensor.tensor<[1, 8, 1, 1], f32>) -> !ptensor.tensor<[1, 8, 1, 1], f32> {
    %v = loop.load %b[0, d1, 0, 0] : f32
    %n = arith.constant 1.440000e+02 : f32
    %m = arith.divf %v, %n : f32
    loop.yield %m : f32
  }
  %update = loop.pointwise ins(%c = %mean : !ptensor.tensor<[1, 8, 1, 1], f32>, %r = %running : !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[8], f32> {
    %v = loop.load %c[0, d0, 0, 0] : f32
    %w = loop.load %r[d0] : f32
    %u = arith.addf %v, %w : f32
    loop.yield %u : f32
  }
  %centered = loop.pointwise ins(%d = %x : !ptensor.tensor<[4, 8, 6, 6], f32>, %e = %mean : !ptensor.tensor<[1, 8, 1, 1], f32>) -> !ptensor.tensor<[4, 8, 6, 6], f32> {
    %v = loop.load %d[d0, d1, d2, d3] : f32
    %m = loop.load %e[0, d1, 0, 0] : f32
    %c = arith.subf %v, %m : f32
    loop.yield %c : f32
  }
  func.return %update, %centered, %mean : !ptensor.tensor<[8], f32>, !ptensor.tensor<[4, 8, 6, 6], f32>, !ptensor.tensor<[1, 8, 1, 1], f32>
}

func.func @one_row(%x: !ptensor.tensor<[1, 16], f32>) -> !ptensor.tensor<[1, 16], f32> {
  %s = loop.reduce sum ins(%a = %x : !ptensor.tensor<[1, 16], f32>) over [16] -> !ptensor.tensor<[1, 1], f32> {
    %v = loop.load %a[d0, r0] : f32
    loop.yield %v : f32
  }
  %y = loop.pointwise ins(%b = %x : !ptensor.tensor<[1, 16], f32>, %c = %s : !ptensor.tensor<[1, 1], f32>) -> !ptensor.tensor<[1, 16], f32> {
    %v = loop.load %b[d0, d1] : f32
    %t = loop.load %c[d0, 0] : f32
    %q = arith.divf %v, %t : f32
    loop.yield %q : f32
  }
  func.return %y : !ptensor.tensor<[1, 16], f32>
}

// A scatter starting from a squeezed value (its `init`, not an input its
// body loads) starts from a reshape of it back to its former shape; the
// scatter's body reads the squeezed value like any reader.
// CHECK-LABEL: func.func @scatter_init(
// CHECK:         %[[R:.+]] = ptensor.reshape %p : !ptensor.tensor<[8], f32> -> !ptensor.tensor<[1, 8], f32>
// CHECK:         loop.scatter sum init(%[[R]] : !ptensor.tensor<[1, 8], f32>) ins(%j = %i : !ptensor.tensor<[1, 8], i64>, %k = %p : !ptensor.tensor<[8], f32>)
// CHECK:           loop.load %k[d1] : f32

func.func @scatter_init(%x: !ptensor.tensor<[1, 8], f32>, %i: !ptensor.tensor<[1, 8], i64>, %r: !ptensor.tensor<[8], f32>) -> (!ptensor.tensor<[8], f32>, !ptensor.tensor<[1, 8], f32>) {
  %p = loop.pointwise ins(%a = %x : !ptensor.tensor<[1, 8], f32>) -> !ptensor.tensor<[1, 8], f32> {
    %v = loop.load %a[d0, d1] : f32
    %w = arith.addf %v, %v : f32
    loop.yield %w : f32
  }
  %u = loop.pointwise ins(%b = %p : !ptensor.tensor<[1, 8], f32>, %c = %r : !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[8], f32> {
    %v = loop.load %b[0, d0] : f32
    %w = loop.load %c[d0] : f32
    %s = arith.addf %v, %w : f32
    loop.yield %s : f32
  }
  %s = loop.scatter sum init(%p : !ptensor.tensor<[1, 8], f32>) ins(%j = %i : !ptensor.tensor<[1, 8], i64>, %k = %p : !ptensor.tensor<[1, 8], f32>) over [1, 8] -> !ptensor.tensor<[1, 8], f32> {
    %t = loop.load %j[d0, d1] : i64
    %n = arith.index_cast %t : i64 to index
    %v = loop.load %k[d0, d1] : f32
    loop.scatter_yield %v at [d0, v0] (%n) : f32
  }
  func.return %u, %s : !ptensor.tensor<[8], f32>, !ptensor.tensor<[1, 8], f32>
}
