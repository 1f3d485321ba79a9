"""A library call recorded as the one ATen op it dispatched (`externs.recorded`),
which a native host program calls through torch's shim, and the shim's
declarations of those ops checked against their schemas in this torch."""

from __future__ import annotations

import pytest
import torch

from permalloy.targets.externs.recorded import (
    RECORDED_OPS,
    CopyArgument,
    InputArgument,
    RecordedCall,
    ViewArgument,
    record_call,
    recordable,
)
from permalloy.targets.native.shim import SHIM_FUNCTIONS, declared_parameters, schema_parameters

F = torch.nn.functional


def _attention(**keywords):
    def call(tensors, symbols):
        query, key, value, *mask = tensors
        return (F.scaled_dot_product_attention(query, key, value, attn_mask=mask[0] if mask else None, **keywords),)

    return call


def _qkv():
    torch.manual_seed(0)
    return [torch.randn(2, 3, 8, 16) for _ in range(3)]


def test_torchs_fused_attention_is_recorded_with_its_arguments():
    tensors = _qkv()
    (result,), recorded = record_call(_attention(is_causal=True, scale=0.3), tensors, {})
    assert recorded is not None
    assert recorded.name == "_scaled_dot_product_flash_attention_for_cpu"
    arguments = dict(zip([name for name, _ in _schema_names(recorded.name)], recorded.arguments))
    assert arguments["query"] == ("Tensor", InputArgument(0))
    assert arguments["value"] == ("Tensor", InputArgument(2))
    assert arguments["is_causal"] == ("bool", True)
    assert arguments["scale"] == ("Optional[float]", 0.3)
    assert arguments["attn_mask"] == ("Optional[Tensor]", None)
    assert recorded.returns == ("Tensor", "Tensor") and recorded.results == (0,) and recorded.device == -1
    assert recorded.aligned == tuple(t.data_ptr() % 16 == 0 for t in tensors)
    torch.testing.assert_close(result, F.scaled_dot_product_attention(*tensors, is_causal=True, scale=0.3))


def _schema_names(name):
    schema = getattr(torch.ops.aten, name).default._schema
    return [(a.name, str(a.type)) for a in schema.arguments]


def test_a_mask_given_to_the_kernel_is_recorded_as_the_input_it_is():
    tensors = [*_qkv(), torch.randn(2, 1, 1, 8)]
    _, recorded = record_call(_attention(), tensors, {})
    assert ("Optional[Tensor]", InputArgument(3)) in recorded.arguments


def test_a_view_made_for_the_kernel_is_recorded_by_its_sizes_strides_and_offset():
    """A call that broadcasts its mask before the kernel (as torch does for
    the memory-efficient kernel's bias) records the view, relative to the
    input it is made of."""
    flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu

    def broadcast_mask(tensors, symbols):
        query, key, value, mask = tensors
        return (flash(query, key, value, attn_mask=mask.expand(2, 3, 8, 8))[0],)

    tensors = [*_qkv(), torch.randn(20)[4:12].view(1, 1, 1, 8)]
    _, recorded = record_call(broadcast_mask, tensors, {})
    (mask,) = [value for kind, value in recorded.arguments if kind == "Optional[Tensor]"]
    assert mask == ViewArgument(3, (2, 3, 8, 8), (0, 0, 0, 1), 0)

    def view_read_twice(tensors, symbols):
        query, key, value, mask = tensors
        bias = mask.expand(2, 3, 8, 8)
        return (flash(query, key, value, attn_mask=bias)[0] + bias.sum(),)

    assert record_call(view_read_twice, tensors, {})[1] is None


def test_a_copy_made_for_the_kernel_is_recorded_by_its_sizes_and_strides():
    """A mask whose keys are strided, which the call copies with contiguous
    rows before the kernel, is recorded as that copy of its input."""
    flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu

    def copied_mask(tensors, symbols):
        query, key, value, mask = tensors
        return (flash(query, key, value, attn_mask=mask.contiguous())[0],)

    tensors = [*_qkv(), torch.randn(2, 3, 8, 8).transpose(-1, -2)]
    _, recorded = record_call(copied_mask, tensors, {})
    (mask,) = [value for kind, value in recorded.arguments if kind == "Optional[Tensor]"]
    assert mask == CopyArgument(3, (2, 3, 8, 8), (192, 64, 8, 1))


def test_calls_that_dispatch_more_than_the_kernel_record_nothing():
    tensors = _qkv()
    scaled = lambda tensors, symbols: (_attention()(tensors, symbols)[0] * 2,)  # noqa: E731
    assert record_call(scaled, tensors, {})[1] is None
    copied = lambda tensors, symbols: _attention()([tensors[0].contiguous() + 0, *tensors[1:]], symbols)  # noqa: E731
    assert record_call(copied, tensors, {})[1] is None
    math = lambda tensors, symbols: (torch.softmax(tensors[0] @ tensors[1].mT, -1) @ tensors[2],)  # noqa: E731
    assert record_call(math, tensors, {})[1] is None


def test_a_recorded_call_records_its_first_call_only():
    call = RecordedCall(_attention())
    tensors = _qkv()
    first = call(tensors, {})
    recorded = call.recorded
    assert recorded is not None
    torch.testing.assert_close(call(tensors, {})[0], first[0], rtol=0, atol=0)
    assert call.recorded is recorded and call.calls == 2
    assert call.record(_qkv()) is recorded  # a trial keeps what a call recorded


def test_a_trial_records_for_a_program_built_before_the_first_call():
    call = RecordedCall(_attention(scale=0.5))
    recorded = call.record(_qkv())
    assert recorded is not None and call.calls == 0
    assert ("Optional[float]", 0.5) in recorded.arguments


@pytest.mark.parametrize("device, name", [(d, n) for d, names in RECORDED_OPS.items() for n in names])
def test_the_shim_declares_each_recorded_op_as_its_schema_gives_it(device, name):
    """Each recorded op's shim function, as this torch's header declares
    it, takes the parameters its schema gives; a native host program calls
    only those (`SHIM_FUNCTIONS`)."""
    parameters = schema_parameters(name)
    assert parameters is not None
    declared = declared_parameters(device, name)
    assert declared == parameters
    assert SHIM_FUNCTIONS[f"aoti_torch_{device}_{name}"] == ("i32", parameters)


def test_an_op_missing_from_the_header_is_not_declared():
    assert declared_parameters("cpu", "_no_such_op") is None
    assert schema_parameters("_no_such_op") is None


def test_an_ops_results_are_recorded_by_their_position():
    """A call returning several of the op's results (a training step's
    forward keeps the log-sum-exp) records which result each is."""
    flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default

    def both(tensors, symbols):
        return flash(*tensors)

    def swapped(tensors, symbols):
        out, logsumexp = flash(*tensors)
        return logsumexp, out

    assert record_call(both, _qkv(), {})[1].results == (0, 1)
    assert record_call(swapped, _qkv(), {})[1].results == (1, 0)
    twice = lambda tensors, symbols: (flash(*tensors)[0],) * 2  # noqa: E731
    assert record_call(twice, _qkv(), {})[1] is None


def test_only_the_fused_attention_ops_are_recordable():
    assert recordable(torch.ops.aten._scaled_dot_product_efficient_attention_backward.default)
    assert recordable(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default)
    assert not recordable(torch.ops.aten.mm.default)
    assert not recordable(torch.ops.aten.add.Tensor)


def test_a_trial_that_raises_records_nothing():
    def failing(tensors, symbols):
        raise RuntimeError("no kernel for these tensors")

    call = RecordedCall(failing)
    assert call.record(_qkv()) is None and call.recorded is None
