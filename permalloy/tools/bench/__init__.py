"""
permalloy-bench: the built-in model zoo timed under eager PyTorch, Inductor and
permalloy, side by side in one run.

    permalloy-bench [--device cpu|cuda] [--cases a,b] [--backends eager,permalloy]
                    [--quick] [--train] [--json FILE|-] [--plot FILE.png]

`cli` parses the flags; `profiles` sets the sizes and repetitions by device;
`runner` builds each case, compiles and checks it under each `backends` adapter
(against eager, with `accuracy`) and has `timing` measure the backends in turn;
what a timed call does is the `workload`'s: inference, or with `--train` a
training step (`training`) whose gradients are compared;
`results` holds what came out, `machine` where it ran; `report` prints the table
and the JSON, `plot` draws the speedups; `progress` tells stderr what is going on.
"""
