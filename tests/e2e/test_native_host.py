"""The native host program (`targets.native`) against the Python host program
of the same compiled graph: the same results, bit for bit, with the same
strides, the same errors, and no reference to a tensor left behind."""

from __future__ import annotations

import pytest
import torch

from permalloy.compiler import CompileOptions, compile_graph
from permalloy.lowering.capture import capture_with_inputs

F = torch.nn.functional


def _compiled(fn, *inputs, dynamic=False, **options):
    (captured,) = capture_with_inputs(fn, *inputs, dynamic=dynamic)
    compiled = compile_graph(captured.graph_module, CompileOptions(target="llvm", cache=False, **options))
    return compiled, captured.inputs


def _assert_identical(native, python):
    assert len(native) == len(python)
    for n, p in zip(native, python):
        assert n.dtype == p.dtype and n.shape == p.shape and n.stride() == p.stride()
        assert n.storage_offset() == p.storage_offset()
        assert torch.equal(n, p) or (n.is_floating_point() and torch.equal(n.isnan(), p.isnan()))


def _run_both(fn, *inputs, dynamic=False, callbacks=None):
    compiled, args = _compiled(fn, *inputs, dynamic=dynamic)
    program = compiled.program
    assert program.native_source is not None, "the graph runs on the Python host"
    if callbacks is not None:
        assert program.callback_count == callbacks
    native = program.function(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    python = program.python_function(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    _assert_identical(native, python)
    return program, args


CASES = {
    "pointwise": (lambda x: x * 2 + 1, (torch.randn(1024),), 0),
    "reductions": (lambda x: (x.softmax(-1), x.sum(0), x.amax(-1, keepdim=True)), (torch.randn(33, 70),), 0),
    "views_of_the_input": (lambda x: x.chunk(2, dim=1), (torch.randn(2, 4, 3),), 0),
    "transposed_input": (lambda x: x.t().contiguous() + 1, (torch.randn(6, 5).t(),), 0),
    "matrix_products": (
        lambda x, w, b: (torch.relu(F.linear(x, w, b)), x @ w.t(), torch.bmm(x.view(2, 4, 16), x.view(2, 4, 16).transpose(1, 2))),
        (torch.randn(8, 16), torch.randn(12, 16), torch.randn(12)),
        0,
    ),
    "convolution": (
        lambda x, w: torch.relu(F.conv2d(x, w, padding=1)) * 2,
        (torch.randn(2, 3, 9, 9), torch.randn(4, 3, 3, 3)),
        0,
    ),
    "convolutions_with_bias_and_channels_last": (
        lambda x, w, b, w2: F.conv2d(torch.relu(F.conv2d(x, w, b, stride=2)), w2, groups=2).sum(1),
        (torch.randn(2, 4, 11, 11).to(memory_format=torch.channels_last), torch.randn(6, 4, 3, 3),
         torch.randn(6), torch.randn(4, 3, 1, 1)),
        0,
    ),
    "transposed_convolution": (
        lambda x, w: F.conv_transpose2d(x, w, stride=2, output_padding=1),
        (torch.randn(1, 3, 5, 5), torch.randn(3, 2, 3, 3)),
        0,
    ),
    "convolution_gradients": (
        lambda dy, x, w: torch.ops.aten.convolution_backward.default(
            dy, x, w, [4], [1, 1], [1, 1], [1, 1], False, [0, 0], 2, [True, True, True]),
        (torch.randn(2, 4, 7, 7), torch.randn(2, 4, 7, 7), torch.randn(4, 2, 3, 3)),
        0,
    ),
    "convolution_gradients_masked_and_channels_last": (
        lambda dy, x, w: (
            torch.ops.aten.convolution_backward.default(
                dy, x, w, [4], [2, 2], [0, 0], [1, 1], False, [0, 0], 1, [False, True, False])[1],
            torch.ops.aten.convolution_backward.default(
                dy, x, w, [4], [2, 2], [0, 0], [1, 1], False, [0, 0], 1, [True, False, True])[::2],
        ),
        (torch.randn(2, 4, 4, 4).to(memory_format=torch.channels_last),
         torch.randn(2, 3, 9, 9).to(memory_format=torch.channels_last), torch.randn(4, 3, 3, 3)),
        0,
    ),
    "transposed_convolution_gradients": (
        lambda dy, x, w: torch.ops.aten.convolution_backward.default(
            dy, x, w, None, [2, 2], [0, 0], [1, 1], True, [1, 1], 1, [True, True, False])[:2],
        (torch.randn(1, 2, 12, 12), torch.randn(1, 3, 5, 5), torch.randn(3, 2, 3, 3)),
        0,
    ),
    "fallback_op": (lambda x: torch.median(x, dim=-1).values * 2, (torch.randn(5, 7),), 1),
    "constant": (lambda x: x + torch.tensor([1.0, 2.0, 3.0]), (torch.randn(4, 3),), 1),
    "integers": (lambda x: (x // 3, x % 5, x.sum(-1)), (torch.randint(-50, 50, (6, 9)),), 0),
    "half_precision": (lambda x: (x.to(torch.bfloat16) * 3).float().sum(-1), (torch.randn(4, 40),), 0),
    "returns_an_input_and_twice_a_result": (lambda x: (x, x + 1, (x + 1).view(-1)), (torch.randn(3, 4),), 0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_native_and_python_hosts_give_identical_results(name):
    fn, inputs, callbacks = CASES[name]
    _run_both(fn, *inputs, callbacks=callbacks)


FUSED_ATTENTION_CASES = {
    "plain": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v) * 2, ((2, 4, 32, 16),) * 3),
    "causal_scaled": (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
        ((2, 4, 32, 16),) * 3,
    ),
    "additive_mask": (
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        ((2, 4, 32, 16),) * 3 + ((2, 1, 1, 32),),
    ),
    "boolean_mask": (
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m > 0),
        ((2, 4, 32, 16),) * 3 + ((1, 1, 32, 32),),
    ),
    "heads_transposed": (
        lambda q, k, v: F.scaled_dot_product_attention(*(t.transpose(1, 2) for t in (q, k, v)))
        .transpose(1, 2)
        .reshape(2, 32, 64),
        ((2, 32, 4, 16),) * 3,
    ),
}
"""torch's fused attention as models call it: each case's function and input shapes."""


def _shifted(args, position):
    """`args` with the tensor at `position` moved 4 bytes past an aligned address."""
    tensor = args[position]
    backing = torch.randn(tensor.numel() + 1, dtype=tensor.dtype, device=tensor.device)
    moved = list(args)
    moved[position] = backing[1:].view(tensor.shape)
    return moved


@pytest.mark.parametrize("name", list(FUSED_ATTENTION_CASES))
def test_the_native_host_calls_torchs_fused_attention_kernel_itself(name):
    """The fused attention kernel torch's call chose (recorded by a trial
    call, the program being built before the first) is called through the
    shim, nothing called back; results match the Python host's bit for bit
    and eager's. A query of another alignment calls the Python call back."""
    fn, shapes = FUSED_ATTENTION_CASES[name]
    torch.manual_seed(0)
    inputs = [torch.randn(*s) for s in shapes]
    program, args = _run_both(fn, *inputs, callbacks=0)
    assert "aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu" in program.native_source
    torch.testing.assert_close(program(*args)[0], fn(*inputs), rtol=1e-4, atol=1e-5)
    query = next(i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.shape == inputs[0].shape)
    shifted = _shifted(args, query)
    _assert_identical(program.function(*shifted), program.python_function(*shifted))


def test_fused_attention_whose_mask_the_call_copies_copies_it_natively():
    """A mask whose keys are strided is copied by the attention call before
    torch's kernel (the kernels read a mask row by row): the native program
    makes the same copy, calling nothing back, with the Python host's results."""
    torch.manual_seed(0)
    fn = lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m.transpose(-1, -2))  # noqa: E731
    inputs = [torch.randn(2, 4, 32, 16) for _ in range(3)] + [torch.randn(2, 4, 32, 32)]
    program, args = _run_both(fn, *inputs, callbacks=0)
    assert "aoti_torch_copy_" in program.native_source
    torch.testing.assert_close(program(*args)[0], fn(*inputs), rtol=1e-4, atol=1e-5)


def test_fused_attention_of_symbolic_sizes_is_called_back():
    """A graph of symbolic sizes calls its attention back (a recorded op's
    views have the first call's sizes), with the Python host's results."""
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    inputs = [torch.randn(2, 4, 24, 16) for _ in range(3)]
    program, args = _run_both(fn, *inputs, dynamic=True, callbacks=1)
    torch.testing.assert_close(program(*args)[0], fn(*inputs), rtol=1e-4, atol=1e-5)


def _flash_forward(q, k, v):
    return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, 0.0, True)


def _flash_backward(grad, q, k, v):
    out, logsumexp = _flash_forward(q, k, v)
    return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default(
        grad, q, k, v, out, logsumexp, 0.0, True, scale=0.2
    )


@pytest.mark.parametrize("fn", [_flash_forward, _flash_backward], ids=["forward", "backward"])
def test_the_native_host_calls_a_training_steps_attention_kernels_itself(fn):
    """A training step calls torch's attention kernels by name (the forward
    with its log-sum-exp, and the backward): the native program calls them
    through the shim, every result of the op it uses taken, nothing called
    back; results match the Python host's bit for bit and eager's."""
    torch.manual_seed(0)
    inputs = [torch.randn(2, 4, 24, 16) for _ in range(4 if fn is _flash_backward else 3)]
    program, args = _run_both(fn, *inputs, callbacks=0)
    assert "aoti_torch_cpu__scaled_dot_product_flash_attention_for_cpu" in program.native_source
    for actual, expected in zip(program(*args), fn(*inputs)):
        torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)


