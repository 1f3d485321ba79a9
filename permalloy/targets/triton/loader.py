"""
Generated kernel modules on disk, and the cache directory they live in.

A module's file is named after a hash of its source, so equal kernels share
one file across processes, and Triton's own on-disk cache (keyed by the
source of the `@triton.jit` function) keeps their compiled binaries.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType


def cache_dir() -> Path:
    """permalloy's cache directory: `$PERMALLOY_CACHE_DIR`, else `~/.cache/permalloy`."""
    configured = os.environ.get("PERMALLOY_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "permalloy"


def source_hash(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    scratch.write_text(text)
    os.replace(scratch, path)


class ModuleLoader:
    """Writes generated modules under a directory and imports them, once each."""

    def __init__(self, directory: Path | None = None):
        self.directory = (directory or cache_dir()) / "triton" / "modules"
        self.loaded: dict[str, ModuleType] = {}

    def load(self, source: str, stem: str) -> ModuleType:
        digest = source_hash(source)[:20]
        module = self.loaded.get(digest)
        if module is not None:
            return module
        path = self.directory / f"{stem}_{digest}.py"
        if not path.exists() or path.read_text() != source:
            write_atomically(path, source)
        name = f"permalloy_triton_{digest}"
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # Triton reads a kernel's source through its module
            spec.loader.exec_module(module)
        self.loaded[digest] = module
        return module
