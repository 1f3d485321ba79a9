// A function over a size symbol through every level of the pipeline: s0 is a
// size in ptensor types, a bound of loop domains and a term of index
// expressions, a size of buffers and of the planned peak, a variable of the
// host program and a run-time argument of every kernel, on both targets.

// RUN: permalloy-opt %s -p convert-ptensor-to-loop,cse,dce | filecheck %s --check-prefix=LOOP
// RUN: permalloy-opt %s -p convert-ptensor-to-loop,cse,dce,fuse-loops,cse,dce | filecheck %s --check-prefix=FUSED
// RUN: permalloy-opt %s -p convert-ptensor-to-loop,cse,dce,fuse-loops,cse,dce,convert-loop-to-buffer | filecheck %s --check-prefix=BUFFER
// RUN: permalloy-opt %s -p convert-ptensor-to-loop,cse,dce,fuse-loops,cse,dce,convert-loop-to-buffer,plan-memory | filecheck %s --check-prefix=PLAN
// RUN: permalloy-opt %s -p convert-ptensor-to-loop,cse,dce,fuse-loops,cse,dce,convert-loop-to-buffer,plan-memory | python -c "import sys; from xdsl.parser import Parser; from permalloy.dialects import make_context; from permalloy.targets.host import build_host_program; from permalloy.targets.registry import kernel_target; print(build_host_program(Parser(make_context(), sys.stdin.read()).parse_module(), kernel_target('llvm')).source)" | filecheck %s --check-prefix=HOST
// RUN: permalloy-opt %s -p convert-ptensor-to-loop,cse,dce,fuse-loops,cse,dce,convert-loop-to-buffer,plan-memory -t llvm | filecheck %s --check-prefix=LLVM
// RUN: permalloy-opt %s -p convert-ptensor-to-loop,cse,dce,fuse-loops,cse,dce,convert-loop-to-buffer,plan-memory -t triton | filecheck %s --check-prefix=TRITON

// softmax(x + b) along the symbolic axis, and tanh of its transpose without
// its first row (a permute and a slice with a symbolic end).

// LOOP-LABEL: func.func @f(%n: index {ptensor.symbol = #sym.expr<s0>}, %x: !ptensor.tensor<[8, s0], f32>, %b: !ptensor.tensor<[s0], f32>)
// LOOP:         %y = loop.pointwise ins(%0 = %x : !ptensor.tensor<[8, s0], f32>, %1 = %b : !ptensor.tensor<[s0], f32>) -> !ptensor.tensor<[8, s0], f32> {
// LOOP:         %m = loop.reduce max ins(%0 = %y : !ptensor.tensor<[8, s0], f32>) over [s0] -> !ptensor.tensor<[8, 1], f32> {
// LOOP-NEXT:      %1 = loop.load %0[d0, r0] : f32
// LOOP:         %s = loop.reduce sum ins({{.*}}) over [s0] -> !ptensor.tensor<[8, 1], f32> {
// LOOP:         %r = loop.pointwise ins(%0 = %p : !ptensor.tensor<[8, s0], f32>) -> !ptensor.tensor<[s0 - 1, 8], f32> {
// LOOP-NEXT:      %1 = loop.load %0[d1, d0 + 1] : f32

// FUSED:         %p = loop.fused ins(%0 = %x : !ptensor.tensor<[8, s0], f32>, %1 = %b : !ptensor.tensor<[s0], f32>) -> (!ptensor.tensor<[8, s0], f32>) {
// FUSED-NEXT:      %m = loop.reduce max {{.*}} over [s0] -> !ptensor.tensor<[8, 1], f32> {
// FUSED:           %s = loop.reduce sum {{.*}} over [s0] -> !ptensor.tensor<[8, 1], f32> {
// FUSED:           %p_1 = loop.pointwise {{.*}} -> !ptensor.tensor<[8, s0], f32> {
// FUSED:         %r = loop.pointwise ins(%0 = %p : !ptensor.tensor<[8, s0], f32>) -> !ptensor.tensor<[s0 - 1, 8], f32> {

// BUFFER:      buffer.kernel @fused_reduce_max_reduce_sum_pointwise_exp_0(%0: !ptensor.tensor<[8, s0], f32>, %1: !ptensor.tensor<[s0], f32>) -> (!ptensor.tensor<[8, s0], f32>) {
// BUFFER:      buffer.kernel @pointwise_tanh_1(%0: !ptensor.tensor<[8, s0], f32>) -> (!ptensor.tensor<[s0 - 1, 8], f32>) {
// BUFFER-LABEL: func.func @f(%n: index {ptensor.symbol = #sym.expr<s0>}, %x: !buffer.buffer<[8, s0], f32>, %b: !buffer.buffer<[s0], f32>) -> (!buffer.buffer<[8, s0], f32>, !buffer.buffer<[s0 - 1, 8], f32>) {
// BUFFER-NEXT:    %p = buffer.alloc : !buffer.buffer<[8, s0], f32>
// BUFFER-NEXT:    buffer.launch @fused_reduce_max_reduce_sum_pointwise_exp_0 ins(%x, %b : !buffer.buffer<[8, s0], f32>, !buffer.buffer<[s0], f32>) outs(%p : !buffer.buffer<[8, s0], f32>)
// BUFFER-NEXT:    %r = buffer.alloc : !buffer.buffer<[s0 - 1, 8], f32>
// BUFFER-NEXT:    buffer.launch @pointwise_tanh_1 ins(%p : !buffer.buffer<[8, s0], f32>) outs(%r : !buffer.buffer<[s0 - 1, 8], f32>)
// BUFFER-NEXT:    func.return %p, %r

