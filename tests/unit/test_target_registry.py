"""
The target contract: each kernel target is one `TargetDescriptor` in the
registry, and the backend, the pipeline, `permalloy-opt -t` and the bench read
it. A target added to the registry (here a renamed reference target, patched
into `TARGETS`) is seen by all of them with no other change.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch

from permalloy.pipeline import default_pipeline
from permalloy.targets import registry
from permalloy.targets.cuda_graph import CudaGraphRunner
from permalloy.targets.descriptor import TargetDescriptor, TargetOptionError
from permalloy.targets.reference import ReferenceTarget
from permalloy.tools.backend import PermalloyOptionError, parse_options, permalloy_backend
from permalloy.tools.bench.backends import BenchError, permalloy_target
from permalloy.tools.opt import all_targets, main


class _ToyTarget(ReferenceTarget):
    name = "toy"


TOY = TargetDescriptor(
    name="toy",
    summary="the reference target under another name",
    make=lambda mode="default": _ToyTarget(),
    devices=("cpu",),
    default_for=("cpu",),
    loop_passes=("split-reductions",),
    source_extension="toy",
)


@pytest.fixture
def toy_registered(monkeypatch):
    """The registry with the toy target first, so that it is the CPU's default."""
    monkeypatch.setattr(registry, "TARGETS", (TOY, *registry.TARGETS))


@pytest.mark.parametrize("name", sorted(registry.available_targets()))
def test_each_registered_target_makes_a_code_generator_of_its_name(name):
    target = registry.kernel_target(name)
    assert target.name == name
    assert callable(target.compile_kernel) and callable(target.emit_source)


def test_target_names_are_unique_and_each_device_has_one_default():
    names = [t.name for t in registry.TARGETS]
    assert len(names) == len(set(names))
    defaults = [d for t in registry.TARGETS for d in t.default_for]
    assert sorted(defaults) == sorted(set(defaults)) == ["cpu", "cuda"]
    assert registry.target_for_device("cpu").name == "llvm"
    assert registry.target_for_device("cuda").name == "triton"
    assert registry.target_for_device("meta") is None


