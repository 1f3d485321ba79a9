"""
The compiled-graph cache: entries under `<cache directory>/graphs/`, one file
per key, read and written whole.

An entry that cannot be used (`InvalidEntryError`: damaged, cut short, or
written by other versions) is reported with one warning and treated as a miss:
the graph is compiled again and its entry replaced. A cache that cannot be
written (no space, no permission) is reported with a warning and compiling
goes on.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

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
