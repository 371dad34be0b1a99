"""The few file operations a cgroup needs, in one object so that tests can watch their order on a temporary
directory laid out like a cgroup file system (the real one populates a new cgroup's files itself)."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path


class CgroupFS:
    def mkdir(self, path: Path) -> None:
        path.mkdir(exist_ok=True)

    def rmdir(self, path: Path) -> None:
        path.rmdir()

    def write(self, path: Path, text: str) -> None:
        # One write(2) of the whole value, no truncation games: what the cgroup interface expects.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)

    def read(self, path: Path) -> str:
        return path.read_text()

    def exists(self, path: Path) -> bool:
        return path.exists()


def read_pids(fs: CgroupFS, procs: Path) -> set[int]:
    try:
        return {int(x) for x in fs.read(procs).split()}
    except (OSError, ValueError):
        return set()


def kill_until_gone(list_pids, deadline: float) -> bool:
    """SIGKILL every process `list_pids()` names until it names none (a fork bomb forks while it is killed, and
    a loaded machine is slow to reap: wait for none, not for a number of rounds). False at the deadline."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        pids = set(list_pids())
        if not pids:
            return True
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)
    return not set(list_pids())


def kill_until_empty(fs: CgroupFS, procs_files: list[Path], deadline: float) -> bool:
    """SIGKILL every process the cgroup procs files list until they are empty. False at the deadline."""
    return kill_until_gone(lambda: set().union(*(read_pids(fs, p) for p in procs_files)), deadline)


def keyed(text: str) -> dict[str, int]:
    """A flat keyed file ("key value" per line: memory.events, pids.events, memory.oom_control)."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0]] = int(parts[1])
            except ValueError:
                continue
    return out
