"""
Generated kernel modules on disk, and the cache directory they live in.

A module's file is named after a hash of its source, so equal kernels share
one file across processes, and Triton's own on-disk cache (keyed by the
source of the `@triton.jit` function) keeps their compiled binaries. A cache
entry that holds something else (a truncated or corrupt file) is rewritten;
where the cache cannot hold a module at all (a directory in its place, no
write access), it goes to a temporary file after a warning.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import warnings
from pathlib import Path
from types import ModuleType

from permalloy.cache.files import cache_dir

__all__ = ["ModuleLoader", "cache_dir", "source_hash", "write_atomically", "write_new_file"]


def source_hash(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def write_atomically(path: Path, text: str) -> None:
    """Writes `path` whole or not at all (through a scratch file of its own,
    so that threads and processes writing the same path do not collide)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = write_new_file(text, prefix=f".{path.name}.", suffix=".tmp", directory=path.parent)
    try:
        os.replace(scratch, path)
    except BaseException:
        scratch.unlink(missing_ok=True)
        raise


def write_new_file(text: str, prefix: str, suffix: str, directory: Path | None = None) -> Path:
    """A new file of a unique name holding `text` (in `directory`, else the
    system's temporary directory)."""
    descriptor, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name)


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
        path = self._module_file(source, f"{stem}_{digest}.py")
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

    def _module_file(self, source: str, name: str) -> Path:
        """The file that holds `source`: the cache's own, written unless it
        already holds exactly `source`, else a temporary one."""
        path = self.directory / name
        try:
            if path.read_bytes() == source.encode():
                return path
        except OSError:
            pass
        try:
            write_atomically(path, source)
            return path
        except OSError as error:
            warnings.warn(
                f"permalloy cannot write the kernel module {path} ({error}); using a temporary file instead",
                RuntimeWarning,
                stacklevel=3,
            )
        return write_new_file(source, prefix=f"{path.stem}_", suffix=".py")
