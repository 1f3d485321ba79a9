"""A random-graph differential fuzzer for the torch.compile backend.

From an integer seed, `graphs.generate` builds a random PyTorch function of a
few elementwise, reduction, view and library ops, kept as data (a list of op
records over named values) so that it prints as Python source, re-executes and
shrinks. `compare.run_case` compiles it (permalloy on a target, or Inductor)
and classifies any disagreement with eager; `shrink.shrink` reduces a failing
graph while its failure class persists and `repro.render_test` prints it as a
pytest test. `python -m tests.fuzz --help` runs it over a range of seeds.
"""
