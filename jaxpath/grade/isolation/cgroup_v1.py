"""cgroup v1: one memory and one pids cgroup per kernel, under <controller>/jaxpath/ (as root, or where root
created and chowned those two folders to the grader)."""
from __future__ import annotations

from pathlib import Path

from .cgfs import CgroupFS, keyed, kill_until_empty
from .probe import CGROUP_ROOT


class CgroupV1:
    version = "cgroup-v1"

    def __init__(self, name: str, limits, mounts: dict | None = None, fs: CgroupFS | None = None):
        """`mounts`: controller -> its mount point (default: /sys/fs/cgroup/memory and /sys/fs/cgroup/pids)."""
        self.fs = fs or CgroupFS()
        mounts = mounts or {c: str(CGROUP_ROOT / c) for c in ("memory", "pids")}
        self.paths = [Path(mounts["memory"]) / "jaxpath" / name, Path(mounts["pids"]) / "jaxpath" / name]
        for p in self.paths:
            self.fs.mkdir(p.parent)
            self.fs.mkdir(p)
        memory, pids = self.paths
        self.fs.write(memory / "memory.limit_in_bytes", str(limits.memory_mb * 1024 * 1024))
        try:  # no swap beyond the memory limit, where the kernel accounts swap
            self.fs.write(memory / "memory.memsw.limit_in_bytes", str(limits.memory_mb * 1024 * 1024))
        except OSError:
            pass
        self.fs.write(pids / "pids.max", str(limits.pids))

    def enter_command(self) -> str:
        """Shell that moves itself into the cgroups before exec'ing the sandbox."""
        return "; ".join(f"echo $$ > {p / 'cgroup.procs'}" for p in self.paths)

    def oom_killed(self) -> bool:
        try:  # the kernel's OOM killer counts its kills here; failcnt stays 0 on some kernels
            if keyed(self.fs.read(self.paths[0] / "memory.oom_control")).get("oom_kill", 0) > 0:
                return True
        except OSError:
            pass
        try:
            return int(self.fs.read(self.paths[0] / "memory.failcnt")) > 0
        except (OSError, ValueError):
            return False

    def pids_hit(self) -> bool:
        try:
            return keyed(self.fs.read(self.paths[1] / "pids.events")).get("max", 0) > 0
        except OSError:
            return False

    def kill_all(self, deadline: float = 60.0) -> None:
        kill_until_empty(self.fs, [p / "cgroup.procs" for p in self.paths], deadline)
        for p in self.paths:
            try:
                self.fs.rmdir(p)
            except OSError:
                pass
