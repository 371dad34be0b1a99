"""The rlimits every level sets (prlimit, inside the sandbox), and the resource layer of a host without a
usable cgroup: rlimits alone, the weaker level.

What rlimits alone cannot do, and cgroups do: count the memory of files written to the work folder and to
the sandbox's tmpfs (they are bounded only per file, by RLIMIT_FSIZE, and by the tmpfs sizes), stop the
kernel from being OOM-killed as a whole (a memory bomb gets a MemoryError in its cell instead), and bound
memory rather than address space (JAX reserves far more address space than it uses: the limit is never
set below MIN_ADDRESS_SPACE_MB)."""
from __future__ import annotations

MIN_ADDRESS_SPACE_MB = 2048
"""JAX dies at start below about 1.6 GiB of address space (measured: see the project's sandbox notes)."""


def address_space_mb(limits) -> int:
    return max(limits.memory_mb, MIN_ADDRESS_SPACE_MB)


def prlimit_args(limits, level) -> list[str]:
    """prlimit's arguments at `level` (an address-space limit only where no cgroup bounds memory)."""
    args = ["prlimit", f"--cpu={limits.cpu_seconds}", f"--fsize={limits.file_mb * 1024 * 1024}",
            f"--nproc={limits.pids}", "--core=0"]
    if level.rlimits_only:
        args.append(f"--as={address_space_mb(limits) * 1024 * 1024}")
    return args + ["--"]


class NoCgroup:
    """The resource layer's interface where there is no cgroup: nothing to enter, count or kill (the
    sandbox's pid namespace or spare uid is what kills every process at the end)."""

    def enter_command(self) -> str:
        return ""

    def oom_killed(self) -> bool:
        return False

    def pids_hit(self) -> bool:
        return False

    def kill_all(self, deadline: float = 60.0) -> None:
        return None
