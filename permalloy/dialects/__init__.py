"""
The dialects permalloy's IR is made of: its own, and the upstream xDSL ones it uses.

`all_dialects()` is the one list every tool registers, so that `permalloy-opt`,
the importer and the tests all read and print exactly the same IR. A new dialect
is one module in this package plus one entry below.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect


def _builtin() -> Dialect:
    from xdsl.dialects.builtin import Builtin

    return Builtin


def _func() -> Dialect:
    from xdsl.dialects.func import Func

    return Func


def _arith() -> Dialect:
    from xdsl.dialects.arith import Arith

    return Arith


def _math() -> Dialect:
    from xdsl.dialects.math import Math

    return Math


def _sym() -> Dialect:
    from permalloy.dialects.sym import Sym

    return Sym


def _ptensor() -> Dialect:
    from permalloy.dialects.ptensor import PTensor

    return PTensor


def _loop() -> Dialect:
    from permalloy.dialects.loop import Loop

    return Loop


def _buffer() -> Dialect:
    from permalloy.dialects.buffer import Buffer

    return Buffer


def all_dialects() -> dict[str, Callable[[], Dialect]]:
    """
    The dialects permalloy registers, by name, each with a factory that imports it.

    Upstream dialects come first (`builtin`, `func`, `arith`, `math`), then
    permalloy's own. Factories import lazily, as xDSL's registry does, so that a
    tool only loads the dialects its input uses.
    """
    return {
        "builtin": _builtin,
        "func": _func,
        "arith": _arith,
        "math": _math,
        "sym": _sym,
        "ptensor": _ptensor,
        "loop": _loop,
        "buffer": _buffer,
    }


def register_all_dialects(ctx: Context) -> None:
    """Register every dialect of `all_dialects()` in a context."""
    for name, factory in all_dialects().items():
        ctx.register_dialect(name, factory)


def make_context(*, allow_unregistered: bool = False) -> Context:
    """A fresh context that knows every permalloy dialect, to parse or build IR."""
    ctx = Context(allow_unregistered=allow_unregistered)
    register_all_dialects(ctx)
    return ctx
