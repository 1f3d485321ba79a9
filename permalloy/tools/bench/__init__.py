"""
permalloy-bench: the built-in model zoo timed under eager PyTorch, Inductor and
permalloy, side by side in one run.

    permalloy-bench [--device cpu|cuda] [--cases a,b] [--backends eager,permalloy]
                    [--quick] [--json FILE|-] [--plot FILE.png]

`cli` parses the flags; `profiles` sets the sizes and repetitions by device;
`runner` builds each case, compiles and checks it under each `backends` adapter
(against eager, with `accuracy`) and has `timing` measure the backends in turn;
`results` holds what came out, `machine` where it ran; `report` prints the table
and the JSON, `plot` draws the speedups; `progress` tells stderr what is going on.
"""
