// RUN: permalloy-opt %s | permalloy-opt | filecheck %s

// loop.scatter prints and parses back: its kind, its init, its inputs, its
// domain (the source's shape) and the terminator's position with the index
// values bound to v0, ...

// CHECK-LABEL: func.func @scatter_add
// CHECK:         %y = loop.scatter sum init(%x : !ptensor.tensor<[5, 4], f32>) ins(%i = %idx : !ptensor.tensor<[3, 4], i64>, %s = %src : !ptensor.tensor<[3, 4], f32>) over [3, 4] -> !ptensor.tensor<[5, 4], f32> {
// CHECK-NEXT:      %k = loop.load %i[d0, d1] : i64
// CHECK-NEXT:      %p = arith.index_cast %k : i64 to index
// CHECK-NEXT:      %v = loop.load %s[d0, d1] : f32
// CHECK-NEXT:      loop.scatter_yield %v at [v0, d1] (%p) : f32
// CHECK-NEXT:    }
func.func @scatter_add(%x: !ptensor.tensor<[5, 4], f32>, %idx: !ptensor.tensor<[3, 4], i64>, %src: !ptensor.tensor<[3, 4], f32>) -> !ptensor.tensor<[5, 4], f32> {
  %y = loop.scatter sum init(%x : !ptensor.tensor<[5, 4], f32>) ins(%i = %idx : !ptensor.tensor<[3, 4], i64>, %s = %src : !ptensor.tensor<[3, 4], f32>) over [3, 4] -> !ptensor.tensor<[5, 4], f32> {
    %k = loop.load %i[d0, d1] : i64
    %p = arith.index_cast %k : i64 to index
    %v = loop.load %s[d0, d1] : f32
    loop.scatter_yield %v at [v0, d1] (%p) : f32
  }
  func.return %y : !ptensor.tensor<[5, 4], f32>
}

// CHECK-LABEL: func.func @assign_symbolic
// CHECK:         loop.scatter assign init(%x : !ptensor.tensor<[s0], i64>) ins(%i = %idx : !ptensor.tensor<[s1], i64>) over [s1] -> !ptensor.tensor<[s0], i64> {
// CHECK:           loop.scatter_yield %c at [v0] (%p) : i64
func.func @assign_symbolic(%x: !ptensor.tensor<[s0], i64>, %idx: !ptensor.tensor<[s1], i64>) -> !ptensor.tensor<[s0], i64> {
  %y = loop.scatter assign init(%x : !ptensor.tensor<[s0], i64>) ins(%i = %idx : !ptensor.tensor<[s1], i64>) over [s1] -> !ptensor.tensor<[s0], i64> {
    %k = loop.load %i[d0] : i64
    %p = arith.index_cast %k : i64 to index
    %c = arith.constant 0 : i64
    loop.scatter_yield %c at [v0] (%p) : i64
  }
  func.return %y : !ptensor.tensor<[s0], i64>
}
