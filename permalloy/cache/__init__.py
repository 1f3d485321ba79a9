"""
The compiled-graph cache: a graph compiled once is loaded in later processes
without running the pass pipeline or compiling its kernels.

`compiler.compile_graph` imports a graph, then looks up the key of its ptensor
IR, options, target, devices and software versions (`key.py`). On a hit, the
stored host function is loaded from its image or parsed from its text
(`modules.py`, `images.py`), the host program generated from it, and kernels
loaded from their stored artifacts (`kernels.py`); on a miss the graph
compiles as usual and the entry is written (`graphs.py`, in the format and
with the checks of `entry.py`). Entries live under `$PERMALLOY_CACHE_DIR/graphs`
(`~/.cache/permalloy` by default, `files.py`); `PERMALLOY_CACHE=0` or the
backend's `options={"cache": False}` turn the cache off.
"""

from permalloy.cache.entry import CacheEntry, InvalidEntryError, KernelRecord
from permalloy.cache.files import cache_dir
from permalloy.cache.graphs import CacheSettingError, GraphCache, NativeImageFiles, cache_enabled_by_environment
from permalloy.cache.key import CacheKey, graph_devices, graph_key, software_versions
from permalloy.cache.kernels import LoadingTarget, RecordingTarget
from permalloy.cache.modules import (
    cache_parts,
    join_modules,
    load_module,
    parse_module,
    split_module,
    split_module_images,
)

__all__ = [
    "CacheEntry",
    "CacheKey",
    "CacheSettingError",
    "GraphCache",
    "InvalidEntryError",
    "KernelRecord",
    "LoadingTarget",
    "NativeImageFiles",
    "RecordingTarget",
    "cache_dir",
    "cache_parts",
    "cache_enabled_by_environment",
    "graph_devices",
    "graph_key",
    "join_modules",
    "load_module",
    "parse_module",
    "software_versions",
    "split_module",
    "split_module_images",
]