def test_convolution_gradients_call_back_without_their_shim_function(monkeypatch):
    """A libtorch whose shim lacks `convolution_backward` leaves the op to a
    callback; the rest of the program stays native."""
    import dataclasses

    import permalloy.targets.native as native
    from permalloy.targets.native.shim import load_shim

    shim = load_shim()
    addresses = {k: v for k, v in shim.addresses.items() if not k.endswith("_convolution_backward")}
    monkeypatch.setattr(native, "load_shim", lambda: dataclasses.replace(shim, addresses=addresses))
    fn, inputs, _ = CASES["convolution_gradients"]
    _run_both(fn, *inputs, callbacks=1)


def test_symbolic_sizes_are_read_from_the_arguments():
    fn = lambda x, y: (x.softmax(-1) @ y, x.sum(0))  # noqa: E731
    x, y = torch.randn(5, 7), torch.randn(7, 3)
    torch._dynamo.mark_dynamic(x, 0)
    torch._dynamo.mark_dynamic(x, 1)
    torch._dynamo.mark_dynamic(y, 0)
    program, args = _run_both(fn, x, y, dynamic=None)
    assert any(not isinstance(a, torch.Tensor) for a in args), "the graph takes its sizes as arguments"
    for rows, inner in ((1, 2), (9, 13)):
        resized = [torch.randn(rows, inner), torch.randn(inner, 3)]
        values = [rows if a == 5 else inner if a == 7 else a for a in args if not isinstance(a, torch.Tensor)]
        call = [*resized, *values] if isinstance(args[0], torch.Tensor) else [*values, *resized]
        _assert_identical(program.function(*call), program.python_function(*call))


