"""
permalloy-bench --train: training steps timed, gradients compared with eager's
(gradients that are zero in exact arithmetic included), failures reported.
Runs use `--quick` on small cases.
"""

from __future__ import annotations

import json

import pytest
import torch

from permalloy.tools.bench import cli
from permalloy.tools.bench.accuracy import GRADIENT_TOLERANCES, compare_gradients
from permalloy.tools.bench.backends import Permalloy
from permalloy.tools.bench.training import SeededLoss, Training, without_dropout

QUICK_TRAIN = ["--train", "--quick", "--backends", "eager,permalloy"]


def test_train_json_has_gradient_accuracy_and_both_graphs(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "train.json"
    argv = [*QUICK_TRAIN, "--cases", "layer_norm,conv_bn_relu", "--json", str(path)]
    assert cli.main(argv) == 0
    table = capsys.readouterr().out
    assert "(training steps)" in table and "perm grad err" in table and "BW/copy" not in table
    data = json.loads(path.read_text())
    assert data["config"]["mode"] == "train"
    layer_norm, conv = data["cases"]
    assert layer_norm["traffic_bytes"] is None and layer_norm["input_sets"] >= 2
    for case, names in (
        (layer_norm, {"weight", "bias", "input 0"}),
        (conv, {"conv.weight", "conv.bias", "bn.weight", "bn.bias", "input 0"}),
    ):
        eager, ours = case["results"]["eager"], case["results"]["permalloy"]
        assert eager["ok"] and eager["speedup_vs_eager"] == 1.0
        assert ours["ok"] and ours["error"] is None and ours["compile_s"] > 0
        accuracy = ours["accuracy"]
        assert set(accuracy["errors"]) == names
        assert accuracy["tolerance"] == GRADIENT_TOLERANCES[torch.float32]
        assert accuracy["passed"] and accuracy["relative_error"] < 1e-5
        assert accuracy["relative_error"] == accuracy["errors"][accuracy["worst"]]
        assert ours["time"]["median_s"] > 0 and ours["speedup_vs_eager"] > 0
        kernels = ours["kernels"]
        assert kernels["graphs"] == 2 and kernels["graphs_fell_back"] == 0  # forward, backward
        assert kernels["kernels"] == sum(g["kernels"] for g in kernels["per_graph"])
        assert all(g["compiled"] and g["kernels"] >= 1 for g in kernels["per_graph"])
        assert all(g["host_us_per_call"] > 0 for g in kernels["per_graph"]), "timed after the timed steps"
    # conv.bias feeds training-mode batch norm: its gradient is zero in exact
    # arithmetic and rounding noise in eager; the floor keeps it from counting.
    assert conv["results"]["permalloy"]["accuracy"]["errors"]["conv.bias"] < 1e-5
    assert data["geomean"]["permalloy"]["speedup_vs_eager"] > 0


def test_train_failure_is_reported_not_raised(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(Permalloy, "compile", lambda self, model: 1 / 0)
    assert cli.main([*QUICK_TRAIN, "--cases", "pointwise_chain", "--json", "-"]) == 0
    results = json.loads(capsys.readouterr().out)["cases"][0]["results"]
    assert results["eager"]["ok"] and results["eager"]["time"]["median_s"] > 0
    failed = results["permalloy"]
    assert not failed["ok"] and failed["error"] == "ZeroDivisionError: division by zero"


def test_gradient_errors_are_per_gradient_with_a_floor() -> None:
    torch.manual_seed(0)
    weight = torch.randn(64, 64)
    noise = 1e-7 * torch.randn(64)  # a gradient that is zero up to rounding
    expected = [{"weight": weight, "bias": noise, "input 0": None}]
    actual = [{"weight": weight * (1 + 5e-5), "bias": -noise, "input 0": None}]
    accuracy = compare_gradients(actual, expected)
    assert set(accuracy.errors) == {"weight", "bias"}
    assert accuracy.errors["weight"] == pytest.approx(5e-5, rel=1e-2)
    assert accuracy.errors["bias"] < 1e-5 and accuracy.passed
    wrong = [{"weight": weight, "bias": torch.ones(64), "input 0": None}]
    failed = compare_gradients(wrong, expected)
    assert failed.worst == "bias" and not failed.passed
    missing = compare_gradients([{"weight": None, "bias": noise, "input 0": None}], expected)
    assert missing.worst == "weight" and missing.errors["weight"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="gradients of"):
        compare_gradients([{"weight": weight}], expected)


def test_training_step_resets_gradients_and_seeds_the_loss() -> None:
    training = Training()
    model = torch.nn.Linear(4, 3)
    (inputs,) = training.prepare_inputs([(torch.randn(2, 4),)])
    loss_model = training.prepare(model, inputs)
    assert isinstance(loss_model, SeededLoss) and model.training
    first, second = training.results(loss_model, loss_model, [inputs, inputs])
    torch.testing.assert_close(first["weight"], second["weight"])  # not accumulated
    torch.testing.assert_close(first["bias"], loss_model.seed_0.sum(0))
    torch.testing.assert_close(first["input 0"], loss_model.seed_0 @ model.weight.detach())


class _DropPath(torch.nn.Module):
    """Stochastic depth as timm and Hugging Face write it: a float `drop_prob`."""

    def __init__(self) -> None:
        super().__init__()
        self.drop_prob = 0.1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.drop_prob == 0.0:
            return x
        keep = torch.rand(x.shape[0], 1, device=x.device) >= self.drop_prob
        return x * keep / (1 - self.drop_prob)


class _Head(torch.nn.Module):
    """A classifier head with a functional dropout rate, as timm's."""

    def __init__(self) -> None:
        super().__init__()
        self.drop_rate = 0.2
        self.linear = torch.nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(torch.nn.functional.dropout(x, self.drop_rate, self.training))


def test_training_switches_dropout_and_drop_path_off() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5), _DropPath(), _Head())
    attention = torch.nn.MultiheadAttention(8, 2, dropout=0.3)
    Training().prepare(model, (torch.randn(4, 8),))
    assert model.training and model[1].p == 0.0 and model[2].drop_prob == 0.0 and model[3].drop_rate == 0.0
    x = torch.randn(4, 8)
    assert torch.equal(model(x), model(x)), "a training-mode forward is deterministic"
    without_dropout(attention)
    assert attention.dropout == 0.0


def test_float64_reference_of_a_training_step(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """With `--train --float64-reference` each backend, eager float32
    included, has the error of its gradients against a float64 training
    step's, measured as the gradient error against eager is: rounding-sized."""
    path = tmp_path / "train.json"
    assert cli.main([*QUICK_TRAIN, "--cases", "conv_bn_relu", "--float64-reference", "--json", str(path)]) == 0
    assert "rel err against the model run in float64" in capsys.readouterr().out
    (case,) = json.loads(path.read_text())["cases"]
    for backend in ("eager", "permalloy"):
        error = case["results"][backend]["float64_error"]
        assert 0 < error < 1e-4, (backend, error)
