// RUN: permalloy-opt %s --split-input-file --verify-diagnostics -p convert-ptensor-to-loop | filecheck %s

// convert-ptensor-to-loop: what each ptensor op becomes, how views are folded
// into the index expressions of the loads that read them, and what the pass
// leaves for the host program or refuses. (tests/e2e/test_lowering_differential.py
// runs the same kinds of functions before and after the pass.)

// Elementwise ops become one loop.pointwise each; broadcasting reads index 0
// of size-1 dimensions and leaves out missing leading ones.
// CHECK-LABEL: func.func @elementwise(
// CHECK-NEXT:    %e = loop.pointwise ins(%[[X:.+]] = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
// CHECK-NEXT:      %[[V:.+]] = loop.load %[[X]][d0, d1] : f32
// CHECK-NEXT:      %[[E:.+]] = math.exp %[[V]] : f32
// CHECK-NEXT:      loop.yield %[[E]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %a = loop.pointwise ins(%[[E:.+]] = %e : !ptensor.tensor<[4, 8], f32>, %[[Y:.+]] = %y : !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[4, 8], f32> {
// CHECK-NEXT:      %[[L:.+]] = loop.load %[[E]][d0, d1] : f32
// CHECK-NEXT:      %[[R:.+]] = loop.load %[[Y]][d1] : f32
// CHECK-NEXT:      %[[S:.+]] = arith.addf %[[L]], %[[R]] : f32
// CHECK-NEXT:      loop.yield %[[S]] : f32
// CHECK:         %l = loop.pointwise
// CHECK:           arith.cmpf olt, {{.*}} : f32
// CHECK-NEXT:      loop.yield {{.*}} : i1
// CHECK:         %w = loop.pointwise ins(%[[C:.+]] = %c : !ptensor.tensor<[4, 1], i1>, %[[A:.+]] = %a : {{.*}}, %[[Y:.+]] = %y : {{.*}}) -> !ptensor.tensor<[4, 8], f32> {
// CHECK-NEXT:      %[[CV:.+]] = loop.load %[[C]][d0, 0] : i1
// CHECK-NEXT:      %[[AV:.+]] = loop.load %[[A]][d0, d1] : f32
// CHECK-NEXT:      %[[YV:.+]] = loop.load %[[Y]][d1] : f32
// CHECK-NEXT:      %[[W:.+]] = arith.select %[[CV]], %[[AV]], %[[YV]] : f32
// CHECK-NEXT:      loop.yield %[[W]] : f32
// CHECK:         func.return %a, %l, %w
func.func @elementwise(%x: !ptensor.tensor<[4, 8], f32>, %y: !ptensor.tensor<[8], f32>, %c: !ptensor.tensor<[4, 1], i1>) -> (!ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], i1>, !ptensor.tensor<[4, 8], f32>) {
  %e = ptensor.unary exp %x : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>
  %a = ptensor.binary add %e, %y : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8], f32> -> !ptensor.tensor<[4, 8], f32>
  %l = ptensor.compare lt %x, %y : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8], f32> -> !ptensor.tensor<[4, 8], i1>
  %w = ptensor.where %c, %a, %y : !ptensor.tensor<[4, 1], i1>, !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8], f32> -> !ptensor.tensor<[4, 8], f32>
  func.return %a, %l, %w : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], i1>, !ptensor.tensor<[4, 8], f32>
}

// -----

// Narrow floats compute in f32: widened on load, rounded on store.
// CHECK-LABEL: func.func @bf16(
// CHECK:         %[[V:.+]] = loop.load %{{.+}}[d0] : bf16
// CHECK-NEXT:    %[[W:.+]] = arith.extf %[[V]] : bf16 to f32
// CHECK-NEXT:    %[[T:.+]] = math.tanh %[[W]] : f32
// CHECK-NEXT:    %[[N:.+]] = arith.truncf %[[T]] : f32 to bf16
// CHECK-NEXT:    loop.yield %[[N]] : bf16
func.func @bf16(%x: !ptensor.tensor<[4], bf16>) -> !ptensor.tensor<[4], bf16> {
  %t = ptensor.unary tanh %x : !ptensor.tensor<[4], bf16> -> !ptensor.tensor<[4], bf16>
  func.return %t : !ptensor.tensor<[4], bf16>
}

