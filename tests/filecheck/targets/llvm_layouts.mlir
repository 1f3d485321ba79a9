// RUN: permalloy-opt %s -t llvm | filecheck %s

// Layouts come from the kernel's launch: a transposed input is read with a
// gather, a contiguous one with vector loads from a row base pointer computed
// outside the vector loop. Masked loads (a cat) become masked vector loads.

buffer.kernel @add(%a: !ptensor.tensor<[64, 48], f32>, %b: !ptensor.tensor<[64, 48], f32>) -> (!ptensor.tensor<[64, 48], f32>) {
  %y = loop.pointwise ins(%x = %a : !ptensor.tensor<[64, 48], f32>, %z = %b : !ptensor.tensor<[64, 48], f32>) -> !ptensor.tensor<[64, 48], f32> {
    %v = loop.load %x[d0, d1] : f32
    %w = loop.load %z[d0, d1] : f32
    %s = arith.addf %v, %w : f32
    loop.yield %s : f32
  }
  buffer.yield %y : !ptensor.tensor<[64, 48], f32>
}

buffer.kernel @cat(%a: !ptensor.tensor<[5, 4], f32>, %b: !ptensor.tensor<[5, 39], f32>) -> (!ptensor.tensor<[5, 43], f32>) {
  %r = loop.pointwise ins(%x = %a : !ptensor.tensor<[5, 4], f32>, %z = %b : !ptensor.tensor<[5, 39], f32>) -> !ptensor.tensor<[5, 43], f32> {
    %i = loop.index d1
    %four = arith.constant 4 : index
    %first = arith.cmpi slt, %i, %four : index
    %second = arith.cmpi sge, %i, %four : index
    %u = loop.load %x[d0, d1] if %first : f32
    %w = loop.load %z[d0, d1 - 4] if %second : f32
    %v = arith.select %first, %u, %w : f32
    loop.yield %v : f32
  }
  buffer.yield %r : !ptensor.tensor<[5, 43], f32>
}

func.func @forward(%a: !buffer.buffer<[64, 48], f32, strides [1, 64]>, %b: !buffer.buffer<[64, 48], f32>) -> !buffer.buffer<[64, 48], f32> {
  %c = buffer.alloc : !buffer.buffer<[64, 48], f32>
  buffer.launch @add ins(%a, %b : !buffer.buffer<[64, 48], f32, strides [1, 64]>, !buffer.buffer<[64, 48], f32>) outs(%c : !buffer.buffer<[64, 48], f32>)
  %p = buffer.alloc : !buffer.buffer<[5, 4], f32>
  %q = buffer.alloc : !buffer.buffer<[5, 39], f32>
  %r = buffer.alloc : !buffer.buffer<[5, 43], f32>
  buffer.launch @cat ins(%p, %q : !buffer.buffer<[5, 4], f32>, !buffer.buffer<[5, 39], f32>) outs(%r : !buffer.buffer<[5, 43], f32>)
  func.return %c : !buffer.buffer<[64, 48], f32>
}

// CHECK-LABEL: kernel @add
// CHECK:       row.body:
// CHECK:         mul i64 48, %
// CHECK:       x.body:
// CHECK-NOT:     mul i64
// CHECK:         call <[[N:[0-9]+]] x float> @"llvm.masked.gather.v[[N]]f32.v[[N]]p0"
// CHECK:         load <[[N]] x float>, ptr
// CHECK:         fadd <[[N]] x float>
// CHECK:       x.end:

// CHECK-LABEL: kernel @cat
// CHECK:       x.body:
// CHECK:         icmp slt <[[M:[0-9]+]] x i64>
// CHECK:         call <[[R:[0-9]+]] x float> @"llvm.masked.load.v[[R]]f32.p0"
// CHECK:         call <[[R]] x float> @"llvm.masked.load.v[[R]]f32.p0"
// CHECK:         select <[[M]] x i1>