def test_a_kernels_division_by_zero_raises_as_on_the_python_host():
    program, args = _run_both(lambda x, y: x // y, torch.randint(1, 9, (16,)), torch.randint(1, 9, (16,)))
    x, y = torch.randint(1, 9, (16,)), torch.zeros(16, dtype=torch.int64)
    for function in (program.function, program.python_function):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            function(x, y)


@pytest.mark.parametrize("where", ["shim", "callback"])
def test_an_error_in_torch_is_raised_as_on_the_python_host(where):
    """A library call that fails, through the shim (which reports a status,
    so the call runs again on the Python host) or in an op run in Python."""
    if where == "shim":
        fn = lambda x, w: F.conv2d(x, w) + 1  # noqa: E731
        x, w = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)
    else:
        fn = lambda x, w: torch.linalg.inv_ex(w).inverse + x  # noqa: E731
        x, w = torch.randn(3), torch.randn(3, 3) + 3 * torch.eye(3)
    program, args = _run_both(fn, x, w, callbacks=int(where == "callback"))
    wrong = [a.to(torch.float64 if where == "shim" else torch.int32) if a.shape == w.shape else a for a in args]
    messages = []
    for function in (program.function, program.python_function):
        with pytest.raises(RuntimeError) as raised:
            function(*wrong)
        messages.append(str(raised.value))
    assert messages[0] == messages[1]
    native, python = program.function(*args), program.python_function(*args)  # still runs after a failure
    _assert_identical(native, python)


def _use_count(tensor):
    """The references to `tensor`'s storage, less the one of the storage
    object asking."""
    return torch._C._storage_Use_Count(tensor.untyped_storage()._cdata) - 1  # noqa: SLF001


def test_no_handle_outlives_the_call():
    """After calls through every kind of op (a view returned, a product,
    a callback, an input's view returned), the storages are referenced as
    after the Python host's calls: by the results alone."""
    fn = lambda x, w: (torch.relu(F.linear(x, w)).t(), torch.median(x, -1).values, x.view(-1)[1:])  # noqa: E731
    program, args = _run_both(fn, torch.randn(8, 16), torch.randn(12, 16))
    x, w = torch.randn(8, 16), torch.randn(12, 16)
    before = (_use_count(x), _use_count(w))
    for function in (program.python_function, program.function):
        for _ in range(3):
            results = function(x, w)
        assert [_use_count(r) for r in results] == [1, 1, 2]  # the last is a view of x
        assert (_use_count(x), _use_count(w)) == (before[0] + 1, before[1])
        del results
        assert (_use_count(x), _use_count(w)) == before