// -----


// Float to a narrow integer truncates through i32 so that narrow types wrap,
// NaN and values out of i32's range giving its smallest value as on x86; to
// i1 is `!= 0` (true for NaN); unsigned elements load as signless i8.
// CHECK-LABEL: func.func @casts(
// CHECK:         %i = loop.pointwise
// CHECK:           %[[IN:.+]] = arith.andi %{{.+}}, %{{.+}} : i1
// CHECK-NEXT:      %[[W:.+]] = arith.fptosi %{{.+}} : f32 to i32
// CHECK-NEXT:      %[[MIN:.+]] = arith.constant -2147483648 : i32
// CHECK-NEXT:      %[[S:.+]] = arith.select %[[IN]], %[[W]], %[[MIN]] : i32
// CHECK-NEXT:      %[[N:.+]] = arith.trunci %[[S]] : i32 to i8
// CHECK-NEXT:      loop.yield %[[N]] : i8
// CHECK:         %b = loop.pointwise
// CHECK:           %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[B:.+]] = arith.cmpf une, %{{.+}}, %[[Z]] : f32
// CHECK-NEXT:      loop.yield %[[B]] : i1
// CHECK:         %f = loop.pointwise ins(%{{.+}} = %u : !ptensor.tensor<[4], ui8>)
// CHECK-NEXT:      %[[U:.+]] = loop.load %{{.+}}[d0] : i8
// CHECK-NEXT:      %[[F:.+]] = arith.uitofp %[[U]] : i8 to f32
func.func @casts(%x: !ptensor.tensor<[4], f32>, %u: !ptensor.tensor<[4], ui8>) -> (!ptensor.tensor<[4], i8>, !ptensor.tensor<[4], i1>, !ptensor.tensor<[4], f32>) {
  %i = ptensor.cast %x : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], i8>
  %b = ptensor.cast %x : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], i1>
  %f = ptensor.cast %u : !ptensor.tensor<[4], ui8> -> !ptensor.tensor<[4], f32>
  func.return %i, %b, %f : !ptensor.tensor<[4], i8>, !ptensor.tensor<[4], i1>, !ptensor.tensor<[4], f32>
}

// -----


// CHECK-LABEL: func.func @generators(
// CHECK-NEXT:    %f = loop.pointwise ins() -> !ptensor.tensor<[s0, 2], f32> {
// CHECK-NEXT:      %[[C:.+]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:      loop.yield %[[C]] : f32
// CHECK:         %i = loop.pointwise ins() -> !ptensor.tensor<[5], i64> {
// CHECK-NEXT:      %[[D:.+]] = loop.index d0
// CHECK-NEXT:      %[[I:.+]] = arith.index_cast %[[D]] : index to i64
// CHECK-NEXT:      %[[STEP:.+]] = arith.constant 2 : i64
// CHECK-NEXT:      %[[M:.+]] = arith.muli %[[I]], %[[STEP]] : i64
// CHECK-NEXT:      %[[START:.+]] = arith.constant 3 : i64
// CHECK-NEXT:      %[[R:.+]] = arith.addi %[[M]], %[[START]] : i64
// CHECK-NEXT:      loop.yield %[[R]] : i64
func.func @generators() -> (!ptensor.tensor<[s0, 2], f32>, !ptensor.tensor<[5], i64>) {
  %f = ptensor.full 0.5 : !ptensor.tensor<[s0, 2], f32>
  %i = ptensor.iota start 3 step 2 : !ptensor.tensor<[5], i64>
  func.return %f, %i : !ptensor.tensor<[s0, 2], f32>, !ptensor.tensor<[5], i64>
}

// -----

