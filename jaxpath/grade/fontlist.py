"""matplotlib's font list for the sandboxed kernels, made once per host.

A sandboxed kernel's /tmp starts empty, so every notebook that imports matplotlib would find the fonts and
build its font list again: 0.26 s of CPU here, which a kernel outside a sandbox (stock nbgrader's) reads
from the list matplotlib saved in the user's cache folder instead. The grader builds it once, in a sandbox of
the grading level with nothing of a student's in it, so that it names only the fonts a sandbox sees, and
keeps it under `$XDG_CACHE_HOME/jaxpath/fontlist/<key>/` (default `~/.cache`). The key changes with
matplotlib's version, the Python environment, the isolation level and the folders a sandbox finds fonts in
(their modification times change when a font is added or removed), so an out-of-date list is never used. Each
sandbox mounts it read-only where matplotlib looks (isolation/bwrap.py), so no notebook can change it for the
next one. Where it cannot be made, the kernels make their own, as before."""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

from ..files import write_atomic
from ..kernel import source as kernel_source
from .isolation import Level
from .isolation.bwrap import python_prefixes
from .limits import Limits
from .sandbox import Sandbox

log = logging.getLogger("jaxpath.grade")

FONT_DIRS = ("/usr/share/fonts", "/usr/local/share/fonts", "/usr/X11R6/lib/X11/fonts", "/usr/X11/lib/X11/fonts",
             "/usr/lib/openoffice/share/fonts/truetype")
"""The system folders matplotlib looks for fonts in that a sandbox sees (font_manager.X11FontDirectories,
less the home folder's: a sandbox's home is the work folder), besides its own mpl-data/fonts. Written out
rather than read from matplotlib: importing font_manager loads a font list into the grader itself, and on a
host without one builds it, to find a key that only has to tell whether the sandboxes' list is current."""

NAME = re.compile(r"fontlist-v[0-9][0-9.]*\.json")
BUILD_TIMEOUT = 120


def default_store() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "jaxpath" / "fontlist"


def key(level: Level) -> str:
    """What the font list a sandbox builds depends on, as a short hash."""
    h = hashlib.sha256()
    h.update(f"{importlib.metadata.version('matplotlib')}\0{level.name}\0{python_prefixes()}\0".encode())
    spec = importlib.util.find_spec("matplotlib")
    roots = [*FONT_DIRS, *(str(Path(p) / "mpl-data" / "fonts") for p in (spec.submodule_search_locations or []))]
    for root in roots:
        for folder, dirs, _ in os.walk(root):
            dirs.sort()
            try:
                h.update(f"{folder}\0{os.stat(folder).st_mtime_ns}\0".encode())
            except OSError:
                continue
    return h.hexdigest()[:20]


def font_list(level: Level, limits: Limits = Limits(), store: Path | None = None) -> str | None:
    """The path of the font list for sandboxes at `level` on this host, built when there is none yet; None
    when it cannot be built (a warning says why)."""
    folder = (store or default_store()) / key(level)
    found = sorted(p for p in folder.glob("fontlist-v*.json") if NAME.fullmatch(p.name))
    if found:
        return str(found[-1])
    try:
        name, data = build(level, limits)
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / name, data)
    except Exception as e:  # noqa: BLE001 (a saving, never a reason for a batch to stop)
        log.warning("matplotlib's font list for the sandboxes could not be made (%s): each notebook that "
                    "imports matplotlib makes its own", e)
        return None
    return str(folder / name)


def build(level: Level, limits: Limits = Limits()) -> tuple[str, bytes]:
    """(file name, content) of the font list matplotlib makes in a sandbox at `level`."""
    with Sandbox({}, limits, level=level) as sb:
        run = subprocess.run(sb.command([sys.executable, "-c", kernel_source("fontlist")]), capture_output=True,
                             timeout=BUILD_TIMEOUT, stdin=subprocess.DEVNULL)
    if run.returncode != 0:
        err = run.stderr.decode(errors="replace").strip().splitlines()
        raise ValueError(f"exit status {run.returncode}: {err[-1] if err else 'no error output'}")
    name, _, data = run.stdout.partition(b"\n")
    name = name.decode(errors="replace")
    if not NAME.fullmatch(name):
        raise ValueError(f"unexpected output {name[:80]!r}")
    json.loads(data)  # whole, or not kept
    return name, data
