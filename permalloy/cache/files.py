"""
permalloy's cache directory and whole-file writes into it.

Everything permalloy keeps between processes lives under one directory:
`$PERMALLOY_CACHE_DIR`, else `~/.cache/permalloy`. Compiled graphs are under `graphs/`, the Triton target's
generated modules and tuned configurations under `triton/`.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def cache_dir() -> Path:
    """permalloy's cache directory: `$PERMALLOY_CACHE_DIR`, else `~/.cache/permalloy`."""
    configured = os.environ.get("PERMALLOY_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "permalloy"


def write_bytes_atomically(path: Path, data: bytes) -> None:
    """Write `path` whole or not at all: `data` goes to a scratch file of a
    unique name in the same directory, which then replaces `path`, so that
    readers never see a partial file and concurrent writers do not collide."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    scratch = Path(name)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        os.replace(scratch, path)
    except BaseException:
        scratch.unlink(missing_ok=True)
        raise