// Reductions: the reduced dimensions become the reduction domain (r0, ...);
// keepdim leaves size-1 parallel dimensions that the load does not use.
// CHECK-LABEL: func.func @reductions(
// CHECK-NEXT:    %s = loop.reduce sum ins(%[[X:.+]] = %x : !ptensor.tensor<[4, s0, 3], f32>) over [s0, 3] -> !ptensor.tensor<[4, 1, 1], f32> {
// CHECK-NEXT:      %[[V:.+]] = loop.load %[[X]][d0, r0, r1] : f32
// CHECK-NEXT:      loop.yield %[[V]] : f32
// CHECK:         %m = loop.reduce argmax ins(%[[X:.+]] = %x : {{.*}}) over [s0] -> !ptensor.tensor<[4, 3], i64> {
// CHECK-NEXT:      %[[V:.+]] = loop.load %[[X]][d0, r0, d1] : f32
// CHECK-NEXT:      loop.yield %[[V]] : f32
// CHECK:         %a = loop.reduce any ins(%[[X:.+]] = %x : {{.*}}) over [4] -> !ptensor.tensor<[s0, 3], i1> {
// CHECK-NEXT:      %[[V:.+]] = loop.load %[[X]][r0, d0, d1] : f32
// CHECK-NEXT:      %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[B:.+]] = arith.cmpf une, %[[V]], %[[Z]] : f32
// CHECK-NEXT:      loop.yield %[[B]] : i1
func.func @reductions(%x: !ptensor.tensor<[4, s0, 3], f32>) -> (!ptensor.tensor<[4, 1, 1], f32>, !ptensor.tensor<[4, 3], i64>, !ptensor.tensor<[s0, 3], i1>) {
  %s = ptensor.reduce sum %x dims [1, 2] keepdim : !ptensor.tensor<[4, s0, 3], f32> -> !ptensor.tensor<[4, 1, 1], f32>
  %m = ptensor.reduce argmax %x dims [1] : !ptensor.tensor<[4, s0, 3], f32> -> !ptensor.tensor<[4, 3], i64>
  %a = ptensor.reduce any %x dims [0] : !ptensor.tensor<[4, s0, 3], f32> -> !ptensor.tensor<[s0, 3], i1>
  func.return %s, %m, %a : !ptensor.tensor<[4, 1, 1], f32>, !ptensor.tensor<[4, 3], i64>, !ptensor.tensor<[s0, 3], i1>
}

// -----

// Scans: the scanned dimension becomes the reduction index r0, read where the
// input has it (through views too), the other dimensions the parallel
// indices in order; positions of ui8 values compare widened to i64.
// CHECK-LABEL: func.func @scans(
// CHECK-NEXT:    %c = loop.scan sum ins(%[[X:.+]] = %x : !ptensor.tensor<[4, s0, 3], f32>) dim 1 -> !ptensor.tensor<[4, s0, 3], f32> {
// CHECK-NEXT:      %[[V:.+]] = loop.load %[[X]][d0, r0, d1] : f32
// CHECK-NEXT:      loop.yield %[[V]] : f32
// CHECK:         %m = loop.scan max ins(%[[X:.+]] = %x : {{.*}}) dim 0 -> !ptensor.tensor<[3, 4, s0], f32> {
// CHECK-NEXT:      %[[V:.+]] = loop.load %[[X]][d0, d1, r0] : f32
// CHECK-NEXT:      loop.yield %[[V]] : f32
// CHECK:         %i = loop.scan argmin ins(%[[U:.+]] = %u : !ptensor.tensor<[s0], ui8>) dim 0 -> !ptensor.tensor<[s0], i64> {
// CHECK-NEXT:      %[[V:.+]] = loop.load %[[U]][r0] : i8
// CHECK-NEXT:      %[[W:.+]] = arith.extui %[[V]] : i8 to i64
// CHECK-NEXT:      loop.yield %[[W]] : i64
func.func @scans(%x: !ptensor.tensor<[4, s0, 3], f32>, %u: !ptensor.tensor<[s0], ui8>) -> (!ptensor.tensor<[4, s0, 3], f32>, !ptensor.tensor<[3, 4, s0], f32>, !ptensor.tensor<[s0], i64>) {
  %c = ptensor.scan sum %x dim 1 : !ptensor.tensor<[4, s0, 3], f32> -> !ptensor.tensor<[4, s0, 3], f32>
  %t = ptensor.permute %x [2, 0, 1] : !ptensor.tensor<[4, s0, 3], f32> -> !ptensor.tensor<[3, 4, s0], f32>
  %m = ptensor.scan max %t dim 0 : !ptensor.tensor<[3, 4, s0], f32> -> !ptensor.tensor<[3, 4, s0], f32>
  %i = ptensor.scan argmin %u dim 0 : !ptensor.tensor<[s0], ui8> -> !ptensor.tensor<[s0], i64>
  func.return %c, %m, %i : !ptensor.tensor<[4, s0, 3], f32>, !ptensor.tensor<[3, 4, s0], f32>, !ptensor.tensor<[s0], i64>
}

