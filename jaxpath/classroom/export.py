"""`jaxpath export PART`: nbgrader's grade columns plus each submission's grading status and isolation level, and a CSV
that Canvas's gradebook import accepts."""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from ..config import Config
from ..files import write_atomic
from ..grade.record import StatusStore
from ..grade.statuses import GradeStatus
from .collect import read_roster

NBGRADER_COLUMNS = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
                    "raw_score", "late_submission_penalty", "score", "max_score"]
COLUMNS = NBGRADER_COLUMNS + ["extension_hours", "status", "isolation"]
"""The columns of `jaxpath export`'s CSV: nbgrader's, then the extension `jaxpath extend` granted, each submission's
grading status and the isolation level its notebooks ran at."""


@dataclass
class ExportReport:
    csv_path: Path
    canvas_path: Path
    rows: int
    not_in_roster: list[str] = field(default_factory=list)
    """Students of the gradebook the roster does not name: left out of the Canvas file (Canvas could not match them)."""


def net_score(submission) -> dict:
    """What nbgrader's export writes for a submission: `Submission.score` is the raw sum of its grades, the late
    penalty is taken off it, and the result is never below zero (nbgrader.plugins.export.CsvExportPlugin)."""
    raw, penalty = submission.score, submission.late_submission_penalty or 0.0
    return {"raw_score": raw, "late_submission_penalty": penalty, "score": max(0.0, raw - penalty)}


@dataclass(frozen=True)
class NotebookScore:
    """One student's score for one notebook of a part, as `export` counts it: `net_score` of the submitted notebook
    (nbgrader files the late penalty per notebook, never above its score; a part's penalty is their sum, so the
    notebooks' scores add up to the part's), 0 for a student who submitted nothing. `status` is jaxpath's grading
    status of that notebook ("" when jaxpath did not grade it)."""
    student: str
    notebook: str
    score: float
    max_score: float
    status: str
    reason: str = ""


def notebook_scores(config: Config, part: str, *, db_url: str | None = None) -> list[NotebookScore]:
    """Each student's score per notebook of `part` (the rows `export` sums, per notebook): what `jaxpath lti push`
    sends to the LMS's line item of each notebook."""
    from nbgrader.api import Gradebook, MissingEntry

    coursedir = config.coursedir(db_url)
    store = StatusStore(coursedir.db_url)
    statuses = {(st.student, st.notebook): st for st in store.all(part)}
    store.dispose()
    out = []
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        assignment = gb.find_assignment(part)
        for student in gb.students:
            for nb in assignment.notebooks:
                try:
                    sub = gb.find_submission_notebook(nb.name, part, student.id)
                except MissingEntry:
                    out.append(NotebookScore(student.id, nb.name, 0.0, nb.max_score, "not submitted"))
                    continue
                st = statuses.get((student.id, nb.name))
                out.append(NotebookScore(student.id, nb.name, net_score(sub)["score"], nb.max_score,
                                         str(st.status) if st else "", (st.reason or "") if st else ""))
    return out


def export(config: Config, part: str, *, output: Path | None = None, canvas_output: Path | None = None,
           canvas_column: str | None = None, db_url: str | None = None, roster: Path | None = None) -> ExportReport:
    """nbgrader's export columns (plus each submission's status and isolation level) and a Canvas gradebook import.
    With `roster` (the CSV `jaxpath collect` reads: `student_id`, `lms_id`, and optionally `name`, `sis_user_id`,
    `sis_login_id`, `section`), Canvas rows carry the LMS's own ids; without one, the nbgrader id is written as the
    SIS ids, which Canvas matches only where they are the same."""
    from nbgrader.api import Gradebook, MissingEntry

    coursedir = config.coursedir(db_url)
    store = StatusStore(coursedir.db_url)
    statuses: dict[str, list] = {}
    for st in store.all(part):
        statuses.setdefault(st.student, []).append(st)
    store.dispose()
    rows = []
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        assignment = gb.find_assignment(part)
        for student in gb.students:
            row = {"assignment": part, "duedate": assignment.duedate or "", "student_id": student.id,
                   "last_name": student.last_name or "", "first_name": student.first_name or "",
                   "email": student.email or "", "max_score": assignment.max_score}
            try:
                sub = gb.find_submission(part, student.id)
            except MissingEntry:
                # nbgrader's own export: a student who submitted nothing scores zero.
                rows.append({**row, "timestamp": "", "raw_score": 0.0, "late_submission_penalty": 0.0,
                             "score": 0.0, "extension_hours": "", "status": "not submitted", "isolation": ""})
                continue
            mine = statuses.get(student.id, [])
            bad = [f"{s.notebook}: {s.status} ({s.reason})" for s in mine if s.status != GradeStatus.GRADED]
            status = GradeStatus.GRADED.value if mine and not bad else ("not graded by jaxpath" if not mine else "; ".join(bad))
            # the extension `jaxpath extend` granted (nbgrader's field), in hours: the late penalty counts from
            # the due date plus it
            hours = f"{sub.extension.total_seconds() / 3600:g}" if sub.extension else ""
            rows.append({**row, **net_score(sub), "timestamp": sub.timestamp or "", "extension_hours": hours,
                         "status": status,
                         # How the grades were obtained: the isolation level(s) its notebooks ran at.
                         "isolation": "; ".join(sorted({s.isolation for s in mine if s.isolation}))})
    out = output or config.build / "grades" / f"grades-{part}.csv"   # git-ignored: student data never one `git add` from a commit
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS)
    w.writeheader()
    w.writerows(rows)
    write_atomic(Path(out), buf.getvalue().encode("utf-8"))
    # Canvas: Student, ID, SIS User ID, SIS Login ID, Section, then one column per assignment. Canvas matches
    # students by SIS User ID when ID is empty; the assignment column is "Name (canvas id)" when known.
    column = canvas_column or part
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", column])
    max_score = rows[0]["max_score"] if rows else ""
    w.writerow(["    Points Possible", "", "", "", "", max_score])
    mapped = read_roster(roster) if roster is not None else None
    not_in_roster = []
    for r in rows:
        name = ", ".join(x for x in (r["last_name"], r["first_name"]) if x) or r["student_id"]
        if mapped is None:
            w.writerow([name, "", r["student_id"], r["student_id"], "", r["score"]])
            continue
        entry = mapped.rows.get(r["student_id"])
        if entry is None:
            not_in_roster.append(r["student_id"])
            continue
        w.writerow([entry.get("name") or name, entry.get("lms_id", ""), entry.get("sis_user_id", ""),
                    entry.get("sis_login_id", ""), entry.get("section", ""), r["score"]])
    canvas = canvas_output or config.build / "grades" / f"grades-{part}-canvas.csv"
    write_atomic(Path(canvas), buf.getvalue().encode("utf-8"))
    return ExportReport(Path(out), Path(canvas), len(rows), not_in_roster)
