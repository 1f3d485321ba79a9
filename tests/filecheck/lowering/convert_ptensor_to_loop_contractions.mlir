// RUN: permalloy-opt %s -p "convert-ptensor-to-loop{matmul-templates=true matmul-float32=true}" | filecheck %s
// RUN: permalloy-opt %s -p convert-ptensor-to-loop | filecheck %s --check-prefix=LIBRARY
// RUN: permalloy-opt %s -p "convert-ptensor-to-loop{matmul-templates=true}" | filecheck %s --check-prefix=HALF
// RUN: permalloy-opt %s -p "convert-ptensor-to-loop{matmul-templates=true matmul-float32=true},cse,dce,fuse-loops,cse,dce" | filecheck %s --check-prefix=FUSED
// RUN: permalloy-opt %s -p "convert-ptensor-to-loop{matmul-templates=true matmul-float32=true},cse,dce,fuse-loops,cse,dce,convert-loop-to-buffer" -t triton | filecheck %s --check-prefix=TRITON
// RUN: permalloy-opt %s -p "convert-ptensor-to-loop{matmul-templates=true},cse,dce,fuse-loops,cse,dce,convert-loop-to-buffer" -t triton | filecheck %s --check-prefix=NATIVE

// With matmul-templates, a float32 or half-precision matrix product is a
// contraction: a loop.reduce sum over the inner dimension of the product of
// a left factor (rows, r0) and a right factor (r0, columns). A half-precision
// product accumulates in f32 and rounds once, in a loop.pointwise of its own.
// A product read only through a reshape splitting its leading dimension is
// a contraction over the reshaped domain. Fusion groups the product with
// its pointwise epilogue of the same shape (read at each element), never
// with a reduction reading it; the Triton target tiles the group with
// tl.dot. Without the option, and for f64, products stay library calls;
// float32 ones become contractions only with matmul-float32.

// CHECK-LABEL: func.func @linear_gelu
// CHECK:         %[[C:.+]] = loop.reduce sum ins(%[[X:.+]] = %x : !ptensor.tensor<[32, 64], f32>, %[[W:.+]] = %w : !ptensor.tensor<[16, 64], f32>) over [64] -> !ptensor.tensor<[32, 16], f32> {
// CHECK-NEXT:      %[[U:.+]] = loop.load %[[X]][d0, r0] : f32
// CHECK-NEXT:      %[[V:.+]] = loop.load %[[W]][d1, r0] : f32
// CHECK-NEXT:      %[[P:.+]] = arith.mulf %[[U]], %[[V]] : f32
// CHECK-NEXT:      loop.yield %[[P]] : f32
// LIBRARY-LABEL: func.func @linear_gelu
// LIBRARY:         ptensor.mm
// HALF-LABEL:    func.func @linear_gelu
// HALF:            ptensor.mm
// HALF-LABEL:    func.func @half_scores
// HALF:            loop.reduce sum
// FUSED-LABEL:   func.func @linear_gelu
// FUSED:           loop.fused
// FUSED-NEXT:        loop.reduce sum
// FUSED:             loop.pointwise
// FUSED:             math.erf
// FUSED:             loop.fused_yield
// TRITON-LABEL:  def triton_fused_reduce_sum_pointwise_erf
// TRITON:          for k0 in range(0, 64, RBLOCK):
// TRITON:            acc += tl.dot(
// TRITON:          tl.erf(
// TRITON:        def triton_fused_reduce_sum_pointwise_erf_{{[0-9]+}}_epilogue(
// TRITON:        def launch(tensors, symbols, config, compile_only=False):
// TRITON:            torch.mm(left, right, out=product)
func.func @linear_gelu(%x: !ptensor.tensor<[32, 64], f32>, %w: !ptensor.tensor<[16, 64], f32>, %b: !ptensor.tensor<[16], f32>) -> !ptensor.tensor<[32, 16], f32> {
  %t = ptensor.permute %w [1, 0] : !ptensor.tensor<[16, 64], f32> -> !ptensor.tensor<[64, 16], f32>
  %p = ptensor.mm %x, %t : !ptensor.tensor<[32, 64], f32>, !ptensor.tensor<[64, 16], f32> -> !ptensor.tensor<[32, 16], f32>
  %a = ptensor.binary add %p, %b : !ptensor.tensor<[32, 16], f32>, !ptensor.tensor<[16], f32> -> !ptensor.tensor<[32, 16], f32>
  %g = ptensor.unary erf %a : !ptensor.tensor<[32, 16], f32> -> !ptensor.tensor<[32, 16], f32>
  func.return %g : !ptensor.tensor<[32, 16], f32>
}

