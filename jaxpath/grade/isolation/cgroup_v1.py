"""cgroup v1: one memory and one pids cgroup per kernel, under <controller>/jaxpath/ (as root, or where root
created and chowned those two folders to the grader)."""
from __future__ import annotations

from pathlib import Path

from .cgfs import CgroupFS, keyed, kill_until_empty
from .probe import CGROUP_ROOT, CONTROLLERS


class CgroupV1:

    def __init__(self, name: str, limits, mounts: dict | None = None, fs: CgroupFS | None = None):
        """`mounts`: controller -> its mount point (default: /sys/fs/cgroup/memory and /sys/fs/cgroup/pids); with a
        "cpu" one, a CPU quota too (cpu.cfs_quota_us over cpu.cfs_period_us)."""
        self.fs = fs or CgroupFS()
        mounts = mounts or {c: str(CGROUP_ROOT / c) for c in CONTROLLERS}
        self.paths = [Path(mounts["memory"]) / "jaxpath" / name, Path(mounts["pids"]) / "jaxpath" / name]
        self.cpu_quota = "cpu" in mounts
        if self.cpu_quota:
            self.paths.append(Path(mounts["cpu"]) / "jaxpath" / name)
        for p in self.paths:
            self.fs.mkdir(p.parent)
            self.fs.mkdir(p)
        memory, pids = self.paths[:2]
        self.fs.write(memory / "memory.limit_in_bytes", str(limits.memory_mb * 1024 * 1024))
        try:  # no swap beyond the memory limit, where the kernel accounts swap
            self.fs.write(memory / "memory.memsw.limit_in_bytes", str(limits.memory_mb * 1024 * 1024))
        except OSError:
            pass
        self.fs.write(pids / "pids.max", str(limits.pids))
        if self.cpu_quota:
            period = 100_000
            self.fs.write(self.paths[2] / "cpu.cfs_period_us", str(period))
            self.fs.write(self.paths[2] / "cpu.cfs_quota_us", str(max(1000, int(limits.cpu_cores * period))))

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
