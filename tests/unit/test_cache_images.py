"""
Module images, which a cache hit loads without parsing: a buffer-level
module through the whole pipeline loads from its image identical to itself
(printed text, name hints, regions, properties and attributes), verifies,
and splits into host and kernel images as the cache's texts split; what an
image cannot express gives none, and a damaged image falls back to the text.
"""

from __future__ import annotations

import pickle

import pytest
from xdsl.dialects import cf, test
from xdsl.dialects.builtin import ModuleOp, StringAttr, i32
from xdsl.ir import Block, Region

from permalloy.cache.images import load_module_image, module_image
from permalloy.cache import cache_parts, join_modules, load_module, parse_module, split_module, split_module_images
from permalloy.compiler import lower_module

GRAPH = """
func.func @f(%n: index {ptensor.symbol = #sym.expr<s0>}, %x: !ptensor.tensor<[8, s0], f32>, %b: !ptensor.tensor<[s0], f32>) -> (!ptensor.tensor<[8, s0], f32>, !ptensor.tensor<[s0 - 1, 8], f32>) {
  %y = ptensor.binary add %x, %b : !ptensor.tensor<[8, s0], f32>, !ptensor.tensor<[s0], f32> -> !ptensor.tensor<[8, s0], f32>
  %m = ptensor.reduce max %y dims [1] keepdim : !ptensor.tensor<[8, s0], f32> -> !ptensor.tensor<[8, 1], f32>
  %d = ptensor.binary sub %y, %m : !ptensor.tensor<[8, s0], f32>, !ptensor.tensor<[8, 1], f32> -> !ptensor.tensor<[8, s0], f32>
  %e = ptensor.unary exp %d : !ptensor.tensor<[8, s0], f32> -> !ptensor.tensor<[8, s0], f32>
  %s = ptensor.reduce sum %e dims [1] keepdim : !ptensor.tensor<[8, s0], f32> -> !ptensor.tensor<[8, 1], f32>
  %p = ptensor.binary div %e, %s : !ptensor.tensor<[8, s0], f32>, !ptensor.tensor<[8, 1], f32> -> !ptensor.tensor<[8, s0], f32>
  %t = ptensor.permute %p [1, 0] : !ptensor.tensor<[8, s0], f32> -> !ptensor.tensor<[s0, 8], f32>
  %c = ptensor.slice %t dim 0 start 1 end s0 step 1 : !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0 - 1, 8], f32>
  %r = ptensor.unary tanh %c : !ptensor.tensor<[s0 - 1, 8], f32> -> !ptensor.tensor<[s0 - 1, 8], f32>
  func.return %p, %r : !ptensor.tensor<[8, s0], f32>, !ptensor.tensor<[s0 - 1, 8], f32>
}
"""


def _lowered() -> ModuleOp:
    return lower_module(parse_module(GRAPH), target="llvm")


def test_a_lowered_module_loads_from_its_image_as_itself():
    module = _lowered()
    image = module_image(module)
    assert image is not None
    loaded = load_module_image(image)
    loaded.verify()
    assert str(loaded) == str(module)
    hints = [r.name_hint for op in module.walk() for r in op.results]
    assert [r.name_hint for op in loaded.walk() for r in op.results] == hints and "p" in hints


def test_host_and_kernel_images_split_as_the_texts_do():
    module = _lowered()
    host_text, kernel_text = split_module(module)
    host_image, kernel_image = split_module_images(module)
    host, kernels = load_module_image(host_image), load_module_image(kernel_image)
    assert str(host) == str(parse_module(host_text)) and str(kernels) == str(parse_module(kernel_text))
    joined = join_modules(host, kernels)
    joined.verify()
    assert str(joined) == str(module)


def test_a_module_with_attributes_keeps_them_and_the_kernels_stay_with_the_host():
    module = _lowered()
    module.attributes["permalloy.note"] = StringAttr("kept")
    host_image, kernel_image = split_module_images(module)
    assert str(load_module_image(host_image)) == str(module)
    assert list(load_module_image(kernel_image).ops) == []


def test_a_block_with_successors_has_no_image():
    target = Block()
    target.add_op(test.TestTermOp())
    source = Block([cf.BranchOp(target)])
    module = ModuleOp([test.TestOp(regions=[Region([source, target])])])
    assert module_image(module) is None
    host_image, kernel_image = split_module_images(module)
    assert host_image is None and list(load_module_image(kernel_image).ops) == []


def test_a_module_without_an_image_is_parsed_from_its_text():
    lowered = _lowered()
    assert str(load_module(str(lowered), None)) == str(lowered)


def test_an_object_that_does_not_pickle_gives_no_image():
    """Whatever pickling raises, an image is optional: none, not an error."""
    module = _lowered()

    class Unpicklable:
        def __reduce__(self):
            raise ValueError("no")

    module.attributes = {**module.attributes, "permalloy.odd": Unpicklable()}  # type: ignore[dict-item]
    assert module_image(module) is None


def test_a_damaged_or_foreign_image_falls_back_to_the_text():
    module = _lowered()
    text = str(module)
    assert str(load_module(text, b"not a pickle")) == text
    assert str(load_module(text, pickle.dumps((test.TestOp, [], [i32], [None], {}, {}, None, [])))) == text
    assert str(load_module(text, module_image(module)[:-7])) == text


def test_an_image_that_does_not_load_without_a_text_is_an_error():
    """A part kept as its image alone (`cache_parts`) that does not load
    cannot be parsed instead: an error, which the cache reports."""
    module = _lowered()
    with pytest.raises(ValueError, match="image does not load .* text is not kept"):
        load_module("", module_image(module)[:-7])
    with pytest.raises(ValueError, match="neither an image nor a text"):
        load_module("", None)


def test_cache_parts_print_only_the_parts_without_an_image():
    module = _lowered()
    (host_text, host_image), (kernel_text, kernel_image) = cache_parts(module)
    assert host_image is not None and kernel_image is not None and host_text == kernel_text == ""
    assert str(join_modules(load_module(host_text, host_image), load_module(kernel_text, kernel_image))) == str(module)