// -----

// View elimination: views disappear into the index expressions of the loads
// that read through them, simplified.
// CHECK-LABEL: func.func @views(
// CHECK-NOT:     = ptensor.
// A transpose is only a different index.
// CHECK:         loop.pointwise ins(%{{.+}} = %x : !ptensor.tensor<[2, 3, 8], f32>) -> !ptensor.tensor<[8, 3, 2], f32>
// CHECK-NEXT:      loop.load %{{.+}}[d2, d1, d0] : f32
// Split heads reads with the simplest expression.
// CHECK:         loop.pointwise ins(%{{.+}} = %x : !ptensor.tensor<[2, 3, 8], f32>) -> !ptensor.tensor<[2, 4, 3, 2], f32>
// CHECK-NEXT:      loop.load %{{.+}}[d0, d2, d1 * 2 + d3] : f32
// A broadcast reads index 0, or leaves the dimension out.
// CHECK:         loop.pointwise ins(%{{.+}} = %v : !ptensor.tensor<[5], f32>) -> !ptensor.tensor<[3, 5], f32>
// CHECK-NEXT:      loop.load %{{.+}}[d1] : f32
// A slice with a step, a select and a broadcast of the result.
// CHECK:         loop.pointwise ins(%{{.+}} = %m : !ptensor.tensor<[6, 9], f32>) -> !ptensor.tensor<[3, 3], f32>
// CHECK-NEXT:      loop.load %{{.+}}[4, d0 * 3 + 1] : f32
// Flattening a transpose needs floordiv and mod.
// CHECK:         loop.pointwise ins(%{{.+}} = %x : !ptensor.tensor<[2, 3, 8], f32>) -> !ptensor.tensor<[48], f32>
// CHECK-NEXT:      loop.load %{{.+}}[d0 mod 2, d0 floordiv 2 mod 3, d0 floordiv 6] : f32
// as_strided reads the flat position offset + sum(index * stride).
// CHECK:         loop.pointwise ins(%{{.+}} = %m : !ptensor.tensor<[6, 9], f32>) -> !ptensor.tensor<[4, 4], f32>
// CHECK-NEXT:      loop.load %{{.+}}[(d1 * 2 + 1) floordiv 9 + d0, (d1 * 2 + 1) mod 9] : f32
// CHECK-NOT:     = ptensor.
// CHECK:         func.return
func.func @views(%x: !ptensor.tensor<[2, 3, 8], f32>, %v: !ptensor.tensor<[5], f32>, %m: !ptensor.tensor<[6, 9], f32>) -> (!ptensor.tensor<[8, 3, 2], f32>, !ptensor.tensor<[2, 4, 3, 2], f32>, !ptensor.tensor<[3, 5], f32>, !ptensor.tensor<[3, 3], f32>, !ptensor.tensor<[48], f32>, !ptensor.tensor<[4, 4], f32>) {
  %t = ptensor.permute %x [2, 1, 0] : !ptensor.tensor<[2, 3, 8], f32> -> !ptensor.tensor<[8, 3, 2], f32>
  %0 = ptensor.unary neg %t : !ptensor.tensor<[8, 3, 2], f32> -> !ptensor.tensor<[8, 3, 2], f32>
  %h = ptensor.reshape %x : !ptensor.tensor<[2, 3, 8], f32> -> !ptensor.tensor<[2, 3, 4, 2], f32>
  %p = ptensor.permute %h [0, 2, 1, 3] : !ptensor.tensor<[2, 3, 4, 2], f32> -> !ptensor.tensor<[2, 4, 3, 2], f32>
  %1 = ptensor.unary neg %p : !ptensor.tensor<[2, 4, 3, 2], f32> -> !ptensor.tensor<[2, 4, 3, 2], f32>
  %u = ptensor.unsqueeze %v dim 0 : !ptensor.tensor<[5], f32> -> !ptensor.tensor<[1, 5], f32>
  %e = ptensor.expand %u : !ptensor.tensor<[1, 5], f32> -> !ptensor.tensor<[3, 5], f32>
  %2 = ptensor.unary neg %e : !ptensor.tensor<[3, 5], f32> -> !ptensor.tensor<[3, 5], f32>
  %s = ptensor.slice %m dim 1 start 1 end 9 step 3 : !ptensor.tensor<[6, 9], f32> -> !ptensor.tensor<[6, 3], f32>
  %r = ptensor.select %s dim 0 index 4 : !ptensor.tensor<[6, 3], f32> -> !ptensor.tensor<[3], f32>
  %q = ptensor.unsqueeze %r dim 1 : !ptensor.tensor<[3], f32> -> !ptensor.tensor<[3, 1], f32>
  %w = ptensor.expand %q : !ptensor.tensor<[3, 1], f32> -> !ptensor.tensor<[3, 3], f32>
  %3 = ptensor.unary neg %w : !ptensor.tensor<[3, 3], f32> -> !ptensor.tensor<[3, 3], f32>
  %f = ptensor.reshape %t : !ptensor.tensor<[8, 3, 2], f32> -> !ptensor.tensor<[48], f32>
  %4 = ptensor.unary neg %f : !ptensor.tensor<[48], f32> -> !ptensor.tensor<[48], f32>
  %a = ptensor.as_strided %m strides [9, 2] offset 1 : !ptensor.tensor<[6, 9], f32> -> !ptensor.tensor<[4, 4], f32>
  %5 = ptensor.unary neg %a : !ptensor.tensor<[4, 4], f32> -> !ptensor.tensor<[4, 4], f32>
  func.return %0, %1, %2, %3, %4, %5 : !ptensor.tensor<[8, 3, 2], f32>, !ptensor.tensor<[2, 4, 3, 2], f32>, !ptensor.tensor<[3, 5], f32>, !ptensor.tensor<[3, 3], f32>, !ptensor.tensor<[48], f32>, !ptensor.tensor<[4, 4], f32>
}

