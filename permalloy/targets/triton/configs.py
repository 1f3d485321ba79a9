"""
Launch configurations: block sizes, warps and pipeline stages.

`candidates(space, sizes, mode, interpret)` lists the configurations worth
benchmarking for a kernel (its plan's `CandidateSpace`) at the given values
of its size symbols, best guess first; `max-autotune` widens the list. Under
Triton's interpreter only one is used, with large blocks (each program costs
Python work there) but small enough tiles for the reductions it runs element
by element.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields

from permalloy.targets.host import python_expr
from permalloy.targets.triton.plan import FLAT, MATMUL, SCATTER, TILED, KernelPlan

TILE_ELEMENTS = 4096
"""Elements of one program's `[XBLOCK, inner]` tile that fit registers comfortably."""
INTERPRETER_TILE = 1 << 14


@dataclass(frozen=True)
class Config:
    """One launch configuration of a kernel. A matrix product's tile is
    `[XBLOCK, YBLOCK]` over `RBLOCK` reduction positions at a time; `LIBRARY`
    runs its product with the library instead (`matmul`)."""

    XBLOCK: int
    RBLOCK: int = 0
    num_warps: int = 4
    num_stages: int = 1
    YBLOCK: int = 0
    LIBRARY: int = 0

    def as_dict(self) -> dict[str, int]:
        values = {"XBLOCK": self.XBLOCK, "RBLOCK": self.RBLOCK, "num_warps": self.num_warps, "num_stages": self.num_stages}
        if self.YBLOCK or self.LIBRARY:
            values.update(YBLOCK=self.YBLOCK, LIBRARY=self.LIBRARY)
        return values

    @staticmethod
    def from_dict(values: dict[str, int]) -> Config:
        return Config(
            values["XBLOCK"],
            values.get("RBLOCK", 0),
            values["num_warps"],
            values["num_stages"],
            values.get("YBLOCK", 0),
            values.get("LIBRARY", 0),
        )


@dataclass(frozen=True)
class CandidateSpace:
    """
    What a kernel's candidate configurations depend on, read off its plan
    once: how its groups launch (`kind`: `matmul`, `scatter`, `flat`,
    `tiled`, `outer` or `rows`), the row count of each group, the widest
    persistent block and the inner lengths walked in chunks (Python
    expressions over the size symbols, evaluated at each call's sizes),
    whether some stage walks chunks, and whether every group is flat (the
    interpreter's single configuration). A matrix product adds its sizes
    (`product`: M, N and K) and whether its factors are half precision and
    work is fused into it. Plain data: the compiled-graph cache keeps it, so
    that a cached kernel is tuned without its plan.
    """

    kind: str
    rows: tuple[str, ...] = ("1",)
    block: int = 1
    chunked: tuple[str, ...] = ()
    looped: bool = False
    flat_groups: bool = False
    product: tuple[str, ...] = ()
    half: bool = False
    fused: bool = False

    @staticmethod
    def of(plan: KernelPlan) -> CandidateSpace:
        groups = plan.groups
        if groups and groups[0].mode == MATMUL:
            from permalloy.targets.triton.matmul import product_facts

            sizes, half, fused = product_facts(plan)
            return CandidateSpace(MATMUL, product=tuple(python_expr(e) for e in sizes), half=half, fused=fused)
        if any(g.mode == SCATTER for g in groups):
            kind = SCATTER
        elif all(g.mode == FLAT for g in groups):
            kind = FLAT
        elif any(g.mode == TILED for g in groups):
            kind = TILED
        else:
            kind = "outer" if all(g.outer for g in groups) else "rows"
        chunked = [
            s.inner.numel for g in groups for s in g.stages if s.inner.dims and (s.block is None or g.mode == TILED)
        ]
        return CandidateSpace(
            kind,
            rows=tuple(python_expr(g.rows.numel) for g in groups) or ("1",),
            block=max((g.widest_block for g in groups), default=1),
            chunked=tuple(python_expr(e) for e in chunked),
            looped=any(g.looped for g in groups),
            flat_groups=all(g.mode in (FLAT, SCATTER) for g in groups),
        )

    def as_dict(self) -> dict:
        return {name: list(value) if isinstance(value, tuple) else value for name, value in asdict(self).items()}

    @staticmethod
    def from_dict(values: Mapping) -> CandidateSpace:
        names = {f.name for f in fields(CandidateSpace)}
        return CandidateSpace(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items() if k in names})

    def extents(self, sizes: Mapping[str, int]) -> Extents:
        """The work of the kernel at `sizes` (values of its size symbols)."""
        rows = max(evaluate(e, sizes) for e in self.rows)
        chunked = max((evaluate(e, sizes) for e in self.chunked), default=0)
        return Extents(max(rows, 1), self.block, chunked)


def evaluate(expression: str, sizes: Mapping[str, int]) -> int:
    """The value of a size expression (`python_expr`'s text) at `sizes`."""
    return int(eval(expression, {"__builtins__": {}, "min": min, "max": max}, dict(sizes)))  # noqa: S307 - generated text


@dataclass(frozen=True)
class Extents:
    """A kernel's work at given sizes: the most rows of a group, the widest
    persistent block, and the longest inner axis walked in chunks."""

    rows: int
    block: int
    chunked: int


