"""
A buffer-level module as the cache keeps it: the host function apart from
the kernels, so that a hit whose kernels are all loaded from their artifacts
parses the host function alone.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from permalloy.dialects import make_context
from permalloy.dialects.buffer import KernelOp


def _module_text(pieces: list[str]) -> str:
    return "builtin.module {\n" + "".join(f"{piece}\n" for piece in pieces) + "}\n"


def split_module(module: ModuleOp) -> tuple[str, str]:
    """The text of `module` without its kernels, and that of a module of its
    kernels (a module with attributes of its own is kept whole in the first)."""
    if module.attributes or module.sym_name is not None:
        return str(module), _module_text([])
    kernels = [str(op) for op in module.ops if isinstance(op, KernelOp)]
    others = [str(op) for op in module.ops if not isinstance(op, KernelOp)]
    return _module_text(others), _module_text(kernels)


def parse_module(text: str) -> ModuleOp:
    """A module of permalloy's dialects from its text."""
    return Parser(make_context(), text).parse_module()


def join_modules(host: ModuleOp, kernels: ModuleOp) -> ModuleOp:
    """`host` with the kernels of `kernels` moved in ahead of its own ops (where
    the pipeline leaves them)."""
    first = host.body.block.first_op
    for kernel in list(kernels.ops):
        kernel.detach()
        if first is None:
            host.body.block.add_op(kernel)
        else:
            host.body.block.insert_op_before(kernel, first)
    return host
