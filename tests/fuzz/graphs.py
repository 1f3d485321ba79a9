"""Random PyTorch functions as data, their Python source and their generator.

A `Graph` is a list of `OpRecord`s over named values (inputs `x0`, `x1`, ...;
op results `v0`, `v1`, ...), the inputs' specs and the sizes of their dims.
It prints as Python source (`Graph.source`), and that source is what runs
(`Graph.function`), so a printed graph reproduces exactly. A dynamic graph
carries a second set of sizes at which it is called again.
"""

from __future__ import annotations

import contextlib
import linecache
import random
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

import torch

from .inputs import INPUT_DTYPES, LAYOUTS, InputSpec, make_inputs
from .ops import BY_NAME, CATALOG, OpSpec

MAX_ELEMENTS = 4096
"""The most elements of any value the generator keeps (keeps interpreters quick)."""
MAX_RANK = 5
SIZE_CHOICES = (1, 2, 2, 3, 3, 4, 5, 6, 7, 8, 9, 16)
ONE = "one"
"""The size symbol that is 1 in every graph and every call (for broadcasting)."""


@dataclass(frozen=True)
class OpRecord:
    """`result = <op's template over args and params>`."""

    result: str
    op: str
    args: tuple[str, ...]
    params: tuple[tuple[str, str], ...] = ()

    @property
    def spec(self) -> OpSpec:
        return BY_NAME[self.op]

    def expression(self) -> str:
        return self.spec.template.format(*self.args, **dict(self.params))

    def statement(self) -> str:
        return f"{self.result} = {self.expression()}"


@dataclass(frozen=True)
class Graph:
    """A random function: inputs, ops, outputs and the sizes of the inputs' dims.
    `alt_sizes`, when set, makes the graph dynamic: it is compiled with symbolic
    sizes and called at `sizes` and then at `alt_sizes`."""

    seed: int
    inputs: tuple[InputSpec, ...]
    ops: tuple[OpRecord, ...]
    outputs: tuple[str, ...]
    sizes: tuple[tuple[str, int], ...]
    alt_sizes: tuple[tuple[str, int], ...] | None = None

    @property
    def dynamic(self) -> bool:
        return self.alt_sizes is not None

    def size_sets(self) -> list[dict[str, int]]:
        """The sizes of each call: one set, or two for a dynamic graph."""
        sets = [dict(self.sizes)]
        if self.alt_sizes is not None:
            sets.append(dict(self.alt_sizes))
        return sets

    def make_inputs(self, sizes: dict[str, int]) -> list[torch.Tensor]:
        return make_inputs(list(self.inputs), sizes, self.seed)

    def source(self, name: str = "fn", indent: str = "") -> str:
        """The graph as the Python source of a function `name`."""
        parameters = ", ".join(spec.name for spec in self.inputs)
        lines = [f"def {name}({parameters}):"]
        lines += [f"    {op.statement()}" for op in self.ops]
        outputs = ", ".join(self.outputs) + ("," if len(self.outputs) == 1 else "")
        lines.append(f"    return ({outputs})")
        return "\n".join(indent + line for line in lines) + "\n"

    def function(self) -> Callable:
        """The function, executed from its source (which `inspect` can read back)."""
        source = self.source()
        filename = f"<fuzz graph {self.seed} {abs(hash(source)):x}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        namespace: dict = {"torch": torch}
        exec(compile(source, filename, "exec"), namespace)  # noqa: S102
        return namespace["fn"]

    def calls(self) -> list[list[torch.Tensor]]:
        """The inputs of each call: one list, or two for a dynamic graph."""
        return [self.make_inputs(sizes) for sizes in self.size_sets()]

    def without_dead_ops(self) -> Graph:
        """The graph less the ops that no output depends on."""
        live = set(self.outputs)
        kept = []
        for op in reversed(self.ops):
            if op.result in live:
                kept.append(op)
                live.update(op.args)
        return replace(self, ops=tuple(reversed(kept)))


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def runs_eagerly(graph: Graph) -> bool:
    """Whether the graph runs in eager PyTorch at each of its size sets and
    returns tensors of at most `MAX_ELEMENTS` elements."""
    try:
        fn = graph.function()
        for sizes in graph.size_sets():
            with quiet():
                outputs = fn(*graph.make_inputs(sizes))
            if not all(isinstance(o, torch.Tensor) and o.numel() <= MAX_ELEMENTS for o in outputs):
                return False
    except Exception:  # noqa: BLE001 - any eager failure makes the graph invalid
        return False
    return True


