"""
The model zoo through capture and import: every model imports into verified
ptensor IR with no fallback op, and the reference interpreter reproduces eager
on random inputs, with static and with symbolic sizes.
"""

from __future__ import annotations

import pytest
import torch

from permalloy.dialects import ptensor
from permalloy.lowering.import_fx.differential import compare_with_eager
from permalloy.tools.zoo import CASES, ZooSize, make_case

TOLERANCE = 1e-5
LIBRARY_OP_NAMES = {op.name for op in ptensor.LIBRARY_OPS}

EXPECTED_LIBRARY_OPS = {
    "mlp": {"ptensor.addmm"},
    "causal_attention": {"ptensor.addmm", "ptensor.attention"},
    "causal_attention_explicit": {"ptensor.addmm", "ptensor.bmm"},
    "gpt2_block": {"ptensor.addmm", "ptensor.attention"},
    "bert_block": {"ptensor.addmm", "ptensor.attention"},
    "conv_bn_relu": {"ptensor.convolution"},
    "vit_block": {"ptensor.addmm", "ptensor.attention"},
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_zoo_model_imports_and_matches_eager(name: str, dynamic: bool) -> None:
    case = make_case(name)
    comparison = compare_with_eager(case.model, *case.inputs, dynamic=dynamic)
    result = comparison.result
    assert result.fallback_ops == []
    library_ops = {op.name for op in result.module.walk() if op.name in LIBRARY_OP_NAMES}
    assert library_ops == EXPECTED_LIBRARY_OPS.get(name, set())
    assert len(result.extern_ops) >= len(library_ops)
    assert comparison.max_error() < TOLERANCE, comparison.errors()
    assert ("s0" in str(result.module)) == dynamic


def test_zoo_sizes_scale() -> None:
    small, large = make_case("mlp"), make_case("mlp", scale=2)
    assert large.inputs[0].shape == tuple(2 * s for s in small.inputs[0].shape)
    assert ZooSize().scaled(3).hidden == 3 * ZooSize().hidden


def test_zoo_cases_are_deterministic() -> None:
    first, second = make_case("gpt2_block"), make_case("gpt2_block")
    torch.testing.assert_close(first.inputs[0], second.inputs[0])
    with torch.no_grad():
        torch.testing.assert_close(first.model(*first.inputs), second.model(*second.inputs))


def test_unknown_zoo_case_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="gpt2_block"):
        make_case("resnet")
