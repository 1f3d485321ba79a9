// RUN: permalloy-opt %s --split-input-file -p fuse-loops | filecheck %s
// RUN: permalloy-opt %s --split-input-file -p fuse-loops | permalloy-opt --split-input-file | filecheck %s
// RUN: permalloy-opt %s --split-input-file -p 'fuse-loops{max-recompute=1}' | filecheck %s --check-prefix=ONCE
// RUN: permalloy-opt %s --split-input-file -p 'fuse-loops{max-kernel-size=2}' | filecheck %s --check-prefix=SMALL
// RUN: permalloy-opt %s --split-input-file -p 'fuse-loops{inline=false}' | filecheck %s --check-prefix=NOINLINE
// RUN: permalloy-opt %s --split-input-file -p 'fuse-loops{group=false}' | filecheck %s --check-prefix=NOGROUP
// RUN: permalloy-opt %s --split-input-file -p 'fuse-loops{max-group-size=2}' | filecheck %s --check-prefix=PAIRS

// fuse-loops: each fusion decision and each refusal, on loop IR as
// convert-ptensor-to-loop gives it. Vertical fusion inlines a pointwise
// producer at its readers' loads, composing index expressions; grouping puts
// consecutive loop ops over the same rows into one loop.fused. The prefixes
// check the options: max-recompute, max-kernel-size, inline, group and
// max-group-size. (tests/unit/test_fusion.py runs every function of this file
// before and after the pass on random inputs.)

// A pointwise chain becomes one loop.pointwise: each producer's body is
// inlined at the load that read it, and its inputs become the reader's.
// CHECK-LABEL: func.func @pointwise_chain(
// CHECK-NEXT:    %t = loop.pointwise ins(%[[Y:.+]] = %y : !ptensor.tensor<[4, 8], f32>, %[[X:.+]] = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
// CHECK-NEXT:      %[[XV:.+]] = loop.load %[[X]][d0, d1] : f32
// CHECK-NEXT:      %[[E:.+]] = math.exp %[[XV]] : f32
// CHECK-NEXT:      %[[YV:.+]] = loop.load %[[Y]][d0, d1] : f32
// CHECK-NEXT:      %[[A:.+]] = arith.addf %[[E]], %[[YV]] : f32
// CHECK-NEXT:      %[[T:.+]] = math.tanh %[[A]] : f32
// CHECK-NEXT:      loop.yield %[[T]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %t : !ptensor.tensor<[4, 8], f32>
// A body may not grow past max-kernel-size ops: exp and add make two, the
// tanh would be the third, so %a stays a loop op of its own (in the same
// loop.fused: it is read at its own row).
// SMALL-LABEL: func.func @pointwise_chain(
// SMALL-NEXT:    %t = loop.fused
// SMALL-NEXT:      %a = loop.pointwise
// SMALL-NEXT:        loop.load
// SMALL-NEXT:        math.exp
// SMALL-NEXT:        loop.load
// SMALL-NEXT:        arith.addf
// SMALL-NEXT:        loop.yield
// SMALL-NEXT:      }
// SMALL-NEXT:      %t_1 = loop.pointwise ins(%[[A:.+]] = %a : !ptensor.tensor<[4, 8], f32>)
// SMALL-NEXT:        loop.load %[[A]][d0, d1] : f32
// SMALL-NEXT:        math.tanh
// Without inlining, the chain is one loop.fused of three members.
// NOINLINE-LABEL: func.func @pointwise_chain(
// NOINLINE-NEXT:    %t = loop.fused
// NOINLINE-NEXT:      %e = loop.pointwise
// NOINLINE:           %a = loop.pointwise
// NOINLINE:           %t_1 = loop.pointwise
// NOINLINE:           loop.fused_yield %t_1
// Without grouping, the inlined chain is the same single loop.pointwise.
// NOGROUP-LABEL: func.func @pointwise_chain(
// NOGROUP-NEXT:    %t = loop.pointwise
// NOGROUP-NOT:     loop.fused
// NOGROUP:         func.return %t
func.func @pointwise_chain(%x: !ptensor.tensor<[4, 8], f32>, %y: !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
  %e = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  %a = loop.pointwise ins(%0 = %e : !ptensor.tensor<[4, 8], f32>, %1 = %y : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %2 = loop.load %0[d0, d1] : f32
    %3 = loop.load %1[d0, d1] : f32
    %4 = arith.addf %2, %3 : f32
    loop.yield %4 : f32
  }
  %t = loop.pointwise ins(%0 = %a : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = math.tanh %1 : f32
    loop.yield %2 : f32
  }
  func.return %t : !ptensor.tensor<[4, 8], f32>
}

// -----

