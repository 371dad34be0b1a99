"""What one graded notebook may use: `Limits`, read from course.toml `[grading]` under the command line's.

A leaf: the task records (tasks.py) and the sandbox both use it, and it imports nothing heavy."""
from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 3072
    """Memory of everything the notebook starts, files in its work folder included (cgroup); at the rlimits
    level, address space (never below 2048 MB: JAX does not start with less)."""
    pids: int = 512
    """Processes and threads together (JAX alone starts a few dozen threads)."""
    cpu_seconds: int = 600
    file_mb: int = 64
    tmp_mb: int = 256
    cell_timeout: int = 120
    notebook_timeout: int = 900
    cpu_cores: float = 1.0
    """CPU time per wall second of everything the notebook starts, in cores (a cgroup CPU quota where the host's
    cgroups have the cpu controller): a busy loop or a fork bomb gets this share, not the machine."""

    @classmethod
    def for_course(cls, config, **given) -> "Limits":
        """The course's grading limits: `[grading]` of course.toml (committed with the course), over these
        defaults, under what the command line `given` (None: not given). nbgrader's own `c.Execute.timeout`
        (what stock autograde and validate use per cell) is the cell timeout too; where both files set it, they
        must agree: one limit, one value."""
        from ..config import manifest_table
        from ..errors import JaxpathError

        grading = dict(manifest_table(config.manifest_path, "grading"))
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(grading) - known)
        if unknown:
            raise JaxpathError(f"{config.manifest_file} [grading] has unknown key(s) {', '.join(unknown)}: jaxpath grade "
                               f"reads {', '.join(sorted(known))}")
        bad = sorted(k for k, v in grading.items() if isinstance(v, bool) or v <= 0 or
                     not isinstance(v, (int, float) if k == "cpu_cores" else int))
        if bad:
            raise JaxpathError(f"{config.manifest_file} [grading] {', '.join(bad)}: a positive whole number "
                               "(cpu_cores: a positive number)")
        execute = config.nbgrader().get("Execute", {}).get("timeout")
        if isinstance(execute, int) and execute > 0:
            if "cell_timeout" in grading and grading["cell_timeout"] != execute:
                raise JaxpathError(
                    f"nbgrader_config.py sets c.Execute.timeout = {execute} but {config.manifest_file} [grading] sets "
                    f"cell_timeout = {grading['cell_timeout']}: one limit, two values. Keep it in "
                    f"{config.manifest_file} (nbgrader_config.py can read it from there, as this course's does)")
            grading.setdefault("cell_timeout", execute)
        return cls(**{**grading, **{k: v for k, v in given.items() if v is not None}})