def pow2_ceil(n: int) -> int:
    """The least power of two at least `n` (1 for `n` under 1), as
    `triton.next_power_of_2` gives it for positive `n`."""
    return 1 << (max(n, 1) - 1).bit_length()


def _pow2_floor(n: int) -> int:
    return 1 << (max(n, 1).bit_length() - 1)


def _warps(tile: int) -> int:
    return max(1, min(8, tile // 256))


def candidates(space: CandidateSpace, sizes: Mapping[str, int], mode: str = "default", interpret: bool = False) -> list[Config]:
    """The configurations to try for a kernel (its plan's `CandidateSpace`)
    at `sizes`, the default first."""
    if space.kind == MATMUL:
        from permalloy.targets.triton.matmul import matmul_candidates

        return matmul_candidates(space, sizes, mode, interpret)
    extents = space.extents(sizes)
    if interpret:
        return [_interpreter_config(space, extents)]
    wide = mode.startswith("max-autotune")
    if space.kind == SCATTER:
        # one configuration: timing candidates would combine into the output again and again
        return _flat(extents, False)[:1]
    if space.kind == FLAT:
        found = _flat(extents, wide)
    elif space.kind == TILED:
        found = _tiled(wide)
    elif space.kind == "outer":
        found = _outer(space, extents, wide)
    else:
        found = _rows(space, extents, wide)
    unique: list[Config] = []
    for config in found:
        if config not in unique:
            unique.append(config)
    return unique


def _interpreter_config(space: CandidateSpace, extents: Extents) -> Config:
    rblock = min(pow2_ceil(extents.chunked), 256) if space.looped else 0
    if space.flat_groups:
        return Config(min(pow2_ceil(extents.rows), INTERPRETER_TILE), rblock)
    inner = max(extents.block, rblock, 1)
    xblock = max(1, min(_pow2_floor(INTERPRETER_TILE // inner), pow2_ceil(extents.rows)))
    return Config(xblock, rblock)


FLAT_WIDE_ONLY = ((2048, 8), (4096, 8), (128, 4), (1024, 8))
"""The flat candidates (elements per program, warps) only `max-autotune`
times. Of the four flat candidates timed before, a block of 2048 elements
was the one whose loss cost least: over the flat kernels tuned in eight
models on an H100 (`h100-tuning-winners.json`, 121 kernels) and six on an
H200 (`h200-tuning-candidates.jsonl`, 74 kernels), the best of the other
three runs those kernels 0.65% and 0.06% slower in all than the best of the
four (the first two alone: 2.96% and 0.08%), and a first call compiles,
loads and times a quarter fewer flat candidates."""


def _flat(extents: Extents, wide: bool) -> list[Config]:
    sizes = [(1024, 4), (512, 4), (256, 4)]
    if wide:
        sizes += list(FLAT_WIDE_ONLY)
    configs = []
    for xblock, warps in sizes:
        xblock = min(xblock, max(16, pow2_ceil(extents.rows)))
        configs.append(Config(xblock, 0, min(warps, max(1, xblock // 128)), 1))
    return configs


def _tiled(wide: bool) -> list[Config]:
    sizes = [(32, 32, 4), (64, 64, 4), (16, 128, 4), (128, 16, 4)]
    if wide:
        sizes += [(64, 32, 2), (32, 64, 8), (128, 64, 8)]
    return [Config(x, r, w, 1) for x, r, w in sizes]


def _outer(space: CandidateSpace, extents: Extents, wide: bool) -> list[Config]:
    """Reductions along rows: wide blocks of rows (contiguous in memory), a
    few reduction positions at a time."""
    sizes = [(64, 64, 4), (128, 32, 4), (256, 16, 8), (32, 128, 4)]
    if wide:
        sizes += [(128, 64, 8), (64, 32, 2), (256, 32, 8)]
    row_cap = max(16, pow2_ceil(extents.rows))
    configs = []
    for xblock, rblock, warps in sizes:
        xblock = min(xblock, row_cap)
        rblock = rblock if space.looped else 0
        xblock = min(xblock, max(1, _pow2_floor(TILE_ELEMENTS // max(extents.block, rblock, 1))))
        configs.append(Config(xblock, rblock, warps, 1))
    return configs


def _rows(space: CandidateSpace, extents: Extents, wide: bool) -> list[Config]:
    row_cap = pow2_ceil(extents.rows)
    if space.looped:
        longest = pow2_ceil(extents.chunked)
        chunks = sorted({min(c, longest) for c in ([1024, 2048, 512] + ([256, 4096] if wide else []))}, reverse=True)
    else:
        chunks = [0]
    configs = []
    for rblock in chunks:
        inner = max(extents.block, rblock, 1)
        most = max(1, min(_pow2_floor(TILE_ELEMENTS // inner), row_cap))
        xblocks = [most, max(1, most // 4), 1]
        if wide:
            xblocks += [max(1, most // 2), max(1, min(2 * most, row_cap, _pow2_floor(2 * TILE_ELEMENTS // inner)))]
        for xblock in xblocks:
            tile = xblock * inner
            configs.append(Config(xblock, rblock, _warps(tile), 1))
            if wide:
                configs.append(Config(xblock, rblock, max(1, _warps(tile) // 2), 2))
    return configs