// A producer read through a transpose: its load takes the reader's index.
// CHECK-LABEL: func.func @transpose(
// CHECK-NEXT:    %n = loop.pointwise ins(%[[X:.+]] = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[8, 4], f32> {
// CHECK-NEXT:      %[[V:.+]] = loop.load %[[X]][d1, d0] : f32
// CHECK-NEXT:      %[[E:.+]] = math.exp %[[V]] : f32
// CHECK-NEXT:      %[[N:.+]] = arith.negf %[[E]] : f32
// CHECK-NEXT:      loop.yield %[[N]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %n
func.func @transpose(%x: !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[8, 4], f32> {
  %e = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  %n = loop.pointwise ins(%0 = %e : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[8, 4], f32> {
    %1 = loop.load %0[d1, d0] : f32
    %2 = arith.negf %1 : f32
    loop.yield %2 : f32
  }
  func.return %n : !ptensor.tensor<[8, 4], f32>
}

// -----

// A transpose read through a reshape: the composed index is the producer's
// [d1, d0] with d0 -> d0 floordiv 8, d1 -> d0 mod 8.
// CHECK-LABEL: func.func @reshape_of_transpose(
// CHECK-NEXT:    %n = loop.pointwise ins(%[[X:.+]] = %x : !ptensor.tensor<[8, 4], f32>) -> !ptensor.tensor<[32], f32> {
// CHECK-NEXT:      %[[V:.+]] = loop.load %[[X]][d0 mod 8, d0 floordiv 8] : f32
// CHECK-NEXT:      %[[E:.+]] = math.exp %[[V]] : f32
// CHECK-NEXT:      arith.negf %[[E]] : f32
func.func @reshape_of_transpose(%x: !ptensor.tensor<[8, 4], f32>) -> !ptensor.tensor<[32], f32> {
  %e = loop.pointwise ins(%0 = %x : !ptensor.tensor<[8, 4], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d1, d0] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  %n = loop.pointwise ins(%0 = %e : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[32], f32> {
    %1 = loop.load %0[d0 floordiv 8, d0 mod 8] : f32
    %2 = arith.negf %1 : f32
    loop.yield %2 : f32
  }
  func.return %n : !ptensor.tensor<[32], f32>
}

// -----

// Two transposes compose into the identity.
// CHECK-LABEL: func.func @transpose_back(
// CHECK-NEXT:    %n = loop.pointwise ins(%[[X:.+]] = %x : !ptensor.tensor<[8, 4], f32>) -> !ptensor.tensor<[8, 4], f32> {
// CHECK-NEXT:      loop.load %[[X]][d0, d1] : f32
func.func @transpose_back(%x: !ptensor.tensor<[8, 4], f32>) -> !ptensor.tensor<[8, 4], f32> {
  %e = loop.pointwise ins(%0 = %x : !ptensor.tensor<[8, 4], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d1, d0] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  %n = loop.pointwise ins(%0 = %e : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[8, 4], f32> {
    %1 = loop.load %0[d1, d0] : f32
    %2 = arith.negf %1 : f32
    loop.yield %2 : f32
  }
  func.return %n : !ptensor.tensor<[8, 4], f32>
}

// -----

// A cheap producer (one add, no math) read through a broadcast is recomputed
// at each of its 4 reads per element.
// CHECK-LABEL: func.func @broadcast_cheap(
// CHECK-NEXT:    %y = loop.pointwise ins(%[[Z:.+]] = %z : !ptensor.tensor<[4, 8], f32>, %[[X:.+]] = %x : !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[4, 8], f32> {
// CHECK-NEXT:      %[[V:.+]] = loop.load %[[X]][d1] : f32
// CHECK-NEXT:      %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[P:.+]] = arith.addf %[[V]], %[[ONE]] : f32
// CHECK-NEXT:      %[[ZV:.+]] = loop.load %[[Z]][d0, d1] : f32
// CHECK-NEXT:      arith.mulf %[[P]], %[[ZV]] : f32
// The add and the multiply make three ops, past max-kernel-size=2.
// SMALL-LABEL: func.func @broadcast_cheap(
// SMALL-NEXT:    %p = loop.pointwise
// SMALL:         %y = loop.pointwise ins(%{{.+}} = %p
func.func @broadcast_cheap(%x: !ptensor.tensor<[8], f32>, %z: !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
  %p = loop.pointwise ins(%0 = %x : !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[8], f32> {
    %1 = loop.load %0[d0] : f32
    %2 = arith.constant 1.000000e+00 : f32
    %3 = arith.addf %1, %2 : f32
    loop.yield %3 : f32
  }
  %y = loop.pointwise ins(%0 = %p : !ptensor.tensor<[8], f32>, %1 = %z : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %2 = loop.load %0[d1] : f32
    %3 = loop.load %1[d0, d1] : f32
    %4 = arith.mulf %2, %3 : f32
    loop.yield %4 : f32
  }
  func.return %y : !ptensor.tensor<[4, 8], f32>
}

// -----

// A transcendental read 4 times per element (a broadcast over 4 rows) stays a
// loop op of its own, and the two are not grouped: their rows differ.
// CHECK-LABEL: func.func @broadcast_transcendental(
// CHECK-NEXT:    %p = loop.pointwise ins(%[[X:.+]] = %x : !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[8], f32> {
// CHECK-NEXT:      loop.load %[[X]][d0] : f32
// CHECK-NEXT:      math.exp
// CHECK-NEXT:      loop.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %y = loop.pointwise ins(%[[P:.+]] = %p : !ptensor.tensor<[8], f32>, %{{.+}} = %z : !ptensor.tensor<[4, 8], f32>)
// CHECK-NEXT:      loop.load %[[P]][d1] : f32
// CHECK-NOT:       math.exp
// CHECK:         func.return %y
func.func @broadcast_transcendental(%x: !ptensor.tensor<[8], f32>, %z: !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
  %p = loop.pointwise ins(%0 = %x : !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[8], f32> {
    %1 = loop.load %0[d0] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  %y = loop.pointwise ins(%0 = %p : !ptensor.tensor<[8], f32>, %1 = %z : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %2 = loop.load %0[d1] : f32
    %3 = loop.load %1[d0, d1] : f32
    %4 = arith.mulf %2, %3 : f32
    loop.yield %4 : f32
  }
  func.return %y : !ptensor.tensor<[4, 8], f32>
}

// -----

// Read s0 times per element: s0 may be large, so the exp stays on its own.
// CHECK-LABEL: func.func @broadcast_symbolic(
// CHECK-NEXT:    %p = loop.pointwise ins(%{{.+}} = %x : !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[8], f32> {
// CHECK:         %y = loop.pointwise ins(%{{.+}} = %p : !ptensor.tensor<[8], f32>, %{{.+}} = %z : !ptensor.tensor<[s0, 8], f32>) -> !ptensor.tensor<[s0, 8], f32> {
// CHECK-NOT:       math.exp
// CHECK:         func.return %y
func.func @broadcast_symbolic(%x: !ptensor.tensor<[8], f32>, %z: !ptensor.tensor<[s0, 8], f32>) -> !ptensor.tensor<[s0, 8], f32> {
  %p = loop.pointwise ins(%0 = %x : !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[8], f32> {
    %1 = loop.load %0[d0] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  %y = loop.pointwise ins(%0 = %p : !ptensor.tensor<[8], f32>, %1 = %z : !ptensor.tensor<[s0, 8], f32>) -> !ptensor.tensor<[s0, 8], f32> {
    %2 = loop.load %0[d1] : f32
    %3 = loop.load %1[d0, d1] : f32
    %4 = arith.mulf %2, %3 : f32
    loop.yield %4 : f32
  }
  func.return %y : !ptensor.tensor<[s0, 8], f32>
}

// -----

// A transcendental read twice per element (x + x^T) is inlined at both loads
// under the default max-recompute=2, and kept with max-recompute=1.
// CHECK-LABEL: func.func @read_twice(
// CHECK-NEXT:    %s = loop.pointwise ins(%[[X:.+]] = %x : !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f32> {
// CHECK-NEXT:      %[[A:.+]] = loop.load %[[X]][d0, d1] : f32
// CHECK-NEXT:      %[[EA:.+]] = math.exp %[[A]] : f32
// CHECK-NEXT:      %[[B:.+]] = loop.load %[[X]][d1, d0] : f32
// CHECK-NEXT:      %[[EB:.+]] = math.exp %[[B]] : f32
// CHECK-NEXT:      arith.addf %[[EA]], %[[EB]] : f32
// ONCE-LABEL: func.func @read_twice(
// ONCE-NEXT:    %e = loop.pointwise
// ONCE:         %s = loop.pointwise ins(%[[E:.+]] = %e : !ptensor.tensor<[4, 4], f32>)
// ONCE-NEXT:      loop.load %[[E]][d0, d1] : f32
// ONCE-NEXT:      loop.load %[[E]][d1, d0] : f32
func.func @read_twice(%x: !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f32> {
  %e = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  %s = loop.pointwise ins(%0 = %e : !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = loop.load %0[d1, d0] : f32
    %3 = arith.addf %1, %2 : f32
    loop.yield %3 : f32
  }
  func.return %s : !ptensor.tensor<[4, 4], f32>
}

// -----

// A cast is cheap: inlined at both loads whatever max-recompute says.
// CHECK-LABEL: func.func @read_twice_cheap(
// CHECK-NEXT:    %s = loop.pointwise ins(%[[X:.+]] = %x : !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f64> {
// CHECK-NEXT:      loop.load %[[X]][d0, d1] : f32
// CHECK-NEXT:      arith.extf
// CHECK-NEXT:      loop.load %[[X]][d1, d0] : f32
// CHECK-NEXT:      arith.extf
// ONCE-LABEL: func.func @read_twice_cheap(
// ONCE-NEXT:    %s = loop.pointwise ins(%[[X:.+]] = %x : !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f64> {
// ONCE-NEXT:      loop.load %[[X]][d0, d1] : f32
// ONCE-NEXT:      arith.extf
// ONCE-NEXT:      loop.load %[[X]][d1, d0] : f32
// ONCE-NEXT:      arith.extf
func.func @read_twice_cheap(%x: !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f64> {
  %c = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f64> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = arith.extf %1 : f32 to f64
    loop.yield %2 : f64
  }
  %s = loop.pointwise ins(%0 = %c : !ptensor.tensor<[4, 4], f64>) -> !ptensor.tensor<[4, 4], f64> {
    %1 = loop.load %0[d0, d1] : f64
    %2 = loop.load %0[d1, d0] : f64
    %3 = arith.addf %1, %2 : f64
    loop.yield %3 : f64
  }
  func.return %s : !ptensor.tensor<[4, 4], f64>
}

// -----

// A reduction's pointwise prologue is inlined into its body: d1 becomes r0.
// CHECK-LABEL: func.func @reduction_prologue(
// CHECK-NEXT:    %s = loop.reduce sum ins(%[[X:.+]] = %x : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4], f32> {
// CHECK-NEXT:      %[[V:.+]] = loop.load %[[X]][d0, r0] : f32
// CHECK-NEXT:      %[[E:.+]] = math.exp %[[V]] : f32
// CHECK-NEXT:      loop.yield %[[E]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %s
// NOINLINE-LABEL: func.func @reduction_prologue(
// NOINLINE-NEXT:    %s = loop.fused
// NOINLINE-NEXT:      %e = loop.pointwise
// NOINLINE:           %s_1 = loop.reduce sum ins(%{{.+}} = %e
func.func @reduction_prologue(%x: !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4], f32> {
  %e = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  %s = loop.reduce sum ins(%0 = %e : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4], f32> {
    %1 = loop.load %0[d0, r0] : f32
    loop.yield %1 : f32
  }
  func.return %s : !ptensor.tensor<[4], f32>
}

// -----

// Softmax: the exp (read by the sum and by the division, twice per element)
// is inlined into both, and max, sum and division share one kernel, reading
// each other's results at their own row d0.
// CHECK-LABEL: func.func @softmax(
// CHECK-NEXT:    %y = loop.fused ins(%[[X:.+]] = %x : !ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4, 8], f32>) {
// CHECK-NEXT:      %m = loop.reduce max ins(%[[A:.+]] = %[[X]] : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4, 1], f32> {
// CHECK-NEXT:        loop.load %[[A]][d0, r0] : f32
// CHECK-NEXT:        loop.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %t = loop.reduce sum ins(%[[A:.+]] = %[[X]] : !ptensor.tensor<[4, 8], f32>, %[[M:.+]] = %m : !ptensor.tensor<[4, 1], f32>) over [8] -> !ptensor.tensor<[4, 1], f32> {
// CHECK-NEXT:        %[[V:.+]] = loop.load %[[A]][d0, r0] : f32
// CHECK-NEXT:        %[[MV:.+]] = loop.load %[[M]][d0, 0] : f32
// CHECK-NEXT:        %[[S:.+]] = arith.subf %[[V]], %[[MV]] : f32
// CHECK-NEXT:        %[[E:.+]] = math.exp %[[S]] : f32
// CHECK-NEXT:        loop.yield %[[E]] : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[Y:.+]] = loop.pointwise ins(%[[T:.+]] = %t : !ptensor.tensor<[4, 1], f32>, %[[A:.+]] = %[[X]] : !ptensor.tensor<[4, 8], f32>, %[[M:.+]] = %m : !ptensor.tensor<[4, 1], f32>) -> !ptensor.tensor<[4, 8], f32> {
// CHECK-NEXT:        %[[V:.+]] = loop.load %[[A]][d0, d1] : f32
// CHECK-NEXT:        %[[MV:.+]] = loop.load %[[M]][d0, 0] : f32
// CHECK-NEXT:        %[[S:.+]] = arith.subf %[[V]], %[[MV]] : f32
// CHECK-NEXT:        %[[E:.+]] = math.exp %[[S]] : f32
// CHECK-NEXT:        %[[TV:.+]] = loop.load %[[T]][d0, 0] : f32
// CHECK-NEXT:        %[[D:.+]] = arith.divf %[[E]], %[[TV]] : f32
// CHECK-NEXT:        loop.yield %[[D]] : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      loop.fused_yield %[[Y]] : !ptensor.tensor<[4, 8], f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %y
// With max-recompute=1 the exp is computed once, as a member of the kernel.
// ONCE-LABEL: func.func @softmax(
// ONCE-NEXT:    %y = loop.fused
// ONCE-NEXT:      %m = loop.reduce max
// ONCE:           %e = loop.pointwise
// ONCE:             math.exp
// ONCE:           %t = loop.reduce sum ins(%{{.+}} = %e
// ONCE:           %y_1 = loop.pointwise ins(%{{.+}} = %e
// ONCE-NOT:         math.exp
// ONCE:           loop.fused_yield %y_1
// Without grouping, the three loop ops stay apart.
// NOGROUP-LABEL: func.func @softmax(
// NOGROUP-NEXT:    %m = loop.reduce max
// NOGROUP:         %t = loop.reduce sum
// NOGROUP:           math.exp
// NOGROUP:         %y = loop.pointwise
// NOGROUP:           math.exp
// NOGROUP-NOT:     loop.fused
// Without inlining, all five loop ops are members of one kernel.
// NOINLINE-LABEL: func.func @softmax(
// NOINLINE-NEXT:    %y = loop.fused
// NOINLINE-NEXT:      %m = loop.reduce max
// NOINLINE:           %s = loop.pointwise
// NOINLINE:           %e = loop.pointwise
// NOINLINE:           %t = loop.reduce sum
// NOINLINE:           %y_1 = loop.pointwise
// NOINLINE:           loop.fused_yield %y_1
// Groups of at most two members: max with sum, then the division alone.
// PAIRS-LABEL: func.func @softmax(
// PAIRS-NEXT:    %m, %t = loop.fused
// PAIRS:           loop.fused_yield %{{.+}}, %{{.+}} : !ptensor.tensor<[4, 1], f32>, !ptensor.tensor<[4, 1], f32>
// PAIRS:         %y = loop.pointwise ins(%{{.+}} = %t : !ptensor.tensor<[4, 1], f32>, %{{.+}} = %x : !ptensor.tensor<[4, 8], f32>, %{{.+}} = %m : !ptensor.tensor<[4, 1], f32>)
func.func @softmax(%x: !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
  %m = loop.reduce max ins(%0 = %x : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4, 1], f32> {
    %1 = loop.load %0[d0, r0] : f32
    loop.yield %1 : f32
  }
  %s = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 8], f32>, %1 = %m : !ptensor.tensor<[4, 1], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %2 = loop.load %0[d0, d1] : f32
    %3 = loop.load %1[d0, 0] : f32
    %4 = arith.subf %2, %3 : f32
    loop.yield %4 : f32
  }
  %e = loop.pointwise ins(%0 = %s : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  %t = loop.reduce sum ins(%0 = %e : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4, 1], f32> {
    %1 = loop.load %0[d0, r0] : f32
    loop.yield %1 : f32
  }
  %y = loop.pointwise ins(%0 = %e : !ptensor.tensor<[4, 8], f32>, %1 = %t : !ptensor.tensor<[4, 1], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %2 = loop.load %0[d0, d1] : f32
    %3 = loop.load %1[d0, 0] : f32
    %4 = arith.divf %2, %3 : f32
    loop.yield %4 : f32
  }
  func.return %y : !ptensor.tensor<[4, 8], f32>
}

// -----

// Layer norm: mean, centred values, variance, rsqrt, scale and shift. The
// cheap producers (the mean, x - mean) are inlined into both their readers;
// the rsqrt, read once per element of a row, stays a member; one kernel.
// CHECK-LABEL: func.func @layer_norm(
// CHECK-NEXT:    %yb = loop.fused ins(%[[X:.+]] = %x : !ptensor.tensor<[4, 8], f32>, %[[B:.+]] = %b : !ptensor.tensor<[8], f32>, %[[W:.+]] = %w : !ptensor.tensor<[8], f32>) -> (!ptensor.tensor<[4, 8], f32>) {
// CHECK-NEXT:      %s = loop.reduce sum ins(%{{.+}} = %[[X]] : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4, 1], f32> {
// CHECK:           %v = loop.reduce sum ins(%[[A:.+]] = %[[X]] : !ptensor.tensor<[4, 8], f32>, %[[S:.+]] = %s : !ptensor.tensor<[4, 1], f32>) over [8] -> !ptensor.tensor<[4, 1], f32> {
// CHECK-NEXT:        %[[XV:.+]] = loop.load %[[A]][d0, r0] : f32
// CHECK-NEXT:        %[[SV:.+]] = loop.load %[[S]][d0, 0] : f32
// CHECK-NEXT:        %[[N:.+]] = arith.constant 8.000000e+00 : f32
// CHECK-NEXT:        %[[MEAN:.+]] = arith.divf %[[SV]], %[[N]] : f32
// CHECK-NEXT:        %[[C:.+]] = arith.subf %[[XV]], %[[MEAN]] : f32
// CHECK-NEXT:        %[[Q:.+]] = arith.mulf %[[C]], %[[C]] : f32
// CHECK-NEXT:        loop.yield %[[Q]] : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      %r = loop.pointwise ins(%{{.+}} = %v : !ptensor.tensor<[4, 1], f32>) -> !ptensor.tensor<[4, 1], f32> {
// CHECK:             math.rsqrt
// CHECK:           %[[Y:.+]] = loop.pointwise ins(%[[BA:.+]] = %[[B]] : !ptensor.tensor<[8], f32>, %[[WA:.+]] = %[[W]] : !ptensor.tensor<[8], f32>, %[[R:.+]] = %r : !ptensor.tensor<[4, 1], f32>, %{{.+}} = %[[X]] : !ptensor.tensor<[4, 8], f32>, %{{.+}} = %s : !ptensor.tensor<[4, 1], f32>) -> !ptensor.tensor<[4, 8], f32> {
// CHECK:             loop.load %[[R]][d0, 0] : f32
// CHECK:             loop.load %[[WA]][d1] : f32
// CHECK:             loop.load %[[BA]][d1] : f32
// CHECK:           loop.fused_yield %[[Y]] : !ptensor.tensor<[4, 8], f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %yb
func.func @layer_norm(%x: !ptensor.tensor<[4, 8], f32>, %w: !ptensor.tensor<[8], f32>, %b: !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[4, 8], f32> {
  %s = loop.reduce sum ins(%0 = %x : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4, 1], f32> {
    %1 = loop.load %0[d0, r0] : f32
    loop.yield %1 : f32
  }
  %m = loop.pointwise ins(%0 = %s : !ptensor.tensor<[4, 1], f32>) -> !ptensor.tensor<[4, 1], f32> {
    %1 = loop.load %0[d0, 0] : f32
    %2 = arith.constant 8.000000e+00 : f32
    %3 = arith.divf %1, %2 : f32
    loop.yield %3 : f32
  }
  %c = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 8], f32>, %1 = %m : !ptensor.tensor<[4, 1], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %2 = loop.load %0[d0, d1] : f32
    %3 = loop.load %1[d0, 0] : f32
    %4 = arith.subf %2, %3 : f32
    loop.yield %4 : f32
  }
  %q = loop.pointwise ins(%0 = %c : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = arith.mulf %1, %1 : f32
    loop.yield %2 : f32
  }
  %v = loop.reduce sum ins(%0 = %q : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4, 1], f32> {
    %1 = loop.load %0[d0, r0] : f32
    loop.yield %1 : f32
  }
  %vm = loop.pointwise ins(%0 = %v : !ptensor.tensor<[4, 1], f32>) -> !ptensor.tensor<[4, 1], f32> {
    %1 = loop.load %0[d0, 0] : f32
    %2 = arith.constant 8.000000e+00 : f32
    %3 = arith.divf %1, %2 : f32
    loop.yield %3 : f32
  }
  %r = loop.pointwise ins(%0 = %vm : !ptensor.tensor<[4, 1], f32>) -> !ptensor.tensor<[4, 1], f32> {
    %1 = loop.load %0[d0, 0] : f32
    %2 = math.rsqrt %1 : f32
    loop.yield %2 : f32
  }
  %y = loop.pointwise ins(%0 = %c : !ptensor.tensor<[4, 8], f32>, %1 = %r : !ptensor.tensor<[4, 1], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %2 = loop.load %0[d0, d1] : f32
    %3 = loop.load %1[d0, 0] : f32
    %4 = arith.mulf %2, %3 : f32
    loop.yield %4 : f32
  }
  %yw = loop.pointwise ins(%0 = %y : !ptensor.tensor<[4, 8], f32>, %1 = %w : !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %2 = loop.load %0[d0, d1] : f32
    %3 = loop.load %1[d1] : f32
    %4 = arith.mulf %2, %3 : f32
    loop.yield %4 : f32
  }
  %yb = loop.pointwise ins(%0 = %yw : !ptensor.tensor<[4, 8], f32>, %1 = %b : !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %2 = loop.load %0[d0, d1] : f32
    %3 = loop.load %1[d1] : f32
    %4 = arith.addf %2, %3 : f32
    loop.yield %4 : f32
  }
  func.return %yb : !ptensor.tensor<[4, 8], f32>
}

// -----

// A transcendental producer the function also returns is not inlined (it is
// written anyway; recomputing it would only cost); its reader joins it in one
// kernel with two results.
// CHECK-LABEL: func.func @returned_producer(
// CHECK-NEXT:    %e, %n = loop.fused ins(%[[X:.+]] = %x : !ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>) {
// CHECK-NEXT:      %[[E:.+]] = loop.pointwise ins(%{{.+}} = %[[X]] : !ptensor.tensor<[4, 8], f32>)
// CHECK-NEXT:        loop.load
// CHECK-NEXT:        math.exp
// CHECK-NEXT:        loop.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[N:.+]] = loop.pointwise ins(%[[EA:.+]] = %[[E]] : !ptensor.tensor<[4, 8], f32>)
// CHECK-NEXT:        loop.load %[[EA]][d0, d1] : f32
// CHECK-NEXT:        arith.negf
// CHECK-NEXT:        loop.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      loop.fused_yield %[[E]], %[[N]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %e, %n
// NOGROUP-LABEL: func.func @returned_producer(
// NOGROUP-NEXT:    %e = loop.pointwise
// NOGROUP:         %n = loop.pointwise ins(%{{.+}} = %e
// NOGROUP:         func.return %e, %n
func.func @returned_producer(%x: !ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>) {
  %e = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  %n = loop.pointwise ins(%0 = %e : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = arith.negf %1 : f32
    loop.yield %2 : f32
  }
  func.return %e, %n : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>
}

// -----

// A cheap producer the function returns is kept for the result and also
// inlined into its reader; the two then share their input and one kernel.
// CHECK-LABEL: func.func @returned_cheap_producer(
// CHECK-NEXT:    %a, %n = loop.fused ins(%[[X:.+]] = %x : !ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>) {
// CHECK-NEXT:      %[[A:.+]] = loop.pointwise ins(%{{.+}} = %[[X]] : !ptensor.tensor<[4, 8], f32>)
// CHECK-NEXT:        loop.load
// CHECK-NEXT:        arith.constant
// CHECK-NEXT:        arith.addf
// CHECK-NEXT:        loop.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[N:.+]] = loop.pointwise ins(%[[XA:.+]] = %[[X]] : !ptensor.tensor<[4, 8], f32>)
// CHECK-NEXT:        loop.load %[[XA]][d0, d1] : f32
// CHECK-NEXT:        arith.constant
// CHECK-NEXT:        arith.addf
// CHECK-NEXT:        math.exp
// CHECK-NEXT:        loop.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      loop.fused_yield %[[A]], %[[N]]
func.func @returned_cheap_producer(%x: !ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>) {
  %a = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = arith.constant 1.000000e+00 : f32
    %3 = arith.addf %1, %2 : f32
    loop.yield %3 : f32
  }
  %n = loop.pointwise ins(%0 = %a : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  func.return %a, %n : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>
}

// -----

// A reader of a row sum at d1 needs every row's sum before its own row: no
// group, though the two share their input.
// CHECK-LABEL: func.func @reduction_read_at_d1(
// CHECK-NEXT:    %s = loop.reduce sum
// CHECK:         %y = loop.pointwise ins(%{{.+}} = %x : {{.*}}, %[[S:.+]] = %s : !ptensor.tensor<[4], f32>)
// CHECK-NEXT:      loop.load
// CHECK-NEXT:      loop.load %[[S]][d1] : f32
// CHECK-NOT:     loop.fused
func.func @reduction_read_at_d1(%x: !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f32> {
  %s = loop.reduce sum ins(%0 = %x : !ptensor.tensor<[4, 4], f32>) over [4] -> !ptensor.tensor<[4], f32> {
    %1 = loop.load %0[d0, r0] : f32
    loop.yield %1 : f32
  }
  %y = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 4], f32>, %1 = %s : !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4, 4], f32> {
    %2 = loop.load %0[d0, d1] : f32
    %3 = loop.load %1[d1] : f32
    %4 = arith.divf %2, %3 : f32
    loop.yield %4 : f32
  }
  func.return %y : !ptensor.tensor<[4, 4], f32>
}

// -----

// Reading a reduction's result at a transposed position: not grouped.
// CHECK-LABEL: func.func @reduction_read_transposed(
// CHECK-NEXT:    %s = loop.reduce sum
// CHECK:         %y = loop.pointwise ins(%{{.+}} = %x : {{.*}}, %[[S:.+]] = %s : !ptensor.tensor<[4, 4], f32>)
// CHECK-NEXT:      loop.load
// CHECK-NEXT:      loop.load %[[S]][d1, d0] : f32
// CHECK-NOT:     loop.fused
func.func @reduction_read_transposed(%x: !ptensor.tensor<[4, 4, 8], f32>) -> !ptensor.tensor<[4, 4], f32> {
  %s = loop.reduce sum ins(%0 = %x : !ptensor.tensor<[4, 4, 8], f32>) over [8] -> !ptensor.tensor<[4, 4], f32> {
    %1 = loop.load %0[d0, d1, r0] : f32
    loop.yield %1 : f32
  }
  %y = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 4, 8], f32>, %1 = %s : !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f32> {
    %2 = loop.load %0[d0, d1, 0] : f32
    %3 = loop.load %1[d1, d0] : f32
    %4 = arith.divf %2, %3 : f32
    loop.yield %4 : f32
  }
  func.return %y : !ptensor.tensor<[4, 4], f32>
}

// -----

// Any position within the reader's own row d0 is fine: grouped.
// CHECK-LABEL: func.func @reduction_read_in_row(
// CHECK-NEXT:    %y = loop.fused
// CHECK-NEXT:      %s = loop.reduce sum
// CHECK:           loop.pointwise ins(%{{.+}} = %{{.+}} : {{.*}}, %[[S:.+]] = %s : !ptensor.tensor<[4, 4], f32>)
// CHECK-NEXT:        loop.load
// CHECK-NEXT:        loop.load %[[S]][d0, -d1 + 3] : f32
func.func @reduction_read_in_row(%x: !ptensor.tensor<[4, 4, 8], f32>) -> !ptensor.tensor<[4, 4], f32> {
  %s = loop.reduce sum ins(%0 = %x : !ptensor.tensor<[4, 4, 8], f32>) over [8] -> !ptensor.tensor<[4, 4], f32> {
    %1 = loop.load %0[d0, d1, r0] : f32
    loop.yield %1 : f32
  }
  %y = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 4, 8], f32>, %1 = %s : !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f32> {
    %2 = loop.load %0[d0, d1, 0] : f32
    %3 = loop.load %1[d0, 3 - d1] : f32
    %4 = arith.divf %2, %3 : f32
    loop.yield %4 : f32
  }
  func.return %y : !ptensor.tensor<[4, 4], f32>
}

// -----

// Column reductions with keepdim have a single row: the sum reads the max at
// row 0, the only row, so they share a kernel (a softmax along dimension 0).
// CHECK-LABEL: func.func @column_reductions(
// CHECK-NEXT:    %m, %s = loop.fused ins(%[[X:.+]] = %x : !ptensor.tensor<[8, 16], f32>) -> (!ptensor.tensor<[1, 16], f32>, !ptensor.tensor<[1, 16], f32>) {
// CHECK-NEXT:      %[[M:.+]] = loop.reduce max ins(%{{.+}} = %[[X]] : !ptensor.tensor<[8, 16], f32>) over [8] -> !ptensor.tensor<[1, 16], f32> {
// CHECK:           %[[S:.+]] = loop.reduce sum ins(%{{.+}} = %[[X]] : !ptensor.tensor<[8, 16], f32>, %[[MA:.+]] = %[[M]] : !ptensor.tensor<[1, 16], f32>) over [8] -> !ptensor.tensor<[1, 16], f32> {
// CHECK:             loop.load %[[MA]][0, d1] : f32
// CHECK:           loop.fused_yield %[[M]], %[[S]]
// CHECK:         %y = loop.pointwise
func.func @column_reductions(%x: !ptensor.tensor<[8, 16], f32>) -> !ptensor.tensor<[8, 16], f32> {
  %m = loop.reduce max ins(%0 = %x : !ptensor.tensor<[8, 16], f32>) over [8] -> !ptensor.tensor<[1, 16], f32> {
    %1 = loop.load %0[r0, d1] : f32
    loop.yield %1 : f32
  }
  %s = loop.reduce sum ins(%0 = %x : !ptensor.tensor<[8, 16], f32>, %1 = %m : !ptensor.tensor<[1, 16], f32>) over [8] -> !ptensor.tensor<[1, 16], f32> {
    %2 = loop.load %0[r0, d1] : f32
    %3 = loop.load %1[0, d1] : f32
    %4 = arith.subf %2, %3 : f32
    %5 = math.exp %4 : f32
    loop.yield %5 : f32
  }
  %y = loop.pointwise ins(%0 = %x : !ptensor.tensor<[8, 16], f32>, %1 = %m : !ptensor.tensor<[1, 16], f32>, %2 = %s : !ptensor.tensor<[1, 16], f32>) -> !ptensor.tensor<[8, 16], f32> {
    %3 = loop.load %0[d0, d1] : f32
    %4 = loop.load %1[0, d1] : f32
    %5 = arith.subf %3, %4 : f32
    %6 = math.exp %5 : f32
    %7 = loop.load %2[0, d1] : f32
    %8 = arith.divf %6, %7 : f32
    loop.yield %8 : f32
  }
  func.return %y : !ptensor.tensor<[8, 16], f32>
}

// -----

// A view the host reads (here returned) between loop ops moves to its first
// user, so it does not split the softmax's group; the exp, also read through
// the view, leaves the kernel as a second result.
// CHECK-LABEL: func.func @view_between(
// CHECK-NEXT:    %e, %y = loop.fused ins(%{{.+}} = %x : !ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>) {
// CHECK-NEXT:      %m = loop.reduce max
// CHECK:           %[[E:.+]] = loop.pointwise
// CHECK:             math.exp
// CHECK:           %t = loop.reduce sum ins(%{{.+}} = %[[E]]
// CHECK:           %[[Y:.+]] = loop.pointwise ins(%{{.+}} = %[[E]]
// CHECK:           loop.fused_yield %[[E]], %[[Y]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %v = ptensor.permute %e [1, 0]
// CHECK-NEXT:    func.return %y, %v
func.func @view_between(%x: !ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8, 4], f32>) {
  %m = loop.reduce max ins(%0 = %x : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4, 1], f32> {
    %1 = loop.load %0[d0, r0] : f32
    loop.yield %1 : f32
  }
  %e = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 8], f32>, %1 = %m : !ptensor.tensor<[4, 1], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %2 = loop.load %0[d0, d1] : f32
    %3 = loop.load %1[d0, 0] : f32
    %4 = arith.subf %2, %3 : f32
    %5 = math.exp %4 : f32
    loop.yield %5 : f32
  }
  %v = ptensor.permute %e [1, 0] : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[8, 4], f32>
  %t = loop.reduce sum ins(%0 = %e : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4, 1], f32> {
    %1 = loop.load %0[d0, r0] : f32
    loop.yield %1 : f32
  }
  %y = loop.pointwise ins(%0 = %e : !ptensor.tensor<[4, 8], f32>, %1 = %t : !ptensor.tensor<[4, 1], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %2 = loop.load %0[d0, d1] : f32
    %3 = loop.load %1[d0, 0] : f32
    %4 = arith.divf %2, %3 : f32
    loop.yield %4 : f32
  }
  func.return %y, %v : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8, 4], f32>
}

// -----

// A cat reads its first operand under a mask: the inlined exp reads under
// the same mask, and its value is zero where the mask is false.
// CHECK-LABEL: func.func @cat(
// CHECK-NEXT:    %c = loop.pointwise ins(%[[Y:.+]] = %y : !ptensor.tensor<[4, 8], f32>, %[[X:.+]] = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 16], f32> {
// CHECK-NEXT:      %[[I:.+]] = loop.index d1
// CHECK-NEXT:      %[[EIGHT:.+]] = loop.index 8
// CHECK-NEXT:      %[[LOW:.+]] = arith.cmpi slt, %[[I]], %[[EIGHT]] : index
// CHECK-NEXT:      %[[XV:.+]] = loop.load %[[X]][d0, d1] if %[[LOW]] : f32
// CHECK-NEXT:      %[[E:.+]] = math.exp %[[XV]] : f32
// CHECK-NEXT:      %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[EM:.+]] = arith.select %[[LOW]], %[[E]], %[[ZERO]] : f32
// CHECK-NEXT:      %[[HIGH:.+]] = arith.cmpi sge, %[[I]], %[[EIGHT]] : index
// CHECK-NEXT:      %[[YV:.+]] = loop.load %[[Y]][d0, d1 - 8] if %[[HIGH]] : f32
// CHECK-NEXT:      arith.select %[[LOW]], %[[EM]], %[[YV]] : f32
// Kept apart, the exp is read at its own row, but the two differ in shape: a
// shared kernel would run a program per row (4 here; 3 for the [3, 1, 1, 1]
// mask a packed q/k/v projection's gradient selects with), so each keeps a
// kernel parallel over all its elements.
// ONCE-LABEL: func.func @cat(
// ONCE-NEXT:    %e = loop.pointwise
// ONCE-NOT:     loop.fused
// ONCE:         %c = loop.pointwise ins(%[[E:.+]] = %e
// ONCE:           loop.load %[[E]][d0, d1] if
func.func @cat(%x: !ptensor.tensor<[4, 8], f32>, %y: !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 16], f32> {
  %e = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  %c = loop.pointwise ins(%0 = %e : !ptensor.tensor<[4, 8], f32>, %1 = %y : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 16], f32> {
    %2 = loop.index d1
    %3 = loop.index 8
    %4 = arith.cmpi slt, %2, %3 : index
    %5 = loop.load %0[d0, d1] if %4 : f32
    %6 = arith.cmpi sge, %2, %3 : index
    %7 = loop.load %1[d0, d1 - 8] if %6 : f32
    %8 = arith.select %4, %5, %7 : f32
    loop.yield %8 : f32
  }
  func.return %c : !ptensor.tensor<[4, 16], f32>
}

// -----

// A pad of a producer that itself reads under a mask: the inlined load's mask
// is its own (translated to the reader's indices) and the pad's, joined.
// CHECK-LABEL: func.func @pad_of_masked(
// CHECK-NEXT:    %p = loop.pointwise ins(%[[X:.+]] = %x : !ptensor.tensor<[4, 8], f32>, %[[Y:.+]] = %y : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 10], f32> {
// CHECK-NEXT:      %[[I:.+]] = loop.index d1 - 1
// CHECK:           %[[IN:.+]] = arith.andi %{{.+}}, %{{.+}} : i1
// CHECK-NEXT:      %[[J:.+]] = loop.index d1 - 1
// CHECK-NEXT:      %[[FOUR:.+]] = loop.index 4
// CHECK-NEXT:      %[[OWN:.+]] = arith.cmpi slt, %[[J]], %[[FOUR]] : index
// CHECK-NEXT:      %[[BOTH:.+]] = arith.andi %[[OWN]], %[[IN]] : i1
// CHECK-NEXT:      %[[XV:.+]] = loop.load %[[X]][d0, d1 - 1] if %[[BOTH]] : f32
// CHECK-NEXT:      %[[YV:.+]] = loop.load %[[Y]][d0, d1 - 1] if %[[IN]] : f32
// CHECK-NEXT:      %[[SUM:.+]] = arith.addf %[[XV]], %[[YV]] : f32
// CHECK-NEXT:      %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      arith.select %[[IN]], %[[SUM]], %[[ZERO]] : f32
func.func @pad_of_masked(%x: !ptensor.tensor<[4, 8], f32>, %y: !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 10], f32> {
  %c = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 8], f32>, %1 = %y : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %2 = loop.index d1
    %3 = loop.index 4
    %4 = arith.cmpi slt, %2, %3 : index
    %5 = loop.load %0[d0, d1] if %4 : f32
    %6 = loop.load %1[d0, d1] : f32
    %7 = arith.addf %5, %6 : f32
    loop.yield %7 : f32
  }
  %p = loop.pointwise ins(%0 = %c : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 10], f32> {
    %1 = loop.index d1 - 1
    %2 = loop.index 0
    %3 = arith.cmpi sge, %1, %2 : index
    %4 = loop.index 8
    %5 = arith.cmpi slt, %1, %4 : index
    %6 = arith.andi %3, %5 : i1
    %7 = loop.load %0[d0, d1 - 1] if %6 : f32
    %8 = arith.constant 0.000000e+00 : f32
    %9 = arith.select %6, %7, %8 : f32
    loop.yield %9 : f32
  }
  func.return %p : !ptensor.tensor<[4, 10], f32>
}

