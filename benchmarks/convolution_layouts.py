"""
What `plan-layouts{convolutions=measured}` sees on each convolutional model of
the suite: its convolutions' time in all, timed in NCHW and in channels-last
memory on the device (convolutions whose result keeps NCHW memory, counted in
`keeping_nchw`, timed with the copy of a channels-last input back to NCHW),
whether a kernel of their set would transpose in NCHW memory, and the layout
it chose (how many buffers it made channels-last: none where the set kept
NCHW, untimed when too small or timed too fast to tell).

    python benchmarks/convolution_layouts.py --device cuda --cases resnet,convnext --json out.json

Each model is compiled once with permalloy (inference, no cache); nothing is
timed end to end (`permalloy-bench` does that).
"""

from __future__ import annotations

import argparse
import json
import warnings

import torch

from permalloy.passes import plan_layouts
from permalloy.tools.backend import permalloy_backend
from permalloy.tools.bench.profiles import profile_for
from permalloy.tools.bench.suites import make_suite

CONVNETS = (
    "resnet,convnext,mobilenet_v2,efficientnet,regnet,timm_resnet18,timm_convnext_atto,"
    "timm_mobilenetv3_small,timm_efficientnet_b0,unet,small_cnn"
)


class Recorder:
    """Wraps the pass's timer and transposition check, adding up what they say."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}
        self.timer = plan_layouts.CONVOLUTION_CHOICES["measured"]
        self.transposes = plan_layouts._LayoutPlanner._transposes_in_nchw  # noqa: SLF001
        self.relayout = plan_layouts._LayoutPlanner._relayout  # noqa: SLF001

    def install(self) -> None:
        recorder = self

        def timed(op, copies_input, device, keeps_nchw=False):
            times = recorder.timer(op, copies_input, device=device, keeps_nchw=keeps_nchw)
            recorder.add("nchw_s", times.nchw)
            recorder.add("channels_last_s", times.channels_last)
            recorder.add("convolutions", 1)
            if keeps_nchw:
                recorder.add("keeping_nchw", 1)
            return times

        def relayout(planner, owner, values, *rest):
            recorder.add("channels_last_buffers", len(values))
            return recorder.relayout(planner, owner, values, *rest)

        def transposes(planner, root):
            found = recorder.transposes(planner, root)
            recorder.totals["transposes_in_nchw"] = found
            return found

        plan_layouts.CONVOLUTION_CHOICES["measured"] = timed
        plan_layouts._LayoutPlanner._transposes_in_nchw = transposes  # noqa: SLF001
        plan_layouts._LayoutPlanner._relayout = relayout  # noqa: SLF001

    def add(self, key: str, value: float) -> None:
        self.totals[key] = self.totals.get(key, 0.0) + value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--cases", default=CONVNETS)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    torch.backends.cudnn.allow_tf32 = False
    recorder = Recorder()
    recorder.install()
    profile = profile_for(args.device, False)
    suite = make_suite("models")
    results = {}
    for name in args.cases.split(","):
        recorder.totals = {}
        case = suite.build(name, profile, profile.size.seed)
        model = case.model.to(args.device).eval()
        inputs = tuple(t.to(args.device) for t in case.inputs)
        torch._dynamo.reset()
        with torch.no_grad():
            torch.compile(model, backend=permalloy_backend, options={"cache": False})(*inputs)
        row = dict(recorder.totals)
        if row.get("nchw_s"):
            row["channels_last_over_nchw"] = row["channels_last_s"] / row["nchw_s"]
        row["chosen"] = "channels-last" if row.get("channels_last_buffers") else "nchw"
        results[name] = row
        print(name, json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"device": args.device, "cases": results}, file, indent=1)


if __name__ == "__main__":
    main()
