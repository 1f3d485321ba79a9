// RUN: permalloy-opt %s -p write-input-updates | filecheck %s
// RUN: permalloy-opt %s -p write-input-updates | permalloy-opt | filecheck %s
// RUN: permalloy-opt %s -p 'write-input-updates{in-place=false}' | filecheck %s --check-prefix=COPY

// write-input-updates: the results marked `ptensor.updates_input` (a graph's
// in-place updates of its inputs, as the importer gives them) become writes
// of those arguments, on host programs as convert-loop-to-buffer gives them.
// The kernels come first; each function below is one case.
// (tests/unit/test_write_input_updates.py runs every function of this file
// before and after the pass.)

builtin.module {
  buffer.kernel @add_one(%0: !ptensor.tensor<[4], f32>) -> (!ptensor.tensor<[4], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32> {
      %3 = loop.load %2[d0] : f32
      %4 = arith.constant 1.000000e+00 : f32
      %5 = arith.addf %3, %4 : f32
      loop.yield %5 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[4], f32>
  }
  buffer.kernel @mean_and_average(%0: !ptensor.tensor<[8, 4], f32>, %1: !ptensor.tensor<[4], f32>) -> (!ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32>) {
    %2 = loop.reduce sum ins(%3 = %0 : !ptensor.tensor<[8, 4], f32>) over [8] -> !ptensor.tensor<[4], f32> {
      %4 = loop.load %3[r0, d0] : f32
      loop.yield %4 : f32
    }
    %5 = loop.pointwise ins(%6 = %2 : !ptensor.tensor<[4], f32>, %7 = %1 : !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32> {
      %8 = loop.load %6[d0] : f32
      %9 = arith.constant 1.250000e-02 : f32
      %10 = arith.mulf %8, %9 : f32
      %11 = loop.load %7[d0] : f32
      %12 = arith.constant 9.000000e-01 : f32
      %13 = arith.mulf %11, %12 : f32
      %14 = arith.addf %10, %13 : f32
      loop.yield %14 : f32
    }
    buffer.yield %2, %5 : !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32>
  }
  buffer.kernel @add_one_rows(%0: !ptensor.tensor<[4, 4], f32>) -> (!ptensor.tensor<[4, 4], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[4, 4], f32>) -> !ptensor.tensor<[4, 4], f32> {
      %3 = loop.load %2[d0, d1] : f32
      %4 = arith.constant 1.000000e+00 : f32
      %5 = arith.addf %3, %4 : f32
      loop.yield %5 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[4, 4], f32>
  }
  buffer.kernel @shift(%0: !ptensor.tensor<[4], f32>) -> (!ptensor.tensor<[4], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32> {
      %3 = loop.load %2[3 - d0] : f32
      loop.yield %3 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[4], f32>
  }

// A launch writing only the new value, reading the argument where it
// writes: it writes the argument, and the allocation goes.
// CHECK-LABEL: func.func @count(%n: !buffer.buffer<[4], f32> {ptensor.updated}) {
// CHECK-NEXT:    buffer.launch @add_one ins(%n : !buffer.buffer<[4], f32>) outs(%n : !buffer.buffer<[4], f32>)
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// Not in place, the new value is copied into the argument at the end.
// COPY-LABEL: func.func @count(%n: !buffer.buffer<[4], f32> {ptensor.updated}) {
// COPY-NEXT:    %a = buffer.alloc : !buffer.buffer<[4], f32>
// COPY-NEXT:    buffer.launch @add_one ins(%n : {{.*}}) outs(%a : {{.*}})
// COPY-NEXT:    buffer.copy %a, %n : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>
// COPY-NEXT:    func.return
  func.func @count(%n: !buffer.buffer<[4], f32>) -> (!buffer.buffer<[4], f32> {ptensor.updates_input = 0 : i64}) {
    %a = buffer.alloc : !buffer.buffer<[4], f32>
    buffer.launch @add_one ins(%n : !buffer.buffer<[4], f32>) outs(%a : !buffer.buffer<[4], f32>)
    func.return %a : !buffer.buffer<[4], f32>
  }

// Batch norm's running mean: the kernel's pointwise stage reads the old mean
// where it writes the new one, which the function also returns as a graph
// output; the launch writes both, its kernel yielding the value twice (the
// copy of the kernel this launch runs is checked at the end).
// CHECK-LABEL: func.func @running_mean(%x: !buffer.buffer<[8, 4], f32>, %mean: !buffer.buffer<[4], f32> {ptensor.updated}) -> (!buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>) {
// CHECK-NEXT:    %sum = buffer.alloc : !buffer.buffer<[4], f32>
// CHECK-NEXT:    %new = buffer.alloc : !buffer.buffer<[4], f32>
// CHECK-NEXT:    buffer.launch @mean_and_average_1 ins(%x, %mean : {{.*}}) outs(%sum, %new, %mean : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>)
// CHECK-NEXT:    func.return %sum, %new : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>
  func.func @running_mean(%x: !buffer.buffer<[8, 4], f32>, %mean: !buffer.buffer<[4], f32>) -> (!buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32> {ptensor.updates_input = 1 : i64}) {
    %sum = buffer.alloc : !buffer.buffer<[4], f32>
    %new = buffer.alloc : !buffer.buffer<[4], f32>
    buffer.launch @mean_and_average ins(%x, %mean : !buffer.buffer<[8, 4], f32>, !buffer.buffer<[4], f32>) outs(%sum, %new : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>)
    func.return %sum, %new, %new : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>
  }

// The kernel of @running_mean runs twice here: the launch that writes the
// update runs a copy of it (above), the other the kernel as it was.
// CHECK-LABEL: func.func @shared_kernel(
// CHECK:         buffer.launch @mean_and_average ins(%y, %mean : {{.*}}) outs(%sum2, %new2 : {{.*}})
  func.func @shared_kernel(%y: !buffer.buffer<[8, 4], f32>, %mean: !buffer.buffer<[4], f32>) -> (!buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>) {
    %sum2 = buffer.alloc : !buffer.buffer<[4], f32>
    %new2 = buffer.alloc : !buffer.buffer<[4], f32>
    buffer.launch @mean_and_average ins(%y, %mean : !buffer.buffer<[8, 4], f32>, !buffer.buffer<[4], f32>) outs(%sum2, %new2 : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>)
    func.return %sum2, %new2 : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>
  }

// The argument is read after the launch that computes its new value: that
// read needs the old value, so the new one is copied in at the end.
// CHECK-LABEL: func.func @read_after(%n: !buffer.buffer<[4], f32> {ptensor.updated}) -> !buffer.buffer<[4], f32> {
// CHECK-NEXT:    %a = buffer.alloc : !buffer.buffer<[4], f32>
// CHECK-NEXT:    buffer.launch @add_one ins(%n : {{.*}}) outs(%a : {{.*}})
// CHECK-NEXT:    %b = buffer.alloc : !buffer.buffer<[4], f32>
// CHECK-NEXT:    buffer.launch @add_one ins(%n : {{.*}}) outs(%b : {{.*}})
// CHECK-NEXT:    buffer.copy %a, %n : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>
// CHECK-NEXT:    func.return %b : !buffer.buffer<[4], f32>
  func.func @read_after(%n: !buffer.buffer<[4], f32>) -> (!buffer.buffer<[4], f32>, !buffer.buffer<[4], f32> {ptensor.updates_input = 0 : i64}) {
    %a = buffer.alloc : !buffer.buffer<[4], f32>
    buffer.launch @add_one ins(%n : !buffer.buffer<[4], f32>) outs(%a : !buffer.buffer<[4], f32>)
    %b = buffer.alloc : !buffer.buffer<[4], f32>
    buffer.launch @add_one ins(%n : !buffer.buffer<[4], f32>) outs(%b : !buffer.buffer<[4], f32>)
    func.return %b, %a : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>
  }

// A kernel reading the argument elsewhere than where it writes (a reversal)
// would read points it already wrote: copied at the end.
// CHECK-LABEL: func.func @reversed(%n: !buffer.buffer<[4], f32> {ptensor.updated}) {
// CHECK-NEXT:    %a = buffer.alloc : !buffer.buffer<[4], f32>
// CHECK-NEXT:    buffer.launch @shift ins(%n : {{.*}}) outs(%a : {{.*}})
// CHECK-NEXT:    buffer.copy %a, %n : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>
// CHECK-NEXT:    func.return
  func.func @reversed(%n: !buffer.buffer<[4], f32>) -> (!buffer.buffer<[4], f32> {ptensor.updates_input = 0 : i64}) {
    %a = buffer.alloc : !buffer.buffer<[4], f32>
    buffer.launch @shift ins(%n : !buffer.buffer<[4], f32>) outs(%a : !buffer.buffer<[4], f32>)
    func.return %a : !buffer.buffer<[4], f32>
  }

// A new value copied from another input: the copy writes the argument.
// CHECK-LABEL: func.func @copied(%n: !buffer.buffer<[4], f32> {ptensor.updated}, %m: !buffer.buffer<[4], f32>) {
// CHECK-NEXT:    buffer.copy %m, %n : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>
// CHECK-NEXT:    func.return
  func.func @copied(%n: !buffer.buffer<[4], f32>, %m: !buffer.buffer<[4], f32>) -> (!buffer.buffer<[4], f32> {ptensor.updates_input = 0 : i64}) {
    %a = buffer.alloc : !buffer.buffer<[4], f32>
    buffer.copy %m, %a : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>
    func.return %a : !buffer.buffer<[4], f32>
  }

// A cache written at some rows by torch's `index_put`: the call runs in place
// on the argument (`index_put_`), and what read its result reads the argument.
// CHECK-LABEL: func.func @cache_rows(%cache: !buffer.buffer<[4, 4], f32> {ptensor.updated}, %rows: !buffer.buffer<[1], i64>, %row: !buffer.buffer<[1, 4], f32>) -> !buffer.buffer<[4, 4], f32> {
// CHECK-NEXT:    %{{.*}} = buffer.extern ins(%{{.*}} = %cache : {{.*}}) -> (!buffer.buffer<[4, 4], f32>) attributes {buffer.writes_first_input} {
// CHECK:         %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:    buffer.launch @add_one_rows ins(%cache : {{.*}}) outs(%b : {{.*}})
// CHECK-NEXT:    func.return %b : !buffer.buffer<[4, 4], f32>
// Not in place, torch's `index_put` makes a new tensor, copied in at the end.
// COPY-LABEL: func.func @cache_rows(
// COPY-NOT:      buffer.writes_first_input
// COPY:          buffer.copy %a, %cache
  func.func @cache_rows(%cache: !buffer.buffer<[4, 4], f32>, %rows: !buffer.buffer<[1], i64>, %row: !buffer.buffer<[1, 4], f32>) -> (!buffer.buffer<[4, 4], f32>, !buffer.buffer<[4, 4], f32> {ptensor.updates_input = 0 : i64}) {
    %a = buffer.extern ins(%x = %cache : !buffer.buffer<[4, 4], f32>, %i = %rows : !buffer.buffer<[1], i64>, %v = %row : !buffer.buffer<[1, 4], f32>) -> (!buffer.buffer<[4, 4], f32>) {
      %p = ptensor.index_put %x[%i] dims [0], %v : !ptensor.tensor<[4, 4], f32>, !ptensor.tensor<[1, 4], f32>, [!ptensor.tensor<[1], i64>] -> !ptensor.tensor<[4, 4], f32>
      buffer.yield %p : !ptensor.tensor<[4, 4], f32>
    }
    %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
    buffer.launch @add_one_rows ins(%a : !buffer.buffer<[4, 4], f32>) outs(%b : !buffer.buffer<[4, 4], f32>)
    func.return %b, %a : !buffer.buffer<[4, 4], f32>, !buffer.buffer<[4, 4], f32>
  }

// One new value for two inputs: copied into each.
// CHECK-LABEL: func.func @one_value_twice(%n: !buffer.buffer<[4], f32> {ptensor.updated}, %m: !buffer.buffer<[4], f32> {ptensor.updated}) {
// CHECK-NEXT:    %a = buffer.alloc : !buffer.buffer<[4], f32>
// CHECK-NEXT:    buffer.launch @add_one ins(%n : {{.*}}) outs(%a : {{.*}})
// CHECK-NEXT:    buffer.copy %a, %n
// CHECK-NEXT:    buffer.copy %a, %m
// CHECK-NEXT:    func.return
  func.func @one_value_twice(%n: !buffer.buffer<[4], f32>, %m: !buffer.buffer<[4], f32>) -> (!buffer.buffer<[4], f32> {ptensor.updates_input = 0 : i64}, !buffer.buffer<[4], f32> {ptensor.updates_input = 1 : i64}) {
    %a = buffer.alloc : !buffer.buffer<[4], f32>
    buffer.launch @add_one ins(%n : !buffer.buffer<[4], f32>) outs(%a : !buffer.buffer<[4], f32>)
    func.return %a, %a : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>
  }

// Two inputs swapped: each new value is the other's old one, copied before
// either is written.
// CHECK-LABEL: func.func @swapped(%n: !buffer.buffer<[4], f32> {ptensor.updated}, %m: !buffer.buffer<[4], f32> {ptensor.updated}) {
// CHECK-NEXT:    %0 = buffer.alloc : !buffer.buffer<[4], f32>
// CHECK-NEXT:    buffer.copy %n, %0 : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>
// CHECK-NEXT:    %1 = buffer.alloc : !buffer.buffer<[4], f32>
// CHECK-NEXT:    buffer.copy %m, %1 : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>
// CHECK-NEXT:    buffer.copy %1, %n : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>
// CHECK-NEXT:    buffer.copy %0, %m : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>
// CHECK-NEXT:    func.return
  func.func @swapped(%n: !buffer.buffer<[4], f32>, %m: !buffer.buffer<[4], f32>) -> (!buffer.buffer<[4], f32> {ptensor.updates_input = 0 : i64}, !buffer.buffer<[4], f32> {ptensor.updates_input = 1 : i64}) {
    func.return %m, %n : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>
  }
}

// The copy of @mean_and_average that @running_mean's launch runs, added after
// the functions, yields the new mean twice.
// CHECK:       buffer.kernel @mean_and_average_1(%0: !ptensor.tensor<[8, 4], f32>, %1: !ptensor.tensor<[4], f32>) -> (!ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32>, !ptensor.tensor<[4], f32>) {
// CHECK:         buffer.yield %{{.*}}, %[[NEW:.*]], %[[NEW]] :
