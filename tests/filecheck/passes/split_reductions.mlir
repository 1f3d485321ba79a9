// RUN: permalloy-opt %s -p 'split-reductions{min-programs=1024 min-chunk=16 min-length=1024}' | filecheck %s
// RUN: permalloy-opt %s -p split-reductions | filecheck %s --check-prefix=DEFAULT

// Column sums of a tall matrix: the reduction dimension splits into 128
// chunks of 32 rows, placed first; then the 128 partial sums of each column.
// CHECK-LABEL: func.func @columns(
// CHECK-NEXT:    %[[P:.*]] = loop.reduce sum ins(%[[A:.*]] = %x : !ptensor.tensor<[4096, 8], f32>) over [32] -> !ptensor.tensor<[128, 8], f32> {
// CHECK-NEXT:      %[[V:.*]] = loop.load %[[A]][d0 * 32 + r0, d1] : f32
// CHECK-NEXT:      loop.yield %[[V]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[S:.*]] = loop.reduce sum ins(%[[B:.*]] = %[[P]] : !ptensor.tensor<[128, 8], f32>) over [128] -> !ptensor.tensor<[8], f32> {
// CHECK-NEXT:      %[[W:.*]] = loop.load %[[B]][r0, d0] : f32
// CHECK-NEXT:      loop.yield %[[W]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[S]]
// With the default thresholds, 4096 elements per column are too few to split.
// DEFAULT-LABEL: func.func @columns(
// DEFAULT-NEXT:    loop.reduce sum {{.*}} over [4096] -> !ptensor.tensor<[8], f32>
func.func @columns(%x: !ptensor.tensor<[4096, 8], f32>) -> !ptensor.tensor<[8], f32> {
  %s = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4096, 8], f32>) over [4096] -> !ptensor.tensor<[8], f32> {
    %v = loop.load %a[r0, d0] : f32
    loop.yield %v : f32
  }
  func.return %s : !ptensor.tensor<[8], f32>
}

// A whole tensor to one value: leading reduction dimensions become parallel
// (32 x 16) and the next splits in 32 (16384 partial results); the index of
// the body follows.
// DEFAULT-LABEL: func.func @whole(
// DEFAULT-NEXT:    %[[P:.*]] = loop.reduce max ins(%[[A:.*]] = %x : !ptensor.tensor<[32, 16, 512, 512], f32>) over [16, 512] -> !ptensor.tensor<[32, 16, 32], f32> {
// DEFAULT-NEXT:      %{{.*}} = loop.index d2 * 8192 + r0 * 512 + r1
// DEFAULT-NEXT:      %{{.*}} = loop.load %[[A]][d0, d1, d2 * 16 + r0, r1] : f32
// DEFAULT:         loop.reduce max ins(%[[B:.*]] = %[[P]] : !ptensor.tensor<[32, 16, 32], f32>) over [32, 16, 32] -> !ptensor.tensor<[], f32> {
// DEFAULT-NEXT:      loop.load %[[B]][r0, r1, r2] : f32
func.func @whole(%x: !ptensor.tensor<[32, 16, 512, 512], f32>) -> !ptensor.tensor<[], f32> {
  %s = loop.reduce max ins(%a = %x : !ptensor.tensor<[32, 16, 512, 512], f32>) over [32, 16, 512, 512] -> !ptensor.tensor<[], f32> {
    %i = loop.index r2 * 512 + r3
    %v = loop.load %a[r0, r1, r2, r3] : f32
    loop.yield %v : f32
  }
  func.return %s : !ptensor.tensor<[], f32>
}

// Left whole: an argmax (its partials would need positions), a half-precision
// result (its partial sums would round), and many results.
// DEFAULT-LABEL: func.func @kept(
// DEFAULT-NEXT:    loop.reduce argmax {{.*}} over [65536] -> !ptensor.tensor<[], i64>
// DEFAULT:         loop.reduce sum {{.*}} over [65536] -> !ptensor.tensor<[], bf16>
// DEFAULT:         loop.reduce sum {{.*}} over [65536] -> !ptensor.tensor<[32768], f32>
// DEFAULT-NOT:     loop.reduce
func.func @kept(%x: !ptensor.tensor<[65536], f32>, %h: !ptensor.tensor<[65536], bf16>, %m: !ptensor.tensor<[65536, 32768], f32>) -> (!ptensor.tensor<[], i64>, !ptensor.tensor<[], bf16>, !ptensor.tensor<[32768], f32>) {
  %a = loop.reduce argmax ins(%b = %x : !ptensor.tensor<[65536], f32>) over [65536] -> !ptensor.tensor<[], i64> {
    %v = loop.load %b[r0] : f32
    loop.yield %v : f32
  }
  %s = loop.reduce sum ins(%b = %h : !ptensor.tensor<[65536], bf16>) over [65536] -> !ptensor.tensor<[], bf16> {
    %v = loop.load %b[r0] : bf16
    loop.yield %v : bf16
  }
  %c = loop.reduce sum ins(%b = %m : !ptensor.tensor<[65536, 32768], f32>) over [65536] -> !ptensor.tensor<[32768], f32> {
    %v = loop.load %b[r0, d0] : f32
    loop.yield %v : f32
  }
  func.return %a, %s, %c : !ptensor.tensor<[], i64>, !ptensor.tensor<[], bf16>, !ptensor.tensor<[32768], f32>
}

