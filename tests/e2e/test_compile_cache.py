"""
The compiled-graph cache: a graph compiled in one process is loaded in the
next without the pipeline, and matches eager; entries that are damaged, cut
short or written by other versions are reported once, compiled again and
replaced, never run; the cache turned off writes nothing; keys differ with
what a compiled graph depends on. Every test has its own cache directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import torch

import permalloy
from permalloy.cache import cache_dir, modules, software_versions
from permalloy.cache.entry import decode_entry, encode_entry
from permalloy.tools.backend import PermalloyOptionError, parse_options

pytestmark = pytest.mark.usefixtures("fresh_backend")

REPOSITORY = Path(__file__).resolve().parents[2]


def _graph(x, y):
    return torch.softmax(x * 2 + y, -1).sum(0) + (x @ y.t()).mean()


def _inputs(rows: int = 16, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(rows)
    return (
        torch.randn(rows, 33, generator=generator, dtype=dtype),
        torch.randn(rows, 33, generator=generator, dtype=dtype),
    )


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "graphs").glob("*.graph"))


def _compile_and_check(rows: int = 16, dtype: torch.dtype = torch.float32, **options) -> dict:
    """Compile `_graph` afresh, check it against eager; its stats record."""
    torch._dynamo.reset()  # noqa: SLF001
    permalloy.reset_stats()
    compiled = torch.compile(_graph, backend="permalloy", options={"fallback": "raise", **options})
    x, y = _inputs(rows, dtype)
    torch.testing.assert_close(compiled(x, y), _graph(x, y))
    (record,) = permalloy.stats()
    return record


def test_tests_never_use_the_home_cache() -> None:
    assert not cache_dir().resolve().is_relative_to((Path.home() / ".cache").resolve())


# -- a new process ------------------------------------------------------------------

_PROCESS = textwrap.dedent(
    """
    import json, sys, torch, permalloy

    def graph(x, y):
        return torch.softmax(x * 2 + y, -1).sum(0) + (x @ y.t()).mean()

    x, y = torch.randn(16, 33), torch.randn(16, 33)
    states = {}
    for target in sys.argv[1:]:
        torch._dynamo.reset()
        permalloy.reset_stats()
        options = {"target": target, "fallback": "raise"}
        compiled = torch.compile(graph, backend="permalloy", options=options)
        torch.testing.assert_close(compiled(x, y), graph(x, y))
        (record,) = permalloy.stats()
        times = record["compile_times"]
        states[target] = {"cache": record["cache"], "passes": times["passes"], "emission": times["kernel_emission"]}
    print(json.dumps(states))
    """
)


def _new_process(cache: Path, *targets: str) -> dict:
    environment = {**os.environ, "PERMALLOY_CACHE_DIR": str(cache), "TRITON_INTERPRET": "1"}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPOSITORY), environment.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-c", _PROCESS, *targets], capture_output=True, text=True, env=environment, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "compiled-graph cache" not in result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_new_process_loads_the_graph_without_the_pipeline(cache: Path) -> None:
    """LLVM kernels come back as object code, Triton's (under its interpreter)
    as their generated modules: neither is planned or generated again."""
    first = _new_process(cache, "llvm", "triton")
    assert {t: s["cache"] for t, s in first.items()} == {"llvm": "miss", "triton": "miss"}
    assert "fuse-loops" in first["llvm"]["passes"]
    assert len(_entries(cache)) == 2
    second = _new_process(cache, "llvm", "triton")
    assert {t: s["cache"] for t, s in second.items()} == {"llvm": "hit", "triton": "hit"}
    assert second["llvm"]["passes"] == {} and second["triton"]["passes"] == {}
    assert first["triton"]["emission"] > 0 and second["triton"]["emission"] == 0 == second["llvm"]["emission"]
    assert len(_entries(cache)) == 2


def test_a_hit_in_the_same_process_records_its_stages(cache: Path) -> None:
    miss = _compile_and_check(target="llvm")
    hit = _compile_and_check(target="llvm")
    assert (miss["cache"], hit["cache"]) == ("miss", "hit")
    assert hit["kernels"] == miss["kernels"] and hit["extern_calls"] == miss["extern_calls"]
    assert hit["peak_intermediate_bytes"] == miss["peak_intermediate_bytes"]
    times = miss["compile_times"]
    assert times["import_fx"] > 0 and times["kernel_emission"] > 0 and times["kernel_compilation"] > 0
    assert {"convert-ptensor-to-loop", "fuse-loops", "cse", "plan-memory"} <= set(times["passes"])
    assert times["aot_autograd"] > 0 and times["cache_store"] > 0
    loaded = hit["compile_times"]
    assert loaded["passes"] == {} and loaded["kernel_compilation"] == 0 == loaded["kernel_emission"]
    assert loaded["kernel_loading"] > 0 and loaded["cache_lookup"] > 0


# -- entries that cannot be used ------------------------------------------------------


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "corrupt":
        middle = len(data) // 2
        path.write_bytes(data[:middle] + bytes([data[middle] ^ 0x55]) + data[middle + 1 :])
    elif how == "truncated":
        path.write_bytes(data[: len(data) * 2 // 3])
    elif how == "other versions":
        entry = decode_entry(data, path.stem, software_versions())
        older = {**entry.versions, "torch": "2.0.0"}
        path.write_bytes(encode_entry(type(entry)(**{**entry.__dict__, "versions": older})))
    elif how == "not an entry":
        path.write_bytes(b"\x00\x01 something else entirely")
    else:
        raise ValueError(how)


@pytest.mark.parametrize("how", ["corrupt", "truncated", "other versions", "not an entry"])
def test_an_unusable_entry_warns_once_and_compiles_again(cache: Path, how: str) -> None:
    assert _compile_and_check(target="llvm")["cache"] == "miss"
    (entry,) = _entries(cache)
    _damage(entry, how)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        record = _compile_and_check(target="llvm")
    reports = [w for w in caught if "compiled-graph cache entry" in str(w.message)]
    assert len(reports) == 1, [str(w.message) for w in caught]
    assert str(entry) in str(reports[0].message)
    assert record["cache"] == "miss" and record["compiled"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _compile_and_check(target="llvm")["cache"] == "hit"
    assert not [w for w in caught if "compiled-graph cache" in str(w.message)]
    assert _entries(cache) == [entry]


def test_an_entry_whose_module_does_not_parse_compiles_again(cache: Path) -> None:
    """Past its checksum, an entry whose IR no longer parses (an edited
    dialect under an unchanged version) and has no image is reported and
    replaced too."""
    _compile_and_check(target="llvm")
    (path,) = _entries(cache)
    entry = decode_entry(path.read_bytes(), path.stem, software_versions())
    text = "builtin.module {\n  nosuchdialect.op\n}\n"
    broken = type(entry)(**{**entry.__dict__, "host": text, "host_image": None})
    path.write_bytes(encode_entry(broken))
    with pytest.warns(RuntimeWarning, match="compiled-graph cache entry .* not loadable"):
        assert _compile_and_check(target="llvm")["cache"] == "miss"
    assert _compile_and_check(target="llvm")["cache"] == "hit"


def test_a_hit_loads_the_host_function_from_its_image_without_parsing(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _compile_and_check(target="llvm")
    (path,) = _entries(cache)
    entry = decode_entry(path.read_bytes(), path.stem, software_versions())
    assert entry.host_image is not None and entry.kernel_image is not None

    def no_parsing(text: str) -> None:
        raise AssertionError("a hit with an image parsed its text")

    monkeypatch.setattr(modules, "parse_module", no_parsing)
    assert _compile_and_check(target="llvm")["cache"] == "hit"


def test_an_entry_keeps_its_text_only_where_it_has_no_image(cache: Path) -> None:
    """Printing a module is most of storing an entry: a part with an image
    keeps no text."""
    _compile_and_check(target="llvm")
    (path,) = _entries(cache)
    entry = decode_entry(path.read_bytes(), path.stem, software_versions())
    assert entry.host_image is not None and entry.kernel_image is not None
    assert entry.host == "" and entry.kernel_module == ""


def test_a_damaged_image_is_reported_and_compiles_again(cache: Path) -> None:
    """An image that does not load (here cut short, under a checksum made
    for it), with no text beside it, is an entry that does not load: reported
    once, compiled again and rewritten, and the result matches eager."""
    _compile_and_check(target="llvm")
    (path,) = _entries(cache)
    entry = decode_entry(path.read_bytes(), path.stem, software_versions())
    damaged = type(entry)(**{**entry.__dict__, "host_image": entry.host_image[: len(entry.host_image) // 2]})
    path.write_bytes(encode_entry(damaged))
    with pytest.warns(RuntimeWarning, match="compiled-graph cache entry .* not loadable .*image does not load"):
        assert _compile_and_check(target="llvm")["cache"] == "miss"
    assert _compile_and_check(target="llvm")["cache"] == "hit"


def _spectrum(x, y):
    """A graph with an op the native host program runs in Python (an FFT,
    torch's), beside kernels and a product."""
    return torch.fft.rfft(x * 2 + y).abs().sum(0) + (x @ y.t()).mean()


def _compile_spectrum() -> dict:
    torch._dynamo.reset()  # noqa: SLF001
    permalloy.reset_stats()
    compiled = torch.compile(_spectrum, backend="permalloy", options={"fallback": "raise", "target": "llvm"})
    x, y = _inputs()
    torch.testing.assert_close(compiled(x, y), _spectrum(x, y))
    torch.testing.assert_close(compiled(y, x), _spectrum(y, x))
    (record,) = permalloy.stats()
    return record


def test_a_hit_loads_the_native_host_program_without_emitting_it(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CPU graph's native host program is kept as object code with its
    kernel table and callbacks by position: a hit runs it natively, calling
    back for the FFT, without emitting or compiling it again."""
    from permalloy.targets.native.emitter import NativeHostEmitter

    miss = _compile_spectrum()
    (path,) = _entries(cache)
    entry = decode_entry(path.read_bytes(), path.stem, software_versions())
    assert entry.native_host is not None and entry.native_host["callbacks"]

    def no_emission(self):
        raise AssertionError("a hit emitted its native host program")

    monkeypatch.setattr(NativeHostEmitter, "emit", no_emission)
    hit = _compile_spectrum()
    assert (miss["cache"], hit["cache"]) == ("miss", "hit")
    assert hit["host"] == miss["host"] == "native"
    assert hit["host_callbacks"] == miss["host_callbacks"] >= 1


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True) * 2


def _compile_attention() -> dict:
    torch._dynamo.reset()  # noqa: SLF001
    permalloy.reset_stats()
    compiled = torch.compile(_attention, backend="permalloy", options={"fallback": "raise", "target": "llvm"})
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 20, 8) for _ in range(3))
    for _ in range(2):
        torch.testing.assert_close(compiled(q, k, v), _attention(q, k, v), rtol=1e-4, atol=1e-5)
    (record,) = permalloy.stats()
    return record


def test_a_hit_calls_torchs_fused_attention_through_the_loaded_native_program(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The native host program's image of a graph whose attention it calls
    through the shim (the kernel torch chose, recorded when it was emitted)
    is loaded on a hit and calls it so, nothing called back, matching eager."""
    from permalloy.targets.native.emitter import NativeHostEmitter

    miss = _compile_attention()
    assert miss["host"] == "native" and miss["host_callbacks"] == 0

    def no_emission(self):
        raise AssertionError("a hit emitted its native host program")

    monkeypatch.setattr(NativeHostEmitter, "emit", no_emission)
    hit = _compile_attention()
    assert (miss["cache"], hit["cache"]) == ("miss", "hit")
    assert hit["host"] == "native" and hit["host_callbacks"] == 0


@pytest.mark.parametrize("damage", ["other ops", "a table entry past the ops", "not an image"])
def test_a_native_host_image_that_does_not_fit_compiles_again(cache: Path, damage: str) -> None:
    """A stored native host program that does not fit its module (its ops
    renamed, a kernel table entry naming no launch, a malformed image) is
    reported once, compiled again and replaced, never run."""
    _compile_spectrum()
    (path,) = _entries(cache)
    entry = decode_entry(path.read_bytes(), path.stem, software_versions())
    image = dict(entry.native_host)
    if damage == "other ops":
        image["operations"] = [*image["operations"][:-1], "buffer.nothing"]
    elif damage == "a table entry past the ops":
        image["table"] = [[len(image["operations"]) + 5, 0], *image["table"]]
    else:
        image = {"code": "not base64 !"}
    path.write_bytes(encode_entry(type(entry)(**{**entry.__dict__, "native_host": image})))
    with pytest.warns(RuntimeWarning, match="compiled-graph cache entry .* not loadable"):
        assert _compile_spectrum()["cache"] == "miss"
    assert _compile_spectrum()["cache"] == "hit"


def test_gpu_native_images_are_kept_beside_their_entry_by_launches(cache: Path) -> None:
    """The files of a graph's GPU native host images: one per digest of
    launches, beside the entry; a missing one reads as None without a
    warning, a damaged one as None after one warning."""
    from permalloy.cache import CacheKey, GraphCache

    files = GraphCache().native_images(CacheKey("ab" * 32, {}))
    assert files.read("f" * 32) is None
    files.write("f" * 32, {"entry": "permalloy_host_0"})
    files.write("e" * 32, {"entry": "permalloy_host_1"})
    assert files.read("f" * 32) == {"entry": "permalloy_host_0"}
    assert files.path("f" * 32).parent == files.path("e" * 32).parent == cache / "graphs"
    assert files.path("f" * 32).name.startswith("ab" * 32)
    for damage in (b'{"entry": "perm', b"[1, 2]"):
        files.path("f" * 32).write_bytes(damage)
        with pytest.warns(RuntimeWarning, match="native host image .* emitting the program again"):
            assert files.read("f" * 32) is None


def test_a_target_prepares_to_compile_on_a_miss_and_not_on_a_hit(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compiler has the target start what compiling needs (the Triton
    target's compile workers) only for a graph it lowers."""
    from permalloy.targets.llvm.target import LLVMTarget

    prepared: set[int] = set()
    monkeypatch.setattr(LLVMTarget, "prepare_to_compile", lambda self: prepared.add(id(self)), raising=False)
    assert _compile_and_check(target="llvm")["cache"] == "miss" and len(prepared) == 1
    assert _compile_and_check(target="llvm")["cache"] == "hit" and len(prepared) == 1
    assert _compile_and_check(target="llvm", cache=False)["cache"] == "off" and len(prepared) == 2


# -- turned off ---------------------------------------------------------------------


def test_the_cache_option_off_writes_nothing(cache: Path) -> None:
    assert _compile_and_check(target="llvm", cache=False)["cache"] == "off"
    assert not (cache / "graphs").exists()


def test_the_environment_variable_off_writes_nothing(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERMALLOY_CACHE", "0")
    assert _compile_and_check(target="llvm")["cache"] == "off"
    assert not (cache / "graphs").exists()


def test_bad_cache_settings_list_the_valid_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PermalloyOptionError, match="option 'cache' takes True or False"):
        parse_options({"cache": "no"}, None)
    monkeypatch.setenv("PERMALLOY_CACHE", "maybe")
    with pytest.raises(PermalloyOptionError, match=r"PERMALLOY_CACHE='maybe' is not valid; valid values: 1, true"):
        parse_options({}, None)


def test_an_unwritable_cache_warns_and_compiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache directory would be")
    monkeypatch.setenv("PERMALLOY_CACHE_DIR", str(blocked))
    with pytest.warns(RuntimeWarning, match="cannot write its compiled-graph cache"):
        assert _compile_and_check(target="llvm")["cache"] == "miss"


# -- keys -----------------------------------------------------------------------------


def test_keys_differ_with_options_shapes_and_dtypes(cache: Path) -> None:
    variants = [
        {},
        {"rows": 24},
        {"dtype": torch.float64},
        {"fusion": False},
        {"vector_bits": 128},
        {"parallel_threshold": 7},
    ]
    for count, variant in enumerate(variants, start=1):
        assert _compile_and_check(target="llvm", **variant)["cache"] == "miss", variant
        assert len(_entries(cache)) == count
    for variant in variants:
        assert _compile_and_check(target="llvm", **variant)["cache"] == "hit", variant
    assert len(_entries(cache)) == len(variants)


def test_keys_differ_with_torchs_tf32_setting_for_products(cache: Path) -> None:
    """A float32 product's template multiplies in TF32 only where torch
    allows it when it is compiled, so a graph compiled with TF32 allowed is
    never loaded where it is not."""
    backends = torch.backends.cuda.matmul
    previous = backends.allow_tf32
    try:
        for allowed in (False, True):
            backends.allow_tf32 = allowed
            assert _compile_and_check(target="llvm")["cache"] == "miss", allowed
        assert len(_entries(cache)) == 2
    finally:
        backends.allow_tf32 = previous


def test_an_option_given_its_default_value_is_the_same_compile(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert _compile_and_check(target="triton")["cache"] == "miss"
    assert _compile_and_check(target="triton", convolution_algorithms="measured")["cache"] == "hit"
    assert _compile_and_check(target="triton", convolution_algorithms="torch")["cache"] == "miss"
    assert len(_entries(cache)) == 2


def test_keys_differ_with_torchs_cudnn_search_setting(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the Triton target leaves cuDNN's algorithm choice to torch, the
    pipeline's timings of convolutions follow torch's setting."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    for search in (False, True):
        monkeypatch.setattr(torch.backends.cudnn, "benchmark", search)
        assert _compile_and_check(target="triton", convolution_algorithms="torch")["cache"] == "miss", search
    assert len(_entries(cache)) == 2


def test_keys_differ_with_torchs_thread_count(cache: Path) -> None:
    """The CPU target's layouts are timed at torch's thread count: a graph
    compiled at one count is not reused at another."""
    previous = torch.get_num_threads()
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            assert _compile_and_check(target="llvm")["cache"] == "miss", threads
        for threads in (1, 2):
            torch.set_num_threads(threads)
            assert _compile_and_check(target="llvm")["cache"] == "hit", threads
    finally:
        torch.set_num_threads(previous)
    assert len(_entries(cache)) == 2


def test_a_hit_with_symbolic_sizes_serves_every_size(cache: Path) -> None:
    """Loaded kernels take the size symbols the entry recorded for each launch."""

    def run(rows: int) -> str:
        torch._dynamo.reset()  # noqa: SLF001
        permalloy.reset_stats()
        options = {"fallback": "raise", "target": "llvm"}
        compiled = torch.compile(_graph, backend="permalloy", options=options, dynamic=True)
        for size in (rows, rows + 5):
            x, y = _inputs(size)
            torch.testing.assert_close(compiled(x, y), _graph(x, y))
        (record,) = permalloy.stats()
        assert record["size_symbols"]
        return record["cache"]

    assert (run(16), run(16), run(9)) == ("miss", "hit", "hit")


def test_training_graphs_hit_and_match_eager(cache: Path) -> None:
    def step() -> tuple[list[str], list[torch.Tensor]]:
        torch._dynamo.reset()  # noqa: SLF001
        permalloy.reset_stats()
        model = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.GELU(), torch.nn.LayerNorm(16))
        torch.manual_seed(0)
        for parameter in model.parameters():
            torch.nn.init.normal_(parameter)
        compiled = torch.compile(model, backend="permalloy", options={"fallback": "raise", "target": "llvm"})
        compiled(torch.randn(4, 12, generator=torch.Generator().manual_seed(1))).square().sum().backward()
        return [r["cache"] for r in permalloy.stats()], [p.grad for p in model.parameters()]

    first, gradients = step()
    second, loaded = step()
    assert (first, second) == (["miss", "miss"], ["hit", "hit"])
    for expected, actual in zip(gradients, loaded, strict=True):
        torch.testing.assert_close(actual, expected, rtol=0, atol=0)


def _twins(x, y):
    return torch.relu(x) * 2 + 1, torch.relu(y) * 2 + 1


def test_kernels_of_one_body_compile_once_and_load_once(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two kernels that differ only in name (a model's repeated blocks) share
    one compiled body, on a miss and on a hit of the compiled-graph cache."""
    from permalloy.targets.llvm.jit import JIT

    compiled_modules = []
    load = JIT.load
    monkeypatch.setattr(
        JIT, "load", lambda self, text, entry, optimize=True: compiled_modules.append(entry) or load(self, text, entry, optimize)
    )
    x, y = _inputs()
    for expected_cache in ("miss", "hit"):
        torch._dynamo.reset()  # noqa: SLF001
        permalloy.reset_stats()
        compiled = torch.compile(_twins, backend="permalloy", options={"fallback": "raise", "target": "llvm"})
        for got, expected in zip(compiled(x, y), _twins(x, y)):
            torch.testing.assert_close(got, expected)
        (record,) = permalloy.stats()
        assert record["cache"] == expected_cache and record["kernels"] == 2
    kernels = [entry for entry in compiled_modules if not entry.startswith("permalloy_host")]  # not the host program
    assert len(kernels) == 1, "the second kernel reuses the first one's code"
