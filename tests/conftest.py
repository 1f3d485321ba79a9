"""
What every test shares: permalloy's cache (compiled graphs, Triton modules
and tuned configurations) is a scratch directory of the test process, never
the user's `~/.cache/permalloy`, and so is torch's (AOTAutograd's entries,
which name permalloy's); tests of the cache point them elsewhere again.
"""

from __future__ import annotations

import os
import tempfile

_SCRATCH_CACHE = tempfile.TemporaryDirectory(prefix="permalloy-test-cache-")
"""Removed when the test process ends."""

os.environ["PERMALLOY_CACHE_DIR"] = _SCRATCH_CACHE.name
os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(_SCRATCH_CACHE.name, "torch")
