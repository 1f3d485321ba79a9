"""
Helpers for tests of the LLVM target: parse kernels from text, write small
pointwise kernels, describe torch tensors as launch layouts, and run.

    kernel = parse_kernel(pointwise_kernel("[4, 8]", ["f32"], "f32", '''
        %y = math.exp %a0 : f32
    ''', result="%y"))
    out = torch.empty(4, 8)
    run(target, kernel, [x], [out])
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func
from xdsl.dialects.math import Math
from xdsl.parser import Parser

from permalloy.dialects.buffer import Buffer, BufferType, KernelOp
from permalloy.dialects.loop import Loop
from permalloy.dialects.ptensor import PTensor
from permalloy.dialects.sym import Sym
from permalloy.dtypes import element_type
from permalloy.targets import kernel_symbols


def context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, Arith, Math, Sym, PTensor, Loop, Buffer):
        ctx.load_dialect(dialect)
    return ctx


def parse_module(text: str) -> ModuleOp:
    module = Parser(context(), text).parse_module()
    module.verify()
    return module


def parse_kernel(text: str) -> KernelOp:
    """The first `buffer.kernel` of `text`."""
    return next(op for op in parse_module(text).walk() if isinstance(op, KernelOp))


def tensor(shape: str, element: str) -> str:
    return f"!ptensor.tensor<{shape}, {element}>"


def pointwise_kernel(
    shape: str,
    inputs: Sequence[str],
    result_type: str,
    body: str,
    result: str = "%y",
    indices: str | None = None,
    input_shapes: Sequence[str] | None = None,
) -> str:
    """
    A kernel with one `loop.pointwise` over `shape`: input k (element type
    `inputs[k]`) is loaded as `%a<k>` at `indices` (default: d0, d1, ...), then
    `body` computes, and `result` is yielded.
    """
    rank = shape.count(",") + 1 if shape.strip("[] ") else 0
    index = indices if indices is not None else "[" + ", ".join(f"d{i}" for i in range(rank)) + "]"
    shapes = input_shapes or [shape] * len(inputs)
    args = ", ".join(f"%t{k}: {tensor(s, e)}" for k, (s, e) in enumerate(zip(shapes, inputs)))
    ins = ", ".join(f"%x{k} = %t{k} : {tensor(s, e)}" for k, (s, e) in enumerate(zip(shapes, inputs)))
    loads = "\n".join(f"    %a{k} = loop.load %x{k}{index} : {e.lstrip('u')}" for k, e in enumerate(inputs))
    out = tensor(shape, result_type)
    return f"""
buffer.kernel @k({args}) -> ({out}) {{
  %r = loop.pointwise ins({ins}) -> {out} {{
{loads}
{body}
    loop.yield {result} : {result_type}
  }}
  buffer.yield %r : {out}
}}
"""


def layout(t: torch.Tensor) -> BufferType:
    """The launch layout of a tensor (concrete sizes and strides)."""
    return BufferType(list(t.shape), element_type(t.dtype), list(t.stride()))


def run(
    target,
    kernel: KernelOp,
    inputs: Sequence[torch.Tensor],
    outputs: Sequence[torch.Tensor],
    symbols: dict[str, int] | None = None,
    layouts: Sequence[BufferType] | None = None,
):
    """Compile `kernel` for the tensors' layouts (or `layouts`) and run it."""
    tensors = [*inputs, *outputs]
    layouts = list(layouts) if layouts is not None else [layout(t) for t in tensors]
    compiled = target.compile_kernel(kernel, layouts)
    names = kernel_symbols(kernel, layouts)
    compiled(tensors, [symbols[n] for n in names] if names else [])
    return compiled


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64."""
    out, ref = out.double(), ref.double()
    return float((out - ref).norm() / ref.norm().clamp_min(1e-300))
