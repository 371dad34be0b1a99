"""Writing files: the one home of atomic writes (a reader sees the old file or the new one, never half), and of
jaxpath's private temporary folders (named for the process that made them, so a killed run's are found)."""
from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
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


_ORPHAN = re.compile(r"jaxpath-[a-z]+-(\d+)-")


def private_temp_dir(kind: str, dir: str | Path | None = None) -> Path:
    """A fresh folder `jaxpath-<kind>-<pid>-XXXXXXXX` (mode 0700) in `dir` (default: the temporary folder). The
    pid names the process that made it, so that a later run can remove what a killed one could not
    (`remove_orphaned_temp_dirs`): a SIGKILL reaches no cleanup code."""
    return Path(tempfile.mkdtemp(prefix=f"jaxpath-{kind}-{os.getpid()}-", dir=dir))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def orphaned_temp_dirs(*dirs: str | Path, any_user: bool = False) -> list[Path]:
    """The `private_temp_dir` folders in `dirs` (default: the temporary folder and /dev/shm) whose process is
    gone: this user's only, unless `any_user`. A folder of a live process, or a link, is not one."""
    found = []
    for base in dirs or (tempfile.gettempdir(), "/dev/shm"):
        try:
            entries = list(Path(base).iterdir())
        except OSError:
            continue
        for p in entries:
            m = _ORPHAN.match(p.name)
            if not m:
                continue
            try:
                st = p.lstat()
            except OSError:
                continue
            pid = int(m.group(1))
            if (stat.S_ISDIR(st.st_mode) and (any_user or st.st_uid == os.getuid()) and pid != os.getpid()
                    and not _alive(pid)):
                found.append(p)
    return found


def remove_orphaned_temp_dirs(*dirs: str | Path) -> list[Path]:
    """Removes this user's `orphaned_temp_dirs` (what a killed run left); returns what it removed."""
    found = orphaned_temp_dirs(*dirs)
    for p in found:
        shutil.rmtree(p, ignore_errors=True)
    return found
