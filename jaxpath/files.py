"""Writing files: the one home of atomic writes (a reader sees the old file or the new one, never half)."""
from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write `data` to `path` through a temporary file in the same folder and a rename. A failure (a full
    disk, Ctrl-C) leaves no half-written file behind, and the old file as it was."""
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.jaxpath-tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def inside(folder: Path, rel: str) -> Path | None:
    """`folder / rel` resolved, when it stays inside `folder` (no `..`, no absolute path, no link out); else None."""
    base = Path(folder).resolve()
    target = (base / rel).resolve()
    return target if base in target.parents else None


def write_into(folder: Path, files: dict[str, bytes], *, atomic: bool = False) -> list[str]:
    """Write each file (relative path -> content) under `folder`, creating subfolders; a path that would climb
    out of the folder is never written and is returned. `atomic`: each through write_atomic."""
    refused = []
    for rel, data in files.items():
        target = inside(folder, rel)
        if target is None:
            refused.append(rel)
        elif atomic:
            write_atomic(target, data)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return refused
