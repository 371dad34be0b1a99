"""The isolation level: which layers the sandbox is built from, chosen from what the host gives.

Two layers, each chosen on its own:
- namespaces (bubblewrap: mount, pid, network, ipc, uts): `root` (bwrap as root, then setpriv to a spare
  uid per kernel) or `rootless` (bwrap as the grader through a user namespace: the kernel runs as the
  grader's uid outside, mapped to an unprivileged id inside, with no capabilities);
- resources: `cgroup-v1` or `cgroup-v2` (memory with its files, processes, all killed at the end), or
  `rlimits` alone (address space, processes, CPU seconds, file size): the weaker level it is named as.
Grading refuses only when no namespace layer can be built.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ...errors import JaxpathError
from .probe import HostFacts


class Namespaces(StrEnum):
    """The namespace layer: who runs bubblewrap, and so as whom the kernel runs."""
    ROOT = "root"
    ROOTLESS = "rootless"
    NONE = "none"


class Resources(StrEnum):
    """The resource layer: what bounds memory and processes."""
    CGROUP_V1 = "cgroup-v1"
    CGROUP_V2 = "cgroup-v2"
    RLIMITS = "rlimits"
    NONE = "none"

    @property
    def cgroup(self) -> bool:
        return self in (Resources.CGROUP_V1, Resources.CGROUP_V2)


NAMESPACES = (Namespaces.ROOT, Namespaces.ROOTLESS)
RESOURCES = (Resources.CGROUP_V1, Resources.CGROUP_V2, Resources.RLIMITS)


class SandboxUnavailable(JaxpathError, RuntimeError):
    """Isolation cannot be built here; grading refuses unless the grader opts out explicitly."""


@dataclass(frozen=True)
class Level:
    namespaces: Namespaces
    resources: Resources

    def __post_init__(self):  # a level read back from a name (a task, a saved key) holds the enums, not strings
        object.__setattr__(self, "namespaces", Namespaces(self.namespaces))
        object.__setattr__(self, "resources", Resources(self.resources))

    @property
    def name(self) -> str:
        return f"{self.namespaces}+{self.resources}" if self.isolated else Namespaces.NONE.value

    @property
    def isolated(self) -> bool:
        return self.namespaces is not Namespaces.NONE

    @property
    def rootless(self) -> bool:
        return self.namespaces is Namespaces.ROOTLESS

    @property
    def cgroup(self) -> bool:
        return self.resources.cgroup

    @property
    def rlimits_only(self) -> bool:
        """Memory bounded by an address-space rlimit alone (no cgroup): the weaker level."""
        return self.resources is Resources.RLIMITS

    @classmethod
    def parse(cls, name: str) -> "Level":
        if name == NONE.name:
            return NONE
        ns, _, res = name.partition("+")
        if ns not in {n.value for n in NAMESPACES} or res not in {r.value for r in RESOURCES}:
            raise SandboxUnavailable(f"unknown isolation level {name!r} (one of: "
                                     + ", ".join(f"{n}+{r}" for n in NAMESPACES for r in RESOURCES) + ", none)")
        return cls(Namespaces(ns), Resources(res))

    def describe(self) -> str:
        if not self.isolated:
            return "no isolation: student code runs as the grader, with the course, the gradebook and the network in reach"
        who = ("bubblewrap through a user namespace, each kernel as the grader's uid mapped to an unprivileged id"
               if self.rootless else "bubblewrap as root, each kernel as a spare unprivileged uid")
        what = {Resources.CGROUP_V1: "cgroup v1 limits on memory (files included) and processes",
                Resources.CGROUP_V2: "a cgroup v2 subtree limiting memory (files included) and processes",
                Resources.RLIMITS: "rlimits only (weaker: address space instead of memory, files in the work folder "
                                   "not counted as memory; no cgroup)"}[self.resources]
        return f"{who}; {what}"


NONE = Level(Namespaces.NONE, Resources.NONE)


def _namespace_problem(f: HostFacts, namespaces: Namespaces) -> str | None:
    """Why the namespace layer `namespaces` cannot be built here: one sentence that says what to do."""
    if f.platform != "linux":
        return "isolation needs Linux namespaces: grade on a Linux host (or on Dask workers that run Linux)"
    if not f.bwrap:
        return ("bubblewrap is not installed: install it (Debian/Ubuntu: apt-get install bubblewrap; "
                "Fedora/RHEL: dnf install bubblewrap)")
    if not f.prlimit or (namespaces is Namespaces.ROOT and not f.setpriv):
        return "util-linux's prlimit and setpriv are missing: install util-linux"
    if namespaces is Namespaces.ROOT and not f.root:
        return "the root level needs a grader running as root"
    if namespaces is Namespaces.ROOTLESS and f.root:
        return ("the rootless level needs a grader that is not root (as root, a user namespace keeps the "
                "kernel's real uid 0: use the root level)")
    if f.bwrap_error:
        if not f.root and f.userns_max == 0:
            hint = "enable user namespaces (sysctl user.max_user_namespaces=15000)"
        elif not f.root and f.userns_clone == 0:
            hint = "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1)"
        elif not f.root and f.apparmor_userns == 1:
            hint = ("allow bwrap a user namespace under AppArmor (an AppArmor profile for bwrap, or "
                    "sysctl kernel.apparmor_restrict_unprivileged_userns=0)")
        elif f.root:
            hint = "run the grader where root may create namespaces (a container started with --privileged or CAP_SYS_ADMIN)"
        else:
            hint = "run the grader as root, or where unprivileged user namespaces are allowed"
        return f"bubblewrap cannot create its namespaces here ({f.bwrap_error}): {hint}"
    return None


def _resources(f: HostFacts) -> Resources:
    return Resources.CGROUP_V1 if f.v1_usable else Resources.CGROUP_V2 if f.v2_usable else Resources.RLIMITS


def _host_namespaces(f: HostFacts) -> Namespaces:
    return Namespaces.ROOT if f.root else Namespaces.ROOTLESS


def _resource_problem(f: HostFacts, resources: Resources) -> str | None:
    if resources is Resources.CGROUP_V1 and not f.v1_usable:
        return "no writable cgroup v1 memory and pids controllers here"
    if resources is Resources.CGROUP_V2 and not f.v2_usable:
        return "no writable cgroup v2 subtree with the memory and pids controllers here"
    return None


def choose(f: HostFacts, want: str | None = None) -> Level:
    """The level `jaxpath grade` uses on a host with these facts: the best it gives, or `want` (a level name,
    e.g. to withhold cgroups with "root+rlimits") when the host gives that. Raises SandboxUnavailable with
    one sentence saying what to install or enable when no namespace layer can be built."""
    if want:
        level = Level.parse(want)
        if not level.isolated:
            return NONE
        why = _namespace_problem(f, level.namespaces) or _resource_problem(f, level.resources)
        if why:
            raise SandboxUnavailable(f"cannot isolate student code at level {level.name}: {why}")
        return level
    ns = _host_namespaces(f)
    why = _namespace_problem(f, ns)
    if why:
        raise SandboxUnavailable(f"cannot isolate student code: {why}")
    return Level(ns, _resources(f))


def improvements(f: HostFacts, level: Level | None) -> list[str]:
    """What would raise the level on this host, most useful first (empty at the top)."""
    out = []
    if level is None or not level.isolated:
        why = _namespace_problem(f, _host_namespaces(f))
        return [why] if why else []
    if not level.cgroup:
        if f.v1_usable or f.v2_usable:
            best = Level(level.namespaces, _resources(f))
            out.append(f"this host gives {best.name}: ask for it (or for no level in particular) instead of {level.name}")
        elif f.root:
            out.append("mount the cgroup memory and pids controllers (v2: they must be listed in "
                       "/sys/fs/cgroup/cgroup.controllers; v1: /sys/fs/cgroup/memory and /sys/fs/cgroup/pids)")
        else:
            out.append("start the grader in a delegated cgroup v2 subtree with memory and pids "
                       "(systemd-run --user --scope -p Delegate=yes jaxpath grade ...), or have root "
                       "create and chown /sys/fs/cgroup/{memory,pids}/jaxpath to you (cgroup v1)")
    if level.rootless:
        out.append("run the grader as root (each kernel then runs as a spare uid of its own, not as yours)")
    return out
