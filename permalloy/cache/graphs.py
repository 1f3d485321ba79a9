"""
The compiled-graph cache: entries under `<cache directory>/graphs/`, one file
per key, read and written whole.

An entry that cannot be used (`InvalidEntryError`: damaged, cut short, or
written by other versions) is reported with one warning and treated as a miss:
the graph is compiled again and its entry replaced. A cache that cannot be
written (no space, no permission) is reported with a warning and compiling
goes on.

Beside an entry, `<digest>.<launches>.native` files keep the images of its
GPU native host programs (`NativeImageFiles`), one per set of launches a
first call chose.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

from permalloy.cache.entry import CacheEntry, InvalidEntryError, decode_entry, encode_entry
from permalloy.cache.files import cache_dir, write_bytes_atomically
from permalloy.cache.key import CacheKey, software_versions

CACHE_ENV = "PERMALLOY_CACHE"
"""The environment variable that turns the compiled-graph cache off ("0")."""
ENABLED_VALUES = ("1", "true", "on", "yes")
DISABLED_VALUES = ("0", "false", "off", "no")


class CacheSettingError(ValueError):
    """A value of `PERMALLOY_CACHE` that is neither on nor off."""


def cache_enabled_by_environment() -> bool:
    """Whether `$PERMALLOY_CACHE` leaves the cache on (unset: on); a
    `CacheSettingError` listing the valid values for any other value."""
    value = os.environ.get(CACHE_ENV, "1").strip().lower()
    if value in ENABLED_VALUES or value == "":
        return True
    if value in DISABLED_VALUES:
        return False
    raise CacheSettingError(
        f"{CACHE_ENV}={os.environ[CACHE_ENV]!r} is not valid; valid values: "
        f"{', '.join(ENABLED_VALUES)} (cache on) or {', '.join(DISABLED_VALUES)} (cache off)"
    )


class GraphCache:
    """Compiled graphs on disk, under `directory/graphs` (by default, under
    permalloy's cache directory, `$PERMALLOY_CACHE_DIR`)."""

    def __init__(self, directory: Path | None = None):
        self.directory = (directory or cache_dir()) / "graphs"

    def path(self, key: CacheKey) -> Path:
        return self.directory / f"{key.digest}.graph"

    def native_images(self, key: CacheKey) -> NativeImageFiles:
        """Where the GPU native host programs of the entry of `key` are kept."""
        return NativeImageFiles(self.path(key))

    def load(self, key: CacheKey, report: bool = True) -> CacheEntry | None:
        """The entry of `key`, or None when there is none or it cannot be used
        (after a warning saying why, where `report`)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:
            if report:
                self.report_unusable(path, f"unreadable ({error})")
            return None
        try:
            return decode_entry(data, key.digest, software_versions())
        except InvalidEntryError as error:
            if report:
                self.report_unusable(path, str(error))
            return None

    def store(self, key: CacheKey, entry: CacheEntry) -> None:
        """Write the entry of `key` (replacing any), or warn that it cannot be."""
        path = self.path(key)
        try:
            write_bytes_atomically(path, encode_entry(entry))
        except OSError as error:
            warnings.warn(
                f"permalloy cannot write its compiled-graph cache in {self.directory} ({error}); "
                f"graphs are compiled without it (set PERMALLOY_CACHE_DIR to a writable folder, "
                f"or {CACHE_ENV}=0)",
                RuntimeWarning,
                stacklevel=2,
            )

    @staticmethod
    def report_unusable(path: Path, reason: str) -> None:
        """One warning for an entry that is not used: the graph compiles again
        and the entry is replaced."""
        warnings.warn(
            f"permalloy's compiled-graph cache entry {path} is {reason}; compiling the graph again",
            RuntimeWarning,
            stacklevel=3,
        )


class NativeImageFiles:
    """The images of a compiled graph's GPU native host programs
    (`targets.native.image`, as JSON), beside its entry `entry`, one file per
    digest of the launches they were emitted for. A file that does not read
    as one is reported once by its reader and written again."""

    def __init__(self, entry: Path):
        self.entry = entry

    def path(self, facts: str) -> Path:
        return self.entry.with_name(f"{self.entry.stem}.{facts}.native")

    def read(self, facts: str) -> dict[str, Any] | None:
        """The image kept for the launches `facts`, None where there is none or it is damaged."""
        path = self.path(facts)
        try:
            image = json.loads(path.read_bytes())
        except (FileNotFoundError, NotADirectoryError):
            return None
        except (OSError, ValueError) as error:
            self.report_unusable(facts, f"unreadable ({type(error).__name__}: {error})")
            return None
        if not isinstance(image, dict):
            self.report_unusable(facts, f"a {type(image).__name__}, not an image")
            return None
        return image

    def write(self, facts: str, image: dict[str, Any]) -> None:
        """Keep `image` for the launches `facts`; a cache that cannot be
        written was reported when its entry was stored."""
        try:
            write_bytes_atomically(self.path(facts), json.dumps(image).encode())
        except OSError:
            return

    def report_unusable(self, facts: str, reason: str) -> None:
        """One warning for an image that is not used: the program is emitted again and the image replaced."""
        warnings.warn(
            f"permalloy's native host image {self.path(facts)} is {reason}; emitting the program again",
            RuntimeWarning,
            stacklevel=3,
        )
