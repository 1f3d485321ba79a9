"""
CPU host programs keep their intermediate buffers between calls
(`targets.workspace`), on both hosts: repeated calls match eager, a result
is never memory a later call writes, and calls from several threads at once
each get a workspace of their own.
"""

from __future__ import annotations

import glob
import os
import threading

import pytest
import torch

from permalloy.tools.backend import permalloy_backend


class ConvolutionsAndProducts(torch.nn.Module):
    """Convolutions, kernels between them and a product: intermediates the
    workspace keeps, a library result it does not, a result it must not."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.second = torch.nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.head = torch.nn.Linear(16 * 16, 10)

    def forward(self, x):
        y = torch.relu(self.first(x)).exp().sqrt()
        y = torch.nn.functional.gelu(self.second(y)) + y
        return self.head(y.mean(1).flatten(1)).tanh()


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()  # noqa: SLF001
    yield
    torch._dynamo.reset()  # noqa: SLF001


@pytest.mark.parametrize("host", ["native", "python"])
def test_repeated_calls_keep_their_results(tmp_path, host):
    torch.manual_seed(0)
    model = ConvolutionsAndProducts().eval()
    compiled = torch.compile(model, backend=permalloy_backend, options={"host": host, "dump_dir": str(tmp_path)})
    inputs = [torch.randn(2, 3, 16, 16) for _ in range(3)]
    with torch.no_grad():
        results = [compiled(x) for x in inputs]
        for x, result in zip(inputs, results):
            torch.testing.assert_close(result, model(x), rtol=1e-4, atol=1e-5)
    (program,) = glob.glob(os.path.join(tmp_path, "graph_000", "*_host.py"))
    with open(program) as f:
        assert "workspace.tensors[" in f.read()


@pytest.mark.parametrize("host", ["native", "python"])
def test_calls_from_several_threads_each_get_a_workspace(host):
    torch.manual_seed(1)
    model = ConvolutionsAndProducts().eval()
    compiled = torch.compile(model, backend=permalloy_backend, options={"host": host})
    inputs = [torch.randn(2, 3, 16, 16) for _ in range(4)]
    with torch.no_grad():
        compiled(inputs[0])
        expected = [model(x) for x in inputs]
    failures: list[BaseException] = []

    def run(index: int) -> None:
        try:
            with torch.no_grad():
                for _ in range(20):
                    torch.testing.assert_close(compiled(inputs[index]), expected[index], rtol=1e-4, atol=1e-5)
        except BaseException as error:  # noqa: BLE001 - reported by the test's thread
            failures.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(inputs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[0]
