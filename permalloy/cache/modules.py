"""
A buffer-level module as the cache keeps it: the host function apart from
the kernels, so that a hit whose kernels are all loaded from their artifacts
loads the host function alone; each part as an image (`images.py`), which
loads without parsing, or, where it has no image, as text, which a hit
parses (printing a training step's modules as text took about a second of
its compile on this project's CPU, MobileNetV2's); each text with its tensor and buffer types
given once, as aliases (`!layout0 = !buffer.buffer<...>`), so that a hit
parses each distinct type once (MobileNetV2's host function names 934 buffer
types, 128 of them distinct, and parses in half the time with aliases).
"""

from __future__ import annotations

import re

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from permalloy.cache.images import load_module_image, module_image
from permalloy.dialects import make_context
from permalloy.dialects.buffer import KernelOp


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
"""A string literal of the IR text, which a type alias never replaces into."""
_TYPE = re.compile(r"!(?:buffer\.buffer|ptensor\.tensor)<[^<>\"]*>")
"""A tensor or buffer type with no nested brackets."""


def with_type_aliases(text: str) -> str:
    """`text` with each tensor and buffer type outside string literals
    replaced by an alias, the aliases defined ahead of it."""
    aliases: dict[str, str] = {}

    def alias(match: re.Match) -> str:
        return aliases.setdefault(match.group(0), f"!layout{len(aliases)}")

    pieces, end = [], 0
    for string in _STRING.finditer(text):
        pieces += [_TYPE.sub(alias, text[end : string.start()]), string.group(0)]
        end = string.end()
    pieces.append(_TYPE.sub(alias, text[end:]))
    return "".join(f"{name} = {type_text}\n" for type_text, name in aliases.items()) + "".join(pieces)


def _module_text(pieces: list[str]) -> str:
    return with_type_aliases("builtin.module {\n" + "".join(f"{piece}\n" for piece in pieces) + "}\n")


def _kept_whole(module: ModuleOp) -> bool:
    """Whether the cache keeps `module` whole in its host part: a module with
    attributes of its own, which a module of its kernels alone would lose."""
    return bool(module.attributes) or module.sym_name is not None


def split_module(module: ModuleOp, host: bool = True, kernels: bool = True) -> tuple[str, str]:
    """The text of `module` without its kernels, and that of a module of its
    kernels (a module with attributes of its own is kept whole in the first);
    an empty text for a part not asked for (`host`, `kernels`)."""
    if _kept_whole(module):
        return with_type_aliases(str(module)) if host else "", _module_text([]) if kernels else ""
    kernel_ops = [str(op) for op in module.ops if isinstance(op, KernelOp)] if kernels else None
    other_ops = [str(op) for op in module.ops if not isinstance(op, KernelOp)] if host else None
    return (
        "" if other_ops is None else _module_text(other_ops),
        "" if kernel_ops is None else _module_text(kernel_ops),
    )


def cache_parts(module: ModuleOp) -> tuple[tuple[str, bytes | None], tuple[str, bytes | None]]:
    """The host part and the kernel part of `module` as the cache keeps
    them: each its image, and its text only where it has no image (an empty
    text otherwise)."""
    host_image, kernel_image = split_module_images(module)
    host_text, kernel_text = split_module(module, host=host_image is None, kernels=kernel_image is None)
    return (host_text, host_image), (kernel_text, kernel_image)


def split_module_images(module: ModuleOp) -> tuple[bytes | None, bytes | None]:
    """The images (`images.py`) of the two modules `split_module` gives the
    texts of; None for one that has no image."""
    if _kept_whole(module):
        return module_image(module), module_image(ModuleOp([]))
    return (
        module_image(module, lambda op: not isinstance(op, KernelOp)),
        module_image(module, lambda op: isinstance(op, KernelOp)),
    )


def load_module(text: str, image: bytes | None) -> ModuleOp:
    """A module kept as its image or its text (`cache_parts`): loaded from
    the image, or parsed from the text where there is no image or it does
    not load; a `ValueError` where it does not load and there is no text."""
    failure = None
    if image is not None:
        try:
            return load_module_image(image)
        except Exception as error:  # noqa: BLE001 - the text, where kept, says the same
            failure = error
    if not text:
        if failure is None:
            raise ValueError("a module kept with neither an image nor a text")
        raise ValueError(f"a module whose image does not load ({type(failure).__name__}: {failure}) and whose text is not kept")
    return parse_module(text)


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