def test_the_python_host_runs_where_asked():
    compiled, args = _compiled(lambda x: x * 2, torch.randn(8), host="python")
    assert compiled.program.native_source is None
    assert compiled.program.function is compiled.program.python_function
    assert compiled.stats.host == "python"


def test_the_host_option_and_its_environment_variable(monkeypatch):
    from permalloy.tools.backend import PermalloyOptionError, parse_options

    monkeypatch.delenv("PERMALLOY_HOST", raising=False)
    assert parse_options({}, None).host == "native"
    assert parse_options({"host": "python"}, None).host == "python"
    monkeypatch.setenv("PERMALLOY_HOST", "python")
    assert parse_options({}, None).host == "python"
    assert parse_options({"host": "native"}, None).host == "native"
    with pytest.raises(PermalloyOptionError, match="unknown host 'c' .option 'host'.; valid values: native, python"):
        parse_options({"host": "c"}, None)
    monkeypatch.setenv("PERMALLOY_HOST", "c")
    with pytest.raises(PermalloyOptionError, match="PERMALLOY_HOST"):
        parse_options({}, None)


def test_a_gpu_program_of_symbolic_sizes_stays_on_the_python_host():
    """A Triton kernel's native launches are its first call's grids and
    configuration, so on a GPU only graphs of constant sizes run natively."""
    from xdsl.dialects import func

    from permalloy.compiler import lower_module
    from permalloy.lowering.import_fx import import_graph
    from permalloy.targets.native.emitter import NativeHostEmitter, NativeHostUnsupported
    from permalloy.targets.native.shim import load_shim

    x = torch.randn(5, 7)
    torch._dynamo.mark_dynamic(x, 0)
    (captured,) = capture_with_inputs(lambda x: torch.softmax(x, -1), x, dynamic=None)
    module = lower_module(import_graph(captured.graph_module).module, target="triton")
    (function,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    with pytest.raises(NativeHostUnsupported, match="symbolic sizes"):
        NativeHostEmitter(function, {}, load_shim(), device="cuda").emit()


def test_the_backend_runs_the_native_host_and_dumps_it(tmp_path):
    torch._dynamo.reset()
    fn = lambda x, w: torch.tanh(x @ w) + 1  # noqa: E731
    compiled = torch.compile(fn, backend="permalloy", options={"dump_dir": str(tmp_path), "cache": False})
    x, w = torch.randn(4, 8), torch.randn(8, 3)
    torch.testing.assert_close(compiled(x, w), fn(x, w))
    (folder,) = tmp_path.iterdir()
    (native,) = folder.glob("*_host.ll")
    text = native.read_text()
    assert "aoti_torch_cpu_mm_out" in text and "aoti_torch_empty_strided" in text
    assert list(folder.glob("*_host.py"))
    torch._dynamo.reset()


# -- on a GPU ---------------------------------------------------------------------

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

GPU_CASES = {
    "pointwise": (lambda x: torch.sigmoid(x) * 2 + 1, ((4096,),)),
    "layer_norm_gelu": (
        lambda x, w, b: F.gelu(F.layer_norm(x, (64,), w, b)) + x,
        ((32, 64), (64,), (64,)),
    ),
    "linear_softmax": (lambda x, w, b: torch.softmax(F.linear(x, w, b), -1).sum(0), ((16, 32), (48, 32), (48,))),
    "convolution_batch_norm": (
        lambda x, w, m, v: torch.relu(F.batch_norm(F.conv2d(x, w, padding=1), m, v.abs() + 1)),
        ((2, 8, 16, 16), (16, 8, 3, 3), (16,), (16,)),
    ),
    "attention": (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True) * 2,
        ((2, 4, 32, 16), (2, 4, 32, 16), (2, 4, 32, 16)),
    ),
    "convolution_gradients": (
        lambda dy, x, w: [g * 2 for g in torch.ops.aten.convolution_backward.default(
            dy, x, w, [8], [1, 1], [1, 1], [1, 1], False, [0, 0], 2, [True, True, True])],
        ((2, 8, 16, 16), (2, 4, 16, 16), (8, 2, 3, 3)),
    ),
}


def _cuda_program(fn, shapes):
    inputs = [torch.randn(*s) for s in shapes]
    (captured,) = capture_with_inputs(fn, *[i.cuda() for i in inputs])
    compiled = compile_graph(captured.graph_module, CompileOptions(target="triton", cache=False))
    return compiled, captured.inputs


