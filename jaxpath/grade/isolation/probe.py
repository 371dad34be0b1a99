"""What this host gives for isolating student code: facts only, read from the kernel's interfaces and by
trying the one thing that can only be known by trying (can bubblewrap create its namespaces here?).

Nothing here decides; `level.choose` turns these facts into the isolation level `jaxpath grade` uses."""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids")
"""The cgroup controllers every cgroup level needs (v1 and v2 alike): memory, files included, and processes."""


@dataclass(frozen=True)
class Mount:
    path: Path
    fstype: str          # "cgroup" (v1) or "cgroup2"
    controllers: tuple   # v1: from the super options (memory, pids, ...); v2: empty (read cgroup.controllers)


def parse_mountinfo(text: str) -> list[Mount]:
    """The cgroup mounts of a /proc/self/mountinfo text (see proc(5): fields, a ' - ' separator, then the
    file system type, the source and the super options)."""
    out = []
    for line in text.splitlines():
        if " - " not in line:
            continue
        left, right = line.split(" - ", 1)
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        mountpoint = fields[4].replace("\\040", " ")
        ctls = tuple(o for o in tail[2].split(",") if tail[0] == "cgroup" and o not in ("rw", "ro")
                     and "=" not in o) if tail[0] == "cgroup" else ()
        out.append(Mount(Path(mountpoint), tail[0], ctls))
    return out


def parse_proc_cgroup(text: str) -> dict[str, str]:
    """/proc/self/cgroup: {controller or "" for the v2 hierarchy: the process's cgroup path}."""
    out = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, ctls, path = parts
        if ctls == "":
            out[""] = path
        for c in ctls.split(","):
            if c:
                out[c] = path
    return out


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _can_make_child(base: Path) -> bool:
    """Whether this process can create (and remove) a cgroup under `base`: the one test of write access
    to a cgroup file system that permission bits alone do not answer (v1 and v2 both)."""
    probe = base / f"jaxpath-probe-{os.getpid()}"
    try:
        base.mkdir(exist_ok=True)
        probe.mkdir()
        probe.rmdir()
        return True
    except OSError:
        return False


@dataclass(frozen=True)
class HostFacts:
    platform: str
    euid: int
    user: str
    python: str
    """The interpreter the kernels run (the grader's own: its prefix and virtual environment are bound read-only)."""
    python_prefixes: tuple
    bwrap: str | None
    bwrap_version: str = ""
    setpriv: str | None = None
    prlimit: str | None = None
    bwrap_error: str = ""
    """Why bwrap could not create its namespaces as this user (empty when it could)."""
    userns_max: int | None = None
    """/proc/sys/user/max_user_namespaces (0: user namespaces are off)."""
    userns_clone: int | None = None
    """Debian's kernel.unprivileged_userns_clone, where the kernel has it."""
    apparmor_userns: int | None = None
    """Ubuntu's kernel.apparmor_restrict_unprivileged_userns (1: only profiled programs get one)."""
    v1: dict = field(default_factory=dict)
    """cgroup v1 controller -> its mount point, for memory and pids where mounted."""
    v1_writable: bool = False
    """A jaxpath cgroup can be created under both v1 controllers."""
    v1_cpu: str | None = None
    """The v1 cpu controller's mount point, where a jaxpath cgroup can be made under it too (the CPU quota)."""
    v2_mount: str | None = None
    v2_controllers: tuple = ()
    """Controllers the v2 base offers its children (its cgroup.controllers)."""
    v2_base: str | None = None
    """Where jaxpath would make its v2 cgroups: the hierarchy's root as root, else this process's own cgroup
    when it is delegated (writable), else None."""
    v2_writable: bool = False

    @property
    def root(self) -> bool:
        return self.euid == 0

    @property
    def bwrap_works(self) -> bool:
        return bool(self.bwrap) and not self.bwrap_error

    @property
    def v1_usable(self) -> bool:
        return all(c in self.v1 for c in CONTROLLERS) and self.v1_writable

    @property
    def v2_usable(self) -> bool:
        return bool(self.v2_base) and self.v2_writable and all(c in self.v2_controllers for c in CONTROLLERS)


