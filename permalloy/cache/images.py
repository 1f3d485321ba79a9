"""
A module as an image: its operations in a flat, pickled form that loads
without xDSL's parser.

Parsing a stored host function was most of a cache hit's own time:
EfficientNet-B0's, 680 operations, parses in 0.11 s in a fresh process and
took 0.26-0.32 s inside a compile, after torch's tracing (measured on one
CPU; the cause of the difference was not found). Its image loads in 8 ms. An image keeps, for each
operation in order, its class, its operands as numbers of values defined
before it, its result types and name hints, its properties, attributes and
location, and its regions' blocks in the same form; attributes are kept as
themselves. Loading one rebuilds each operation with `Operation.create`:
the same module, built without a token of text and without verifying again
what was verified when it was compiled. The image nests only as deep as the
regions do, so pickling it never recurses along the operations' lists or
their uses.

What an image cannot express (a block with successors, a value used before
its definition, an object that does not pickle) gives no image: the cache
keeps the text, which always loads. An image is as trusted as the compiled
kernels beside it in the same entry, which are machine code that runs.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue


class _NoImage(Exception):  # noqa: N818 - never escapes this module
    """The module holds something an image does not express."""


def module_image(module: ModuleOp, keep: Callable[[Operation], bool] = lambda op: True) -> bytes | None:
    """The image of `module` with those of its top-level operations that
    `keep` accepts, or None where it has something an image does not
    express."""
    numbers: dict[SSAValue, int] = {}

    def number(value: SSAValue) -> None:
        numbers[value] = len(numbers)

    def operation(op: Operation) -> tuple:
        if op.successors:
            raise _NoImage("successors")
        try:
            operands = [numbers[value] for value in op.operands]
        except KeyError:
            raise _NoImage("a value used before its definition") from None
        regions = [[block(b) for b in region.blocks] for region in op.regions]
        for result in op.results:
            number(result)
        return (
            type(op),
            operands,
            [r.type for r in op.results],
            [r.name_hint for r in op.results],
            dict(op.properties),
            dict(op.attributes),
            getattr(op, "location", None),
            regions,
        )

    def block(b: Block, kept: Callable[[Operation], bool] = lambda op: True) -> tuple:
        for argument in b.args:
            number(argument)
        ops = [operation(op) for op in b.ops if kept(op)]
        return [a.type for a in b.args], [a.name_hint for a in b.args], ops

    def root() -> tuple:
        regions = [[block(module.body.block, keep)]]
        location = getattr(module, "location", None)
        return type(module), [], [], [], dict(module.properties), dict(module.attributes), location, regions

    try:
        return pickle.dumps(root(), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - an image is optional: the text always serves
        return None


def load_module_image(image: bytes) -> ModuleOp:
    """The module of an image `module_image` made; raises where the image
    does not load (the caller then parses the module's text)."""
    values: list[SSAValue] = []

    def operation(form: tuple) -> Operation:
        kind, operands, result_types, result_hints, properties, attributes, location, regions = form
        built = [Region([block(b) for b in blocks]) for blocks in regions]
        extra: dict[str, Any] = {} if location is None else {"location": location}
        op = kind.create(
            operands=[values[i] for i in operands],
            result_types=result_types,
            properties=properties,
            attributes=attributes,
            regions=built,
            **extra,
        )
        for result, hint in zip(op.results, result_hints, strict=True):
            result.name_hint = hint
        values.extend(op.results)
        return op

    def block(form: tuple) -> Block:
        arg_types, arg_hints, ops = form
        b = Block(arg_types=arg_types)
        for argument, hint in zip(b.args, arg_hints, strict=True):
            argument.name_hint = hint
        values.extend(b.args)
        for op in ops:
            b.add_op(operation(op))
        return b

    module = operation(pickle.loads(image))  # noqa: S301 - written by this cache, beside machine code it runs
    if not isinstance(module, ModuleOp):
        raise TypeError(f"the image holds a {type(module).__name__}, not a module")
    return module
