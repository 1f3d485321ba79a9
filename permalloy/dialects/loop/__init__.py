"""
The `loop` dialect: computations as an iteration domain and a scalar body.

A `loop.pointwise` computes one element of its result per point of its domain
(the result's shape, indexed by `d0, d1, ...`). A `loop.reduce` computes one
element per point of its parallel domain (the result's shape, `d0, ...`) by
combining the values its body yields over a reduction domain (`r0, r1, ...`).
A `loop.scan` keeps every prefix of such a combination along one dimension
of its result, its reduction domain (`r0`). A `loop.scatter` runs over its
source's shape and combines each point's value into the result element at the
position its body computes (`loop.scatter_yield %v at [v0, d1] (%p)`). A
`loop.sort` gives, for each row, the positions of its body's values in
sorted order along one dimension.
Bodies read their inputs with `loop.load` at index expressions over the loop
indices and size symbols, compute with the upstream `arith` and `math` ops, and
end with `loop.yield`.

Views do not exist at this level: a transpose, a broadcast or a slice is only a
different index expression in the loads that read it.

    %y = loop.pointwise ins(%a = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[8, 4], f32> {
      %v = loop.load %a[d1, d0] : f32
      %e = math.exp %v : f32
      loop.yield %e : f32
    }
    %s = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4], f32> {
      %v = loop.load %a[d0, r0] : f32
      loop.yield %v : f32
    }

The ops live in four modules: `computations` (`loop.pointwise`, `loop.reduce`,
`loop.scan`, `loop.fused` and their terminators), `scatter` (`loop.scatter`
and `loop.scatter_yield`), `sort` (`loop.sort`) and `body` (`loop.load`,
`loop.index`);
every public name is available from `permalloy.dialects.loop` itself.
"""

from __future__ import annotations

from xdsl.ir import Dialect

from permalloy.dialects.loop.body import IndexOp, LoadOp, source_shape_and_element
from permalloy.dialects.loop.computations import (
    FusedOp,
    FusedYieldOp,
    LoopOp,
    PointwiseOp,
    ReduceOp,
    ScanOp,
    YieldOp,
    enclosing_loop,
    parse_ins,
    print_ins,
    scalar_type,
)
from permalloy.dialects.loop.scatter import ScatterOp, ScatterYieldOp
from permalloy.dialects.loop.sort import SortOp

Loop = Dialect(
    "loop",
    [PointwiseOp, ReduceOp, ScanOp, ScatterOp, SortOp, LoadOp, IndexOp, YieldOp, ScatterYieldOp, FusedOp, FusedYieldOp],
    [],
)

__all__ = [
    "FusedOp",
    "FusedYieldOp",
    "IndexOp",
    "LoadOp",
    "Loop",
    "LoopOp",
    "PointwiseOp",
    "ReduceOp",
    "ScanOp",
    "ScatterOp",
    "ScatterYieldOp",
    "SortOp",
    "YieldOp",
    "enclosing_loop",
    "parse_ins",
    "print_ins",
    "scalar_type",
    "source_shape_and_element",
]
