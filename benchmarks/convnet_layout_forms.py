"""
Where a convolutional model's time goes in each memory layout: the model run
eagerly, eagerly with the model and its inputs channels-last, under Inductor
(on the model as built and on its channels-last copy), and under permalloy
(as `plan-layouts` plans it, and with every convolution channels-last),
each timed and its device kernels listed with their calls per step.

    python benchmarks/convnet_layout_forms.py --cases timm_convnext_atto,regnet --out forms.txt

On a GPU this tells whether the convolution library converts layouts itself
(the same `nchwToNhwc` / `nhwcToNchw` kernels in every form): then no layout
plan removes them. The kernel tables need a GPU (on the CPU the profiler's
operators are listed instead). `h200-convnet-layouts-probe.txt` is its output
on an H200.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch

from permalloy.passes import plan_layouts
from permalloy.passes.convolution_layouts import NOT_MEASURED
from permalloy.tools.backend import permalloy_backend
from permalloy.tools.bench.kernel_profile import _profiled_kernels  # noqa: PLC2701
from permalloy.tools.bench.profiles import profile_for
from permalloy.tools.bench.suites import make_suite

KERNELS_LISTED = 25


def _median_ms(fn: Callable[[], Any], sync: Callable[[], None], calls: int = 40) -> float:
    for _ in range(5):
        fn()
    sync()
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


def _every_convolution_channels_last(model: torch.nn.Module, inputs: tuple) -> Callable[..., Any]:
    """The model compiled by permalloy (at a first call on `inputs`) with
    `plan-layouts` choosing channels-last for every convolution: its timer
    reports nothing."""
    measured = plan_layouts.CONVOLUTION_CHOICES["measured"]
    plan_layouts.CONVOLUTION_CHOICES["measured"] = lambda *args, **kwargs: NOT_MEASURED
    try:
        compiled = torch.compile(model, backend=permalloy_backend, options={"cache": False})
        compiled(*inputs)
        return compiled
    finally:
        plan_layouts.CONVOLUTION_CHOICES["measured"] = measured


def probe(name: str, device: str, quick: bool, write: Callable[[str], None]) -> None:
    profile = profile_for(device, quick)
    case = make_suite("models").build(name, profile, profile.size.seed)
    model = case.model.to(device).eval()
    inputs = tuple(t.to(device) for t in case.inputs)
    last = copy.deepcopy(model).to(memory_format=torch.channels_last)
    last_inputs = tuple(t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t for t in inputs)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    forms: dict[str, Callable[[], Any]] = {}
    with torch.no_grad():
        forms["eager"] = lambda: model(*inputs)
        forms["eager, channels-last"] = lambda: last(*last_inputs)
        torch._dynamo.reset()  # noqa: SLF001
        inductor = torch.compile(model, backend="inductor")
        inductor_last = torch.compile(last, backend="inductor")
        planned = torch.compile(model, backend=permalloy_backend, options={"cache": False})
        forms["inductor"] = lambda: inductor(*inputs)
        forms["inductor, channels-last model"] = lambda: inductor_last(*last_inputs)
        forms["permalloy, as planned"] = lambda: planned(*inputs)
        for form in list(forms.values()):
            form()
        every = _every_convolution_channels_last(copy.deepcopy(model), inputs)
        forms["permalloy, every convolution channels-last"] = lambda: every(*inputs)
        write(f"===== {name} on {device}, inputs {[tuple(t.shape) for t in inputs]}")
        for form, fn in forms.items():
            milliseconds = _median_ms(fn, sync)
            kernels = _profiled_kernels(lambda i: fn(), device, sync, 10)
            total = sum(seconds for _, seconds, _ in kernels) * 1e3
            launches = sum(count for _, _, count in kernels)
            write(f"--- {name} {form}: wall {milliseconds:.3f} ms, kernels {total:.3f} ms, launches {launches:.0f}")
            for kernel, seconds, count in sorted(kernels, key=lambda k: -k[1])[:KERNELS_LISTED]:
                write(f"   {seconds * 1e3:8.3f} ms {count:5.1f}x  {kernel[:110]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="timm_convnext_atto,regnet,timm_efficientnet_b0,convnext")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--quick", action="store_true", help="the suite's quick sizes")
    parser.add_argument("--out", default=None, help="also write the tables to this file")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    sink = open(args.out, "w") if args.out else None  # noqa: SIM115 - closed below

    def write(line: str) -> None:
        print(line, flush=True)
        if sink is not None:
            sink.write(line + "\n")

    try:
        for name in args.cases.split(","):
            probe(name, args.device, args.quick, write)
    finally:
        if sink is not None:
            sink.close()


if __name__ == "__main__":
    main()