// -----

// Symbolic split heads: [s0, s1, H * D] -> [s0, s1, H, D] -> permute(0, 2, 1, 3).
// CHECK-LABEL: func.func @split_heads(
// CHECK-NEXT:    %r = loop.pointwise ins(%[[X:.+]] = %x : !ptensor.tensor<[s0, s1, 16], f32>) -> !ptensor.tensor<[s0, 4, s1, 4], f32> {
// CHECK-NEXT:      loop.load %[[X]][d0, d2, d1 * 4 + d3] : f32
func.func @split_heads(%x: !ptensor.tensor<[s0, s1, 16], f32>) -> !ptensor.tensor<[s0, 4, s1, 4], f32> {
  %h = ptensor.reshape %x : !ptensor.tensor<[s0, s1, 16], f32> -> !ptensor.tensor<[s0, s1, 4, 4], f32>
  %p = ptensor.permute %h [0, 2, 1, 3] : !ptensor.tensor<[s0, s1, 4, 4], f32> -> !ptensor.tensor<[s0, 4, s1, 4], f32>
  %r = ptensor.unary exp %p : !ptensor.tensor<[s0, 4, s1, 4], f32> -> !ptensor.tensor<[s0, 4, s1, 4], f32>
  func.return %r : !ptensor.tensor<[s0, 4, s1, 4], f32>
}

// -----