// -----

// Horizontal: independent loop ops over the same rows sharing an input run in
// one kernel with one result each.
// CHECK-LABEL: func.func @horizontal(
// CHECK-NEXT:    %s, %m, %e = loop.fused ins(%[[X:.+]] = %x : !ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32>, !ptensor.tensor<[4, 8], f32>) {
// CHECK-NEXT:      %[[S:.+]] = loop.reduce sum ins(%{{.+}} = %[[X]]
// CHECK:           %[[M:.+]] = loop.reduce max ins(%{{.+}} = %[[X]]
// CHECK:           %[[E:.+]] = loop.pointwise ins(%{{.+}} = %[[X]]
// CHECK:           loop.fused_yield %[[S]], %[[M]], %[[E]]
// NOGROUP-LABEL: func.func @horizontal(
// NOGROUP-NOT:   loop.fused
// NOGROUP:       func.return %s, %m, %e
// PAIRS-LABEL: func.func @horizontal(
// PAIRS-NEXT:    %s, %m = loop.fused
// PAIRS:         %e = loop.pointwise
func.func @horizontal(%x: !ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32>, !ptensor.tensor<[4, 8], f32>) {
  %s = loop.reduce sum ins(%0 = %x : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4], f32> {
    %1 = loop.load %0[d0, r0] : f32
    loop.yield %1 : f32
  }
  %m = loop.reduce max ins(%0 = %x : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4], f32> {
    %1 = loop.load %0[d0, r0] : f32
    loop.yield %1 : f32
  }
  %e = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  func.return %s, %m, %e : !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32>, !ptensor.tensor<[4, 8], f32>
}

