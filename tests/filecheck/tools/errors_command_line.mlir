// Mistakes on the command line: a message naming the valid choices, a
// non-zero exit status (`not`), and never a Python traceback.

// RUN: not permalloy-opt %s -p canonicalise 2>&1 | filecheck %s --check-prefix=UNKNOWN-PASS
// UNKNOWN-PASS-NOT: Traceback
// UNKNOWN-PASS:     permalloy-opt: error: unknown pass 'canonicalise' (did you mean 'canonicalize'?); available passes: {{.*}}canonicalize, {{.*}}cse, {{.*}}dce
// UNKNOWN-PASS-NOT: Traceback

// RUN: not permalloy-opt %s -p cse,no-such-pass 2>&1 | filecheck %s --check-prefix=UNKNOWN-PASS-2
// UNKNOWN-PASS-2-NOT: Traceback
// UNKNOWN-PASS-2:     permalloy-opt: error: unknown pass 'no-such-pass'; available passes: {{.*}}canonicalize, {{.*}}cse, {{.*}}dce

// RUN: not permalloy-opt %s -p 'cse{max-depth=3}' 2>&1 | filecheck %s --check-prefix=UNKNOWN-OPTION
// UNKNOWN-OPTION-NOT: Traceback
// UNKNOWN-OPTION:     permalloy-opt: error: pass 'cse' has no option 'max-depth'; 'cse' takes no options

// RUN: not permalloy-opt %s -p 'canonicalize{' 2>&1 | filecheck %s --check-prefix=BAD-PIPELINE
// BAD-PIPELINE-NOT: Traceback
// BAD-PIPELINE:      permalloy-opt: error: cannot parse the pass pipeline:
// BAD-PIPELINE-NEXT: pass-pipeline:1:14
// BAD-PIPELINE-NEXT: canonicalize{
// BAD-PIPELINE-NEXT:              ^
// BAD-PIPELINE-NEXT:              Expected argument name here

// RUN: not permalloy-opt %s -p cse,,dce 2>&1 | filecheck %s --check-prefix=EMPTY-PASS
// EMPTY-PASS-NOT: Traceback
// EMPTY-PASS:     permalloy-opt: error: cannot parse the pass pipeline:
// EMPTY-PASS:     Expected pass name here

// RUN: not permalloy-opt %s -t llvm-ir 2>&1 | filecheck %s --check-prefix=UNKNOWN-TARGET
// UNKNOWN-TARGET-NOT: Traceback
// UNKNOWN-TARGET:     permalloy-opt: error: argument -t/--target: invalid choice: 'llvm-ir' (choose from mlir, llvm{{.*}})

// RUN: not permalloy-opt %s -t 'mlir{generic=true}' 2>&1 | filecheck %s --check-prefix=TARGET-OPTION
// TARGET-OPTION-NOT: Traceback
// TARGET-OPTION:     permalloy-opt: error: target 'mlir' has no option 'generic'; options of 'mlir': print-generic-format (bool, default false), {{.*}}

// RUN: not permalloy-opt %s -t 'mlir{syntax-highlight=3}' 2>&1 | filecheck %s --check-prefix=TARGET-VALUE
// TARGET-VALUE-NOT: Traceback
// TARGET-VALUE:     permalloy-opt: error: option 'syntax-highlight' of target 'mlir' expects bool, got '3'

// RUN: not permalloy-opt %s -t 'mlir{' 2>&1 | filecheck %s --check-prefix=BAD-TARGET
// BAD-TARGET-NOT: Traceback
// BAD-TARGET:      permalloy-opt: error: cannot parse the target:
// BAD-TARGET-NEXT: target:1:6

// RUN: not permalloy-opt %s.missing 2>&1 | filecheck %s --check-prefix=MISSING-FILE
// MISSING-FILE-NOT: Traceback
// MISSING-FILE:     permalloy-opt: error: cannot read input file '{{.*}}errors_command_line.mlir.missing': No such file or directory

// RUN: not permalloy-opt %s -o %t.missing-dir/out.mlir 2>&1 | filecheck %s --check-prefix=BAD-OUTPUT
// BAD-OUTPUT-NOT: Traceback
// BAD-OUTPUT:     permalloy-opt: error: cannot write output file '{{.*}}out.mlir': No such file or directory

// RUN: not permalloy-opt %s --no-such-flag 2>&1 | filecheck %s --check-prefix=BAD-FLAG
// BAD-FLAG-NOT: Traceback
// BAD-FLAG:     permalloy-opt: error: unrecognized arguments: --no-such-flag

// RUN: permalloy-opt --version | filecheck %s --check-prefix=VERSION
// VERSION: permalloy-opt (permalloy {{[0-9]+\.[0-9]+.*}}, built on xDSL {{[0-9.]+}})

// RUN: permalloy-opt --help | filecheck %s --check-prefix=HELP
// HELP: usage: permalloy-opt
// HELP: Available targets are:
// HELP: Available passes are:
// HELP: canonicalize,cse,dce,

func.func @f() {
  func.return
}
