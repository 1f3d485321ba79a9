"""
A training step's gradients, eager float32 and permalloy, each against the
same step run in float64: for every parameter (and the input), the relative
error `||g - g64|| / ||g64||`. The bench compares permalloy with eager
float32; this says which of the two is nearer the exact step, and which
gradients are rounding noise (a float64 gradient many orders below the
float32 ones: a parameter whose exact gradient is zero, such as a batch-norm
bias whose output reaches the loss only through convolutions into another
batch norm in training mode, which removes any per-channel constant).

    python benchmarks/gradients_against_float64.py efficientvit_b0 [--worst 12]

The model is the timm suite's case (`permalloy-bench --suite timm`) at the CPU
size, in training mode, on the CPU (permalloy's LLVM target); the loss is
the sum of its output times a fixed random tensor.
"""

from __future__ import annotations

import argparse
import copy
import warnings

import torch


def gradients(model: torch.nn.Module, image: torch.Tensor, weights: torch.Tensor, compiled: bool) -> list[torch.Tensor]:
    """The input's and each parameter's gradient of one step of a copy of `model`."""
    model = copy.deepcopy(model)
    run = torch.compile(model, backend="permalloy", options={"fallback": "raise"}) if compiled else model
    image = image.clone().requires_grad_(True)
    (run(image) * weights.to(image.dtype)).sum().backward()
    return [image.grad, *(p.grad for p in model.parameters())]


def relative(value: torch.Tensor, exact: torch.Tensor) -> float:
    return ((value.double() - exact).norm() / exact.norm()).item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a timm model name")
    parser.add_argument("--worst", type=int, default=12, help="how many of the worst gradients to list")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from permalloy.tools.models.timm_catalog import make_timm_case

    case = make_timm_case(args.model, "cpu", 0)
    model = case.model.train()
    (image,) = case.inputs
    torch.manual_seed(1)
    weights = torch.randn_like(model(image))
    names = ["input", *(name for name, _ in model.named_parameters())]
    eager = gradients(model, image, weights, compiled=False)
    permalloy = gradients(model, image, weights, compiled=True)
    exact = gradients(copy.deepcopy(model).double(), image.double(), weights, compiled=False)
    rows = sorted(
        ((relative(e, x), relative(p, x), n) for e, p, x, n in zip(eager, permalloy, exact, names, strict=True)),
        key=lambda row: -row[1],
    )
    print(f"{len(rows)} gradients; above 1e-4 against float64: eager {sum(r[0] > 1e-4 for r in rows)}, permalloy {sum(r[1] > 1e-4 for r in rows)}")
    for eager_error, permalloy_error, name in rows[: args.worst]:
        print(f"  eager {eager_error:.1e}  permalloy {permalloy_error:.1e}  {name}")


if __name__ == "__main__":
    main()