// Data movement: cat selects between masked loads; pad reads in range or
// fills; gather and index read at loaded positions (v0, ...).
// CHECK-LABEL: func.func @data_movement(
// CHECK-NEXT:    %c = loop.pointwise ins(%[[A:.+]] = %a : !ptensor.tensor<[2, 4], f32>, %[[B:.+]] = %b : !ptensor.tensor<[s0, 4], f32>) -> !ptensor.tensor<[s0 + 2, 4], f32> {
// CHECK:           %[[FIRST:.+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : index
// CHECK-NEXT:      %[[AV:.+]] = loop.load %[[A]][d0, d1] if %[[FIRST]] : f32
// CHECK:           %[[SECOND:.+]] = arith.cmpi sge, %{{.+}}, %{{.+}} : index
// CHECK-NEXT:      %[[BV:.+]] = loop.load %[[B]][d0 - 2, d1] if %[[SECOND]] : f32
// CHECK-NEXT:      %[[CV:.+]] = arith.select %[[FIRST]], %[[AV]], %[[BV]] : f32
// CHECK-NEXT:      loop.yield %[[CV]] : f32
// CHECK:         %p = loop.pointwise
// CHECK:           %[[IN:.+]] = arith.andi %{{.+}}, %{{.+}} : i1
// CHECK-NEXT:      %[[PV:.+]] = loop.load %{{.+}}[d0, d1 - 1] if %[[IN]] : f32
// CHECK-NEXT:      %[[FILL:.+]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:      %[[P:.+]] = arith.select %[[IN]], %[[PV]], %[[FILL]] : f32
// Reflection mirrors only the padded dimension.
// CHECK:         %r = loop.pointwise
// CHECK:           loop.load %{{.+}}[d0, v0] (%{{.+}}) : f32
// CHECK:         %g = loop.pointwise ins(%[[I:.+]] = %i : !ptensor.tensor<[2, 3], i64>, %[[A:.+]] = %a : !ptensor.tensor<[2, 4], f32>)
// CHECK-NEXT:      %[[IV:.+]] = loop.load %[[I]][d0, d1] : i64
// CHECK-NEXT:      %[[POS:.+]] = arith.index_cast %[[IV]] : i64 to index
// A position out of range (an error in eager) is clamped to the dimension.
// CHECK:           %[[LAST:.+]] = arith.subi %{{.+}}, %{{.+}} : index
// CHECK-NEXT:      %[[ABOVE:.+]] = arith.cmpi sgt, %[[POS]], %[[LAST]] : index
// CHECK-NEXT:      %[[LOW:.+]] = arith.select %[[ABOVE]], %[[LAST]], %[[POS]] : index
// CHECK-NEXT:      %[[BELOW:.+]] = arith.cmpi slt, %[[LOW]], %{{.+}} : index
// CHECK-NEXT:      %[[KEPT:.+]] = arith.select %[[BELOW]], %{{.+}}, %[[LOW]] : index
// CHECK-NEXT:      loop.load %[[A]][d0, v0] (%[[KEPT]]) : f32
// Negative positions of an index count from the end.
// CHECK:         %x = loop.pointwise ins(%[[J:.+]] = %j : !ptensor.tensor<[5], i64>, %[[B:.+]] = %b : !ptensor.tensor<[s0, 4], f32>)
// CHECK:           %[[NEG:.+]] = arith.cmpi slt, %[[POS:.+]], %{{.+}} : index
// CHECK-NEXT:      %[[SIZE:.+]] = loop.index s0
// CHECK-NEXT:      %[[WRAP:.+]] = arith.addi %[[POS]], %[[SIZE]] : index
// CHECK-NEXT:      %[[FIXED:.+]] = arith.select %[[NEG]], %[[WRAP]], %[[POS]] : index
// CHECK:           %[[OVER:.+]] = arith.cmpi sgt, %[[FIXED]], %{{.+}} : index
// CHECK-NEXT:      %[[LOWER:.+]] = arith.select %[[OVER]], %{{.+}}, %[[FIXED]] : index
// CHECK-NEXT:      %[[UNDER:.+]] = arith.cmpi slt, %[[LOWER]], %{{.+}} : index
// CHECK-NEXT:      %[[CLAMPED:.+]] = arith.select %[[UNDER]], %{{.+}}, %[[LOWER]] : index
// CHECK-NEXT:      loop.load %[[B]][v0, d1] (%[[CLAMPED]]) : f32
func.func @data_movement(%a: !ptensor.tensor<[2, 4], f32>, %b: !ptensor.tensor<[s0, 4], f32>, %i: !ptensor.tensor<[2, 3], i64>, %j: !ptensor.tensor<[5], i64>) -> (!ptensor.tensor<[s0 + 2, 4], f32>, !ptensor.tensor<[2, 7], f32>, !ptensor.tensor<[2, 6], f32>, !ptensor.tensor<[2, 3], f32>, !ptensor.tensor<[5, 4], f32>) {
  %c = ptensor.cat %a, %b dim 0 : !ptensor.tensor<[2, 4], f32>, !ptensor.tensor<[s0, 4], f32> -> !ptensor.tensor<[s0 + 2, 4], f32>
  %p = ptensor.pad %a constant 0.5 low [0, 1] high [0, 2] : !ptensor.tensor<[2, 4], f32> -> !ptensor.tensor<[2, 7], f32>
  %r = ptensor.pad %a reflect low [0, 1] high [0, 1] : !ptensor.tensor<[2, 4], f32> -> !ptensor.tensor<[2, 6], f32>
  %g = ptensor.gather %a, %i dim 1 : !ptensor.tensor<[2, 4], f32>, !ptensor.tensor<[2, 3], i64> -> !ptensor.tensor<[2, 3], f32>
  %x = ptensor.index %b[%j] dims [0] : !ptensor.tensor<[s0, 4], f32>, !ptensor.tensor<[5], i64> -> !ptensor.tensor<[5, 4], f32>
  func.return %c, %p, %r, %g, %x : !ptensor.tensor<[s0 + 2, 4], f32>, !ptensor.tensor<[2, 7], f32>, !ptensor.tensor<[2, 6], f32>, !ptensor.tensor<[2, 3], f32>, !ptensor.tensor<[5, 4], f32>
}

