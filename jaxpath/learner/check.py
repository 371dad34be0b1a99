"""`jaxpath check NOTEBOOK`: run a student's notebook the way nbgrader's Validate button does and say, per
exercise, whether its self-check passes. Unlike `nbgrader validate`, the exit status tells: 0 when every
self-check passes, 1 otherwise. With `record=True` the verdicts are kept in the learner's work folder
(jaxpath.learner.progress), where `jaxpath progress` and `jaxpath serve` read them."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ..authoring.chapter import HEADING, INTENDED_ERROR, is_test, nbgrader_meta, read_notebook, tags
from ..authoring.requirements import cell_outcomes
from ..execute import Session


@dataclass
class CheckResult:
    grade_id: str
    title: str
    passed: bool
    points: float
    message: str = ""
    requirements: list = field(default_factory=list)
    """Per requirement, what the self-check printed (jaxpath.authoring.requirements.Outcome: ✓, ✗ with its message, or ·
    for one only the hidden tests check); empty for a check scored all or nothing. The exercise passes only
    when none failed."""


@dataclass
class CheckReport:
    path: Path
    results: list[CheckResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """Cells outside the self-checks that raised (they may explain a failing check)."""
    seconds: float = 0.0
    recorded: Path | None = None
    """The progress file the verdicts were recorded in (None when not recorded)."""

    @property
    def ok(self) -> bool:
        return bool(self.results) and all(r.passed for r in self.results)


def check(path: Path, timeout: int = 120, record: bool = False) -> CheckReport:
    """Run the notebook at `path` in a fresh kernel, cell by cell, and collect each self-check's verdict;
    with `record`, write the verdicts to <work>/.jaxpath/progress.json (the notebook is <work>/<part>/<name>)."""
    path = Path(path)
    nb = read_notebook(path, str(path))
    report = CheckReport(path)
    t0 = time.perf_counter()
    title = ""
    with Session(nb, path.parent.resolve(), timeout=timeout) as s:
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "markdown":
                first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
                m = HEADING.match(first)
                if m:
                    title = m.group(2)
                continue
            out = s.run(i)
            if is_test(cell):
                meta = nbgrader_meta(cell)
                outcomes = cell_outcomes(nb.cells[i])
                passed = out.ok and not any(o.mark == "✗" for o in outcomes)
                report.results.append(CheckResult(meta.get("grade_id", f"cell {i + 1}"), title, passed,
                                                  float(meta.get("points", 0) or 0), "" if out.ok else out.summary,
                                                  outcomes))
            elif not out.ok and INTENDED_ERROR not in tags(cell):
                report.errors.append(f"cell {i + 1}: {out.summary}")
            if s.dead:
                report.errors.append(f"cell {i + 1}: the kernel died; the cells after it did not run")
                break
    report.seconds = time.perf_counter() - t0
    if record and report.results:
        from .progress import record_check

        report.recorded = record_check(path, nb, {r.grade_id: r.passed for r in report.results})
    return report
