"""
permalloy-bench: the built-in model zoo timed under eager PyTorch, Inductor and
permalloy, side by side in one run.

    permalloy-bench [--device cpu|cuda] [--cases a,b] [--backends eager,permalloy]
                    [--quick] [--json FILE|-] [--plot FILE.png]

`cli` parses the flags, `runner` compiles and checks each case under each
backend, `timing` measures, `report` prints the table and the JSON, `plot` draws
the speedups.
"""