def test_reading_the_registry_loads_no_code_generator():
    import subprocess
    import sys

    code = (
        "import sys; from permalloy.targets import registry; registry.available_targets(); "
        "print(sorted(m for m in ('torch', 'llvmlite', 'triton') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_unknown_target_lists_the_valid_ones():
    with pytest.raises(registry.UnknownTargetError, match="valid targets: llvm, reference, triton"):
        registry.kernel_target("cuda")


def test_pipeline_adds_each_targets_own_passes():
    plain = default_pipeline(True, None)
    cpu_layouts = "plan-layouts{convolutions=measured}"
    cpu_products = "convolutions-as-products{choose=measured}"
    assert [p for p in default_pipeline(True, "llvm") if p not in plain] == [
        "fuse-loops{instruction-math=true}",
        cpu_layouts,
        cpu_products,
    ]
    gpu = default_pipeline(True, "triton")
    lowering = next(p for p in gpu if p.startswith("convert-ptensor-to-loop"))
    layouts = "plan-layouts{convolutions=measured device=cuda}"
    products = "convolutions-as-products{choose=measured device=cuda}"
    assert gpu.index("unfuse-bias-add") < gpu.index(lowering) < gpu.index("split-reductions")
    assert gpu.index("convert-loop-to-buffer") < gpu.index(layouts) < gpu.index(products) < gpu.index("plan-memory")
    sorts = "convert-ptensor-to-loop{sort-max-length=4096 sort-max-bits=32}"
    assert [p for p in gpu if p not in plain] == [
        "unfuse-bias-add",
        "pad-products",
        "scatter-embedding-gradients",
        sorts,
        "split-reductions",
        "fuse-loops{instruction-math=true}",
        layouts,
        products,
    ]
    # The tensor-level additions and fusion's options need fusion to pay off;
    # the loop-level and buffer-level passes do not.
    assert [p for p in default_pipeline(False, "triton") if p not in plain] == [sorts, "split-reductions", layouts, products]


@pytest.mark.parametrize(
    ("value", "added"),
    [
        ("math", []),
        ("torch", ["fuse-attention"]),
        ("triton", ["fuse-attention{kernel=triton}"]),
        ("auto", ["fuse-attention{kernel=triton precisions=half}"]),
    ],
)
def test_an_option_value_adds_its_pass_before_the_targets_tensor_passes(value, added):
    """The Triton target's `attention` option: its value names the pass it
    adds (none for the math; the default, auto, the flash kernel's in half
    precision), at the tensor level, before the target's own tensor-level
    passes; without fusion it adds none."""
    triton = registry.target_descriptor("triton")
    optional = triton.passes_turned_on({"attention": value, "autotune": False})
    assert list(optional) == added
    assert triton.passes_turned_on({}) == ("fuse-attention{kernel=triton precisions=half}",)
    gpu = default_pipeline(True, "triton", optional_passes=optional)
    assert gpu == [*gpu[:3], *added, *default_pipeline(True, "triton")[3:]]
    assert default_pipeline(False, "triton", optional_passes=optional) == default_pipeline(False, "triton")


@pytest.mark.parametrize(
    ("value", "added"),
    [
        ("library", []),
        ("measured", ["choose-depthwise-kernels{choose=measured device=cuda}"]),
        ("triton", ["choose-depthwise-kernels{choose=always}"]),
    ],
)
def test_an_option_value_adds_its_pass_after_the_targets_buffer_passes(value, added):
    """The Triton target's `depthwise_convolutions` option: its value names
    the buffer-level pass it adds (none for the default), after the target's
    own buffer-level passes, with or without fusion."""
    triton = registry.target_descriptor("triton")
    library = {"depthwise_weight_gradients": "library"}
    optional = triton.buffer_passes_turned_on({"depthwise_convolutions": value, "attention": "torch", **library})
    assert list(optional) == added
    assert triton.buffer_passes_turned_on(library) == ()
    for fusion in (True, False):
        plain = default_pipeline(fusion, "triton")
        after = plain.index("convolutions-as-products{choose=measured device=cuda}") + 1
        assert default_pipeline(fusion, "triton", optional_buffer_passes=optional) == [*plain[:after], *added, *plain[after:]]


@pytest.mark.parametrize(
    ("options", "added"),
    [
        ({}, ["choose-depthwise-weight-gradients{choose=measured device=cuda}"]),
        ({"depthwise_weight_gradients": "measured"}, ["choose-depthwise-weight-gradients{choose=measured device=cuda}"]),
        ({"depthwise_weight_gradients": "library"}, []),
        ({"depthwise_weight_gradients": "triton"}, ["choose-depthwise-weight-gradients{choose=always}"]),
        (
            {"depthwise_convolutions": "triton"},
            ["choose-depthwise-kernels{choose=always}", "choose-depthwise-weight-gradients{choose=measured device=cuda}"],
        ),
    ],
    ids=["default", "measured", "library", "triton", "with_depthwise_convolutions"],
)
def test_an_option_default_adds_its_pass(options, added):
    """The Triton target's `depthwise_weight_gradients` option has a default,
    `measured`, whose pass a compile that gives no value gets; `library`
    adds none."""
    triton = registry.target_descriptor("triton")
    assert triton.options["depthwise_weight_gradients"].default == "measured"
    assert list(triton.buffer_passes_turned_on(options)) == added
    assert registry.target_descriptor("llvm").buffer_passes_turned_on(options) == ()


def test_pipeline_options_do_not_reach_the_code_generator():
    """The `attention`, `depthwise_convolutions` and
    `depthwise_weight_gradients` options choose passes: the code generator is
    made without them (it takes no such argument)."""
    target = registry.kernel_target(
        "triton", attention="torch", depthwise_convolutions="measured", depthwise_weight_gradients="library", autotune=False
    )
    assert target.name == "triton"


def test_deterministic_pipelines_keep_order_dependent_scatters_for_torch():
    """A target whose scatters use atomics lowers with deterministic-scatters
    when torch's deterministic algorithms are on; the LLVM target, which
    walks a scatter in order, never needs it."""
    lowering = "convert-ptensor-to-loop{deterministic-scatters=true sort-max-length=4096 sort-max-bits=32}"
    assert lowering in default_pipeline(True, "triton", deterministic=True)
    assert lowering not in default_pipeline(True, "triton", deterministic=False)
    assert default_pipeline(True, "llvm", deterministic=True) == default_pipeline(True, "llvm")


def test_sort_limits_are_options_of_the_lowering():
    """The Triton target sorts rows of at most 4096 elements of at most 32
    bits in its kernels; the LLVM target takes the pass's defaults."""
    assert "convert-ptensor-to-loop{sort-max-length=4096 sort-max-bits=32}" in default_pipeline(True, "triton")
    assert "convert-ptensor-to-loop" in default_pipeline(True, "llvm")


def test_target_options_are_checked_by_the_target():
    assert registry.kernel_target("llvm", vector_bits=128).f32_lanes == 4
    with pytest.raises(TargetOptionError, match="takes one of 128, 256, 512, got 100"):
        registry.kernel_target("llvm", vector_bits=100)
    with pytest.raises(TargetOptionError, match="target 'reference' has no option 'autotune'; it takes none"):
        registry.kernel_target("reference", autotune=False)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"target": "llvm", "autotune": False}, "target 'llvm' has no option 'autotune'; its options: vector_bits"),
        ({"target": "llvm", "parallel_threshold": 0}, "option 'parallel_threshold' of target 'llvm' takes an integer"),
        ({"vector_bits": 96}, "option 'vector_bits' of target 'llvm' takes one of 128, 256, 512"),
        ({"vectorbits": 128}, "valid options: target .*vector_bits \\(target 'llvm': .*autotune \\(target 'triton'"),
        ({"target": "gpu"}, "unknown target 'gpu'; valid targets: llvm, reference, triton"),
    ],
)
def test_backend_reports_bad_target_options(options, message):
    with pytest.raises(PermalloyOptionError, match=message):
        parse_options(options, None)


