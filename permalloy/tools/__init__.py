"""
Command-line tools: `permalloy-opt` (`permalloy.tools.opt`), which reads IR, runs
a pass pipeline on it and prints the result.
"""
