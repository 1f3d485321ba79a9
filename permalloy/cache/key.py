"""
The key of a compiled graph in the cache: everything its compilation depends on.

A graph compiles the same way when its imported ptensor IR, the compile
options, the target (with what the target says of the machine it compiles
for, `cache_identity`), the devices of its inputs and the versions of the
software that compiles it are the same. The key is the SHA-256 of those,
written as canonical JSON. permalloy's version is its package version and a
hash of its source files, so that an edited checkout does not load what an
older one compiled.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

KEY_FORMAT = 1
"""The version of the key's layout; a change makes every old entry a miss."""

VERSIONED_PACKAGES = ("torch", "triton", "llvmlite", "xdsl", "sympy")
"""The packages whose versions a compiled graph depends on, besides permalloy."""


@functools.cache
def source_fingerprint() -> str:
    """A hash of permalloy's Python source files (computed once per process:
    the files a running process compiles with do not change under it)."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@functools.cache
def software_versions() -> dict[str, str]:
    """The versions of permalloy (package version and source hash), Python
    and `VERSIONED_PACKAGES` ("absent" for one not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "absent"

    versions = {"permalloy": f"{installed('permalloy')}+{source_fingerprint()}"}
    versions["python"] = platform.python_version()
    versions.update({name: installed(name) for name in VERSIONED_PACKAGES})
    return versions


def device_identity(device: torch.device) -> str:
    """A device as far as compiled code depends on it: its type, and for a GPU
    its name and compute capability (the CPU's features are the LLVM target's
    `cache_identity`)."""
    if device.type == "cuda" and torch.cuda.is_available():
        index = device.index if device.index is not None else torch.cuda.current_device()
        major, minor = torch.cuda.get_device_capability(index)
        return f"cuda:{torch.cuda.get_device_name(index)}:sm_{major}{minor}"
    return f"{device.type}:{platform.machine()}"


def graph_devices(graph: torch.fx.GraphModule) -> list[torch.device]:
    """The devices of a graph's tensor inputs, as its example values say."""
    devices = []
    for node in graph.graph.nodes:
        if node.op == "placeholder":
            value = node.meta.get("val")
            if isinstance(value, torch.Tensor) and value.device not in devices:
                devices.append(value.device)
    return devices


@dataclass(frozen=True)
class CacheKey:
    """A compiled graph's key: its digest names the cache entry."""

    digest: str
    material: dict[str, Any]
    """What the digest is computed from (the IR by its own digest)."""


def graph_key(
    ir_text: str,
    options: dict[str, Any],
    target: str,
    target_identity: str,
    devices: Iterable[torch.device],
) -> CacheKey:
    """The key of a graph whose imported ptensor module prints as `ir_text`,
    compiled with `options` (JSON-able values) for `target`, on `devices`."""
    material = {
        "format": KEY_FORMAT,
        "ir": hashlib.sha256(ir_text.encode()).hexdigest(),
        "options": options,
        "target": target,
        "target_identity": target_identity,
        "devices": sorted({device_identity(d) for d in devices}),
        "versions": software_versions(),
    }
    text = json.dumps(material, sort_keys=True, default=repr)
    return CacheKey(hashlib.sha256(text.encode()).hexdigest(), material)
