"""Hand-written kernels' calls as launch plans (`launch_plan.py`), and the
extern calls that run them (`PlannedCall`): a plan runs as the call it
describes, and what a native host program would make of a call is kept only
where every call ran the plan."""

from __future__ import annotations

import torch
import triton.language as tl

from permalloy.targets.externs.calls import PlannedCall
from permalloy.targets.triton.launch_plan import (
    Allocation,
    LaunchPlan,
    PlannedLaunch,
    Slot,
    allocate,
    recorded_launches,
    run_plan,
)
from permalloy.targets.triton.modal_kernel import modal_jit


@modal_jit()
def scaled_sum(X, TOTAL, OUT, count, factor, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(X + offsets, mask=offsets < count, other=0.0)
    tl.store(OUT + offsets, x * factor, mask=offsets < count)
    tl.atomic_add(TOTAL, tl.reduce(x, 0, tl.standard._sum_combine))  # runs in the interpreter, as tl.sum would not


def _plan(count: int) -> LaunchPlan:
    """`out = x * 2` and, in a zeroed temporary, the sum of `x`."""
    return LaunchPlan(
        results=(Allocation((count,), (1,), torch.float32),),
        temporaries=(Allocation((1,), (1,), torch.float32),),
        launches=(PlannedLaunch(scaled_sum, (1,), (Slot(0), Slot(2), Slot(1), count, 2.0), {"BLOCK": 16}),),
    )


def test_a_plan_allocates_zeroes_and_launches_with_tensors_by_position(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x = torch.randn(10)
    (out,), launched = run_plan(_plan(10), [x])
    assert torch.equal(out, x * 2) and out.stride() == (1,)
    assert launched == [None]  # the interpreter has no binaries
    given = torch.full((10,), 7.0)
    (into,), _ = run_plan(_plan(10), [x], out=[given])
    assert into is given and torch.equal(given, x * 2)


def test_allocations_know_their_memory():
    assert Allocation((2, 3), (3, 1), torch.float32).storage_elements == 6
    assert Allocation((2, 3), (1, 2), torch.float32).storage_elements == 6
    assert Allocation((4, 3), (0, 1), torch.float32).storage_elements == 3  # broadcast rows
    assert Allocation((0, 3), (3, 1), torch.float32).storage_elements == 0
    zeros = allocate(Allocation((2, 2), (1, 2), torch.int32), torch.device("cpu"), zeroed=True)
    assert zeros.stride() == (1, 2) and not zeros.any()


def test_a_plan_run_without_binaries_is_not_recorded(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x = torch.randn(10)
    _, launched = run_plan(_plan(10), [x])
    assert recorded_launches(_plan(10), [x], launched) is None  # CPU tensors, no binaries


def test_a_planned_call_runs_the_plan_or_the_library(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")

    def run(tensors):
        (x,) = tensors
        if x.numel() > 16:
            return None
        plan = _plan(x.numel())
        (out,), launched = run_plan(plan, [x])
        return [out], plan, launched

    call = PlannedCall(run, lambda tensors, symbols: (tensors[0] * 2,))
    x = torch.randn(10)
    (out,) = call([x], {})
    assert torch.equal(out, x * 2)
    assert call.native_launches() is None  # run in the interpreter: nothing a native program could launch
    call.recording = "recorded"  # as a first call on a GPU keeps it
    assert call.native_launches() == "recorded"
    wide = torch.randn(20)
    (out,) = call([wide], {})  # the library's
    assert torch.equal(out, wide * 2)
    assert call.native_launches() is None  # a call ran something else than the plan
