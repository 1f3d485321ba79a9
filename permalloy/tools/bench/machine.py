"""
A description of the machine a benchmark ran on: processor, cores, threads,
load, software versions and GPU.
"""

from __future__ import annotations

import os
import platform
from typing import Any

import torch


def machine_description(device: str) -> dict[str, Any]:
    """The machine, the software versions and the threads, for the report."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        permalloy_version = version("permalloy")
    except PackageNotFoundError:
        permalloy_version = "unknown"
    machine = {
        "device": device,
        "cpu": _cpu_name(),
        "cpu_count": _cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "load_average": _load_average(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "permalloy": permalloy_version,
        "tf32": torch.backends.cudnn.allow_tf32 or torch.backends.cuda.matmul.allow_tf32,
    }
    if device == "cuda" and torch.cuda.is_available():
        machine["gpu"] = torch.cuda.get_device_name()
    return machine


def _cpu_name() -> str:
    """The processor's model name, from /proc/cpuinfo where there is one."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages at the start: other work on the
    machine makes timings noisy."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def _cpu_count() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1
