"""The catalog of ops the generator draws from.

Each op is a source template over its tensor arguments (`{0}`, `{1}`, ...) and
named parameters, with a sampler that picks the parameters for given argument
tensors. Parameters are Python source text, so a graph prints exactly as it
runs. A sampler may return None when the op does not apply to its arguments;
whatever it returns is still validated by running it eagerly.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

import torch

Params = dict[str, str]
Sampler = Callable[[random.Random, list[torch.Tensor]], Params | None]

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
CAST_DTYPES = ("torch.float32", "torch.float16", "torch.bfloat16", "torch.int64", "torch.bool")
SPECIAL_CONSTANTS = ('float("inf")', 'float("-inf")', 'float("nan")', "-0.0")
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")


@dataclass(frozen=True)
class OpSpec:
    """One op of the catalog: `arity` tensor arguments, a source `template`
    and a parameter `sampler`; `weight` is its relative frequency."""

    name: str
    arity: int
    template: str
    sampler: Sampler
    weight: float = 1.0


def no_params(rng: random.Random, args: list[torch.Tensor]) -> Params:
    return {}


def literal(value: float) -> str:
    """Python source for a float, infinities and NaN included."""
    if math.isnan(value):
        return 'float("nan")'
    if math.isinf(value):
        return 'float("inf")' if value > 0 else 'float("-inf")'
    return repr(value)


def random_constant(rng: random.Random) -> str:
    """A scalar constant: usually an ordinary number, sometimes inf, -inf, NaN or -0.0."""
    if rng.random() < 0.15:
        return rng.choice(SPECIAL_CONSTANTS)
    return rng.choice([literal(round(rng.uniform(-3.0, 3.0), 2)), "2", "0.5", "1", "-1", "3"])


def one_dim(rng: random.Random, args: list[torch.Tensor]) -> Params | None:
    if args[0].dim() == 0:
        return None
    return {"dim": str(rng.randrange(-args[0].dim(), args[0].dim()))}


def some_dims(rng: random.Random, tensor: torch.Tensor) -> str:
    """One or more distinct dims of `tensor`, as a tuple literal."""
    count = rng.randint(1, tensor.dim())
    dims = rng.sample(range(tensor.dim()), count)
    if rng.random() < 0.3:
        dims = [d - tensor.dim() for d in dims]
    return "(" + ", ".join(map(str, dims)) + ("," if count == 1 else "") + ")"


def reduction_params(rng: random.Random, args: list[torch.Tensor]) -> Params | None:
    if args[0].dim() == 0:
        return None
    return {"dims": some_dims(rng, args[0]), "keepdim": str(rng.random() < 0.4)}


def single_dim_reduction_params(rng: random.Random, args: list[torch.Tensor]) -> Params | None:
    params = one_dim(rng, args)
    if params is not None:
        params["keepdim"] = str(rng.random() < 0.4)
    return params


def float_one_dim(rng: random.Random, args: list[torch.Tensor]) -> Params | None:
    """One dim of a float tensor (logcumsumexp takes floats only)."""
    return one_dim(rng, args) if args[0].is_floating_point() else None


def scatter_params(rng: random.Random, args: list[torch.Tensor]) -> Params | None:
    """A dim and a reduction of scatter_reduce (torch has none of booleans)."""
    if args[0].dim() == 0 or args[0].dtype == torch.bool:
        return None
    reduces = ["sum", "mean", "amax", "amin", "prod"]
    include = rng.choice(["True", "False"])
    return {"dim": str(rng.randrange(args[0].dim())), "reduce": rng.choice(reduces), "include": include}


def constant_params(rng: random.Random, args: list[torch.Tensor]) -> Params:
    return {"c": random_constant(rng)}


def clamp_params(rng: random.Random, args: list[torch.Tensor]) -> Params:
    low = round(rng.uniform(-2.0, 0.5), 2)
    high = round(low + rng.uniform(0.1, 3.0), 2)
    choice = rng.random()
    if choice < 0.2:
        return {"bounds": f"min={low}"}
    if choice < 0.4:
        return {"bounds": f"max={high}"}
    return {"bounds": f"min={low}, max={high}"}


def comparison_params(rng: random.Random, args: list[torch.Tensor]) -> Params:
    return {"cmp": rng.choice(COMPARISONS), "c": random_constant(rng)}


def cast_params(rng: random.Random, args: list[torch.Tensor]) -> Params | None:
    """A cast among the fuzzed dtypes; floats reach int64 only through `to_int64`
    (a cast of NaN or of an out-of-range float to an integer is undefined)."""
    dtype = rng.choice(CAST_DTYPES)
    if dtype == "torch.int64" and args[0].is_floating_point():
        return None
    return {"dtype": dtype}


def shape_literal(sizes: list[int]) -> str:
    return "(" + ", ".join(map(str, sizes)) + ("," if len(sizes) == 1 else "") + ")"


def reshape_params(rng: random.Random, args: list[torch.Tensor]) -> Params | None:
    """A new shape with the same number of elements, one entry sometimes -1."""
    numel = args[0].numel()
    if numel == 0:
        return None
    factors: list[int] = []
    rest = numel
    for divisor in (2, 3, 5, 7):
        while rest % divisor == 0:
            factors.append(divisor)
            rest //= divisor
    if rest > 1:
        factors.append(rest)
    rng.shuffle(factors)
    rank = rng.randint(1, 4)
    sizes = [1] * rank
    for factor in factors:
        sizes[rng.randrange(rank)] *= factor
    if rank > 1 and rng.random() < 0.5:
        sizes[rng.randrange(rank)] = -1
    return {"shape": shape_literal(sizes)}


def permute_params(rng: random.Random, args: list[torch.Tensor]) -> Params | None:
    if args[0].dim() < 2:
        return None
    order = list(range(args[0].dim()))
    rng.shuffle(order)
    return {"order": shape_literal(order)}


def transpose_params(rng: random.Random, args: list[torch.Tensor]) -> Params | None:
    if args[0].dim() < 2:
        return None
    first, second = rng.sample(range(args[0].dim()), 2)
    return {"first": str(first), "second": str(-args[0].dim() + second)}


def expand_params(rng: random.Random, args: list[torch.Tensor]) -> Params | None:
    """Grows size-1 dims and sometimes adds a leading dim; -1 keeps a dim."""
    sizes = [rng.choice([2, 3, 4]) if size == 1 and rng.random() < 0.7 else -1 for size in args[0].shape]
    if rng.random() < 0.3 or not any(s != -1 for s in sizes):
        sizes = [rng.choice([2, 3])] + sizes
    return {"shape": shape_literal(sizes)}


def slice_params(rng: random.Random, args: list[torch.Tensor]) -> Params | None:
    """A basic-indexing slice with a start and a step on one dim."""
    tensor = args[0]
    if tensor.dim() == 0:
        return None
    dim = rng.randrange(tensor.dim())
    size = tensor.shape[dim]
    start = rng.randint(0, max(0, size - 1)) if size > 1 and rng.random() < 0.5 else 0
    step = rng.choice([1, 2, 2, 3])
    stop = "" if rng.random() < 0.6 else str(rng.randint(start, size))
    part = f"{start or ''}:{stop}:{step}" if step != 1 else f"{start or ''}:{stop}"
    return {"index": ", ".join([":"] * dim + [part])}


def select_params(rng: random.Random, args: list[torch.Tensor]) -> Params | None:
    tensor = args[0]
    dims = [d for d in range(tensor.dim()) if tensor.shape[d] > 0]
    if not dims:
        return None
    dim = rng.choice(dims)
    index = rng.randrange(-tensor.shape[dim], tensor.shape[dim])
    return {"dim": str(dim), "index": str(index)}


def unsqueeze_params(rng: random.Random, args: list[torch.Tensor]) -> Params:
    return {"dim": str(rng.randint(-args[0].dim() - 1, args[0].dim()))}


def squeeze_params(rng: random.Random, args: list[torch.Tensor]) -> Params | None:
    ones = [d for d in range(args[0].dim()) if args[0].shape[d] == 1]
    if ones and rng.random() < 0.8:
        return {"dim": str(rng.choice(ones))}
    return one_dim(rng, args)


def flatten_params(rng: random.Random, args: list[torch.Tensor]) -> Params | None:
    if args[0].dim() < 2:
        return None
    start = rng.randrange(args[0].dim() - 1)
    end = rng.randint(start + 1, args[0].dim() - 1)
    return {"start": str(start), "end": str(end)}


def layer_norm_params(rng: random.Random, args: list[torch.Tensor]) -> Params | None:
    if args[0].dim() == 0:
        return None
    return {"start": str(-rng.randint(1, min(2, args[0].dim())))}


def pool_params(rng: random.Random, args: list[torch.Tensor]) -> Params | None:
    """A pooling window over the last two dims (the last one for `pooled=1`) of
    a float tensor with one or two leading dims."""
    if not args[0].is_floating_point() or args[0].dim() < 2:
        return None
    kernel = rng.choice([2, 3])
    return {
        "k": str(kernel),
        "s": str(rng.choice([1, 2, kernel])),
        "p": str(rng.choice([0, kernel // 2])),
        "ceil": str(rng.random() < 0.3),
        "include": str(rng.random() < 0.7),
    }


def pad_params(rng: random.Random, args: list[torch.Tensor]) -> Params | None:
    """Constant padding (or cropping, by a negative width) of the last one or two dims."""
    if args[0].dim() == 0:
        return None
    count = min(args[0].dim(), rng.choice([1, 2]))
    widths = [rng.choice([-1, 0, 1, 1, 2, 3]) for _ in range(2 * count)]
    return {"widths": shape_literal(widths), "c": random_constant(rng)}


def unary(name: str, expression: str, weight: float = 1.0) -> OpSpec:
    return OpSpec(name, 1, expression, no_params, weight)


CATALOG: tuple[OpSpec, ...] = (
    # elementwise, unary
    unary("exp", "torch.exp({0})"),
    unary("log", "torch.log({0})"),
    unary("tanh", "torch.tanh({0})"),
    unary("sigmoid", "torch.sigmoid({0})"),
    unary("relu", "torch.relu({0})"),
    unary("gelu", "torch.nn.functional.gelu({0})"),
    unary("abs", "torch.abs({0})"),
    unary("neg", "torch.neg({0})"),
    unary("sqrt", "torch.sqrt({0})"),
    unary("rsqrt", "torch.rsqrt({0})"),
    OpSpec("clamp", 1, "torch.clamp({0}, {bounds})", clamp_params),
    # elementwise, binary (broadcasting) and with a scalar constant
    OpSpec("add", 2, "torch.add({0}, {1})", no_params, 2.0),
    OpSpec("sub", 2, "torch.sub({0}, {1})", no_params, 1.5),
    OpSpec("mul", 2, "torch.mul({0}, {1})", no_params, 2.0),
    OpSpec("div", 2, "torch.div({0}, {1})", no_params),
    OpSpec("pow", 2, "torch.pow({0}, {1})", no_params, 0.5),
    OpSpec("maximum", 2, "torch.maximum({0}, {1})", no_params),
    OpSpec("minimum", 2, "torch.minimum({0}, {1})", no_params),
    OpSpec("add_constant", 1, "torch.add({0}, {c})", constant_params),
    OpSpec("mul_constant", 1, "torch.mul({0}, {c})", constant_params),
    OpSpec("pow_constant", 1, "torch.pow({0}, {c})", constant_params, 0.5),
    OpSpec("where", 3, "torch.where({0} {cmp} {1}, {1}, {2})", comparison_params),
    OpSpec("where_constant", 2, "torch.where({0} {cmp} {c}, {0}, {1})", comparison_params),
    OpSpec("full_like", 1, "torch.full_like({0}, {c})", constant_params, 0.3),
    # reductions
    OpSpec("sum", 1, "torch.sum({0}, dim={dims}, keepdim={keepdim})", reduction_params),
    OpSpec("sum_all", 1, "torch.sum({0})", no_params, 0.3),
    OpSpec("mean", 1, "torch.mean({0}, dim={dims}, keepdim={keepdim})", reduction_params),
    OpSpec("amax", 1, "torch.amax({0}, dim={dims}, keepdim={keepdim})", reduction_params),
    OpSpec("amin", 1, "torch.amin({0}, dim={dims}, keepdim={keepdim})", reduction_params),
    OpSpec("var", 1, "torch.var({0}, dim={dims}, keepdim={keepdim})", reduction_params, 0.7),
    OpSpec("prod", 1, "torch.prod({0}, dim={dim}, keepdim={keepdim})", single_dim_reduction_params, 0.5),
    OpSpec("argmax", 1, "torch.argmax({0}, dim={dim}, keepdim={keepdim})", single_dim_reduction_params, 0.5),
    # scans
    OpSpec("cumsum", 1, "torch.cumsum({0}, dim={dim})", one_dim, 0.6),
    OpSpec("cumprod", 1, "torch.cumprod({0}, dim={dim})", one_dim, 0.3),
    OpSpec("logcumsumexp", 1, "torch.logcumsumexp({0}, dim={dim})", float_one_dim, 0.3),
    OpSpec("cummax", 1, "torch.cummax({0}, dim={dim})[0]", one_dim, 0.3),
    OpSpec("cummin_indices", 1, "torch.cummin({0}, dim={dim})[1]", one_dim, 0.3),
    # scatters: every other position along dim lands on 1, the rest on 0
    OpSpec(
        "scatter_reduce",
        1,
        '{0}.scatter_reduce({dim}, torch.ones_like({0}, dtype=torch.long).cumsum({dim}) % 2 % {0}.shape[{dim}], '
        '{0}, "{reduce}", include_self={include})',
        scatter_params,
        0.4,
    ),
    # views
    OpSpec("reshape", 1, "{0}.reshape({shape})", reshape_params),
    OpSpec("permute", 1, "{0}.permute({order})", permute_params),
    OpSpec("transpose", 1, "{0}.transpose({first}, {second})", transpose_params),
    OpSpec("expand", 1, "{0}.expand({shape})", expand_params),
    OpSpec("slice", 1, "{0}[{index}]", slice_params),
    OpSpec("select", 1, "{0}.select({dim}, {index})", select_params, 0.7),
    OpSpec("unsqueeze", 1, "{0}.unsqueeze({dim})", unsqueeze_params, 0.7),
    OpSpec("squeeze", 1, "{0}.squeeze({dim})", squeeze_params, 0.5),
    OpSpec("flatten", 1, "{0}.flatten({start}, {end})", flatten_params, 0.7),
    OpSpec("cat", 2, "torch.cat([{0}, {1}], dim={dim})", one_dim, 0.7),
    OpSpec("stack", 2, "torch.stack([{0}, {1}], dim={dim})", one_dim, 0.5),
    # padding and pooling
    OpSpec("pad", 1, "torch.nn.functional.pad({0}, {widths}, value={c})", pad_params, 0.6),
    OpSpec("max_pool2d", 1, "torch.nn.functional.max_pool2d({0}, {k}, {s}, {p}, ceil_mode={ceil})", pool_params, 1.0),
    OpSpec(
        "max_pool2d_indices",
        1,
        "torch.nn.functional.max_pool2d({0}, {k}, {s}, {p}, ceil_mode={ceil}, return_indices=True)[1]",
        pool_params,
        0.3,
    ),
    OpSpec("max_pool1d", 1, "torch.nn.functional.max_pool1d({0}, {k}, {s}, {p}, ceil_mode={ceil})", pool_params, 0.3),
    OpSpec(
        "avg_pool2d",
        1,
        "torch.nn.functional.avg_pool2d({0}, {k}, {s}, {p}, ceil_mode={ceil}, count_include_pad={include})",
        pool_params,
        0.5,
    ),
    # normalizations and library ops
    OpSpec("softmax", 1, "torch.softmax({0}, dim={dim})", one_dim),
    OpSpec("log_softmax", 1, "torch.log_softmax({0}, dim={dim})", one_dim),
    OpSpec("layer_norm", 1, "torch.nn.functional.layer_norm({0}, {0}.shape[{start}:])", layer_norm_params),
    OpSpec("matmul", 2, "torch.matmul({0}, {1})", no_params, 0.5),
    OpSpec("matmul_transposed", 1, "torch.matmul({0}, {0}.transpose(-1, -2))", no_params, 0.5),
    # casts; float to integer goes through bounded values with NaN as 0
    OpSpec("cast", 1, "{0}.to({dtype})", cast_params),
    OpSpec("to_int64", 1, "torch.where({0} == {0}, {0}, 0.0).clamp(-1000, 1000).to(torch.int64)", no_params, 0.3),
)

BY_NAME: dict[str, OpSpec] = {op.name: op for op in CATALOG}
