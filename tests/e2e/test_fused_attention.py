"""
Attention written as its math (two products around a softmax) becomes one
fused attention call (`fuse-attention`), with its scale, biases and -inf
masking as the call's mask, where the Triton target's `attention` option asks
for it (torch's fused kernels, or permalloy's flash kernel); by default both
targets keep the math. Results match eager's either way, and where something
else reads the probabilities the math stays. The flash kernel itself matches
the math at several sizes, masks and types.
"""

from __future__ import annotations

import math

import pytest
import torch

import permalloy
from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.import_fx import import_graph
from permalloy.passes import build_pipeline
from xdsl.context import Context

from conftest import TEST_DEVICE

BATCH, HEADS, QUERIES, KEYS, DEPTH = 2, 3, 10, 12, 8


def _qkv(queries: int = QUERIES, keys: int = KEYS, dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    torch.manual_seed(0)
    return [
        torch.randn(BATCH, HEADS, queries, DEPTH, dtype=dtype),
        torch.randn(BATCH, HEADS, keys, DEPTH, dtype=dtype),
        torch.randn(BATCH, HEADS, keys, DEPTH, dtype=dtype),
    ]


def causal_masked_fill(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
    scores = scores.masked_fill(causal == 0, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def relative_position_bias(q, k, v, bias):
    scores = (q @ k.transpose(-2, -1)) * 0.25 + bias
    return scores.softmax(-1) @ v


def padding_mask_as_bias(q, k, v, keep):
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    extended = (1.0 - keep[:, None, None, :].to(q.dtype)) * torch.finfo(q.dtype).min
    return torch.matmul(torch.softmax(scores + extended, dim=-1), v)


def scaled_query(q, k, v):
    return torch.softmax((q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1), dim=-1) @ v


def bias_and_boolean_mask(q, k, v, bias, keep):
    scores = q @ k.transpose(-2, -1) + bias
    scores = scores.masked_fill(~keep, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def batch_products(q, k, v):
    q, k, v = (t.flatten(0, 1) for t in (q, k, v))
    weights = torch.softmax(torch.bmm(q, k.transpose(1, 2)) * 0.3, dim=-1)
    return torch.bmm(weights, v)


def probabilities_returned(q, k, v):
    weights = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
    return weights @ v, weights


def _inputs(name: str, dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    q, k, v = _qkv(dtype=dtype)
    if name == "relative_position_bias":
        return [q, k, v, torch.randn(HEADS, QUERIES, KEYS, dtype=dtype)]
    if name == "padding_mask_as_bias":
        keep = torch.ones(BATCH, KEYS, dtype=torch.bool)
        keep[0, -3:] = False
        return [q, k, v, keep]
    if name == "bias_and_boolean_mask":
        keep = torch.rand(QUERIES, KEYS) > 0.3
        keep[:, 0] = True
        return [q, k, v, torch.randn(BATCH, 1, QUERIES, KEYS, dtype=dtype), keep]
    return [q, k, v]


FUSED = [
    causal_masked_fill,
    relative_position_bias,
    padding_mask_as_bias,
    scaled_query,
    bias_and_boolean_mask,
    batch_products,
]


def _fused_calls(fn, inputs) -> int:
    """How many `ptensor.attention` ops `fuse-attention` leaves in `fn`'s graph."""
    (graph,) = capture_aten_graphs(fn, *inputs)
    module = import_graph(graph).module
    build_pipeline("canonicalize,cse,fuse-attention,dce").apply(Context(allow_unregistered=True), module)
    return str(module).count("ptensor.attention") - str(module).count("ptensor.attention_")


@pytest.mark.parametrize("fn", FUSED, ids=lambda f: f.__name__)
def test_attention_math_becomes_one_call(fn):
    assert _fused_calls(fn, _inputs(fn.__name__)) == 1


def test_probabilities_read_elsewhere_keep_the_math():
    assert _fused_calls(probabilities_returned, _inputs("")) == 0


def _extern_calls() -> int:
    return sum(record["extern_calls"] for record in permalloy.stats())


@pytest.mark.parametrize("fn", [*FUSED, probabilities_returned], ids=lambda f: f.__name__)
def test_llvm_keeps_the_math_and_matches_eager(backend_check, fn):
    backend_check(fn, _inputs(fn.__name__), target="llvm")
    assert _extern_calls() == 2  # the two products


def _check_triton(backend_check, device: str, fn, inputs: list[torch.Tensor], **options) -> None:
    permalloy.reset_stats()
    compiled = backend_check.compile(fn, "triton", **options)
    inputs = [x.to(device) for x in inputs]
    backend_check.assert_outputs_match(compiled(*inputs), fn(*inputs))


@pytest.mark.parametrize("kernel", ["torch", "triton", "measured"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
@pytest.mark.parametrize("fn", FUSED, ids=lambda f: f.__name__)
def test_triton_option_fuses_attention(backend_check, triton_device, monkeypatch, fn, dtype, kernel):
    from permalloy.targets.triton import flash_attention as flash

    ran, original = [], flash.run_flash

    def spied(*args, **kwargs):
        out = original(*args, **kwargs)
        ran.append(out is not None)
        return out

    monkeypatch.setattr(flash, "run_flash", spied)
    _check_triton(backend_check, triton_device, fn, _inputs(fn.__name__, dtype), attention=kernel)
    assert _extern_calls() == 1  # the attention
    if kernel == "measured" and triton_device == "cuda":
        return  # the kernel ran while timed; which of the two runs depends on the GPU
    # the flash kernel ran it, or torch did (measured: torch's without a GPU, nothing timed)
    assert ran == ([True] if kernel == "triton" else [])


@pytest.mark.parametrize(
    ("dtype", "options", "calls"),
    [
        (torch.float16, {}, 1),
        (torch.float32, {}, 2),
        (torch.float16, {"attention": "math"}, 2),
        (torch.float16, {"attention": "auto"}, 1),
    ],
    ids=["default_half", "default_float32", "math", "auto"],
)
def test_triton_fuses_half_precision_attention_by_default(backend_check, triton_device, monkeypatch, dtype, options, calls):
    """By default (`auto`) the flash kernel runs half-precision attention and
    float32 attention keeps its math (two products around a softmax kernel)."""
    from permalloy.targets.triton import flash_attention as flash

    ran, original = [], flash.run_flash
    monkeypatch.setattr(flash, "run_flash", lambda *args: ran.append(True) or original(*args))
    fn = relative_position_bias
    _check_triton(backend_check, triton_device, fn, _inputs(fn.__name__, dtype), **options)
    assert _extern_calls() == calls
    assert ran == ([True] if calls == 1 else [])


def test_triton_interpreter_leaves_bfloat16_attention_to_torch(backend_check, triton_device, monkeypatch):
    """Triton's interpreter multiplies bfloat16 wrongly: there the flash
    kernel's attention runs torch's fused attention instead."""
    from permalloy.targets.triton import flash_attention as flash

    if triton_device != "cpu":
        pytest.skip("Triton's interpreter runs CPU tensors")
    ran, original = [], flash.run_flash
    monkeypatch.setattr(flash, "run_flash", lambda *args: ran.append(True) or original(*args))
    fn = relative_position_bias
    _check_triton(backend_check, "cpu", fn, _inputs(fn.__name__, torch.bfloat16), attention="triton")
    assert _extern_calls() == 1 and ran == []


def test_triton_option_lists_its_values(backend_check, triton_device):
    fn = relative_position_bias
    with pytest.raises(Exception, match="math.*torch.*triton"):
        _check_triton(backend_check, triton_device, fn, _inputs(fn.__name__), attention="flash")


def causal_and_left_padding_as_most_negative(q, k, v, keep):
    """Hugging Face's eager attention: causal and padding masks as one
    additive mask of the most negative float."""
    causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
    allowed = causal & keep[:, None, None, :]
    mask = torch.zeros(allowed.shape, dtype=q.dtype, device=q.device).masked_fill(~allowed, torch.finfo(q.dtype).min)
    return torch.softmax(q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5 + mask, dim=-1) @ v


def test_triton_kernel_takes_left_padded_causal_attention(backend_check, triton_device, monkeypatch):
    """Rows of a left-padded batch keep no key and average every value, as in
    the math; the blocks above the diagonal are skipped."""
    from permalloy.targets.triton import flash_attention as flash

    plans, original = [], flash.run_plan
    monkeypatch.setattr(flash, "run_plan", lambda plan, inputs, **kw: plans.append((plan, inputs)) or original(plan, inputs, **kw))
    monkeypatch.setattr(flash, "SKIPPING_WORK", 0)
    torch.manual_seed(3)
    q, k, v = (torch.randn(2, 2, 96, 16) for _ in range(3))
    keep = torch.ones(2, 96, dtype=torch.bool)
    keep[0, :40] = False
    assert _fused_calls(causal_and_left_padding_as_most_negative, [q, k, v, keep]) == 1
    fn = causal_and_left_padding_as_most_negative
    _check_triton(backend_check, triton_device, fn, [q, k, v, keep], attention="triton")
    # one plan: the search for the key blocks each block of queries keeps, then the attention walking them
    ((plan, inputs),) = plans
    monkeypatch.setattr(flash, "run_plan", original)
    search, attention = plan.launches
    assert attention.keywords["SKIP_BLOCKS"] and search.kernel is flash.triton_attention_key_ranges
    block_m, block_n = search.keywords["BLOCK_M"], search.keywords["BLOCK_N"]
    ranges = flash.key_block_ranges(inputs[3], 96, block_m, block_n)
    # the second batch's two blocks of 64 queries (key blocks less the first kept, one past the last):
    # the first walks one block of 64 keys, the second two
    assert (block_m, block_n) == (64, 64) and ranges[1, 0, :, :2].tolist() == [[2, 1], [2, 2]]


def test_cross_attention_lengths(backend_check, triton_device):
    q, _, _ = _qkv(queries=5, dtype=torch.float16)
    _, k, v = _qkv(keys=17, dtype=torch.float16)
    assert _fused_calls(scaled_query, [q, k, v]) == 1
    _check_triton(backend_check, triton_device, scaled_query, [q, k, v], attention="triton")
    assert _extern_calls() == 1


def _math(q, k, v, mask, scale):
    """The attention's math as eager computes it (half-precision softmax in float32)."""
    scores = (q @ k.transpose(-2, -1)).float() * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask.float()
    return torch.softmax(scores, -1).to(v.dtype) @ v


def _exact_math(q, k, v, mask, scale):
    """The attention's math in float64, rounded to the inputs' type once at
    the end. The flash kernel keeps its scores in float32, where eager's
    half-precision math rounds them to half precision first (about 1e-2 from
    the exact result at BERT's sizes in bfloat16, ten times the kernel's
    error), so half-precision results are checked against this."""
    exact = [None if t is None else (t if t.dtype == torch.bool else t.double()) for t in (q, k, v, mask)]
    scores = exact[0] @ exact[1].transpose(-2, -1) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + exact[3]
    return (torch.softmax(scores, -1) @ exact[2]).to(q.dtype)


def _mask(kind: str, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor | None:
    batch, heads, queries, keys = shape
    if kind == "none":
        return None
    if kind == "bias_over_heads":
        return torch.randn(heads, queries, keys, dtype=dtype)
    if kind == "padding_bias":
        bias = torch.zeros(batch, 1, 1, keys, dtype=dtype)
        bias[0, ..., -3:] = torch.finfo(dtype).min
        return bias
    keep = torch.rand(queries, keys) > 0.3
    keep[:, 0] = True
    return keep


BFLOAT16_ON_GPU = pytest.param(
    torch.bfloat16,
    marks=pytest.mark.skipif(TEST_DEVICE != "cuda", reason="Triton's interpreter multiplies bfloat16 wrongly"),
    id="torch.bfloat16",
)


@pytest.mark.parametrize("mask_kind", ["none", "bias_over_heads", "padding_bias", "boolean"])
@pytest.mark.parametrize("sizes", [(2, 3, 10, 12, 8, 8), (1, 2, 70, 49, 32, 32), (2, 2, 5, 130, 64, 16)], ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, BFLOAT16_ON_GPU], ids=str)
def test_flash_kernel_matches_the_math(triton_device, backend_check, sizes, mask_kind, dtype):
    from permalloy.targets.triton.flash_attention import flash_attention

    batch, heads, queries, keys, features, value_features = sizes
    torch.manual_seed(0)
    q = torch.randn(batch, heads, queries, features, dtype=dtype)
    k = torch.randn(batch, heads, keys, features, dtype=dtype)
    v = torch.randn(batch, heads, keys, value_features, dtype=dtype)
    mask = _mask(mask_kind, (batch, heads, queries, keys), dtype)
    expected = _math(q, k, v, mask, 0.3) if dtype == torch.float32 else _exact_math(q, k, v, mask, 0.3)
    moved = [None if t is None else t.to(triton_device) for t in (q, k, v, mask)]
    out = flash_attention(*moved, 0.3)
    backend_check.assert_tensor_matches(out.cpu().contiguous(), expected, "flash attention")
    # token by token, each token's heads together, as torch's fused kernels write it
    assert out.permute(0, 2, 1, 3).is_contiguous()


FLASH_CONFIGS = [(128, 64, 8, 2), (128, 64, 4, 3), (64, 32, 4, 3), (32, 64, 4, 3), (32, 32, 4, 1)]
"""`default_config`'s choices and the fallback: blocks that divide the sizes
below and blocks that do not."""


@pytest.mark.parametrize("config", FLASH_CONFIGS, ids=str)
@pytest.mark.parametrize("mask_kind", ["padding_bias", "bias_over_heads", "boolean"])
@pytest.mark.parametrize("sizes", [(2, 2, 128, 128, 32, 32), (1, 2, 64, 96, 16, 32)], ids=str)
def test_flash_kernel_matches_the_math_at_every_block(triton_device, backend_check, sizes, mask_kind, config):
    """Whole blocks (no bounds masks), a padding mask read once per block of
    keys, and partial blocks of each configuration."""
    from permalloy.targets.triton.flash_attention import flash_attention

    batch, heads, queries, keys, features, value_features = sizes
    torch.manual_seed(1)
    q = torch.randn(batch, heads, queries, features)
    k = torch.randn(batch, heads, keys, features)
    v = torch.randn(batch, heads, keys, value_features)
    mask = _mask(mask_kind, (batch, heads, queries, keys), torch.float32)
    expected = _math(q, k, v, mask, 0.3)
    moved = [None if t is None else t.to(triton_device) for t in (q, k, v, mask)]
    out = flash_attention(*moved, 0.3, config)
    backend_check.assert_tensor_matches(out.cpu().contiguous(), expected, f"flash attention {config}")


def test_flash_kernel_default_configs_by_size():
    from permalloy.targets.triton.flash_attention import default_config

    assert default_config(512, 512, 64, torch.bfloat16) == (128, 64, 8, 2)
    assert default_config(4096, 4096, 64, torch.float16) == (128, 64, 4, 3)
    assert default_config(49, 49, 32, torch.bfloat16) == (64, 32, 4, 3)  # windows
    assert default_config(4096, 4096, 128, torch.bfloat16) == (128, 64, 8, 3)
    assert default_config(512, 512, 64, torch.float32) == (64, 64, 4, 2)
    assert default_config(4096, 4096, 128, torch.float32) == (32, 32, 4, 2)
    assert default_config(512, 512, 256, torch.float32) == (32, 32, 4, 2)  # wide rows: small blocks


@pytest.mark.parametrize(("torch_ms", "flash_ms", "faster"), [(2.0, 1.0, True), (1.0, 2.0, False)])
def test_flash_kernel_measured_against_torch(triton_device, torch_ms, flash_ms, faster):
    """The measured choice runs both with the timer given, torch's first,
    and picks the faster; tensors the kernel does not take are not timed."""
    from permalloy.targets.triton.flash_attention import flash_is_faster

    times, timed = iter([torch_ms, flash_ms]), []

    def timer(fn):
        timed.append(fn())
        return next(times)

    q, k, v = (t.to(triton_device) for t in _qkv())
    assert flash_is_faster(q, k, v, None, 0.5, timer) is faster
    assert len(timed) == 2 and timed[0] is not None
    timed.clear()
    doubles = [t.double() for t in (q, k, v)]
    assert flash_is_faster(*doubles, None, 0.5, timer) is False and not timed


def test_flash_kernel_gives_nan_where_a_row_keeps_nothing(triton_device):
    from permalloy.targets.triton.flash_attention import flash_attention

    q, k, v = (torch.randn(1, 1, n, 8, device=triton_device) for n in (3, 4, 4))
    keep = torch.ones(3, 4, dtype=torch.bool, device=triton_device)
    keep[1] = False
    out = flash_attention(q, k, v, keep, 1.0).cpu()
    assert out[0, 0, 1].isnan().all() and not out[0, 0, [0, 2]].isnan().any()


def _dropping_mask(kind: str, batch: int, queries: int, keys: int) -> torch.Tensor:
    """Masks that drop whole blocks of keys for some blocks of queries."""
    causal = torch.ones(queries, keys, dtype=torch.bool).tril(keys - queries)
    most_negative = torch.finfo(torch.float32).min
    if kind == "causal_boolean":
        return causal
    if kind == "causal_minus_infinity":
        return torch.zeros(queries, keys).masked_fill(~causal, float("-inf"))
    if kind == "window_boolean":
        return causal & ~torch.ones(queries, keys, dtype=torch.bool).tril(keys - queries - 40)
    if kind == "right_padding_minus_infinity":
        padding = torch.zeros(batch, 1, 1, keys)
        padding[0, ..., -45:] = float("-inf")
        return padding
    # Hugging Face's eager form: causal and left padding in one additive mask of the most negative
    # float, so that the first rows of the padded batch keep nothing and average every value
    keep = causal.expand(batch, 1, queries, keys).clone()
    keep[0, ..., :40] = False
    return torch.zeros(batch, 1, queries, keys).masked_fill(~keep, most_negative)


@pytest.mark.parametrize("config", [(32, 32, 4, 1), (64, 32, 4, 3), (32, 64, 4, 3)], ids=str)
@pytest.mark.parametrize(
    "mask_kind",
    [
        "causal_boolean",
        "causal_minus_infinity",
        "window_boolean",
        "right_padding_minus_infinity",
        "left_padding_most_negative",
    ],
)
def test_flash_kernel_skips_blocks_a_mask_drops(triton_device, backend_check, monkeypatch, mask_kind, config):
    """Blocks of keys that a mask drops for a whole block of queries are not
    walked, and the result is the math's, also where rows keep nothing."""
    from permalloy.targets.triton import flash_attention as flash
    from permalloy.targets.triton.flash_attention import flash_attention

    monkeypatch.setattr(flash, "SKIPPING_WORK", 0)  # skipping at these small sizes too
    torch.manual_seed(2)
    q, k, v = (torch.randn(2, 2, n, 16) for n in (80, 100, 100))
    mask = _dropping_mask(mask_kind, 2, 80, 100)
    expected = _math(q, k, v, mask, 0.3)
    moved = [t.to(triton_device) for t in (q, k, v, mask)]
    out = flash_attention(*moved, 0.3, config)
    backend_check.assert_tensor_matches(out.cpu().contiguous(), expected, f"flash attention {mask_kind} {config}")


def test_key_block_ranges_bound_the_blocks_a_mask_keeps(triton_device):
    from permalloy.targets.triton.flash_attention import key_block_ranges

    def ranges(mask: torch.Tensor, keys: int = 100) -> list:
        """Per block of rows, the range of key blocks walked: every block
        where a row keeps nothing under an additive mask."""
        facts = key_block_ranges(mask.to(triton_device), keys, 32, 32).cpu()
        key_blocks = -(-keys // 32)
        walked = torch.stack([key_blocks - facts[..., 0], facts[..., 1]], -1)
        if mask.dtype != torch.bool:
            rows = mask.shape[-2]
            flags = facts[..., 2:]
            valid = (torch.arange(facts.size(-2) * 32).view(-1, 32) < rows)
            keeps_nothing = ((flags == 0) & valid).any(-1)
            walked[keeps_nothing] = torch.tensor([0, key_blocks], dtype=walked.dtype)
        return walked.tolist()

    causal = _dropping_mask("causal_boolean", 1, 100, 100)
    assert ranges(causal) == [[[[0, 1], [0, 2], [0, 3], [0, 4]]]]
    window = _dropping_mask("window_boolean", 1, 100, 100)  # keys i-39 to i
    assert ranges(window) == [[[[0, 1], [0, 2], [0, 3], [1, 4]]]]
    padding = _dropping_mask("right_padding_minus_infinity", 2, 1, 100)  # one row serves every query
    assert ranges(padding) == [[[[0, 2]]], [[[0, 4]]]]
    dropped_everywhere = torch.zeros(1, 100, dtype=torch.bool)
    assert ranges(dropped_everywhere) == [[[[4, 0]]]]  # nothing walked: NaN, as in the math
    # a block with a row that keeps nothing walks every key (the math's NaN, or its mean of values)
    left = _dropping_mask("left_padding_most_negative", 2, 100, 100)
    assert ranges(left)[0] == [[[0, 4], [0, 4], [1, 3], [1, 4]]]


def test_flash_kernel_gives_nan_where_a_row_keeps_nothing_in_skipped_blocks(triton_device, monkeypatch):
    from permalloy.targets.triton import flash_attention as flash
    from permalloy.targets.triton.flash_attention import flash_attention

    monkeypatch.setattr(flash, "SKIPPING_WORK", 0)
    q, k, v = (torch.randn(1, 1, n, 8, device=triton_device) for n in (64, 100, 100))
    keep = torch.ones(64, 100, dtype=torch.bool).tril().to(triton_device)
    keep[40] = False
    out = flash_attention(q, k, v, keep, 1.0, (32, 32, 4, 1)).cpu()
    assert out[0, 0, 40].isnan().all() and not out[0, 0, :40].isnan().any()


def test_flash_kernel_refuses_what_it_does_not_take():
    from permalloy.targets.triton.flash_attention import supported

    q = torch.randn(2, 2, 2, 4, 8)
    assert not supported(q, q, q, None)  # three batch dimensions
    q = torch.randn(2, 4, 300)
    assert not supported(q, q, q, None)  # rows wider than the registers hold
    q = torch.randn(2, 4, 8, dtype=torch.float64)
    assert not supported(q, q, q, None)
    q = torch.randn(2, 4, 8, 16)
    assert supported(q, q, q, torch.zeros(4, 1, 8)) and supported(q, q, q, torch.zeros(8, dtype=torch.bool))
    assert not supported(q, q, q, torch.zeros(3, 1, 8))  # a mask that does not broadcast to the scores
    assert not supported(q, q, q, torch.zeros(1, 2, 4, 8, 8))  # nor one of more dimensions
