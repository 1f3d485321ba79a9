"""
The Triton target's two launch paths: the generated `launch` (through
Triton's JIT) and the direct `launcher`, which must hand the compiled kernels
the same grids and arguments (every parameter of the function, compile-time
ones included, in order); and `TritonKernel`'s choice between them. Triton's
JIT function and compiled kernels are replaced by recorders, so nothing
compiles and no GPU is needed.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from permalloy.dialects.buffer import BufferType
from permalloy.targets.llvm.testing import parse_kernel, pointwise_kernel, tensor
from permalloy.targets.triton.loader import ModuleLoader
from permalloy.targets.triton.module import module_source
from permalloy.targets.triton.plan import plan_kernel
from permalloy.targets.triton.target import LaunchFacts, TritonKernel

T = tensor


def layouts_of(kernel):
    """Contiguous layouts of a kernel's arguments and results."""
    types = [*kernel.function_type.inputs.data, *kernel.function_type.outputs.data]
    return [BufferType(t.sizes, t.element_type) for t in types]

TWO_LAUNCHES = f"""
buffer.kernel @k(%a: {T("[s0, 16]", "f32")}) -> ({T("[s0, 16]", "f32")}) {{
  %s = loop.reduce sum ins(%x = %a : {T("[s0, 16]", "f32")}) over [16] -> {T("[s0]", "f32")} {{
    %v = loop.load %x[d0, r0] : f32
    loop.yield %v : f32
  }}
  %y = loop.pointwise ins(%x = %a : {T("[s0, 16]", "f32")}, %t = %s : {T("[s0]", "f32")}) -> {T("[s0, 16]", "f32")} {{
    %v = loop.load %x[d0, d1] : f32
    %w = loop.load %t[s0 - 1 - d0] : f32
    %q = arith.divf %v, %w : f32
    loop.yield %q : f32
  }}
  buffer.yield %y : {T("[s0, 16]", "f32")}
}}
"""

KERNELS = {
    "two_launches": (TWO_LAUNCHES, [(5, 16), (5, 16)], [5]),
    "transpose": (
        pointwise_kernel("[64, 48]", ["f32"], "f32", "    %y = math.exp %a0 : f32", indices="[d1, d0]", input_shapes=["[48, 64]"]),
        [(48, 64), (64, 48)],
        [],
    ),
    "symbolic": (
        pointwise_kernel("[s0, 8]", ["f32", "f32"], "f32", "    %y = arith.addf %a0, %a1 : f32"),
        [(3, 8), (3, 8), (3, 8)],
        [3],
    ),
}


class RecordingJit:
    """Stands for a `@triton.jit` function: records each launch, returns a
    compiled kernel that records each direct call."""

    def __init__(self):
        self.launches: list[tuple] = []
        self.direct: list[tuple] = []
        self.warmups: list[tuple] = []
        self.compile_only: list[bool] = []

    def warmup(self, *args, grid, **kwargs):
        self.warmups.append((args, kwargs))

    def run(self, *args, grid, warmup, **kwargs):
        self.launches.append((grid, args, kwargs))
        self.compile_only.append(warmup)
        index = len(self.launches) - 1
        return SimpleNamespace(
            run=lambda *a: self.direct.append((index, a)), function=f"function{index}", packed_metadata=f"meta{index}"
        )


CONFIG = {"XBLOCK": 8, "RBLOCK": 16, "num_warps": 2, "num_stages": 1}