@dataclass
class Builder:
    """The state of one graph's generation: the values so far at each size set."""

    rng: random.Random
    size_sets: list[dict[str, int]]
    environments: list[dict[str, torch.Tensor]] = field(default_factory=list)
    ops: list[OpRecord] = field(default_factory=list)

    def names(self) -> list[str]:
        return list(self.environments[0])

    def pick_value(self) -> str:
        """A value, the most recent ones more often."""
        names = self.names()
        if self.rng.random() < 0.5:
            return names[-1]
        return self.rng.choice(names)

    def try_add(self, spec: OpSpec) -> bool:
        """Adds one `spec` op over random values if it runs eagerly at every size set."""
        args = [self.pick_value() for _ in range(spec.arity)]
        params = spec.sampler(self.rng, [self.environments[0][a] for a in args])
        if params is None:
            return False
        record = OpRecord(f"v{len(self.ops)}", spec.name, tuple(args), tuple(sorted(params.items())))
        results = []
        for environment in self.environments:
            try:
                with quiet():
                    result = eval(record.expression(), {"torch": torch}, environment)  # noqa: S307
            except Exception:  # noqa: BLE001 - an op that does not apply is skipped
                return False
            if not isinstance(result, torch.Tensor) or result.numel() > MAX_ELEMENTS or result.dim() > MAX_RANK:
                return False
            results.append(result)
        for environment, result in zip(self.environments, results, strict=True):
            environment[record.result] = result
        self.ops.append(record)
        return True


def random_sizes(rng: random.Random) -> dict[str, int]:
    """Sizes of up to four dim symbols (odd ones, ones, rarely zero) and `one`."""
    sizes = {ONE: 1}
    for name in "abcd"[: rng.randint(1, 4)]:
        sizes[name] = 0 if rng.random() < 0.03 else rng.choice(SIZE_CHOICES)
    return sizes


def random_input(rng: random.Random, index: int, sizes: dict[str, int], first: InputSpec | None) -> InputSpec:
    """An input; later ones often broadcast against the first (a suffix of its dims, some of them 1)."""
    symbols = [s for s in sizes if s != ONE]
    if first is not None and first.dims and rng.random() < 0.6:
        dims = list(first.dims[rng.randrange(len(first.dims)) :])
        dims = [ONE if rng.random() < 0.3 else d for d in dims]
    else:
        rank = rng.choices([0, 1, 2, 3, 4], weights=[0.5, 2, 3, 2, 1])[0]
        dims = [rng.choice(symbols + [ONE]) if rng.random() < 0.85 else ONE for _ in range(rank)]
    if first is not None and rng.random() < 0.6:
        dtype = first.dtype
    else:
        dtype = rng.choices(INPUT_DTYPES, weights=[4, 1.5, 1.5, 0.5, 1, 0.7])[0]
    layout = "contiguous" if rng.random() < 0.55 else rng.choice(LAYOUTS[1:])
    return InputSpec(f"x{index}", tuple(dims), dtype, layout)


def grown_sizes(rng: random.Random, sizes: dict[str, int]) -> dict[str, int]:
    """Second-call sizes of a dynamic graph: every size above 1 grows."""
    return {name: size + rng.choice([1, 2, 3]) if size > 1 else size for name, size in sizes.items()}


def generate(seed: int, dynamic_fraction: float = 0.2) -> Graph:
    """The random graph of `seed`: 3 to 15 ops over 1 to 3 inputs (fewer ops
    only where too few of the drawn ones apply); `dynamic_fraction` of seeds
    are dynamic."""
    rng = random.Random(seed)
    sizes = random_sizes(rng)
    inputs: list[InputSpec] = []
    for index in range(rng.randint(1, 3)):
        inputs.append(random_input(rng, index, sizes, inputs[0] if inputs else None))
    size_sets = [sizes]
    if rng.random() < dynamic_fraction and any(size > 1 for size in sizes.values()):
        size_sets.append(grown_sizes(rng, sizes))
    builder = Builder(rng, size_sets)
    for set_sizes in size_sets:
        values = make_inputs(inputs, set_sizes, seed)
        builder.environments.append({spec.name: value for spec, value in zip(inputs, values, strict=True)})
    target_ops = rng.randint(3, 15)
    weights = [spec.weight for spec in CATALOG]
    for _ in range(target_ops * 25):
        if len(builder.ops) >= target_ops:
            break
        builder.try_add(rng.choices(CATALOG, weights=weights)[0])
    if not builder.ops:
        builder.ops.append(OpRecord("v0", "neg", (inputs[0].name,)))
    used = {arg for op in builder.ops for arg in op.args}
    leaves = [op.result for op in builder.ops if op.result not in used]
    outputs = tuple(leaves[-3:])
    graph = Graph(
        seed=seed,
        inputs=tuple(inputs),
        ops=tuple(builder.ops),
        outputs=outputs,
        sizes=tuple(sizes.items()),
        alt_sizes=tuple(size_sets[1].items()) if len(size_sets) > 1 else None,
    )
    return graph.without_dead_ops()
