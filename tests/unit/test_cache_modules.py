"""
The texts a cache entry keeps of a buffer-level module: tensor and buffer
types given once as aliases, string literals untouched, and a module parsed
from them identical to the one printed.
"""

from __future__ import annotations

from permalloy.cache.modules import parse_module, split_module, with_type_aliases

MODULE = """builtin.module {
  func.func @host(%a: !buffer.buffer<[4, 8], f32>, %b: !buffer.buffer<[4, 8], f32>) -> !buffer.buffer<[8, 4], f32, strides [1, 8]> {
    %v = buffer.view %a : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[8, 4], f32, strides [1, 8]>
    func.return %v : !buffer.buffer<[8, 4], f32, strides [1, 8]>
  }
}
"""


def test_each_type_is_given_once_and_the_module_parses_the_same():
    aliased = with_type_aliases(MODULE)
    lines = aliased.splitlines()
    assert lines[:2] == ["!layout0 = !buffer.buffer<[4, 8], f32>", "!layout1 = !buffer.buffer<[8, 4], f32, strides [1, 8]>"]
    assert "!buffer.buffer" not in "\n".join(lines[2:])
    assert str(parse_module(aliased)) == str(parse_module(MODULE))


def test_string_literals_keep_their_text():
    text = 'x = "!buffer.buffer<[4], f32> in a string" !buffer.buffer<[4], f32>'
    assert with_type_aliases(text) == '!layout0 = !buffer.buffer<[4], f32>\nx = "!buffer.buffer<[4], f32> in a string" !layout0'


def test_the_cache_s_texts_use_aliases():
    host, kernels = split_module(parse_module(MODULE))
    assert host.startswith("!layout0 = ") and str(parse_module(host)) == str(parse_module(MODULE))
    assert kernels == "builtin.module {\n}\n"
