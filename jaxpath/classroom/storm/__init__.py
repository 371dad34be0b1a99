"""The deadline storm (`jaxpath storm`, `make storm`): a class of real accounts submitting through nbgrader's
exchange in the same minute, some twice, some late, one forging its time, while the instructor collects in a
loop; graders racing on one PostgreSQL gradebook; optionally the faults (the collector killed mid-copy, a grader
killed mid-batch, PostgreSQL killed and restarted) and the reruns; feedback fetched by every student; the counts
checked (nothing lost, duplicated or mismatched) and reported (docs/storm.md).

One module per step: `course` (the part and the answers of each kind), `people` (accounts, running as them),
`student` (what each student's process does), `postgres`, `run` (the steps), `report`."""
from __future__ import annotations

from pathlib import Path


def run_storm(students: int = 60, graders: int = 2, *, faults: bool = False, out: Path | None = None,
              rule: str = "before-due", cell_timeout: int = 5, log=print) -> dict:
    """Run the storm (as root); returns its numbers, raises StormError when a count is off."""
    from .run import Storm

    return Storm(students=students, graders=graders, faults=faults, rule=rule, cell_timeout=cell_timeout,
                 out=out, log=log).run()


__all__ = ["run_storm"]
