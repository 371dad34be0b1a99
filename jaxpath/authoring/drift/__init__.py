"""`jaxpath drift`: rebuild the course on another JAX stack and name every output that changed and every
claim that broke.

`env` builds (once, cached by its requirements hash) a side environment from the lock with some pins
changed; `run` executes chapters there with the machinery of `validate` (stub, wrong, alternative and
reference answers); `normalize` drops what is not content (addresses, timings, temp paths, ids);
`compare` matches the side run with the pinned build cell by cell and grades each difference by
severity; `report` writes the HTML page and the text summary."""
from __future__ import annotations

from .compare import Finding, compare_chapter
from .env import DriftError, SideEnv, side_env
from .run import DriftResult, drift

__all__ = ["DriftError", "DriftResult", "Finding", "SideEnv", "compare_chapter", "drift", "side_env"]