// -----

// Independent loop ops with nothing in common stay apart.
// CHECK-LABEL: func.func @unrelated(
// CHECK-NEXT:    %a = loop.pointwise
// CHECK:         %b = loop.pointwise
// CHECK-NOT:     loop.fused
func.func @unrelated(%x: !ptensor.tensor<[4, 8], f32>, %y: !ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>) {
  %a = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  %b = loop.pointwise ins(%0 = %y : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  func.return %a, %b : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>
}

// -----

// A gather of an exp (a few rows of 16, read 12/64 times per element): the
// exp is computed at the gathered position, the index value passed along.
// CHECK-LABEL: func.func @gather(
// CHECK-NEXT:    %g = loop.pointwise ins(%[[I:.+]] = %i : !ptensor.tensor<[3], i64>, %[[W:.+]] = %w : !ptensor.tensor<[16, 4], f32>) -> !ptensor.tensor<[3, 4], f32> {
// CHECK-NEXT:      %[[IV:.+]] = loop.load %[[I]][d0] : i64
// CHECK-NEXT:      %[[J:.+]] = arith.index_cast %[[IV]] : i64 to index
// CHECK-NEXT:      %[[WV:.+]] = loop.load %[[W]][v0, d1] (%[[J]]) : f32
// CHECK-NEXT:      %[[E:.+]] = math.exp %[[WV]] : f32
// CHECK-NEXT:      loop.yield %[[E]] : f32
func.func @gather(%w: !ptensor.tensor<[16, 4], f32>, %i: !ptensor.tensor<[3], i64>) -> !ptensor.tensor<[3, 4], f32> {
  %e = loop.pointwise ins(%0 = %w : !ptensor.tensor<[16, 4], f32>) -> !ptensor.tensor<[16, 4], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  %g = loop.pointwise ins(%0 = %e : !ptensor.tensor<[16, 4], f32>, %1 = %i : !ptensor.tensor<[3], i64>) -> !ptensor.tensor<[3, 4], f32> {
    %2 = loop.load %1[d0] : i64
    %3 = arith.index_cast %2 : i64 to index
    %4 = loop.load %0[v0, d1] (%3) : f32
    loop.yield %4 : f32
  }
  func.return %g : !ptensor.tensor<[3, 4], f32>
}

// -----

// A producer using its own position (loop.index d0) cannot be inlined at a
// gathered position, which no index expression names; it stays.
// CHECK-LABEL: func.func @gather_of_positions(
// CHECK-NEXT:    %r = loop.pointwise ins() -> !ptensor.tensor<[16], i64> {
// CHECK-NEXT:      loop.index d0
// CHECK:         %g = loop.pointwise ins(%[[R:.+]] = %r : !ptensor.tensor<[16], i64>, %{{.+}} = %i : !ptensor.tensor<[3], i64>)
// CHECK:           loop.load %[[R]][v0] (%{{.+}}) : i64
func.func @gather_of_positions(%i: !ptensor.tensor<[3], i64>) -> !ptensor.tensor<[3], i64> {
  %r = loop.pointwise ins() -> !ptensor.tensor<[16], i64> {
    %0 = loop.index d0
    %1 = arith.index_cast %0 : index to i64
    loop.yield %1 : i64
  }
  %g = loop.pointwise ins(%0 = %r : !ptensor.tensor<[16], i64>, %1 = %i : !ptensor.tensor<[3], i64>) -> !ptensor.tensor<[3], i64> {
    %2 = loop.load %1[d0] : i64
    %3 = arith.index_cast %2 : i64 to index
    %4 = loop.load %0[v0] (%3) : i64
    loop.yield %4 : i64
  }
  func.return %g : !ptensor.tensor<[3], i64>
}

// -----

// The same producer read at a plain index is inlined: d0 becomes 15 - d0.
// CHECK-LABEL: func.func @reversed_positions(
// CHECK-NEXT:    %g = loop.pointwise ins() -> !ptensor.tensor<[16], i64> {
// CHECK-NEXT:      %[[P:.+]] = loop.index -d0 + 15
// CHECK-NEXT:      arith.index_cast %[[P]] : index to i64
func.func @reversed_positions() -> !ptensor.tensor<[16], i64> {
  %r = loop.pointwise ins() -> !ptensor.tensor<[16], i64> {
    %0 = loop.index d0
    %1 = arith.index_cast %0 : index to i64
    loop.yield %1 : i64
  }
  %g = loop.pointwise ins(%0 = %r : !ptensor.tensor<[16], i64>) -> !ptensor.tensor<[16], i64> {
    %1 = loop.load %0[15 - d0] : i64
    loop.yield %1 : i64
  }
  func.return %g : !ptensor.tensor<[16], i64>
}

// -----

// Two rolls (torch.roll over two dimensions): each a gather through a table
// of positions that wraps a negative entry by the dimension's size (loop.index
// 8, an expression of sizes alone). The first is inlined into the second at
// its gathered row: one kernel, the two tables' values passed along.
// CHECK-LABEL: func.func @roll_of_roll(
// CHECK-NEXT:    %b = loop.pointwise ins(%[[I:.+]] = %i : !ptensor.tensor<[8], i64>, %[[X:.+]] = %x : !ptensor.tensor<[8, 8], f32>, %[[J:.+]] = %j : !ptensor.tensor<[8], i64>) -> !ptensor.tensor<[8, 8], f32> {
// CHECK-NEXT:      %[[IV:.+]] = loop.load %[[I]][d0] : i64
// CHECK-NEXT:      %[[ROW:.+]] = arith.index_cast %[[IV]] : i64 to index
// CHECK-NEXT:      %[[JV:.+]] = loop.load %[[J]][d1] : i64
// CHECK:           %[[SIZE:.+]] = loop.index 8
// CHECK:           %[[COL:.+]] = arith.select
// CHECK-NEXT:      loop.load %[[X]][v0, v1] (%[[ROW]], %[[COL]]) : f32
func.func @roll_of_roll(%x: !ptensor.tensor<[8, 8], f32>, %i: !ptensor.tensor<[8], i64>, %j: !ptensor.tensor<[8], i64>) -> !ptensor.tensor<[8, 8], f32> {
  %a = loop.pointwise ins(%0 = %x : !ptensor.tensor<[8, 8], f32>, %1 = %j : !ptensor.tensor<[8], i64>) -> !ptensor.tensor<[8, 8], f32> {
    %2 = loop.load %1[d1] : i64
    %3 = arith.index_cast %2 : i64 to index
    %4 = arith.constant 0 : index
    %5 = arith.cmpi slt, %3, %4 : index
    %6 = loop.index 8
    %7 = arith.addi %3, %6 : index
    %8 = arith.select %5, %7, %3 : index
    %9 = loop.load %0[d0, v0] (%8) : f32
    loop.yield %9 : f32
  }
  %b = loop.pointwise ins(%0 = %a : !ptensor.tensor<[8, 8], f32>, %1 = %i : !ptensor.tensor<[8], i64>) -> !ptensor.tensor<[8, 8], f32> {
    %2 = loop.load %1[d0] : i64
    %3 = arith.index_cast %2 : i64 to index
    %4 = loop.load %0[v0, d1] (%3) : f32
    loop.yield %4 : f32
  }
  func.return %b : !ptensor.tensor<[8, 8], f32>
}


// -----

// A producer using its position, read elsewhere in its row (a gather along
// the second dimension), is not inlined and would share a kernel only row by
// row: 2 programs of 32,768 elements each, where apart both run over all
// their elements in parallel. They stay apart (pointwise-parallelism).
// CHECK-LABEL: func.func @long_rows_of_positions(
// CHECK-NEXT:    %r = loop.pointwise ins()
// CHECK:         %g = loop.pointwise ins(%{{.+}} = %r
// CHECK-NOT:     loop.fused
func.func @long_rows_of_positions(%i: !ptensor.tensor<[32768], i64>) -> !ptensor.tensor<[2, 32768], i64> {
  %r = loop.pointwise ins() -> !ptensor.tensor<[2, 32768], i64> {
    %0 = loop.index d1 * 2 + d0
    %1 = arith.index_cast %0 : index to i64
    loop.yield %1 : i64
  }
  %g = loop.pointwise ins(%0 = %r : !ptensor.tensor<[2, 32768], i64>, %1 = %i : !ptensor.tensor<[32768], i64>) -> !ptensor.tensor<[2, 32768], i64> {
    %2 = loop.load %1[d1] : i64
    %3 = arith.index_cast %2 : i64 to index
    %4 = loop.load %0[d0, v0] (%3) : i64
    loop.yield %4 : i64
  }
  func.return %g : !ptensor.tensor<[2, 32768], i64>
}


// -----

// Short rows (64 elements each) share the kernel.
// CHECK-LABEL: func.func @short_rows_of_positions(
// CHECK-NEXT:    %g = loop.fused
// CHECK-NEXT:      %r = loop.pointwise ins()
func.func @short_rows_of_positions(%i: !ptensor.tensor<[64], i64>) -> !ptensor.tensor<[2, 64], i64> {
  %r = loop.pointwise ins() -> !ptensor.tensor<[2, 64], i64> {
    %0 = loop.index d1 * 2 + d0
    %1 = arith.index_cast %0 : index to i64
    loop.yield %1 : i64
  }
  %g = loop.pointwise ins(%0 = %r : !ptensor.tensor<[2, 64], i64>, %1 = %i : !ptensor.tensor<[64], i64>) -> !ptensor.tensor<[2, 64], i64> {
    %2 = loop.load %1[d1] : i64
    %3 = arith.index_cast %2 : i64 to index
    %4 = loop.load %0[d0, v0] (%3) : i64
    loop.yield %4 : i64
  }
  func.return %g : !ptensor.tensor<[2, 64], i64>
}

// -----

// Pointwise ops of different shapes that only share inputs (the query's and
// the key's rotary embedding, reading one cos table) stay apart: together
// they would run a program per row, each looping over the rest of its
// elements. Of one shape, they share a kernel (a flat loop over both).
// CHECK-LABEL: func.func @siblings_of_different_shapes(
// CHECK-NOT:     loop.fused
// CHECK:         func.return
func.func @siblings_of_different_shapes(%q: !ptensor.tensor<[2, 8, 16, 4], f32>, %k: !ptensor.tensor<[2, 2, 16, 4], f32>, %cos: !ptensor.tensor<[2, 16, 4], f32>) -> (!ptensor.tensor<[2, 8, 16, 4], f32>, !ptensor.tensor<[2, 2, 16, 4], f32>) {
  %a = loop.pointwise ins(%0 = %q : !ptensor.tensor<[2, 8, 16, 4], f32>, %1 = %cos : !ptensor.tensor<[2, 16, 4], f32>) -> !ptensor.tensor<[2, 8, 16, 4], f32> {
    %2 = loop.load %0[d0, d1, d2, d3] : f32
    %3 = loop.load %1[d0, d2, d3] : f32
    %4 = arith.mulf %2, %3 : f32
    loop.yield %4 : f32
  }
  %b = loop.pointwise ins(%0 = %k : !ptensor.tensor<[2, 2, 16, 4], f32>, %1 = %cos : !ptensor.tensor<[2, 16, 4], f32>) -> !ptensor.tensor<[2, 2, 16, 4], f32> {
    %2 = loop.load %0[d0, d1, d2, d3] : f32
    %3 = loop.load %1[d0, d2, d3] : f32
    %4 = arith.mulf %2, %3 : f32
    loop.yield %4 : f32
  }
  func.return %a, %b : !ptensor.tensor<[2, 8, 16, 4], f32>, !ptensor.tensor<[2, 2, 16, 4], f32>
}

// CHECK-LABEL: func.func @siblings_of_one_shape(
// CHECK-NEXT:    %a, %b = loop.fused
func.func @siblings_of_one_shape(%q: !ptensor.tensor<[2, 8, 16, 4], f32>, %k: !ptensor.tensor<[2, 8, 16, 4], f32>, %cos: !ptensor.tensor<[2, 16, 4], f32>) -> (!ptensor.tensor<[2, 8, 16, 4], f32>, !ptensor.tensor<[2, 8, 16, 4], f32>) {
  %a = loop.pointwise ins(%0 = %q : !ptensor.tensor<[2, 8, 16, 4], f32>, %1 = %cos : !ptensor.tensor<[2, 16, 4], f32>) -> !ptensor.tensor<[2, 8, 16, 4], f32> {
    %2 = loop.load %0[d0, d1, d2, d3] : f32
    %3 = loop.load %1[d0, d2, d3] : f32
    %4 = arith.mulf %2, %3 : f32
    loop.yield %4 : f32
  }
  %b = loop.pointwise ins(%0 = %k : !ptensor.tensor<[2, 8, 16, 4], f32>, %1 = %cos : !ptensor.tensor<[2, 16, 4], f32>) -> !ptensor.tensor<[2, 8, 16, 4], f32> {
    %2 = loop.load %0[d0, d1, d2, d3] : f32
    %3 = loop.load %1[d0, d2, d3] : f32
    %4 = arith.mulf %2, %3 : f32
    loop.yield %4 : f32
  }
  func.return %a, %b : !ptensor.tensor<[2, 8, 16, 4], f32>, !ptensor.tensor<[2, 8, 16, 4], f32>
}

// -----

// A scan fuses as a reduction does: its pointwise producer is inlined into
// its body (a prologue), and its pointwise reader, reading it at its own row,
// joins it in one loop.fused (an epilogue). A scan of the leading dimension
// has no rows to share: it and its reader stay apart, as a column sum and
// its reader do.
// CHECK-LABEL: func.func @scan_prologue_and_epilogue(
// CHECK-NEXT:    %y = loop.fused ins(%[[X:.+]] = %x : !ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4, 8], f32>) {
// CHECK-NEXT:      %c = loop.scan sum ins(%[[A:.+]] = %[[X]] : !ptensor.tensor<[4, 8], f32>) dim 1 -> !ptensor.tensor<[4, 8], f32> {
// CHECK-NEXT:        %[[V:.+]] = loop.load %[[A]][d0, r0] : f32
// CHECK-NEXT:        %[[E:.+]] = math.exp %[[V]] : f32
// CHECK-NEXT:        loop.yield %[[E]] : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      %y_1 = loop.pointwise ins(%[[C:.+]] = %c : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
// CHECK-NEXT:        loop.load %[[C]][d0, d1] : f32
// CHECK:           loop.fused_yield %y_1
// CHECK-NEXT:    }
// CHECK-NEXT:    %k = loop.scan max ins(%{{.+}} = %x : !ptensor.tensor<[4, 8], f32>) dim 0
// CHECK:         %z = loop.pointwise ins(%{{.+}} = %k : !ptensor.tensor<[4, 8], f32>)
// CHECK:         func.return %y, %z
func.func @scan_prologue_and_epilogue(%x: !ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>) {
  %e = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = math.exp %1 : f32
    loop.yield %2 : f32
  }
  %c = loop.scan sum ins(%0 = %e : !ptensor.tensor<[4, 8], f32>) dim 1 -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, r0] : f32
    loop.yield %1 : f32
  }
  %y = loop.pointwise ins(%0 = %c : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = arith.addf %1, %1 : f32
    loop.yield %2 : f32
  }
  %k = loop.scan max ins(%0 = %x : !ptensor.tensor<[4, 8], f32>) dim 0 -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[r0, d0] : f32
    loop.yield %1 : f32
  }
  %z = loop.pointwise ins(%0 = %k : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = arith.negf %1 : f32
    loop.yield %2 : f32
  }
  func.return %y, %z : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>
}