def bwrap_probe_command(bwrap: str, root: bool) -> list[str]:
    """The namespaces the sandbox asks for, tried on `true`."""
    cmd = [bwrap, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
           "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not root:
        cmd += ["--unshare-user", "--disable-userns"]
    return cmd + ["true"]


def _bwrap_error(bwrap: str, root: bool) -> str:
    try:
        subprocess.run(bwrap_probe_command(bwrap, root), check=True, capture_output=True, timeout=30)
        return ""
    except subprocess.CalledProcessError as e:
        lines = (e.stderr or b"").decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit status {e.returncode}"
    except (subprocess.SubprocessError, OSError) as e:
        return str(e)


def _int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def _python_prefixes() -> tuple:
    return tuple(sorted({os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)}))


def probe_cgroups(mountinfo: str, proc_cgroup: str, euid: int, try_write=_can_make_child) -> dict:
    """The cgroup half of HostFacts, from the texts of /proc/self/mountinfo and /proc/self/cgroup."""
    mounts = parse_mountinfo(mountinfo)
    v1 = {}
    for m in mounts:
        for c in m.controllers:
            if c in CONTROLLERS and c not in v1:
                v1[c] = str(m.path)
    v1_writable = all(c in v1 for c in CONTROLLERS) and all(try_write(Path(v1[c]) / "jaxpath") for c in CONTROLLERS)
    cpu = next((m for m in mounts if "cpu" in m.controllers), None)   # often mounted with cpuacct
    v1_cpu = str(cpu.path) if cpu is not None and v1_writable and try_write(cpu.path / "jaxpath") else None
    v2 = next((m for m in mounts if m.fstype == "cgroup2"), None)
    out = {"v1": v1, "v1_writable": v1_writable, "v1_cpu": v1_cpu, "v2_mount": str(v2.path) if v2 else None}
    if v2 is not None:
        own = parse_proc_cgroup(proc_cgroup).get("", "/")
        if euid == 0:
            base = v2.path
        else:  # a delegated subtree: this process's own cgroup, writable by it (a systemd user scope)
            base = v2.path / own.lstrip("/")
        out["v2_base"] = str(base)
        out["v2_controllers"] = tuple(_read(base / "cgroup.controllers").split())
        out["v2_writable"] = (euid == 0 or os.access(base / "cgroup.subtree_control", os.W_OK)) and try_write(
            base / "jaxpath" if euid == 0 else base)
    return out


@functools.lru_cache(maxsize=None)
def cgroups() -> dict:
    """The cgroup facts alone (what a worker needs to build the level it was given), cached per process."""
    return probe_cgroups(_read(Path("/proc/self/mountinfo")), _read(Path("/proc/self/cgroup")), os.geteuid())


@functools.lru_cache(maxsize=None)
def probe() -> HostFacts:
    """The facts of this host, for this process's user (cached: the host does not change under a batch)."""
    import getpass

    euid = os.geteuid() if hasattr(os, "geteuid") else -1
    try:
        user = getpass.getuser()
    except Exception:
        user = str(euid)
    bwrap = shutil.which("bwrap")
    facts = dict(platform=sys.platform, euid=euid, user=user, python=sys.executable,
                 python_prefixes=_python_prefixes(), bwrap=bwrap, setpriv=shutil.which("setpriv"),
                 prlimit=shutil.which("prlimit"))
    if sys.platform != "linux":
        return HostFacts(**facts)
    if bwrap:
        try:
            version = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
        except (subprocess.SubprocessError, OSError):
            version = ""
        facts.update(bwrap_version=version, bwrap_error=_bwrap_error(bwrap, euid == 0))
    facts.update(userns_max=_int("/proc/sys/user/max_user_namespaces"),
                 userns_clone=_int("/proc/sys/kernel/unprivileged_userns_clone"),
                 apparmor_userns=_int("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"))
    facts.update(cgroups())
    return HostFacts(**facts)