def test_backend_passes_a_targets_options_to_it():
    options = parse_options({"target": "llvm", "vector_bits": 128, "fusion": False}, None)
    assert options.target_options == {"vector_bits": 128}
    assert options.fusion is False


def _function(x, y):
    return torch.softmax(x * y, dim=-1).sum(0)


def test_llvm_options_compile_and_match_eager():
    x, y = torch.randn(7, 33), torch.randn(33)
    compiled = torch.compile(
        _function,
        backend=permalloy_backend,
        options={"vector_bits": 128, "parallel_threshold": 1, "fallback": "raise"},
    )
    torch.testing.assert_close(compiled(x, y), _function(x, y), rtol=1e-5, atol=1e-6)


def test_input_devices_each_target_refuses():
    llvm, triton = registry.target_descriptor("llvm"), registry.target_descriptor("triton")
    assert llvm.input_problem({"cpu"}) is None
    assert "target 'llvm' runs on cpu tensors; these inputs are on cuda" in llvm.input_problem({"cuda"})
    assert triton.input_problem({"cuda", "cpu"}) is None  # 0-d CPU tensors beside CUDA ones
    assert registry.target_descriptor("reference").input_problem({"cpu", "cuda"}) is None


def test_triton_on_cpu_tensors_needs_the_interpreter(monkeypatch):
    triton = registry.target_descriptor("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert "set TRITON_INTERPRET=1" in triton.input_problem({"cpu"})
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert triton.input_problem({"cpu"}) is None


def test_reduce_overhead_replays_cuda_graphs_on_the_gpu_target_only():
    def run(*args):
        return args

    assert isinstance(registry.target_descriptor("triton").host_runtime(run, "reduce-overhead"), CudaGraphRunner)
    assert registry.target_descriptor("triton").host_runtime(run, "default") is run
    assert registry.target_descriptor("llvm").host_runtime(run, "reduce-overhead") is run


def test_a_registered_target_is_seen_by_every_tool(toy_registered, tmp_path: Path, capsys):
    # permalloy-opt -t
    assert "toy" in all_targets()
    source = tmp_path / "k.mlir"
    source.write_text(Path("tests/filecheck/targets/llvm_pointwise.mlir").read_text())
    with pytest.raises(SystemExit) as exited:
        main([str(source), "-t", "toy"])
    assert exited.value.code in (0, None)
    out = capsys.readouterr().out
    assert out.startswith("// kernel @axpy_exp\n") and "loop.pointwise" in out
    # the bench picks the device's default
    assert permalloy_target("cpu") == "toy"
    with pytest.raises(BenchError, match="no kernel target for meta tensors"):
        permalloy_target("meta")
    # the backend compiles with it by default, its pipeline and dump extension included
    dumps = tmp_path / "dumps"
    x, y = torch.randn(5, 8), torch.randn(8)
    compiled = torch.compile(_function, backend=permalloy_backend, options={"dump_dir": str(dumps), "fallback": "raise"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.testing.assert_close(compiled(x, y), _function(x, y), rtol=1e-5, atol=1e-6)
    files = [p.name for p in sorted((dumps / "graph_000").iterdir())]
    assert any(name.endswith("after_split-reductions.mlir") for name in files)
    assert any(name.endswith(".toy") for name in files)


def test_library_options_do_not_reach_the_code_generator():
    """`convolution_algorithms` chooses cuDNN's setting, not code: the code
    generator is made without it; a bad value lists the valid ones."""
    assert registry.kernel_target("triton", convolution_algorithms="torch", autotune=False).name == "triton"
    with pytest.raises(TargetOptionError, match="takes one of 'measured', 'torch', got 'fast'"):
        registry.kernel_target("triton", convolution_algorithms="fast")


@pytest.mark.parametrize(
    ("options", "library_ops", "wrapped"),
    [
        ({}, None, True),
        ({}, {"ptensor.convolution", "ptensor.mm"}, True),
        ({}, {"ptensor.convolution_backward"}, True),
        ({}, {"ptensor.mm"}, False),
        ({}, set(), False),
        ({"convolution_algorithms": "measured"}, {"ptensor.convolution"}, True),
        ({"convolution_algorithms": "torch"}, {"ptensor.convolution"}, False),
        ({"convolution_algorithms": "torch"}, None, False),
    ],
)
def test_the_gpu_target_searches_algorithms_for_graphs_with_convolutions(options, library_ops, wrapped):
    """The Triton target wraps a compile (library ops not known yet, None) and
    the calls of a graph that runs convolutions in cuDNN's algorithm search,
    unless the option leaves it to torch; the LLVM target wraps nothing."""

    def run():
        return torch.backends.cudnn.benchmark

    triton = registry.target_descriptor("triton")
    assert (triton.with_library_settings(run, options, library_ops) is not run) is wrapped
    assert registry.target_descriptor("llvm").with_library_settings(run, options, library_ops) is run


@pytest.mark.parametrize("user_setting", [False, True])
def test_the_search_is_on_during_a_call_and_the_users_setting_back_after(monkeypatch, user_setting):
    from permalloy.targets.triton.convolution_algorithms import searching_algorithms

    monkeypatch.setattr(torch.backends.cudnn, "benchmark", user_setting)
    assert searching_algorithms(lambda: torch.backends.cudnn.benchmark)() is True
    assert torch.backends.cudnn.benchmark is user_setting

    def failing():
        raise ValueError("in the call")

    with pytest.raises(ValueError, match="in the call"):
        searching_algorithms(failing)()
    assert torch.backends.cudnn.benchmark is user_setting


def test_the_users_setting_comes_back_after_the_last_of_overlapping_calls(monkeypatch):
    """Calls that search may overlap (nested, or in other threads): the
    setting stays on until the last one leaves, then is the user's again."""
    import threading

    from permalloy.targets.triton.convolution_algorithms import searching_algorithms

    monkeypatch.setattr(torch.backends.cudnn, "benchmark", False)
    nested = searching_algorithms(lambda: (searching_algorithms(lambda: None)(), torch.backends.cudnn.benchmark)[1])
    assert nested() is True
    assert torch.backends.cudnn.benchmark is False

    first_inside, second_inside, first_left = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first():
        first_inside.set()
        second_inside.wait()

    def second():
        second_inside.set()
        first_left.wait()
        seen["after the first left"] = torch.backends.cudnn.benchmark

    runs = [threading.Thread(target=searching_algorithms(f)) for f in (first, second)]
    runs[0].start()
    first_inside.wait()
    runs[1].start()
    runs[0].join()
    first_left.set()
    runs[1].join()
    assert seen == {"after the first left": True}
    assert torch.backends.cudnn.benchmark is False
