"""Isolation of student code, in layers chosen by what the host gives (see level.py):

- probe.py: what the host gives (bubblewrap, user namespaces, cgroup v1/v2 and their controllers, root);
- level.py: the level `jaxpath grade` uses, and what would raise it;
- bwrap.py: namespaces and the private filesystem view, as root or rootless;
- cgroup_v1.py, cgroup_v2.py: memory and processes, every process killed at the end;
- rlimits.py: the rlimits every level sets, and the resource layer where no cgroup can be had.
"""
from __future__ import annotations

from pathlib import Path

from .level import NONE, Level, Namespaces, Resources, SandboxUnavailable, choose, improvements
from .probe import HostFacts, cgroups, probe

__all__ = ["HostFacts", "Level", "NONE", "Namespaces", "Resources", "SandboxUnavailable", "choose", "improvements",
           "probe", "resource_layer", "host_level"]


def host_level(want: str | None = None) -> Level:
    """The level this host gives (or `want`, when it gives that); SandboxUnavailable when none."""
    return choose(probe(), want)


def resource_layer(level: Level, name: str, limits):
    """The resource layer of `level` for one kernel's sandbox named `name` (created now)."""
    import os

    from .cgroup_v1 import CgroupV1
    from .cgroup_v2 import CgroupV2
    from .rlimits import NoCgroup

    facts = cgroups()
    if level.resources is Resources.CGROUP_V1:
        if not facts["v1_writable"]:
            raise SandboxUnavailable("this worker has no writable cgroup v1 memory and pids controllers "
                                     f"(level {level.name} was chosen on the coordinator's host)")
        mounts = {**facts["v1"], **({"cpu": facts["v1_cpu"]} if facts.get("v1_cpu") else {})}
        return CgroupV1(name, limits, mounts)
    if level.resources is Resources.CGROUP_V2:
        if not facts.get("v2_writable"):
            raise SandboxUnavailable("this worker has no writable cgroup v2 subtree "
                                     f"(level {level.name} was chosen on the coordinator's host)")
        return CgroupV2(name, limits, Path(facts["v2_base"]), root=os.geteuid() == 0)
    return NoCgroup()