// -----

// A reader larger than the scan's domain (a table gathered at each scanned
// position: position ids and their embeddings) stays out of the scan's kernel,
// which runs one program per row: together they would loop over 8 x 16
// elements in each of 4 programs.
// CHECK-LABEL: func.func @scan_and_a_larger_reader(
// CHECK-NEXT:    %c = loop.scan sum
// CHECK:         %g = loop.pointwise ins(%{{.+}} = %c : !ptensor.tensor<[4, 8], i64>, %{{.+}} = %t : !ptensor.tensor<[64, 16], f32>) -> !ptensor.tensor<[4, 8, 16], f32>
// CHECK-NOT:     loop.fused
func.func @scan_and_a_larger_reader(%x: !ptensor.tensor<[4, 8], i64>, %t: !ptensor.tensor<[64, 16], f32>) -> !ptensor.tensor<[4, 8, 16], f32> {
  %c = loop.scan sum ins(%0 = %x : !ptensor.tensor<[4, 8], i64>) dim 1 -> !ptensor.tensor<[4, 8], i64> {
    %1 = loop.load %0[d0, r0] : i64
    loop.yield %1 : i64
  }
  %g = loop.pointwise ins(%0 = %c : !ptensor.tensor<[4, 8], i64>, %1 = %t : !ptensor.tensor<[64, 16], f32>) -> !ptensor.tensor<[4, 8, 16], f32> {
    %2 = loop.load %0[d0, d1] : i64
    %3 = arith.index_cast %2 : i64 to index
    %4 = loop.load %1[v0, d2] (%3) : f32
    loop.yield %4 : f32
  }
  func.return %g : !ptensor.tensor<[4, 8, 16], f32>
}