@cuda
@pytest.mark.parametrize("name", list(GPU_CASES))
def test_gpu_native_host_matches_the_python_host(name):
    """The first call runs the Python host program and has the native one
    built; later calls through the native program give the Python one's
    results bit for bit (the same compiled kernels, launched by the driver)."""
    fn, shapes = GPU_CASES[name]
    compiled, args = _cuda_program(fn, shapes)
    program = compiled.program
    assert compiled.stats.host == "python" and program.native_source is None
    first = program(*args)
    assert program.native_source is not None, "no native host program after the first call"
    assert compiled.stats.host == "native"
    assert "cuLaunchKernel" in program.native_source
    for _ in range(2):
        _assert_identical(program.function(*args), program.python_function(*args))
    _assert_identical(program.function(*args), first)
    torch.cuda.synchronize()


@cuda
def test_gpu_graphs_of_symbolic_sizes_run_on_the_python_host():
    x = torch.randn(5, 64, device="cuda")
    torch._dynamo.mark_dynamic(x, 0)
    (captured,) = capture_with_inputs(lambda x: torch.softmax(x, -1) * 2, x, dynamic=None)
    compiled = compile_graph(captured.graph_module, CompileOptions(target="triton", cache=False))
    for rows in (5, 5, 9):
        args = [torch.randn(rows, 64, device="cuda") if isinstance(a, torch.Tensor) else rows for a in captured.inputs]
        (result,) = compiled.program(*args)
        tensor = next(a for a in args if isinstance(a, torch.Tensor))
        torch.testing.assert_close(result, torch.softmax(tensor, -1) * 2)
    assert compiled.program.native_source is None and compiled.stats.host == "python"


@cuda
def test_gpu_native_host_calls_back_for_other_alignments():
    """Tensors whose 16-byte alignment differs from the first call's (for
    which Triton specialized the binaries) run through the kernel's Python
    launch, which compiles for them; results match the Python host's."""
    fn = lambda x, y: torch.tanh(x) * y + 1  # noqa: E731
    compiled, args = _cuda_program(fn, ((1024,), (1024,)))
    program = compiled.program
    program(*args)
    assert program.native_source is not None
    backing = torch.randn(1025, device="cuda")
    shifted = [backing[1:], args[1]]  # 4 bytes past an aligned address
    _assert_identical(program.function(*shifted), program.python_function(*shifted))
    _assert_identical(program.function(*args), program.python_function(*args))


def _causal_bias(q, k, v):
    """Attention under an additive causal mask of the most negative float."""
    causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
    mask = torch.zeros(causal.shape, device=q.device).masked_fill(~causal, torch.finfo(torch.float32).min)
    return torch.softmax(q @ k.transpose(-2, -1) * 0.25 + mask, dim=-1) @ v


def _causal_boolean(q, k, v):
    causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
    return torch.softmax((q @ k.transpose(-2, -1) * 0.25).masked_fill(~causal, float("-inf")), dim=-1) @ v


def _padding_as_bias(q, k, v, keep):
    extended = (1.0 - keep[:, None, None, :].to(q.dtype)) * torch.finfo(q.dtype).min
    return torch.softmax(q @ k.transpose(-1, -2) * 0.25 + extended, dim=-1) @ v


def _batch_products(q, k, v):
    return torch.bmm(torch.softmax(torch.bmm(q, k.transpose(1, 2)) * 0.3, dim=-1), v)


ATTENTION_CASES = {
    "causal_bias_searched": (_causal_bias, ((2, 4, 96, 16),) * 3, True),
    "causal_bias": (_causal_bias, ((2, 4, 96, 16),) * 3, False),
    "causal_boolean_searched": (_causal_boolean, ((2, 4, 96, 16),) * 3, True),
    "padding_as_bias_searched": (_padding_as_bias, ((2, 4, 80, 16), (2, 4, 80, 16), (2, 4, 80, 32), (2, 80)), True),
    "batch_products": (_batch_products, ((3, 40, 16),) * 3, False),
}
"""Each case's function, input shapes and whether the attention searches
for the key blocks its mask keeps (every size is then large enough)."""


def _attention_inputs(shapes):
    torch.manual_seed(0)
    inputs = [torch.randn(*s, device="cuda") for s in shapes]
    if len(shapes) == 4:  # a padding mask keeping the first keys of each batch
        keys = torch.arange(shapes[3][1], device="cuda")
        inputs[3] = keys[None, :] < torch.tensor([[shapes[3][1] - 7], [shapes[3][1] - 50]], device="cuda")
    return inputs