// The two returned buffers: 8 * s0 + 8 * (s0 - 1) floats.
// PLAN-LABEL: func.func @f(
// PLAN-SAME:    attributes {permalloy.peak_intermediate_bytes = #sym.expr<s0 * 64 - 32>} {

// HOST:      def host(v0, v1, v2):
// HOST-NEXT:     s0 = int(v0)
// HOST:          v3 = alloc((8, s0, ), (s0, 1, ), dtype_{{[0-9]+}})
// HOST-NEXT:     kernel_fused_reduce_max_reduce_sum_pointwise_exp_0_{{[0-9]+}}((v1, v2, v3, ), (s0, ))
// HOST-NEXT:     v4 = alloc(((-1 + s0), 8, ), (8, 1, ), dtype_{{[0-9]+}})
// HOST-NEXT:     kernel_pointwise_tanh_1_{{[0-9]+}}((v3, v4, ), (s0, ))

// The llvm kernels take their tensors and an array of symbol values.
// LLVM:       // kernel @fused_reduce_max_reduce_sum_pointwise_exp_0
// LLVM:       define i32 @"fused_reduce_max_reduce_sum_pointwise_exp_0"(ptr %".1", ptr %"[[SYMS:.+]]", i32 %".3")
// LLVM:         %"s0" = load i64, ptr
// LLVM:       // kernel @pointwise_tanh_1
// LLVM:       define internal void @"pointwise_tanh_1.run0"(ptr %".1", ptr %"[[RSYMS:.+]]", i64 %".3", i64 %".4")
// LLVM:         %"[[S:.+]]" = getelementptr i64, ptr %"[[RSYMS]]", i64 0
// LLVM-NEXT:    %"s0" = load i64, ptr %"[[S]]"
// LLVM:       define i32 @"pointwise_tanh_1"(ptr %".1", ptr %".2", i32 %".3")

// TRITON:      def triton_fused_reduce_max_reduce_sum_pointwise_exp_0(in0, in1, out0, s0, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr, IDX64: tl.constexpr):
// TRITON:          for roffset in range(0, s0, RBLOCK):
// TRITON:              rmask = rindex < s0
// TRITON:      def launch(tensors, symbols, config, compile_only=False):
// TRITON:          s0, = symbols
// TRITON:      def triton_pointwise_tanh_1(in0, out0, s0, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr, IDX64: tl.constexpr):
// TRITON:          xmask = xindex < (s0 - 1)
// TRITON:      def launch(tensors, symbols, config, compile_only=False):
// TRITON:          s0, = symbols

func.func @f(%n: index {ptensor.symbol = #sym.expr<s0>}, %x: !ptensor.tensor<[8, s0], f32>, %b: !ptensor.tensor<[s0], f32>) -> (!ptensor.tensor<[8, s0], f32>, !ptensor.tensor<[s0 - 1, 8], f32>) {
  %y = ptensor.binary add %x, %b : !ptensor.tensor<[8, s0], f32>, !ptensor.tensor<[s0], f32> -> !ptensor.tensor<[8, s0], f32>
  %m = ptensor.reduce max %y dims [1] keepdim : !ptensor.tensor<[8, s0], f32> -> !ptensor.tensor<[8, 1], f32>
  %d = ptensor.binary sub %y, %m : !ptensor.tensor<[8, s0], f32>, !ptensor.tensor<[8, 1], f32> -> !ptensor.tensor<[8, s0], f32>
  %e = ptensor.unary exp %d : !ptensor.tensor<[8, s0], f32> -> !ptensor.tensor<[8, s0], f32>
  %s = ptensor.reduce sum %e dims [1] keepdim : !ptensor.tensor<[8, s0], f32> -> !ptensor.tensor<[8, 1], f32>
  %p = ptensor.binary div %e, %s : !ptensor.tensor<[8, s0], f32>, !ptensor.tensor<[8, 1], f32> -> !ptensor.tensor<[8, s0], f32>
  %t = ptensor.permute %p [1, 0] : !ptensor.tensor<[8, s0], f32> -> !ptensor.tensor<[s0, 8], f32>
  %c = ptensor.slice %t dim 0 start 1 end s0 step 1 : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0 - 1, 8], f32>
  %r = ptensor.unary tanh %c : !ptensor.tensor<[s0 - 1, 8], f32> -> !ptensor.tensor<[s0 - 1, 8], f32>
  func.return %p, %r : !ptensor.tensor<[8, s0], f32>, !ptensor.tensor<[s0 - 1, 8], f32>
}