// -----

// A cheap producer loading three whole tensors and read by two readers stays
// a result of its own (repeated-reads): inlined, the readers would load six
// tensors, where computing it once loads three and writes one.
// Grouped, it is computed once in the kernel of its readers.
// CHECK-LABEL: func.func @repeated_reads(
// CHECK-NEXT:    %u, %v = loop.fused ins(%{{.+}} = %a : {{.+}}, %{{.+}} = %b : {{.+}}, %{{.+}} = %c : {{.+}})
// CHECK-NEXT:      %h = loop.pointwise
// NOGROUP-LABEL: func.func @repeated_reads(
// NOGROUP-NEXT:    %h = loop.pointwise
// NOGROUP:         %u = loop.pointwise ins(%{{.+}} = %h : !ptensor.tensor<[4, 8], f32>)
// NOGROUP:         %v = loop.pointwise ins(%{{.+}} = %h : !ptensor.tensor<[4, 8], f32>)
func.func @repeated_reads(%a: !ptensor.tensor<[4, 8], f32>, %b: !ptensor.tensor<[4, 8], f32>, %c: !ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>) {
  %h = loop.pointwise ins(%0 = %a : !ptensor.tensor<[4, 8], f32>, %1 = %b : !ptensor.tensor<[4, 8], f32>, %2 = %c : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %3 = loop.load %0[d0, d1] : f32
    %4 = loop.load %1[d0, d1] : f32
    %5 = loop.load %2[d0, d1] : f32
    %6 = arith.addf %3, %4 : f32
    %7 = arith.addf %6, %5 : f32
    loop.yield %7 : f32
  }
  %u = loop.pointwise ins(%0 = %h : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = arith.mulf %1, %1 : f32
    loop.yield %2 : f32
  }
  %v = loop.pointwise ins(%0 = %h : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = arith.addf %1, %1 : f32
    loop.yield %2 : f32
  }
  func.return %u, %v : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>
}