// CHECK-LABEL: func.func @half_scores
// CHECK:         %[[S:.+]] = loop.reduce sum ins({{.+}}) over [8] -> !ptensor.tensor<[2, 3, 5, 5], f32> {
// CHECK-NEXT:      loop.load %{{.+}}[d0 * 3 + d1, d2, r0] : bf16
// CHECK-NEXT:      arith.extf
// CHECK-NEXT:      loop.load %{{.+}}[d0 * 3 + d1, r0, d3] : bf16
// CHECK:         loop.pointwise ins(%{{.+}} = %[[S]] : !ptensor.tensor<[2, 3, 5, 5], f32>) -> !ptensor.tensor<[2, 3, 5, 5], bf16> {
// CHECK:           arith.truncf
// The scores are read only rounded: the product keeps its rounding as its
// epilogue and stores bf16, which the max reads without rounding again.
// FUSED-LABEL:   func.func @half_scores
// FUSED:           %[[S:.+]] = loop.fused
// FUSED:             loop.reduce sum
// FUSED:             loop.pointwise ins({{.+}} : !ptensor.tensor<[2, 3, 5, 5], f32>) -> !ptensor.tensor<[2, 3, 5, 5], bf16>
// FUSED-NEXT:          loop.load
// FUSED-NEXT:          arith.truncf
// FUSED:           loop.reduce max ins(%{{.+}} = %[[S]] : !ptensor.tensor<[2, 3, 5, 5], bf16>)
// FUSED-NEXT:        loop.load %{{.+}}[d0, d1, d2, r0] : bf16
// FUSED-NEXT:        arith.extf
// FUSED-NEXT:        math.exp
func.func @half_scores(%q: !ptensor.tensor<[6, 5, 8], bf16>, %k: !ptensor.tensor<[6, 8, 5], bf16>) -> !ptensor.tensor<[2, 3, 5], bf16> {
  %s = ptensor.bmm %q, %k : !ptensor.tensor<[6, 5, 8], bf16>, !ptensor.tensor<[6, 8, 5], bf16> -> !ptensor.tensor<[6, 5, 5], bf16>
  %v = ptensor.reshape %s : !ptensor.tensor<[6, 5, 5], bf16> -> !ptensor.tensor<[2, 3, 5, 5], bf16>
  %h = ptensor.unary exp %v : !ptensor.tensor<[2, 3, 5, 5], bf16> -> !ptensor.tensor<[2, 3, 5, 5], bf16>
  %m = ptensor.reduce max %h dims [3] : !ptensor.tensor<[2, 3, 5, 5], bf16> -> !ptensor.tensor<[2, 3, 5], bf16>
  func.return %m : !ptensor.tensor<[2, 3, 5], bf16>
}

// CHECK-LABEL: func.func @double
// CHECK:         ptensor.mm
func.func @double(%x: !ptensor.tensor<[4, 8], f64>, %y: !ptensor.tensor<[8, 2], f64>) -> !ptensor.tensor<[4, 2], f64> {
  %p = ptensor.mm %x, %y : !ptensor.tensor<[4, 8], f64>, !ptensor.tensor<[8, 2], f64> -> !ptensor.tensor<[4, 2], f64>
  func.return %p : !ptensor.tensor<[4, 2], f64>
}

// A bare half-precision product keeps the one rounding it is lowered with as
// its epilogue: no second one is added for the value it returns.
// FUSED-LABEL:   func.func @bare_half
// FUSED:           loop.fused
// FUSED:             loop.reduce sum
// FUSED:             loop.pointwise
// FUSED-NOT:         loop.pointwise
// FUSED:             loop.fused_yield
func.func @bare_half(%x: !ptensor.tensor<[16, 24], bf16>, %w: !ptensor.tensor<[24, 8], bf16>) -> !ptensor.tensor<[16, 8], bf16> {
  %p = ptensor.mm %x, %w : !ptensor.tensor<[16, 24], bf16>, !ptensor.tensor<[24, 8], bf16> -> !ptensor.tensor<[16, 8], bf16>
  func.return %p : !ptensor.tensor<[16, 8], bf16>
}

// The bare product's library path is one step a native host program runs
// itself, the shim's product on views of the output and the factors
// (tensor position, sizes, strides, offset); the template's is a launch.
// NATIVE-LABEL:  def native_launches(symbols, config, kernels):
// NATIVE:            if config.get('LIBRARY'):
// NATIVE:                steps.append(('product', 'mm_out', ((("tensor", 2), (16, 8, ), (8, 1, ), 0), (("tensor", 0), (16, 24, ), (24, 1, ), 0), (("tensor", 1), (24, 8, ), (8, 1, ), 0))))
// NATIVE-NEXT:           return [], steps
// NATIVE:            launches = [(grid, next(compiled), (("tensor", 0), ("tensor", 1), ("tensor", 2), config['XBLOCK'], config['YBLOCK'], config['RBLOCK'],))] if grid > 0 else []