def recorded_module(case, tmp_path, monkeypatch):
    """The GPU module generated for a case of `KERNELS`, its `@triton.jit`
    function replaced by a `RecordingJit`: the module, the real function, the
    recorder, the case's tensors and size symbols."""
    text, shapes, symbols = case
    kernel = parse_kernel(text)
    plan = plan_kernel(kernel, layouts_of(kernel), "triton_k")
    module = ModuleLoader(tmp_path).load(module_source(plan, interpret=False), plan.name)
    jit = getattr(module, plan.name)
    recorder = RecordingJit()
    monkeypatch.setattr(module, plan.name, recorder)
    return module, jit, recorder, [torch.randn(*shape) for shape in shapes], symbols


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_direct_launcher_passes_what_the_jit_launch_binds(name, tmp_path, monkeypatch):
    module, jit, recorder, tensors, symbols = recorded_module(KERNELS[name], tmp_path, monkeypatch)

    kernels = module.launch(tensors, symbols, CONFIG)
    launches = [(k.run, k.function, k.packed_metadata) for k in kernels]
    module.launcher(symbols, CONFIG, launches)(tensors, 1234)

    assert len(recorder.direct) == len(recorder.launches) >= 1
    for (index, direct), (grid, args, kwargs) in zip(recorder.direct, recorder.launches, strict=True):
        grid_0, grid_1, grid_2, stream, function, metadata, launch_metadata, enter, leave, *values = direct
        assert (grid_0, grid_1, grid_2) == (*grid, 1, 1)
        assert (stream, function, metadata) == (1234, f"function{index}", f"meta{index}")
        assert (launch_metadata, enter, leave) == (None, None, None)
        bound = list(args) + [kwargs[p] for p in jit.arg_names[len(args) :]]
        assert len(values) == len(jit.arg_names) == len(bound)
        for value, expected in zip(values, bound, strict=True):
            if isinstance(expected, torch.Tensor):  # temporaries are allocated again
                assert value.shape == expected.shape and value.dtype == expected.dtype
            else:
                assert value == expected


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_warmup_compiles_what_the_jit_launch_binds(name, tmp_path, monkeypatch):
    """A compile worker's `warmup` must specialize the kernel as the first
    launch does (dtypes, sizes, compile-time values), or the launch would
    miss Triton's cache and compile again."""
    module, _, recorder, tensors, symbols = recorded_module(KERNELS[name], tmp_path, monkeypatch)

    module.launch(tensors, symbols, CONFIG)
    module.warmup(symbols, CONFIG)

    assert len(recorder.warmups) == len(recorder.launches) >= 1
    for (args, kwargs), (_, launch_args, launch_kwargs) in zip(recorder.warmups, recorder.launches, strict=True):
        assert kwargs == launch_kwargs
        expected = [a.dtype if isinstance(a, torch.Tensor) else a for a in launch_args]
        assert list(args) == expected


def test_interpreter_modules_have_no_warmup(tmp_path):
    kernel = parse_kernel(KERNELS["symbolic"][0])
    plan = plan_kernel(kernel, layouts_of(kernel), "triton_k")
    module = ModuleLoader(tmp_path).load(module_source(plan, interpret=True), plan.name)
    assert not hasattr(module, "warmup")


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_compiling_only_launches_nothing(name, tmp_path, monkeypatch):
    """`launch(..., compile_only=True)` compiles each launch for the same
    arguments as a launch, and runs neither a kernel nor a library call."""
    module, _, recorder, tensors, symbols = recorded_module(KERNELS[name], tmp_path, monkeypatch)

    compiled = module.launch(tensors, symbols, CONFIG, True)
    module.launch(tensors, symbols, CONFIG)

    count = len(compiled)
    assert count >= 1 and recorder.compile_only == [True] * count + [False] * count
    for (_, args, kwargs), (_, again, again_kwargs) in zip(recorder.launches[:count], recorder.launches[count:], strict=True):
        assert kwargs == again_kwargs and len(args) == len(again)


class FakeModule:
    """A kernel module whose launches are recorded."""

    def __init__(self):
        self.jit_calls = 0
        self.compile_only: list[bool] = []
        self.direct_calls: list[tuple] = []

    def launch(self, tensors, symbols, config, compile_only=False):
        self.jit_calls += 1
        self.compile_only.append(compile_only)
        return [SimpleNamespace(run=object(), function=object(), packed_metadata=object())]

    def launcher(self, symbols, config, kernels):
        return lambda tensors, stream: self.direct_calls.append((tuple(symbols), stream))


def test_later_calls_launch_directly_per_sizes_and_alignment():
    kernel = parse_kernel(KERNELS["symbolic"][0])
    plan = plan_kernel(kernel, layouts_of(kernel), "triton_k")
    module = FakeModule()
    compiled = TritonKernel(LaunchFacts.of(plan), "", module, "default", None, interpret=False)
    compiled.direct, compiled.stream = True, lambda device: 77
    base = torch.randn(64)
    aligned, unaligned = base[:24].view(3, 8), base[1:25].view(3, 8)
    for symbols in ([3], [4]):
        compiled.chosen[(*symbols, base.device)] = {"XBLOCK": 8, "RBLOCK": 0, "num_warps": 1, "num_stages": 1}

    calls = [([aligned, aligned, aligned], [3])] * 3 + [([unaligned, aligned, aligned], [3])] * 2
    calls += [([aligned, aligned, aligned], [4])] * 2
    for tensors, symbols in calls:
        compiled(tensors, symbols)
    assert module.compile_only == [True] * 3  # one per (sizes, alignments), compiled without a launch
    assert module.direct_calls == [((3,), 77)] * 5 + [((4,), 77)] * 2  # every call launches directly


def test_the_interpreter_always_launches_through_the_jit():
    kernel = parse_kernel(KERNELS["symbolic"][0])
    plan = plan_kernel(kernel, layouts_of(kernel), "triton_k")
    module = FakeModule()
    compiled = TritonKernel(LaunchFacts.of(plan), "", module, "default", None, interpret=True)
    x = torch.randn(3, 8)
    for _ in range(3):
        compiled([x, x, x], [3])
    assert (module.jit_calls, module.direct_calls, compiled.direct) == (3, [], False)