// -----

// With two whole tensors and two readers, inlining loads four tensors, as
// computing it once would (two, a write and a read): inlined, one kernel fewer.
// CHECK-LABEL: func.func @two_inputs_read_twice(
// NOGROUP-LABEL: func.func @two_inputs_read_twice(
// NOGROUP-NOT:     %h = loop.pointwise
// NOGROUP:         %u = loop.pointwise ins(%{{.+}} = %a : !ptensor.tensor<[4, 8], f32>, %{{.+}} = %b : !ptensor.tensor<[4, 8], f32>)
func.func @two_inputs_read_twice(%a: !ptensor.tensor<[4, 8], f32>, %b: !ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>) {
  %h = loop.pointwise ins(%0 = %a : !ptensor.tensor<[4, 8], f32>, %1 = %b : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %3 = loop.load %0[d0, d1] : f32
    %4 = loop.load %1[d0, d1] : f32
    %6 = arith.addf %3, %4 : f32
    loop.yield %6 : f32
  }
  %u = loop.pointwise ins(%0 = %h : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = arith.mulf %1, %1 : f32
    loop.yield %2 : f32
  }
  %v = loop.pointwise ins(%0 = %h : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %1 = loop.load %0[d0, d1] : f32
    %2 = arith.addf %1, %1 : f32
    loop.yield %2 : f32
  }
  func.return %u, %v : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], f32>
}

// -----

// A reduction every reader reads rounded stores the rounded tensor: it gets
// the rounding as its epilogue, and the reader loads bf16 with no truncf.
// CHECK-LABEL: func.func @rounded_reads
// CHECK:         %[[S:.+]] = loop.fused
// CHECK:           loop.reduce sum
// CHECK:           loop.pointwise ins({{.+}} : !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], bf16>
// CHECK:         loop.pointwise ins(%[[B:.+]] = %[[S]] : !ptensor.tensor<[4], bf16>) -> !ptensor.tensor<[8, 4], bf16>
// CHECK-NEXT:      %[[V:.+]] = loop.load %[[B]][d1] : bf16
// CHECK-NEXT:      loop.yield %[[V]] : bf16
func.func @rounded_reads(%x: !ptensor.tensor<[4, 8], bf16>) -> !ptensor.tensor<[8, 4], bf16> {
  %s = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4, 8], bf16>) over [8] -> !ptensor.tensor<[4], f32> {
    %v = loop.load %a[d0, r0] : bf16
    %w = arith.extf %v : bf16 to f32
    loop.yield %w : f32
  }
  %y = loop.pointwise ins(%b = %s : !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[8, 4], bf16> {
    %v = loop.load %b[d1] : f32
    %h = arith.truncf %v : f32 to bf16
    loop.yield %h : bf16
  }
  func.return %y : !ptensor.tensor<[8, 4], bf16>
}

// -----

// A reader that also computes with the float32 value keeps the reduction's
// float32 result.
// CHECK-LABEL: func.func @unrounded_read
// CHECK:         %[[S:.+]] = loop.reduce sum
// CHECK:         loop.pointwise ins(%{{.+}} = %[[S]] : !ptensor.tensor<[4], f32>)
// CHECK:           arith.truncf
func.func @unrounded_read(%x: !ptensor.tensor<[4, 8], bf16>) -> !ptensor.tensor<[8, 4], bf16> {
  %s = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4, 8], bf16>) over [8] -> !ptensor.tensor<[4], f32> {
    %v = loop.load %a[d0, r0] : bf16
    %w = arith.extf %v : bf16 to f32
    loop.yield %w : f32
  }
  %y = loop.pointwise ins(%b = %s : !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[8, 4], bf16> {
    %v = loop.load %b[d1] : f32
    %d = arith.mulf %v, %v : f32
    %h = arith.truncf %d : f32 to bf16
    loop.yield %h : bf16
  }
  func.return %y : !ptensor.tensor<[8, 4], bf16>
}

// -----

// A loop op that joins its last producer's group (a reduction's [8]
// epilogue, batch norm's weight gradient) moves up past a loop op of other
// rows between them (the [4, 8] input gradient), and the group takes it.
// CHECK-LABEL: func.func @hoisted_epilogue
// CHECK:         %{{.+}}, %{{.+}} = loop.fused
// CHECK:           loop.reduce sum
// CHECK:           loop.pointwise {{.*}} -> !ptensor.tensor<[8], f32>
// CHECK:         loop.pointwise {{.*}} -> !ptensor.tensor<[4, 8], f32>
// CHECK:         func.return
func.func @hoisted_epilogue(%x: !ptensor.tensor<[4, 8], f32>, %w: !ptensor.tensor<[8], f32>) -> (!ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8], f32>) {
  %s = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4, 8], f32>) over [4] -> !ptensor.tensor<[8], f32> {
    %v = loop.load %a[r0, d0] : f32
    loop.yield %v : f32
  }
  %g = loop.pointwise ins(%b = %x : !ptensor.tensor<[4, 8], f32>, %c = %s : !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[4, 8], f32> {
    %v = loop.load %b[d0, d1] : f32
    %t = loop.load %c[d1] : f32
    %q = arith.subf %v, %t : f32
    %e = math.exp %q : f32
    loop.yield %e : f32
  }
  %dw = loop.pointwise ins(%d = %s : !ptensor.tensor<[8], f32>, %e = %w : !ptensor.tensor<[8], f32>) -> !ptensor.tensor<[8], f32> {
    %v = loop.load %d[d0] : f32
    %u = loop.load %e[d0] : f32
    %p = arith.mulf %v, %u : f32
    loop.yield %p : f32
  }
  func.return %g, %dw : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8], f32>
}

