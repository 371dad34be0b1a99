"""`jaxpath doctor`: what this host gives for isolating student code, the isolation level `jaxpath grade`
would use here, and what would raise it.

    report = doctor()
    report.ok          # grading can run isolated here
    report.level.name  # e.g. "root+cgroup-v1", "rootless+rlimits"
"""
from __future__ import annotations

import os
import stat
from dataclasses import asdict, dataclass, field

from .isolation import HostFacts, Level, SandboxUnavailable, choose, improvements, probe


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class DoctorReport:
    facts: HostFacts
    level: Level | None
    """The level `jaxpath grade` uses here; None when it refuses (see `problem`)."""
    problem: str = ""
    raise_by: list[str] = field(default_factory=list)
    """What would raise the level, most useful first."""
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.level is not None and self.level.isolated

    def to_dict(self) -> dict:
        return {"ok": self.ok, "level": self.level.name if self.level else None,
                "description": self.level.describe() if self.level else "", "problem": self.problem,
                "raise_by": self.raise_by, "checks": [asdict(c) for c in self.checks],
                "facts": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self.facts).items()}}


def _others_can_run(path: str) -> bool:
    """Whether an unprivileged uid could read and execute `path` once its folder is bound in."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return bool(mode & stat.S_IROTH and mode & stat.S_IXOTH)


def checks(f: HostFacts) -> list[Check]:
    out = [Check("user", True, f"{f.user} (uid {f.euid}, {'root' if f.root else 'not root'})"),
           Check("bubblewrap", bool(f.bwrap), f"{f.bwrap} ({f.bwrap_version})" if f.bwrap else "not installed")]
    if f.bwrap:
        how = "as root" if f.root else "through a user namespace"
        out.append(Check("namespaces", f.bwrap_works, f"bwrap creates mount, pid, net, ipc and uts namespaces {how}"
                         if f.bwrap_works else f"bwrap cannot create its namespaces {how}: {f.bwrap_error}"))
    userns = f"max_user_namespaces={f.userns_max}"
    if f.userns_clone is not None:
        userns += f", unprivileged_userns_clone={f.userns_clone}"
    if f.apparmor_userns is not None:
        userns += f", apparmor_restrict_unprivileged_userns={f.apparmor_userns}"
    out.append(Check("user namespaces", bool(f.userns_max) and f.userns_clone != 0 and f.apparmor_userns != 1, userns))
    out.append(Check("util-linux", bool(f.prlimit and f.setpriv),
                     f"prlimit: {f.prlimit or 'missing'}, setpriv: {f.setpriv or 'missing'}"))
    if f.v1:
        mounts = ", ".join(f"{c} at {p}" for c, p in sorted(f.v1.items()))
        out.append(Check("cgroup v1", f.v1_usable, mounts + ("; writable" if f.v1_writable else
                                                            "; not writable by this user" if len(f.v1) == 2 else
                                                            "; memory and pids are both needed")))
    else:
        out.append(Check("cgroup v1", False, "no memory or pids controller mounted"))
    if f.v2_mount:
        detail = (f"mounted at {f.v2_mount}; base {f.v2_base} offers {' '.join(f.v2_controllers) or 'no controllers'}"
                  + ("; writable" if f.v2_writable else "; not writable by this user (not a delegated subtree)"))
        out.append(Check("cgroup v2", f.v2_usable, detail))
    else:
        out.append(Check("cgroup v2", False, "not mounted"))
    # What bounds a busy loop or a fork bomb: a cgroup CPU quota (Limits.cpu_cores of a core), else only the
    # CPU-time rlimit (Limits.cpu_seconds, per process) and the per-cell and per-notebook timeouts.
    if f.v1_cpu or "cpu" in f.v2_controllers:
        where = f"cgroup v1 at {f.v1_cpu}" if f.v1_cpu else f"cgroup v2 (offered by {f.v2_base})"
        out.append(Check("cpu quota", True, f"each kernel gets a CPU quota ({where}): a fork bomb gets its share of a "
                                            "core, not the machine"))
    else:
        out.append(Check("cpu quota", False, "no writable cpu controller: a busy kernel is bounded only by its CPU-time "
                                             "rlimit and the timeouts, and may use every core until then"))
    prefixes = ", ".join(f.python_prefixes)
    if f.root:  # the kernels run as spare uids: the interpreter must be theirs to run once bound in
        ok = _others_can_run(os.path.realpath(f.python))
        out.append(Check("python", ok, f"{f.python} (bound read-only: {prefixes})" + (
            "" if ok else "; not readable and executable by other users, as the kernels' spare uids need")))
    else:
        out.append(Check("python", True, f"{f.python} (bound read-only: {prefixes})"))
    return out


def doctor(want: str | None = None, facts: HostFacts | None = None) -> DoctorReport:
    """The report for this host (or for `facts`), at the best level or at `want`."""
    f = facts or probe()
    try:
        level, problem = choose(f, want), ""
    except SandboxUnavailable as e:
        level, problem = None, str(e)
    return DoctorReport(f, level, problem, improvements(f, level) if level else [], checks(f))