// The height and width of a batch of images (a squeeze-excite's average pool):
// 1024 results of 12544 elements split from `image-min-length`, 16 chunks of
// 7 rows, so that a channels-last layout still gives many programs.
// DEFAULT-LABEL: func.func @image(
// DEFAULT-NEXT:    %[[P:.*]] = loop.reduce sum ins(%[[A:.*]] = %x : !ptensor.tensor<[32, 32, 112, 112], f32>) over [7, 112] -> !ptensor.tensor<[16, 32, 32], f32> {
// DEFAULT-NEXT:      %[[V:.*]] = loop.load %[[A]][d1, d2, d0 * 7 + r0, r1] : f32
// DEFAULT:         loop.reduce sum ins(%{{.*}} = %[[P]] : !ptensor.tensor<[16, 32, 32], f32>) over [16] -> !ptensor.tensor<[32, 32], f32>
func.func @image(%x: !ptensor.tensor<[32, 32, 112, 112], f32>) -> !ptensor.tensor<[32, 32], f32> {
  %s = loop.reduce sum ins(%a = %x : !ptensor.tensor<[32, 32, 112, 112], f32>) over [112, 112] -> !ptensor.tensor<[32, 32], f32> {
    %v = loop.load %a[d0, d1, r0, r1] : f32
    loop.yield %v : f32
  }
  func.return %s : !ptensor.tensor<[32, 32], f32>
}

// Batch-norm statistics of a channels-last batch: 256 channels over
// 32 x 14 x 14 elements, short of `min-length`, but 1.6 million points
// (`min-points`): the batch splits into 16 chunks of 392 elements, 4096
// results of the partial reduction instead of 256.
// DEFAULT-LABEL: func.func @many_points(
// DEFAULT-NEXT:    %[[P:.*]] = loop.reduce sum ins(%[[A:.*]] = %x : !ptensor.tensor<[32, 256, 14, 14], f32>) over [2, 14, 14] -> !ptensor.tensor<[16, 256], f32> {
// DEFAULT-NEXT:      %[[V:.*]] = loop.load %[[A]][d0 * 2 + r0, d1, r1, r2] : f32
// DEFAULT:         loop.reduce sum ins(%{{.*}} = %[[P]] : !ptensor.tensor<[16, 256], f32>) over [16] -> !ptensor.tensor<[256], f32>
func.func @many_points(%x: !ptensor.tensor<[32, 256, 14, 14], f32>) -> !ptensor.tensor<[256], f32> {
  %s = loop.reduce sum ins(%a = %x : !ptensor.tensor<[32, 256, 14, 14], f32>) over [32, 14, 14] -> !ptensor.tensor<[256], f32> {
    %v = loop.load %a[r0, d0, r1, r2] : f32
    loop.yield %v : f32
  }
  func.return %s : !ptensor.tensor<[256], f32>
}

// Short of both: 64 results of 256 elements stay one reduction.
// DEFAULT-LABEL: func.func @few_points(
// DEFAULT-NEXT:    loop.reduce sum {{.*}} over [16, 16] -> !ptensor.tensor<[2, 32], f32>
func.func @few_points(%x: !ptensor.tensor<[2, 16, 16, 32], f32>) -> !ptensor.tensor<[2, 32], f32> {
  %s = loop.reduce sum ins(%a = %x : !ptensor.tensor<[2, 16, 16, 32], f32>) over [16, 16] -> !ptensor.tensor<[2, 32], f32> {
    %v = loop.load %a[d0, r0, r1, d1] : f32
    loop.yield %v : f32
  }
  func.return %s : !ptensor.tensor<[2, 32], f32>
}

// Row sums of a layer norm's gradient over 4096 tokens: a million points,
// but along rows, each result reducing a contiguous row, and 4096 results
// are enough programs; left whole. The same rows summed over only 512 tokens
// are too few programs and split.
// DEFAULT-LABEL: func.func @rows(
// DEFAULT-NEXT:    loop.reduce sum {{.*}} over [768] -> !ptensor.tensor<[8, 512, 1], f32>
// DEFAULT:         loop.reduce sum {{.*}} over [256] -> !ptensor.tensor<[8, 512, 1], f32>
// DEFAULT:         loop.reduce sum {{.*}} over [8] -> !ptensor.tensor<[512, 1], f32>
func.func @rows(%x: !ptensor.tensor<[8, 512, 768], f32>, %w: !ptensor.tensor<[768], f32>, %y: !ptensor.tensor<[512, 2048], f32>) -> (!ptensor.tensor<[8, 512, 1], f32>, !ptensor.tensor<[512, 1], f32>) {
  %s = loop.reduce sum ins(%a = %x : !ptensor.tensor<[8, 512, 768], f32>, %b = %w : !ptensor.tensor<[768], f32>) over [768] -> !ptensor.tensor<[8, 512, 1], f32> {
    %v = loop.load %a[d0, d1, r0] : f32
    %u = loop.load %b[r0] : f32
    %p = arith.mulf %v, %u : f32
    loop.yield %p : f32
  }
  %t = loop.reduce sum ins(%c = %y : !ptensor.tensor<[512, 2048], f32>) over [2048] -> !ptensor.tensor<[512, 1], f32> {
    %v = loop.load %c[d0, r0] : f32
    loop.yield %v : f32
  }
  func.return %s, %t : !ptensor.tensor<[8, 512, 1], f32>, !ptensor.tensor<[512, 1], f32>
}