@cuda
@pytest.mark.parametrize("case", list(ATTENTION_CASES))
def test_gpu_native_host_launches_the_flash_kernel_itself(case, monkeypatch):
    """Attention run by permalloy's flash kernel (`attention=triton`): the
    native program allocates the result and the zeroed key-block ranges and
    launches the search and the attention with the driver, calling nothing
    back; results match the Python host's bit for bit and the math's. Inputs
    of another alignment than the first call's call the kernel back."""
    from permalloy.targets.triton import flash_attention

    fn, shapes, searched = ATTENTION_CASES[case]
    monkeypatch.setattr(flash_attention, "SKIPPING_WORK", 0 if searched else 1 << 40)
    inputs = _attention_inputs(shapes)
    (captured,) = capture_with_inputs(fn, *inputs)
    options = CompileOptions(target="triton", cache=False, target_options={"attention": "triton"})
    compiled = compile_graph(captured.graph_module, options)
    program = compiled.program
    first = program(*captured.inputs)
    assert program.native_source is not None and compiled.stats.host == "native"
    assert program.callback_count == 0
    assert ("cuMemsetD8Async" in program.native_source) == searched  # the search's ranges start at zero
    for _ in range(2):
        _assert_identical(program.function(*captured.inputs), program.python_function(*captured.inputs))
    _assert_identical(program.function(*captured.inputs), first)
    torch.testing.assert_close(first[0], fn(*inputs), rtol=1e-4, atol=1e-4)
    query = next(i for i, a in enumerate(captured.inputs) if a.is_floating_point())
    backing = torch.randn(captured.inputs[query].numel() + 1, device="cuda")
    shifted = list(captured.inputs)
    shifted[query] = backing[1:].view(shifted[query].shape)  # 4 bytes past an aligned address
    _assert_identical(program.function(*shifted), program.python_function(*shifted))
    torch.cuda.synchronize()


@cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("name", list(FUSED_ATTENTION_CASES))
def test_gpu_native_host_calls_torchs_fused_attention_kernel_itself(name, dtype):
    """The fused kernel torch's attention dispatched on the first call
    (flash, memory-efficient or cuDNN, with the mask broadcast as torch
    broadcasts it) is called through the shim from the second call on,
    nothing called back; results match the Python host's bit for bit and
    eager's."""
    fn, shapes = FUSED_ATTENTION_CASES[name]
    torch.manual_seed(0)
    inputs = [torch.randn(*s, device="cuda", dtype=dtype) for s in shapes]
    (captured,) = capture_with_inputs(fn, *inputs)
    compiled = compile_graph(captured.graph_module, CompileOptions(target="triton", cache=False))
    program = compiled.program
    args = captured.inputs
    first = program(*args)
    assert program.native_source is not None and compiled.stats.host == "native"
    assert program.callback_count == 0 and "_scaled_dot_product_" in program.native_source
    for _ in range(2):
        _assert_identical(program.function(*args), program.python_function(*args))
    _assert_identical(program.function(*args), first)
    tolerance = 1e-4 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(first[0], fn(*inputs), rtol=tolerance, atol=tolerance)
    torch.cuda.synchronize()
    # (no query of another alignment here: torch's fused kernels fault on a query 4 bytes past an aligned address)


class _SelfAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.out = torch.nn.Linear(64, 192), torch.nn.Linear(64, 64)

    def forward(self, x, mask):
        q, k, v = self.qkv(x).view(2, 40, 3, 4, 16).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None)
        return self.out(attended.transpose(1, 2).reshape(2, 40, 64))


@cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("masked", [False, True], ids=["causal", "additive_mask"])
def test_gpu_training_steps_call_torchs_attention_kernels_natively(masked, dtype):
    """A training step through the backend: the forward's and the
    backward's fused attention kernels (called by name) are called through
    the shim by both graphs' native programs, nothing called back; the loss
    and gradients match eager's."""
    import permalloy

    torch.manual_seed(0)
    model = _SelfAttention().to("cuda", dtype)
    x = torch.randn(2, 40, 64, device="cuda", dtype=dtype, requires_grad=True)
    mask = torch.randn(2, 1, 40, 40, device="cuda", dtype=dtype) if masked else None
    model(x, mask).float().square().mean().backward()
    expected = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    torch._dynamo.reset()
    permalloy.reset_stats()
    compiled = torch.compile(model, backend="permalloy")
    for _ in range(3):  # the native programs are built after each graph's first call
        for t in (*model.parameters(), x):
            t.grad = None
        compiled(x, mask).float().square().mean().backward()
    graphs = permalloy.stats()
    assert [(g["host"], g["host_callbacks"]) for g in graphs] == [("native", 0)] * len(graphs) and len(graphs) == 2
    tolerance = 1e-4 if dtype == torch.float32 else 3e-2
    for actual, wanted in zip([p.grad for p in model.parameters()] + [x.grad], expected):
        torch.testing.assert_close(actual, wanted, rtol=tolerance, atol=tolerance)
    torch._dynamo.reset()