// -----

// What stays for the host program: library ops and the views they read,
// views that are results, fallbacks, constants, random numbers and an
// assigning index_put (the scatters that combine become loop.scatter:
// convert_ptensor_to_loop_scatters.mlir).
// CHECK-LABEL: func.func @kept(
// CHECK-NEXT:    %t = ptensor.permute %x [1, 0]
// CHECK-NEXT:    %m = ptensor.mm %t, %y
// CHECK-NEXT:    %c = ptensor.fallback "aten.cumsum.default"(%x)
// CHECK-NEXT:    %k = ptensor.constant
// CHECK-NEXT:    %n = ptensor.rand normal
// CHECK-NEXT:    %s = ptensor.index_put %x[%r] dims [0], %z
// CHECK-NEXT:    func.return %m, %t, %c, %k, %n, %s
func.func @kept(%x: !ptensor.tensor<[4, 8], f32>, %y: !ptensor.tensor<[4, 2], f32>, %r: !ptensor.tensor<[3], i64>, %z: !ptensor.tensor<[8], f32>) -> (!ptensor.tensor<[8, 2], f32>, !ptensor.tensor<[8, 4], f32>, !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[2], f32>, !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>) {
  %t = ptensor.permute %x [1, 0] : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[8, 4], f32>
  %m = ptensor.mm %t, %y : !ptensor.tensor<[8, 4], f32>, !ptensor.tensor<[4, 2], f32> -> !ptensor.tensor<[8, 2], f32>
  %c = ptensor.fallback "aten.cumsum.default"(%x) [#ptensor.operand<0>, 1 : i64] : (!ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32>
  %k = ptensor.constant dense<[1.0, 2.0]> : tensor<2xf32> -> !ptensor.tensor<[2], f32>
  %n = ptensor.rand normal : !ptensor.tensor<[4, 8], f32>
  %s = ptensor.index_put %x[%r] dims [0], %z : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8], f32>, [!ptensor.tensor<[3], i64>] -> !ptensor.tensor<[4, 8], f32>
  func.return %m, %t, %c, %k, %n, %s : !ptensor.tensor<[8, 2], f32>, !ptensor.tensor<[8, 4], f32>, !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[2], f32>, !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>
}

// -----

// A function without computing ops is left as it is; a view nobody reads is erased.
// CHECK-LABEL: func.func @nothing(
// CHECK-NEXT:    func.return %x : !ptensor.tensor<[4, 8], f32>
func.func @nothing(%x: !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
  %t = ptensor.permute %x [1, 0] : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[8, 4], f32>
  func.return %x : !ptensor.tensor<[4, 8], f32>
}

// -----

// Kept: an elementwise function without a scalar form stays a ptensor op, which
// the host program runs with torch; its neighbours still become loops.
// CHECK-LABEL: func.func @kept(
// CHECK-NEXT:    %r = ptensor.unary erfinv %x : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f32>
// CHECK-NEXT:    %n = loop.pointwise ins(%{{.+}} = %r : !ptensor.tensor<[4], f32>)
func.func @kept(%x: !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32> {
  %r = ptensor.unary erfinv %x : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f32>
  %n = ptensor.unary neg %r : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f32>
  func.return %n : !ptensor.tensor<[4], f32>
}
