"""cgroup v2: one cgroup per kernel in a subtree of the unified hierarchy, written against the kernel's
documented interface (Documentation/admin-guide/cgroup-v2.rst). Not run on a real v2 kernel on the
machines this was written on (their memory and pids controllers are bound to v1): tested on a temporary
directory laid out like a v2 subtree, see tests/test_isolation.py.

Where the kernels' cgroups go:
- as root: <mount>/jaxpath/<name>, with memory and pids enabled in the root's and jaxpath's
  cgroup.subtree_control (the root cgroup is exempt from the no-internal-processes rule; jaxpath/ holds
  no process of its own);
- not root, in a delegated subtree (a systemd user scope started with Delegate=yes, a container's own
  cgroup namespace): <own cgroup>/<name>. A cgroup with processes cannot enable controllers for its
  children, so the processes already there (the grader) move to a leaf, <own cgroup>/jaxpath-grader,
  first.
Each kernel's cgroup gets memory.max (files in its tmpfs work folder are charged to it), memory.swap.max 0,
memory.oom.group 1 (an OOM kill takes the whole notebook), pids.max; OOM kills are read from
memory.events; at the end every process is killed with cgroup.kill (Linux 5.14+) or, where that file is
missing, by SIGKILL to each pid in cgroup.procs until it is empty; then the cgroup is removed.
"""
from __future__ import annotations

from pathlib import Path

from .cgfs import CgroupFS, keyed, kill_until_empty, read_pids
from .probe import CONTROLLERS

OPTIONAL = ("cpu",)
"""Enabled where the cgroup offers it: the CPU quota (cpu.max)."""
CPU_PERIOD_US = 100_000
GRADER_LEAF = "jaxpath-grader"


def _available(fs: CgroupFS, cgroup: Path) -> set[str]:
    try:
        return set(fs.read(cgroup / "cgroup.controllers").split())
    except OSError:
        return set(CONTROLLERS)


def _enable(fs: CgroupFS, cgroup: Path) -> None:
    """Enable memory and pids (and cpu, where offered) for the children of `cgroup`, where they are not already."""
    have = set(fs.read(cgroup / "cgroup.subtree_control").split())
    offered = _available(fs, cgroup)
    missing = [c for c in (*CONTROLLERS, *OPTIONAL) if c not in have and (c in CONTROLLERS or c in offered)]
    if missing:
        fs.write(cgroup / "cgroup.subtree_control", " ".join(f"+{c}" for c in missing))


def prepare(base: Path, *, root: bool, fs: CgroupFS) -> Path:
    """Make `base` ready to hold kernel cgroups; return the folder they are created in."""
    if root:
        _enable(fs, base)
        parent = base / "jaxpath"
        fs.mkdir(parent)
        _enable(fs, parent)
        return parent
    have = set(fs.read(base / "cgroup.subtree_control").split())
    if not all(c in have for c in CONTROLLERS):
        leaf = base / GRADER_LEAF
        fs.mkdir(leaf)
        for pid in sorted(read_pids(fs, base / "cgroup.procs")):  # one pid per write, as the interface wants
            try:
                fs.write(leaf / "cgroup.procs", str(pid))
            except ProcessLookupError:
                continue
        _enable(fs, base)
    return base


def events(text: str) -> dict[str, int]:
    """memory.events / pids.events: 'low 0\\nhigh 0\\nmax 3\\noom 1\\noom_kill 1\\noom_group_kill 1'."""
    return keyed(text)


class CgroupV2:

    def __init__(self, name: str, limits, base: Path, *, root: bool, fs: CgroupFS | None = None):
        self.fs = fs or CgroupFS()
        self.path = prepare(base, root=root, fs=self.fs) / name
        self.fs.mkdir(self.path)
        # Every limit is in place before any process enters (enter_command runs later, in the kernel's shell).
        self.fs.write(self.path / "memory.max", str(limits.memory_mb * 1024 * 1024))
        if self.fs.exists(self.path / "memory.swap.max"):  # absent without swap accounting
            self.fs.write(self.path / "memory.swap.max", "0")
        if self.fs.exists(self.path / "memory.oom.group"):
            self.fs.write(self.path / "memory.oom.group", "1")
        self.fs.write(self.path / "pids.max", str(limits.pids))
        self.cpu_quota = self.fs.exists(self.path / "cpu.max")  # the cpu controller is enabled here
        if self.cpu_quota:
            self.fs.write(self.path / "cpu.max", f"{max(1000, int(limits.cpu_cores * CPU_PERIOD_US))} {CPU_PERIOD_US}")

    def enter_command(self) -> str:
        return f"echo $$ > {self.path / 'cgroup.procs'}"

    def _events(self, name: str) -> dict[str, int]:
        try:
            return events(self.fs.read(self.path / name))
        except OSError:
            return {}

    def oom_killed(self) -> bool:
        e = self._events("memory.events")
        return e.get("oom_kill", 0) > 0 or e.get("oom_group_kill", 0) > 0

    def pids_hit(self) -> bool:
        return self._events("pids.events").get("max", 0) > 0

    def kill_all(self, deadline: float = 60.0) -> None:
        kill = self.path / "cgroup.kill"
        if self.fs.exists(kill):
            try:
                self.fs.write(kill, "1")
            except OSError:
                pass
        # cgroup.kill signals every process at once; wait until they are gone (and SIGKILL stragglers one by
        # one, which is all a kernel without cgroup.kill offers).
        kill_until_empty(self.fs, [self.path / "cgroup.procs"], deadline)
        try:
            self.fs.rmdir(self.path)
        except OSError:
            pass