@cuda
@pytest.mark.parametrize("bias", [False, True], ids=["no_bias", "bias"])
def test_gpu_native_host_launches_the_depthwise_kernel_itself(bias):
    """Depthwise convolutions run by permalloy's kernel (`depthwise_convolutions=triton`)
    are launched by the native program, nothing called back; results match
    the Python host's bit for bit and torch's convolution."""
    torch.manual_seed(0)
    x = torch.randn(2, 32, 20, 20, device="cuda")
    weight, b = torch.randn(32, 1, 3, 3, device="cuda"), torch.randn(32, device="cuda") if bias else None
    fn = lambda x: torch.relu(F.conv2d(x, weight, b, padding=1, groups=32)) * 2  # noqa: E731
    (captured,) = capture_with_inputs(fn, x)
    options = CompileOptions(target="triton", cache=False, target_options={"depthwise_convolutions": "triton"})
    compiled = compile_graph(captured.graph_module, options)
    program = compiled.program
    first = program(*captured.inputs)
    assert program.native_source is not None and compiled.stats.host == "native"
    assert program.callback_count == 0 and compiled.stats.extern_calls >= 1
    _assert_identical(program.function(*captured.inputs), program.python_function(*captured.inputs))
    _assert_identical(program.function(*captured.inputs), first)
    torch.testing.assert_close(first[0], fn(x), rtol=1e-4, atol=1e-4)
    torch.cuda.synchronize()


PRODUCT_CASES = {
    "gelu": lambda x, w, b: F.gelu(x @ w.t() + b) * 2,
    "bare": lambda x, w, b: x @ w.t(),
    "prologue": lambda x, w, b: (x * 2) @ (w.t() + 1),
    "rows": lambda x, w, b: torch.relu(x.view(4, 16, 96) @ w.t()) + b,
}


@cuda
@pytest.mark.parametrize("case", list(PRODUCT_CASES))
@pytest.mark.parametrize("path", ["template", "library"])
def test_gpu_native_host_runs_a_product_template_itself(path, case, monkeypatch):
    """A half-precision product as a contraction (`matmul_templates`): its
    template is launched by the driver like any kernel, and its library path
    (flat kernels computing factors, the product, an epilogue kernel) by the
    driver and the shim's product on views, no step called back. Results
    match the Python host's bit for bit either way."""
    from permalloy.targets.triton import matmul

    chosen = matmul.matmul_candidates

    def only(space, sizes, mode, interpret):
        configs = chosen(space, sizes, "max-autotune", interpret)
        return [matmul.LIBRARY_CONFIG] if path == "library" else [c for c in configs if not c.LIBRARY][:1]

    monkeypatch.setattr(matmul, "matmul_candidates", only)
    fn = PRODUCT_CASES[case]
    inputs = [torch.randn(64, 96), torch.randn(80, 96), torch.randn(80)]
    inputs = [t.to("cuda", torch.bfloat16) for t in inputs]
    (captured,) = capture_with_inputs(fn, *inputs)
    options = CompileOptions(target="triton", cache=False, target_options={"matmul_templates": True})
    compiled = compile_graph(captured.graph_module, options)
    program = compiled.program
    first = program(*captured.inputs)
    assert program.native_source is not None and compiled.stats.host == "native"
    assert program.callback_count == 0
    _assert_identical(program.function(*captured.inputs), program.python_function(*captured.inputs))
    _assert_identical(program.function(*captured.inputs), first)


# -- GPU programs kept beside the compiled-graph entry --------------------------------


def _cached_cuda_program(fn, inputs, **target_options):
    """`fn` compiled for the GPU with the compiled-graph cache on."""
    (captured,) = capture_with_inputs(fn, *inputs)
    return compile_graph(captured.graph_module, CompileOptions(target="triton", target_options=target_options)), captured.inputs


def _images(cache):
    return sorted((cache / "graphs").glob("*.native"))


