"""
The pointwise convolutions of the suite's convolutional models, each run by
the convolution library and as the matrix product `convolutions-as-products`
makes of it, and the whole models under eager, Inductor (with and without its
own `conv_1x1_as_mm`) and permalloy.

For every 1x1, stride-1, ungrouped convolution a model runs (found with
forward hooks), four forms on random tensors of its sizes: the library's
convolution in NCHW and in channels-last memory, `mm` of the channels-last
input's `[N * H * W, C]` rows by the transposed weight, and `bmm` of the
weight (batch stride 0) by the NCHW input's `[N, C, H * W]` images; each
model's sums, and each geometry's times (first model that has it).

    python benchmarks/convolution_products.py --device cuda --cases regnet,mobilenet_v2 --json out.json

Float32 with TF32 off, as the bench. GPU times are `triton.testing.do_bench`
medians (L2 flushed between calls); CPU times the best of 20 calls.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import torch

from permalloy.tools.models import make_model

FORMS = ("nchw", "cl", "mm_cl", "bmm_nchw")


def _timer(device: str) -> Callable[[Callable[[], object]], float]:
    """Seconds one call takes on `device`."""
    if device == "cuda":
        from triton.testing import do_bench

        return lambda fn: do_bench(fn, warmup=5, rep=30) / 1e3

    def best(fn: Callable[[], object]) -> float:
        fn()
        fastest = float("inf")
        for _ in range(20):
            started = time.perf_counter()
            fn()
            fastest = min(fastest, time.perf_counter() - started)
        return fastest

    return best


def _pointwise_geometries(model: torch.nn.Module, inputs: list) -> list[tuple[tuple[int, ...], int]]:
    found = []

    def hook(module, args, _):
        if (
            module.kernel_size == (1, 1)
            and module.stride == (1, 1)
            and module.padding in ((0, 0), "valid")
            and module.groups == 1
        ):
            found.append((tuple(args[0].shape), module.out_channels))

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    with torch.no_grad():
        model(*inputs)
    for handle in handles:
        handle.remove()
    return found


def _form_times(shape: tuple[int, ...], outputs: int, device: str, timed) -> dict[str, float]:
    n, c, h, w = shape
    x = torch.randn(shape, device=device)
    weight = torch.randn(outputs, c, 1, 1, device=device)
    x_last = x.contiguous(memory_format=torch.channels_last)
    weight_last = weight.contiguous(memory_format=torch.channels_last)
    rows = x_last.permute(0, 2, 3, 1).reshape(-1, c)
    transposed = weight.view(outputs, c).t()
    batched = weight.view(outputs, c).expand(n, outputs, c)
    images = x.view(n, c, h * w)
    with torch.no_grad():
        return {
            "nchw": timed(lambda: torch.conv2d(x, weight)),
            "cl": timed(lambda: torch.conv2d(x_last, weight_last)),
            "mm_cl": timed(lambda: torch.mm(rows, transposed)),
            "bmm_nchw": timed(lambda: torch.bmm(batched, images)),
        }


def _model_times(model: torch.nn.Module, inputs: list, timed) -> dict[str, float]:
    import torch._inductor.config as inductor_config

    def run(fn) -> float:
        with torch.no_grad():
            for _ in range(3):
                fn(*inputs)
            return timed(lambda: fn(*inputs))

    times = {"eager_s": run(model)}
    for flag in (False, True):
        torch._dynamo.reset()  # noqa: SLF001
        inductor_config.conv_1x1_as_mm = flag
        times[f"inductor_conv_1x1_as_mm_{flag}_s"] = run(torch.compile(model))
    inductor_config.conv_1x1_as_mm = False
    torch._dynamo.reset()  # noqa: SLF001
    times["permalloy_s"] = run(torch.compile(model, backend="permalloy"))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--cases", default="timm_convnext_atto,timm_efficientnet_b0,regnet,mobilenet_v2")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads of torch")
    parser.add_argument("--no-models", action="store_true", help="time the convolutions only")
    parser.add_argument("--json", default=None)
    arguments = parser.parse_args()
    if arguments.threads:
        torch.set_num_threads(arguments.threads)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    timed = _timer(arguments.device)
    report: dict = {"device": arguments.device, "geometries": [], "models": []}
    seen = set()
    for name in arguments.cases.split(","):
        case = make_model(name, arguments.device)
        model = case.model.to(arguments.device).eval()
        inputs = [t.to(arguments.device) for t in case.inputs]
        totals = dict.fromkeys(FORMS, 0.0)
        geometries = _pointwise_geometries(model, inputs)
        for shape, outputs in geometries:
            times = _form_times(shape, outputs, arguments.device, timed)
            for form in FORMS:
                totals[form] += times[form]
            if (shape, outputs) not in seen:
                seen.add((shape, outputs))
                report["geometries"].append({"model": name, "x": shape, "cout": outputs, **times})
        row = {"model": name, "count": len(geometries), "total_s": totals}
        if not arguments.no_models:
            row.update(_model_times(model, inputs, timed))
        print(json.dumps(row), flush=True)
        report["models"].append(row)
    if arguments.json:
        with open(arguments.json, "w") as out:
            json.dump(report, out, indent=1)


if __name__ == "__main__":
    main()