// -----

// A reduction whose parallel dimensions go beyond the rows it would share
// (the partial sums of a split statistic, [4, 2, 8], read from the [4, 8, 64,
// 64] tensor that shares only its 4 batch rows) stays out of the kernel: in
// it, it would run as 4 row programs of 32768 points each, alone as 64.
// CHECK-LABEL: func.func @split_partial_sums
// CHECK-NOT:     loop.fused
// CHECK:         %g = loop.pointwise
// CHECK:         %p = loop.reduce sum
func.func @split_partial_sums(%x: !ptensor.tensor<[4, 8, 64, 64], f32>) -> (!ptensor.tensor<[4, 8, 64, 64], f32>, !ptensor.tensor<[4, 2, 8], f32>) {
  %g = loop.pointwise ins(%a = %x : !ptensor.tensor<[4, 8, 64, 64], f32>) -> !ptensor.tensor<[4, 8, 64, 64], f32> {
    %v = loop.load %a[d0, d1, d2, d3] : f32
    %e = math.exp %v : f32
    loop.yield %e : f32
  }
  %p = loop.reduce sum ins(%b = %g : !ptensor.tensor<[4, 8, 64, 64], f32>) over [32, 64] -> !ptensor.tensor<[4, 2, 8], f32> {
    %v = loop.load %b[d0, d2, d1 * 32 + r0, r1] : f32
    loop.yield %v : f32
  }
  func.return %g, %p : !ptensor.tensor<[4, 8, 64, 64], f32>, !ptensor.tensor<[4, 2, 8], f32>
}

// -----

// A 2x2 pooling with stride 2 reads four elements a point from an input four
// times its size: read by two readers, it stays a result of its own
// (repeated-reads), as computing it once loads the input once.
// NOGROUP-LABEL: func.func @pooled_read_twice(
// NOGROUP-NEXT:    %p = loop.pointwise
// NOGROUP:         %u = loop.pointwise ins(%{{.+}} = %p : !ptensor.tensor<[4, 4, 4], f32>)
// NOGROUP:         %v = loop.pointwise ins(%{{.+}} = %p : !ptensor.tensor<[4, 4, 4], f32>)
func.func @pooled_read_twice(%x: !ptensor.tensor<[4, 8, 8], f32>) -> (!ptensor.tensor<[4, 4, 4], f32>, !ptensor.tensor<[4, 4, 4], f32>) {
  %p = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 8, 8], f32>) -> !ptensor.tensor<[4, 4, 4], f32> {
    %1 = loop.load %0[d0, d1 * 2, d2 * 2] : f32
    %2 = loop.load %0[d0, d1 * 2, d2 * 2 + 1] : f32
    %3 = loop.load %0[d0, d1 * 2 + 1, d2 * 2] : f32
    %4 = loop.load %0[d0, d1 * 2 + 1, d2 * 2 + 1] : f32
    %5 = arith.addf %1, %2 : f32
    %6 = arith.addf %3, %4 : f32
    %7 = arith.addf %5, %6 : f32
    loop.yield %7 : f32
  }
  %u = loop.pointwise ins(%0 = %p : !ptensor.tensor<[4, 4, 4], f32>) -> !ptensor.tensor<[4, 4, 4], f32> {
    %1 = loop.load %0[d0, d1, d2] : f32
    %2 = arith.mulf %1, %1 : f32
    loop.yield %2 : f32
  }
  %v = loop.pointwise ins(%0 = %p : !ptensor.tensor<[4, 4, 4], f32>) -> !ptensor.tensor<[4, 4, 4], f32> {
    %1 = loop.load %0[d0, d1, d2] : f32
    %2 = arith.addf %1, %1 : f32
    loop.yield %2 : f32
  }
  func.return %u, %v : !ptensor.tensor<[4, 4, 4], f32>, !ptensor.tensor<[4, 4, 4], f32>
}

// -----

// A window of two with stride 1 reads two elements a point from an input of
// about its size, each once from memory: read by two readers, it is inlined.
// NOGROUP-LABEL: func.func @overlapping_window_read_twice(
// NOGROUP-NOT:     %p = loop.pointwise
// NOGROUP:         %u = loop.pointwise ins(%{{.+}} = %x : !ptensor.tensor<[4, 8, 9], f32>)
// NOGROUP:         %v = loop.pointwise ins(%{{.+}} = %x : !ptensor.tensor<[4, 8, 9], f32>)
func.func @overlapping_window_read_twice(%x: !ptensor.tensor<[4, 8, 9], f32>) -> (!ptensor.tensor<[4, 8, 8], f32>, !ptensor.tensor<[4, 8, 8], f32>) {
  %p = loop.pointwise ins(%0 = %x : !ptensor.tensor<[4, 8, 9], f32>) -> !ptensor.tensor<[4, 8, 8], f32> {
    %1 = loop.load %0[d0, d1, d2] : f32
    %2 = loop.load %0[d0, d1, d2 + 1] : f32
    %3 = arith.addf %1, %2 : f32
    loop.yield %3 : f32
  }
  %u = loop.pointwise ins(%0 = %p : !ptensor.tensor<[4, 8, 8], f32>) -> !ptensor.tensor<[4, 8, 8], f32> {
    %1 = loop.load %0[d0, d1, d2] : f32
    %2 = arith.mulf %1, %1 : f32
    loop.yield %2 : f32
  }
  %v = loop.pointwise ins(%0 = %p : !ptensor.tensor<[4, 8, 8], f32>) -> !ptensor.tensor<[4, 8, 8], f32> {
    %1 = loop.load %0[d0, d1, d2] : f32
    %2 = arith.addf %1, %1 : f32
    loop.yield %2 : f32
  }
  func.return %u, %v : !ptensor.tensor<[4, 8, 8], f32>, !ptensor.tensor<[4, 8, 8], f32>
}

// -----

// Two split column sums of one gradient (a layer norm's weight and bias
// gradients): the final sum of the first comes between the partial sums, and
// ends their kernel. The second partial sum, which reads the same gradient
// and whose operands are all defined by then, is pulled up into the first's
// kernel; the two final sums, reading results of that one kernel, share the
// next: two kernels rather than four.
// CHECK-LABEL: func.func @split_sibling_sums(
// CHECK-NEXT:    %pw, %pb = loop.fused ins(%{{.+}} = %g : !ptensor.tensor<[4, 64, 8], f32>, %{{.+}} = %x : !ptensor.tensor<[4, 64, 8], f32>)
// CHECK:           loop.fused_yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %w, %b = loop.fused ins(%{{.+}} = %pw : !ptensor.tensor<[4, 2, 8], f32>, %{{.+}} = %pb : !ptensor.tensor<[4, 2, 8], f32>)
func.func @split_sibling_sums(%g: !ptensor.tensor<[4, 64, 8], f32>, %x: !ptensor.tensor<[4, 64, 8], f32>) -> (!ptensor.tensor<[8], f32>, !ptensor.tensor<[8], f32>) {
  %pw = loop.reduce sum ins(%a = %g : !ptensor.tensor<[4, 64, 8], f32>, %b = %x : !ptensor.tensor<[4, 64, 8], f32>) over [32] -> !ptensor.tensor<[4, 2, 8], f32> {
    %u = loop.load %a[d0, d1 * 32 + r0, d2] : f32
    %v = loop.load %b[d0, d1 * 32 + r0, d2] : f32
    %m = arith.mulf %u, %v : f32
    loop.yield %m : f32
  }
  %w = loop.reduce sum ins(%a = %pw : !ptensor.tensor<[4, 2, 8], f32>) over [4, 2] -> !ptensor.tensor<[8], f32> {
    %u = loop.load %a[r0, r1, d0] : f32
    loop.yield %u : f32
  }
  %pb = loop.reduce sum ins(%a = %g : !ptensor.tensor<[4, 64, 8], f32>) over [32] -> !ptensor.tensor<[4, 2, 8], f32> {
    %u = loop.load %a[d0, d1 * 32 + r0, d2] : f32
    loop.yield %u : f32
  }
  %b = loop.reduce sum ins(%a = %pb : !ptensor.tensor<[4, 2, 8], f32>) over [4, 2] -> !ptensor.tensor<[8], f32> {
    %u = loop.load %a[r0, r1, d0] : f32
    loop.yield %u : f32
  }
  func.return %w, %b : !ptensor.tensor<[8], f32>, !ptensor.tensor<[8], f32>
}

// -----

// A sibling that reads the first final sum cannot move above it: it stays
// in a kernel of its own after it.
// CHECK-LABEL: func.func @sibling_after_its_operand(
// CHECK-NEXT:    %p = loop.reduce sum
// CHECK:         %w = loop.reduce sum
// CHECK:         %q = loop.reduce sum
func.func @sibling_after_its_operand(%g: !ptensor.tensor<[4, 64, 8], f32>) -> (!ptensor.tensor<[8], f32>, !ptensor.tensor<[4, 2, 8], f32>) {
  %p = loop.reduce sum ins(%a = %g : !ptensor.tensor<[4, 64, 8], f32>) over [32] -> !ptensor.tensor<[4, 2, 8], f32> {
    %u = loop.load %a[d0, d1 * 32 + r0, d2] : f32
    loop.yield %u : f32
  }
  %w = loop.reduce sum ins(%a = %p : !ptensor.tensor<[4, 2, 8], f32>) over [4, 2] -> !ptensor.tensor<[8], f32> {
    %u = loop.load %a[r0, r1, d0] : f32
    loop.yield %u : f32
  }
  %q = loop.reduce sum ins(%a = %g : !ptensor.tensor<[4, 64, 8], f32>, %c = %w : !ptensor.tensor<[8], f32>) over [32] -> !ptensor.tensor<[4, 2, 8], f32> {
    %u = loop.load %a[d0, d1 * 32 + r0, d2] : f32
    %s = loop.load %c[d2] : f32
    %m = arith.mulf %u, %s : f32
    loop.yield %m : f32
  }
  func.return %w, %q : !ptensor.tensor<[8], f32>, !ptensor.tensor<[4, 2, 8], f32>
}