@cuda
@pytest.mark.parametrize("name", ["linear_softmax", "convolution_batch_norm", "attention"])
def test_a_gpu_native_host_is_loaded_from_the_image_kept_for_its_launches(name, cache, monkeypatch):
    """A GPU graph's first call keeps its native host program's image beside
    the graph's entry, under the launches the call chose; the graph loaded
    from the cache (as a new process does) whose first call chose the same
    launches loads that image without emitting, and its native calls give
    the first program's results bit for bit."""
    from permalloy.targets.native.emitter import NativeHostEmitter

    fn, shapes = GPU_CASES[name]
    inputs = [torch.randn(*s, device="cuda") for s in shapes]
    compiled, args = _cached_cuda_program(fn, inputs)
    compiled.program(*args)
    expected = compiled.program.function(*args)
    assert compiled.stats.host == "native" and len(_images(cache)) == 1

    def no_emission(self):
        raise AssertionError("a native host program was emitted although its image was kept")

    monkeypatch.setattr(NativeHostEmitter, "emit", no_emission)
    loaded, args = _cached_cuda_program(fn, inputs)
    assert loaded.stats.cache == "hit"
    _assert_identical(loaded.program(*args), expected)
    assert loaded.stats.host == "native" and loaded.program.native_source == compiled.program.native_source
    for _ in range(2):
        _assert_identical(loaded.program.function(*args), expected)
    torch.cuda.synchronize()


@cuda
def test_a_gpu_native_host_launching_the_flash_kernel_is_loaded_from_its_image(cache, monkeypatch):
    """The image of a program that launches the flash kernel itself names
    the kernel's binaries by the attention's position: loaded in a graph
    from the cache, it launches them, calls nothing back and gives the
    first program's results bit for bit."""
    from permalloy.targets.native.emitter import NativeHostEmitter
    from permalloy.targets.triton import flash_attention

    monkeypatch.setattr(flash_attention, "SKIPPING_WORK", 0)
    fn, shapes, _ = ATTENTION_CASES["causal_bias_searched"]
    inputs = _attention_inputs(shapes)
    compiled, args = _cached_cuda_program(fn, inputs, attention="triton")
    compiled.program(*args)
    expected = compiled.program.function(*args)
    assert compiled.program.callback_count == 0 and len(_images(cache)) == 1

    def no_emission(self):
        raise AssertionError("a native host program was emitted although its image was kept")

    monkeypatch.setattr(NativeHostEmitter, "emit", no_emission)
    loaded, args = _cached_cuda_program(fn, inputs, attention="triton")
    assert loaded.stats.cache == "hit"
    _assert_identical(loaded.program(*args), expected)
    assert loaded.stats.host == "native" and loaded.program.callback_count == 0
    _assert_identical(loaded.program.function(*args), expected)
    torch.cuda.synchronize()


@cuda
def test_other_launches_keep_an_image_of_their_own(cache):
    """A first call that chose other launches (an input 4 bytes past an
    aligned address, for which Triton specializes other binaries) does not
    load the image kept for aligned inputs: it emits its own and keeps it
    beside the first."""
    fn = lambda x, y: torch.tanh(x) * y + 1  # noqa: E731
    inputs = [torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")]
    compiled, args = _cached_cuda_program(fn, inputs)
    compiled.program(*args)
    assert len(_images(cache)) == 1
    loaded, args = _cached_cuda_program(fn, inputs)
    shifted = [torch.randn(1025, device="cuda")[1:], args[1]]
    loaded.program(*shifted)
    assert loaded.stats.host == "native" and len(_images(cache)) == 2
    _assert_identical(loaded.program.function(*shifted), loaded.program.python_function(*shifted))


@cuda
@pytest.mark.parametrize("damage", ["garbage", "other_launches"])
def test_a_damaged_gpu_native_image_is_reported_and_emitted_again(damage, cache):
    """A kept image that does not read, or does not fit the graph's launches,
    is reported with one warning; the program is emitted again, its image
    replaced, and results match the Python host's."""
    import json
    import warnings

    fn, shapes = GPU_CASES["layer_norm_gelu"]
    inputs = [torch.randn(*s, device="cuda") for s in shapes]
    compiled, args = _cached_cuda_program(fn, inputs)
    compiled.program(*args)
    (path,) = _images(cache)
    if damage == "garbage":
        path.write_bytes(path.read_bytes()[:40])
    else:
        image = json.loads(path.read_bytes())
        path.write_text(json.dumps({**image, "facts": "0" * 32}))
    loaded, args = _cached_cuda_program(fn, inputs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded.program(*args)
    reports = [w for w in caught if "native host image" in str(w.message)]
    assert len(reports) == 1, [str(w.message) for w in caught]
    assert loaded.stats.host == "native"
    _assert_identical(loaded.program.function(*args), loaded.program.python_function(*args))
    (again, args) = _cached_cuda_program(fn, inputs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again.program(*args)
    assert again.stats.host == "native"
