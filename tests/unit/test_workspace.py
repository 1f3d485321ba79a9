"""
The allocations a CPU host program keeps between calls (`targets.workspace`):
those of constant sizes whose memory stays in the call. A buffer the function
returns, directly or through a view, one a fallback to torch reads (whose
result may be its memory), one of symbolic sizes, and those past the limit
are allocated on each call; a pool hands each call a workspace no other call
holds.
"""

from __future__ import annotations

import torch
from xdsl.dialects import func
from xdsl.parser import Parser

from permalloy.dialects import buffer as buf
from permalloy.dialects import make_context
from permalloy.targets import workspace
from permalloy.targets.workspace import WorkspacePool, kept_allocations

PROGRAM = """
buffer.kernel @fill() -> (!ptensor.tensor<[8, 4], f32>) {
  %v = loop.pointwise ins() -> !ptensor.tensor<[8, 4], f32> {
    %c = arith.constant 1.0 : f32
    loop.yield %c : f32
  }
  buffer.yield %v : !ptensor.tensor<[8, 4], f32>
}
func.func @f(%n: index) -> (!buffer.buffer<[4, 8], f32, strides [1, 4]>, !buffer.buffer<[8, 4], f32>) {
  %kept = buffer.alloc : !buffer.buffer<[8, 4], f32>
  buffer.launch @fill ins() outs(%kept : !buffer.buffer<[8, 4], f32>)
  buffer.dealloc %kept : !buffer.buffer<[8, 4], f32>
  %viewed = buffer.alloc : !buffer.buffer<[8, 4], f32>
  buffer.launch @fill ins() outs(%viewed : !buffer.buffer<[8, 4], f32>)
  %t = buffer.view %viewed : !buffer.buffer<[8, 4], f32> -> !buffer.buffer<[4, 8], f32, strides [1, 4]>
  %sorted = buffer.alloc : !buffer.buffer<[8, 4], f32>
  buffer.launch @fill ins() outs(%sorted : !buffer.buffer<[8, 4], f32>)
  %s, %i = buffer.extern ins(%p = %sorted : !buffer.buffer<[8, 4], f32>) -> (!buffer.buffer<[8, 4], f32>, !buffer.buffer<[8, 4], i64>) attributes {op = "sort"} {
    %v, %w = ptensor.fallback "aten.sort.default"(%p) [#ptensor.operand<0>, 1 : i64] : (!ptensor.tensor<[8, 4], f32>) -> (!ptensor.tensor<[8, 4], f32>, !ptensor.tensor<[8, 4], i64>)
    buffer.yield %v, %w : !ptensor.tensor<[8, 4], f32>, !ptensor.tensor<[8, 4], i64>
  }
  %symbolic = buffer.alloc : !buffer.buffer<[s0], f32>
  buffer.dealloc %symbolic : !buffer.buffer<[s0], f32>
  func.return %t, %s : !buffer.buffer<[4, 8], f32, strides [1, 4]>, !buffer.buffer<[8, 4], f32>
}
"""


def _function() -> func.FuncOp:
    module = Parser(make_context(), PROGRAM).parse_module()
    return next(op for op in module.walk() if isinstance(op, func.FuncOp))


def test_only_allocations_of_constant_sizes_staying_in_the_call_are_kept():
    kept = kept_allocations(_function())
    assert [op.result.name_hint for op in kept] == ["kept"]


def test_allocations_past_the_limit_are_made_each_call(monkeypatch):
    monkeypatch.setattr(workspace, "WORKSPACE_LIMIT_BYTES", 8 * 4 * 4 - 1)
    assert kept_allocations(_function()) == []


def test_a_pool_hands_out_a_workspace_no_other_call_holds():
    allocations = [op for op in _function().body.block.ops if isinstance(op, buf.AllocOp)][:1]
    pool = WorkspacePool.of(allocations)
    first = pool.take()
    second = pool.take()  # the first is still held: a new one
    assert first is not second
    assert first.tensors[0].shape == (8, 4) and first.tensors[0].dtype == torch.float32
    pool.give(first)
    assert pool.take() is first
