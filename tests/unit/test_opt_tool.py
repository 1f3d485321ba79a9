"""
The registries (dialects, passes, targets), pipeline construction and the
`permalloy-opt` driver, run in-process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from permalloy.dialects import all_dialects, make_context
from permalloy.passes import PipelineError, all_passes, build_pipeline
from permalloy.tools.opt import PermalloyOptMain, all_targets, format_error, main

# ---------------------------------------------------------------------------
# Dialects
# ---------------------------------------------------------------------------

OUR_DIALECTS = ("sym", "ptensor", "loop", "buffer")


def test_all_dialects_lists_ours_and_the_upstream_ones_we_use():
    names = list(all_dialects())
    assert names[:4] == ["builtin", "func", "arith", "math"]
    assert set(OUR_DIALECTS) <= set(names)
    assert len(names) == len(set(names))


@pytest.mark.parametrize("name", list(all_dialects()))
def test_dialect_factory_gives_the_dialect_of_its_name(name):
    assert all_dialects()[name]().name == name


@pytest.mark.parametrize("name", OUR_DIALECTS)
def test_our_ops_are_named_after_their_dialect_and_documented(name):
    dialect = all_dialects()[name]()
    for op in dialect.operations:
        assert op.name.startswith(f"{name}."), op.name
        assert re.fullmatch(r"[a-z][a-z0-9_]*", op.name.split(".", 1)[1]), op.name
        assert op.__doc__ and op.__doc__.strip(), f"{op.name} has no docstring"


def test_make_context_parses_permalloy_ir():
    from xdsl.parser import Parser

    text = (
        "func.func @f(%x: !ptensor.tensor<[s0, 4], f32>) {\n"
        "  %0 = ptensor.unary exp %x : !ptensor.tensor<[s0, 4], f32> -> "
        "!ptensor.tensor<[s0, 4], f32>\n"
        "  func.return\n"
        "}\n"
    )
    module = Parser(make_context(), text).parse_module()
    module.verify()
    assert [op.name for op in module.walk()] == [
        "builtin.module",
        "func.func",
        "ptensor.unary",
        "func.return",
    ]


def test_make_context_gives_independent_contexts():
    first, second = make_context(), make_context()
    assert first is not second
    assert not first.allow_unregistered
    assert make_context(allow_unregistered=True).allow_unregistered


# ---------------------------------------------------------------------------
# Passes
# ---------------------------------------------------------------------------


def test_all_passes_includes_the_upstream_cleanups():
    assert {"canonicalize", "cse", "dce"} <= set(all_passes())


@pytest.mark.parametrize("name", list(all_passes()))
def test_each_pass_is_registered_under_its_own_name(name):
    pass_class = all_passes()[name]()
    assert issubclass(pass_class, ModulePass)
    assert pass_class.name == name
    assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name)


@pytest.mark.parametrize("name", list(all_passes()))
def test_each_permalloy_pass_is_documented_in_a_file_named_after_it(name):
    pass_class = all_passes()[name]()
    if not pass_class.__module__.startswith("permalloy."):
        pytest.skip("an upstream xDSL pass")
    assert pass_class.__doc__ and pass_class.__doc__.strip()
    module_file = pass_class.__module__.rsplit(".", 1)[1]
    assert module_file == name.replace("-", "_")


@dataclass(frozen=True)
class OptionsPass(ModulePass):
    """A pass with options of each kind, to test pipeline parsing."""

    name = "test-options"

    max_size: int = 64
    fast: bool = False
    sizes: tuple[int, ...] = (1, 2)
    label: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pass


@dataclass(frozen=True)
class RequiredPass(ModulePass):
    """A pass with a required option."""

    name = "test-required"

    count: int

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pass


TEST_PASSES = {
    "test-options": lambda: OptionsPass,
    "test-required": lambda: RequiredPass,
    **all_passes(),
}


def test_build_pipeline_instantiates_passes_with_their_options():
    pipeline = build_pipeline(
        "cse,test-options{max-size=3 fast=true sizes=4,5 label=x},test-required{count=2}",
        TEST_PASSES,
    )
    names = [p.name for p in pipeline.passes]
    assert names == ["cse", "test-options", "test-required"]
    assert pipeline.passes[1] == OptionsPass(
        max_size=3, fast=True, sizes=(4, 5), label="x"
    )
    assert pipeline.passes[2] == RequiredPass(count=2)


def test_build_pipeline_of_nothing_is_empty():
    assert build_pipeline("").passes == ()


def test_build_pipeline_defaults_to_all_passes():
    assert [p.name for p in build_pipeline("canonicalize,cse,dce").passes] == [
        "canonicalize",
        "cse",
        "dce",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "canonicalise",
            "unknown pass 'canonicalise' (did you mean 'canonicalize'?); "
            "available passes: canonicalize, ",
        ),
        (
            "test-options{max-siz=3}",
            "pass 'test-options' has no option 'max-siz' (did you mean 'max-size'?); "
            "options of 'test-options': max-size (int, default 64), fast (bool, "
            "default false), sizes (tuple[int, ...], default 1,2), label (",
        ),
        (
            "test-options{max-size=big}",
            "option 'max-size' of pass 'test-options' expects int, got 'big'",
        ),
        (
            "test-options{fast=3}",
            "option 'fast' of pass 'test-options' expects bool, got '3'",
        ),
        (
            "test-options{max-size}",
            "option 'max-size' of pass 'test-options' expects int, got no value",
        ),
        (
            "test-required",
            "pass 'test-required' needs option 'count'; options of "
            "'test-required': count (int, required)",
        ),
        ("cse{x=1}", "pass 'cse' has no option 'x'; 'cse' takes no options"),
        ("cse{", "cannot parse the pass pipeline:\npass-pipeline:1:5"),
        ("cse,,dce", "Expected pass name here"),
    ],
)
def test_build_pipeline_explains_mistakes(text, message):
    with pytest.raises(PipelineError) as error:
        build_pipeline(text, TEST_PASSES)
    assert message in str(error.value)


# ---------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------

VALID_IR = """\
func.func @f(%a: i32) -> i32 {
  %zero = arith.constant 0 : i32
  %b = arith.addi %a, %zero : i32
  func.return %b : i32
}
"""


def test_driver_registers_only_permalloys_registries():
    tool = PermalloyOptMain(args=[])
    assert set(tool.available_passes) == set(all_passes())
    assert set(tool.available_targets) == set(all_targets())
    assert {"mlir", "llvm"} <= set(all_targets())
    assert set(tool.ctx.registered_dialect_names) == set(all_dialects())


def test_main_runs_a_pipeline(tmp_path: Path, capsys):
    source = tmp_path / "in.mlir"
    source.write_text(VALID_IR)
    exit_code = _run_main([str(source), "-p", "canonicalize"])
    out = capsys.readouterr().out
    assert exit_code == 0
    assert "arith.addi" not in out
    assert "func.return %a : i32" in out


def test_main_writes_the_output_file(tmp_path: Path, capsys):
    source, target = tmp_path / "in.mlir", tmp_path / "out.mlir"
    source.write_text(VALID_IR)
    assert _run_main([str(source), "-o", str(target)]) == 0
    assert capsys.readouterr().out == ""
    assert "%b = arith.addi %a, %zero : i32" in target.read_text()


def test_main_reports_parse_errors_at_the_file_location(tmp_path: Path, capsys):
    source = tmp_path / "bad.mlir"
    source.write_text("func.func @f() {\n  %0 = arith.constant : i32\n}\n")
    assert _run_main([str(source)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{source}:2:23: error: ")
    assert "Traceback" not in err


def test_main_reports_attribute_errors_where_they_are_written(tmp_path, capsys):
    source = tmp_path / "bad.mlir"
    source.write_text("func.func @f(%x: !ptensor.tensor<[r0], f32>) {\n}\n")
    assert _run_main([str(source)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{source}:1:18: error: size 'r0' may only use size symbols")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["-p", "nope"], "permalloy-opt: error: unknown pass 'nope'; available passes:"),
        (["-p", "cse{x}"], "permalloy-opt: error: pass 'cse' has no option 'x'"),
        (["-t", "mlir{x=1}"], "permalloy-opt: error: target 'mlir' has no option 'x'"),
        (["-t", "mlir{"], "permalloy-opt: error: cannot parse the target:\ntarget:1:6"),
    ],
)
def test_main_reports_bad_pipelines_and_targets(tmp_path, capsys, arguments, message):
    source = tmp_path / "in.mlir"
    source.write_text(VALID_IR)
    assert _run_main([str(source), *arguments]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith(message)
    assert captured.out == ""


def test_main_reports_a_missing_input_file(tmp_path: Path, capsys):
    missing = tmp_path / "missing.mlir"
    assert _run_main([str(missing)]) == 1
    assert capsys.readouterr().err == (
        f"permalloy-opt: error: cannot read input file '{missing}': "
        "No such file or directory\n"
    )


def test_main_reports_verifier_failures_with_the_ir(tmp_path: Path, capsys):
    source = tmp_path / "bad.mlir"
    source.write_text(
        "func.func @f(%x: !ptensor.tensor<[4], f32>) {\n"
        "  %0 = ptensor.cast %x : !ptensor.tensor<[4], f32> -> "
        "!ptensor.tensor<[5], f16>\n"
        "  func.return\n"
        "}\n"
    )
    assert _run_main([str(source)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "permalloy-opt: error: ptensor.cast: result shape [5] should be [4]\n"
    )
    assert '"ptensor.cast"(%x)' in err


def test_main_rejects_unknown_targets_as_usage_errors(capsys):
    with pytest.raises(SystemExit) as exit_info:
        PermalloyOptMain(args=["-t", "triton-ir"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'triton-ir' (choose from mlir, llvm" in capsys.readouterr().err


def test_version_names_permalloy(capsys):
    with pytest.raises(SystemExit) as exit_info:
        PermalloyOptMain(args=["--version"])
    assert exit_info.value.code == 0
    assert re.fullmatch(
        r"permalloy-opt \(permalloy \S+, built on xDSL 0\.74\.\d+\)\n",
        capsys.readouterr().out,
    )


def test_format_error_of_an_unexpected_kind_keeps_its_message():
    assert format_error(ValueError("boom")) == "permalloy-opt: error: boom\n"


def _run_main(arguments: list[str]) -> int:
    with pytest.raises(SystemExit) as exit_info:
        main(arguments)
    code = exit_info.value.code
    return 0 if code is None else int(code)

