"""
One compiled graph on disk: its format, and the checks that keep a damaged
entry from ever running.

An entry is a header line, the SHA-256 of the rest, and the rest: JSON holding
the software versions and key digest it was written for, the buffer-level
module after the pipeline in two parts (a module of its host function, which
the host program is generated from again, and a module of its kernels), each
as an image (`images.py`, which loads without parsing) or, where it has none,
as text (`cache_parts`: an empty text beside an image), and per
launched kernel the symbols the launch passes and what its target needs to
load it without compiling (`kernel_artifact`), bytes in base64:

    permalloy-compiled-graph 3
    <sha256 of the JSON>
    {"versions": {...}, "key": "...", "host": "",
     "kernel_module": "", "host_image": "<base64>",
     "kernel_image": "<base64>", "complete": true,
     "kernels": [{"kernel": "k0", "layouts": [...], "symbols": [...], "artifact": {...}}]}

When every launch's kernel has an artifact (`complete`), a hit loads the host
module alone: the kernels' loop IR, most of a module, is not read.

`decode_entry` raises `InvalidEntryError` saying what is wrong with an entry
(not one, cut short, altered, or written for other versions or another key),
before anything in it is used.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

MAGIC = b"permalloy-compiled-graph"
FORMAT_VERSION = 3

Artifact = dict[str, str | int | bytes]
"""What a target keeps of one compiled kernel: names, counts, object code."""


class InvalidEntryError(ValueError):
    """A cache entry that cannot be used; the message says why."""


@dataclass(frozen=True)
class KernelRecord:
    """A compiled kernel of the entry: the kernel symbol and launch layouts it
    was compiled for, the size symbols a launch passes it, and its target's
    artifact."""

    kernel: str
    layouts: tuple[str, ...]
    symbols: tuple[str, ...]
    artifact: Artifact


@dataclass(frozen=True)
class CacheEntry:
    """A compiled graph as the cache keeps it."""

    key: str
    """The digest of the key it was written under."""
    versions: dict[str, str]
    host: str
    """The buffer-level module after the pipeline without its kernels, as
    text; empty where `host_image` holds it."""
    kernel_module: str
    """A module of the kernels of the buffer-level module, as text; empty
    where `kernel_image` holds it."""
    host_image: bytes | None = None
    """The image of `host` (`images.py`), which loads without parsing; None where it has none."""
    kernel_image: bytes | None = None
    """The image of `kernel_module`; None where it has none."""
    kernels: list[KernelRecord] = field(default_factory=list)
    complete: bool = False
    """Whether `kernels` holds every launch of the host function."""
    native_host: dict[str, Any] | None = None
    """The CPU native host program's image (`targets.native.image`, as
    JSON); None where it has none."""


def encode_entry(entry: CacheEntry) -> bytes:
    """The bytes of an entry file."""
    payload = {
        "key": entry.key,
        "versions": entry.versions,
        "host": entry.host,
        "kernel_module": entry.kernel_module,
        "host_image": _encode_bytes(entry.host_image),
        "kernel_image": _encode_bytes(entry.kernel_image),
        "complete": entry.complete,
        "native_host": entry.native_host,
        "kernels": [
            {
                "kernel": k.kernel,
                "layouts": list(k.layouts),
                "symbols": list(k.symbols),
                "artifact": _encode_artifact(k.artifact),
            }
            for k in entry.kernels
        ],
    }
    body = json.dumps(payload, sort_keys=True).encode()
    header = MAGIC + f" {FORMAT_VERSION}\n{hashlib.sha256(body).hexdigest()}\n".encode()
    return header + body


def decode_entry(data: bytes, key: str, versions: dict[str, str]) -> CacheEntry:
    """The entry in `data`, checked against its checksum, the `key` it is read
    for and the current `versions`; an `InvalidEntryError` otherwise."""
    first, _, rest = data.partition(b"\n")
    checksum, newline, body = rest.partition(b"\n")
    if not first.startswith(MAGIC + b" "):
        raise InvalidEntryError("not a compiled graph (no header)")
    if first != MAGIC + f" {FORMAT_VERSION}".encode():
        raise InvalidEntryError(f"of another format ({first.decode(errors='replace')!r})")
    if not newline or hashlib.sha256(body).hexdigest().encode() != checksum:
        raise InvalidEntryError("truncated or corrupt (checksum mismatch)")
    try:
        payload = json.loads(body)
        entry = CacheEntry(
            key=str(payload["key"]),
            versions=dict(payload["versions"]),
            host=str(payload["host"]),
            kernel_module=str(payload["kernel_module"]),
            host_image=_decode_bytes(payload["host_image"]),
            kernel_image=_decode_bytes(payload["kernel_image"]),
            kernels=[
                KernelRecord(
                    str(k["kernel"]),
                    tuple(map(str, k["layouts"])),
                    tuple(map(str, k["symbols"])),
                    _decode_artifact(k["artifact"]),
                )
                for k in payload["kernels"]
            ],
            complete=payload["complete"] is True,
            native_host=_native_host(payload.get("native_host")),
        )
    except (ValueError, KeyError, TypeError) as error:
        raise InvalidEntryError(f"unreadable ({type(error).__name__}: {error})") from None
    if entry.versions != versions:
        changed = sorted(k for k in {*versions, *entry.versions} if versions.get(k) != entry.versions.get(k))
        described = ", ".join(f"{k} {entry.versions.get(k)} (now {versions.get(k)})" for k in changed)
        raise InvalidEntryError(f"written by other versions: {described}")
    if entry.key != key:
        raise InvalidEntryError("written for another key")
    return entry


def _native_host(value: Any) -> dict[str, Any] | None:
    """A stored native host image: a dict, or None; TypeError otherwise."""
    if value is None or isinstance(value, dict):
        return value
    raise TypeError(f"a native host image of type {type(value).__name__}")


def _encode_bytes(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(value).decode()


def _decode_bytes(encoded: Any) -> bytes | None:
    if encoded is None:
        return None
    if not isinstance(encoded, str):
        raise TypeError(f"an image is {type(encoded).__name__}, not base64 text")
    return base64.b64decode(encoded, validate=True)


def _encode_artifact(artifact: Artifact) -> dict[str, Any]:
    return {
        name: {"base64": base64.b64encode(value).decode()} if isinstance(value, bytes) else value
        for name, value in artifact.items()
    }


def _decode_artifact(encoded: dict[str, Any]) -> Artifact:
    artifact: Artifact = {}
    for name, value in encoded.items():
        if isinstance(value, dict):
            artifact[name] = base64.b64decode(value["base64"], validate=True)
        elif isinstance(value, str | int):
            artifact[name] = value
        else:
            raise TypeError(f"artifact field {name!r} holds {type(value).__name__}")
    return artifact
