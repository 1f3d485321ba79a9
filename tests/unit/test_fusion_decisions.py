"""
The decisions record of `fuse-loops` (`FusionDecisions`): recording changes
no decision (every function of the pass's lit tests fuses to the same IR,
under each option, with and without a record), and the record names the rule
of each refusal as the pass decides it: inlining refused by kernel size or
recompute cost, loop ops kept apart by a reduction to one element, different
rows, pointwise shapes, a host op between them, the end of a kernel, or
grouping turned off.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from permalloy.dialects import make_context
from permalloy.passes.fuse_loops import FuseLoopsPass
from permalloy.passes.fusion_decisions import GROUP_RULES, INLINE_RULES, FusionDecisions

LIT_TESTS = [
    Path(__file__).parents[1] / "filecheck" / "passes" / name
    for name in ("fuse_loops.mlir", "fuse_loops_single_row.mlir")
]


def _chunks() -> list[tuple[str, str]]:
    named = []
    for path in LIT_TESTS:
        for number, chunk in enumerate(path.read_text().split("// -----")):
            code = "\n".join(line for line in chunk.splitlines() if not line.startswith("//"))
            if "func.func" in code:
                named.append((f"{path.stem}:{number}", code))
    return named


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def fuse(text: str, **options) -> tuple[str, FusionDecisions]:
    module = parse(text)
    decisions = FusionDecisions()
    FuseLoopsPass(**options).recording_into(decisions).apply(make_context(), module)
    return str(module), decisions


OPTIONS = [{}, {"max_kernel_size": 4}, {"max_recompute": 1}, {"group": False}, {"inline": False}]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_recording_changes_no_decision(options):
    for name, code in _chunks():
        plain = parse(code)
        FuseLoopsPass(**options).apply(make_context(), plain)
        recorded, decisions = fuse(code, **options)
        assert recorded == str(plain), name
        for refusal in decisions.inline_refusals:
            assert refusal.rule in INLINE_RULES, (name, refusal)
        for separation in decisions.separations:
            assert separation.rule in GROUP_RULES, (name, separation)


def test_the_recording_pass_prints_the_same_options():
    plain = FuseLoopsPass(max_kernel_size=7)
    recording = plain.recording_into(FusionDecisions())
    assert str(recording) == str(plain) == "fuse-loops{max_kernel_size=7}"
    assert recording == plain and recording.decisions is not None and plain.decisions is None


T44 = "!ptensor.tensor<[4, 4], f32>"
T88 = "!ptensor.tensor<[8, 8], f32>"
T0 = "!ptensor.tensor<[], f32>"


def _exp(name: str, source: str, t: str = T44) -> str:
    return f"""
    %{name} = loop.pointwise ins(%a = %{source} : {t}) -> {t} {{
      %v = loop.load %a[d0, d1] : f32
      %t1 = math.exp %v : f32
      %t2 = math.sin %t1 : f32
      loop.yield %t2 : f32
    }}"""


def _function(body: str, params: str, results: str) -> str:
    return f"""builtin.module {{
  func.func @f({params}) -> {results} {{{body}
  }}
}}"""


FULL_SUM_THEN_POINTWISE = _function(
    f"""
    %s = loop.reduce sum ins(%a = %x : {T88}) over [8, 8] -> {T0} {{
      %v = loop.load %a[r0, r1] : f32
      loop.yield %v : f32
    }}
    %r = loop.pointwise ins(%a = %y : {T44}, %b = %s : {T0}) -> {T44} {{
      %v = loop.load %a[d0, d1] : f32
      %w = loop.load %b[] : f32
      %m = arith.mulf %v, %w : f32
      loop.yield %m : f32
    }}
    func.return %r : {T44}""",
    f"%x : {T88}, %y : {T44}",
    T44,
)


def test_a_reduction_to_one_element_and_its_reader_are_kept_apart_by_that_rule():
    _, decisions = fuse(FULL_SUM_THEN_POINTWISE)
    (separation,) = decisions.separations
    assert (separation.producer, separation.consumer) == ("s", "r")
    assert separation.rule == "reduction-to-one-element"
    assert "rows none and 4" in separation.detail


def test_a_producer_read_many_times_is_refused_by_max_recompute():
    # %e is read at every (d0, d1) of a [4, 4, 4] reader: 4 times per element
    text = _function(
        _exp("e", "x")
        + f"""
    %r = loop.pointwise ins(%a = %e : {T44}) -> !ptensor.tensor<[4, 4, 4], f32> {{
      %v = loop.load %a[d1, d2] : f32
      loop.yield %v : f32
    }}
    func.return %r : !ptensor.tensor<[4, 4, 4], f32>""",
        f"%x : {T44}",
        "!ptensor.tensor<[4, 4, 4], f32>",
    )
    _, decisions = fuse(text)
    (refusal,) = decisions.inline_refusals
    assert (refusal.producer, refusal.consumer, refusal.rule) == ("e", "r", "max-recompute")
    assert "read 4 times" in refusal.detail
    (separation,) = decisions.separations
    assert separation.rule == "pointwise-shapes" and separation.not_inlined == refusal


def test_a_kernel_size_refusal_names_the_sizes():
    text = _function(
        _exp("e", "x") + _exp("f", "e") + f"\n    func.return %f : {T44}", f"%x : {T44}", T44
    )
    _, decisions = fuse(text, max_kernel_size=3)
    (refusal,) = decisions.inline_refusals
    assert refusal.rule == "max-kernel-size" and "4 ops together, max-kernel-size=3" in refusal.detail
    # not inlined, but grouped: one kernel, nothing kept apart
    assert decisions.groups == [["e", "f"]] and decisions.separations == []


def test_a_host_op_between_producer_and_consumer_is_named():
    text = _function(
        f"""
    %s = loop.reduce sum ins(%a = %x : {T44}) over [4] -> !ptensor.tensor<[4], f32> {{
      %v = loop.load %a[d0, r0] : f32
      loop.yield %v : f32
    }}
    %m = ptensor.mm %y, %y : {T44}, {T44} -> {T44}
    %r = loop.pointwise ins(%a = %m : {T44}, %b = %s : !ptensor.tensor<[4], f32>) -> {T44} {{
      %v = loop.load %a[d0, d1] : f32
      %w = loop.load %b[d0] : f32
      %p = arith.addf %v, %w : f32
      loop.yield %p : f32
    }}
    func.return %r : {T44}""",
        f"%x : {T44}, %y : {T44}",
        T44,
    )
    _, decisions = fuse(text)
    (separation,) = decisions.separations
    assert separation.rule == "host-op-between" and "ptensor.mm" in separation.detail


def test_without_grouping_every_pair_is_apart_by_grouping_off():
    _, decisions = fuse(FULL_SUM_THEN_POINTWISE, group=False)
    assert [s.rule for s in decisions.separations] == ["grouping-off"]


def test_inlines_and_origins_follow_the_producers():
    text = _function(_exp("e", "x") + _exp("f", "e") + f"\n    func.return %f : {T44}", f"%x : {T44}", T44)
    _, decisions = fuse(text)
    assert decisions.inlines == [("f", "e")]
    assert decisions.origins == {"f": ["f", "e"]}
    assert decisions.separations == []


def test_decisions_are_logged_as_they_are_made(caplog):
    with caplog.at_level(logging.DEBUG, logger="permalloy.fusion"):
        fuse(FULL_SUM_THEN_POINTWISE)
    messages = [r.getMessage() for r in caplog.records if r.name == "permalloy.fusion"]
    assert any("stay in different kernels: reduction-to-one-element" in m for m in messages), messages


def test_unnamed_loop_ops_are_labelled_by_position():
    text = re.sub(r"%(s|r) = loop", lambda m: f"%{'0' if m.group(1) == 's' else '1'} = loop", FULL_SUM_THEN_POINTWISE)
    text = text.replace("%b = %s", "%b = %0").replace("func.return %r", "func.return %1")
    _, decisions = fuse(text)
    (separation,) = decisions.separations
    assert (separation.producer, separation.consumer) == ("#0", "#1")


def test_rows_of_different_sizes_are_named():
    # a [4, 8] row sum and a [8, 4] reader of its transpose-shaped output
    text = _function(
        f"""
    %s = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4], f32> {{
      %v = loop.load %a[d0, r0] : f32
      loop.yield %v : f32
    }}
    %r = loop.pointwise ins(%a = %y : !ptensor.tensor<[8, 4], f32>, %b = %s : !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[8, 4], f32> {{
      %v = loop.load %a[d0, d1] : f32
      %w = loop.load %b[d1] : f32
      %m = arith.mulf %v, %w : f32
      loop.yield %m : f32
    }}
    func.return %r : !ptensor.tensor<[8, 4], f32>""",
        "%x : !ptensor.tensor<[4, 8], f32>, %y : !ptensor.tensor<[8, 4], f32>",
        "!ptensor.tensor<[8, 4], f32>",
    )
    _, decisions = fuse(text)
    (separation,) = decisions.separations
    assert separation.rule == "different-rows" and "rows 4 and 8" in separation.detail


def test_a_loop_op_between_that_ends_the_kernel_is_named():
    # %r reads %s, but %q (a full reduction) comes between and ends %s's kernel
    text = _function(
        f"""
    %s = loop.reduce sum ins(%a = %x : {T44}) over [4] -> !ptensor.tensor<[4], f32> {{
      %v = loop.load %a[d0, r0] : f32
      loop.yield %v : f32
    }}
    %q = loop.reduce sum ins(%a = %x : {T44}) over [4, 4] -> {T0} {{
      %v = loop.load %a[r0, r1] : f32
      loop.yield %v : f32
    }}
    %r = loop.pointwise ins(%a = %y : {T44}, %b = %s : !ptensor.tensor<[4], f32>, %c = %q : {T0}) -> {T44} {{
      %v = loop.load %a[d0, d1] : f32
      %w = loop.load %b[d0] : f32
      %u = loop.load %c[] : f32
      %m = arith.mulf %v, %w : f32
      %n = arith.mulf %m, %u : f32
      loop.yield %n : f32
    }}
    func.return %r : {T44}""",
        f"%x : {T44}, %y : {T44}",
        T44,
    )
    _, decisions = fuse(text)
    rules = {(s.producer, s.consumer): (s.rule, s.detail) for s in decisions.separations}
    assert rules[("s", "r")][0] == "kernel-ended"
    assert "q (reduce sum [4, 4] -> []) did not join it: reduction-to-one-element" in rules[("s", "r")][1]
    assert rules[("q", "r")][0] == "reduction-to-one-element"
