"""
Memory and size limits of compiled code: resident memory stays flat over many
calls of one graph, each compiled kernel frees its pass manager and a
dropped graph its JIT (machine code and LLVM context), and tensors of more
than 2^31 elements are indexed with 64-bit offsets.

Resident memory is read from /proc (Linux); its bound is far below what a
leak per call grows by and far above the allocator's noise.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import weakref

import pytest
import torch

from llvmlite.binding.newpassmanagers import NewPassManager

from permalloy.targets.llvm import LLVMTarget
from permalloy.targets.llvm.jit import JIT
from permalloy.targets.llvm.testing import parse_kernel, pointwise_kernel, run

pytestmark = [
    pytest.mark.usefixtures("fresh_backend"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm"),
]

MIB = 2**20


def resident_bytes() -> int:
    """Resident memory after a collection, with freed heap given back to the
    system (glibc keeps freed blocks otherwise, which no leak is)."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _graph(x, y):
    return torch.softmax(x * 2 + y, -1).sum(0) + (x @ y.t()).mean()


def test_resident_memory_is_flat_over_ten_thousand_calls() -> None:
    compiled = torch.compile(_graph, backend="permalloy", options={"fallback": "raise", "target": "llvm"})
    x, y = torch.randn(64, 33), torch.randn(64, 33)
    for _ in range(200):
        compiled(x, y)
    before = resident_bytes()
    for _ in range(10_000):
        compiled(x, y)
    assert resident_bytes() - before < 2 * MIB


def test_each_kernel_frees_its_pass_manager(monkeypatch) -> None:
    """llvmlite's module pass manager does not free itself (48 KiB a kernel,
    never given back): the JIT frees each one after its run."""
    freed = []
    dispose = NewPassManager._dispose  # noqa: SLF001
    monkeypatch.setattr(NewPassManager, "_dispose", lambda manager: (freed.append(manager), dispose(manager)))
    kernel = parse_kernel(pointwise_kernel("[4, 64]", ["f32"], "f32", "%y = math.exp %a0 : f32"))
    x, out = torch.randn(4, 64), torch.empty(4, 64)
    for _ in range(3):
        run(LLVMTarget(), kernel, [x], [out])
    assert len(freed) == 3 and all(manager.closed for manager in freed)
    torch.testing.assert_close(out, x.exp())


def _live_jits() -> dict[int, weakref.ref]:
    gc.collect()
    return {id(o): weakref.ref(o) for o in gc.get_objects() if type(o) is JIT}


def test_a_graph_frees_its_jit_when_dynamo_drops_it() -> None:
    before = _live_jits()
    compiled = torch.compile(lambda x: (x * 3).relu().sum(-1), backend="permalloy", options={"target": "llvm"})
    compiled(torch.randn(8, 16))
    made = [ref for key, ref in _live_jits().items() if key not in before]
    assert made
    del compiled
    torch._dynamo.reset()  # noqa: SLF001
    gc.collect()
    assert all(ref() is None for ref in made)


def test_more_than_two_to_the_31_elements() -> None:
    """A pointwise kernel, a reduction over every element and one over a slice
    at the far end of a tensor of 2^31 + 77 bytes."""
    size = 2**31 + 77
    x = torch.full((size,), 3, dtype=torch.uint8)
    x[-5:] = 7

    def fn(x):
        return x * 2 + 1, x.sum(), x.view(-1, 1)[size - 3 :].sum(0)

    compiled = torch.compile(fn, backend="permalloy", options={"fallback": "raise", "target": "llvm"})
    doubled, total, tail = compiled(x)
    assert doubled.shape == (size,) and doubled.dtype == torch.uint8
    assert doubled[:4].tolist() == [7] * 4 and doubled[-6:].tolist() == [7] + [15] * 5
    assert bool((doubled[2**31 - 8 : 2**31 + 8] == 7).all())
    assert total.item() == 3 * size + 4 * 5
    assert tail.tolist() == [21]
