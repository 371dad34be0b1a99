"""`jaxpath export` writes what `nbgrader export` writes (raw score, late penalty, score net of it), for late,
extended, manually graded and missing submissions, and the Canvas CSV carries the same net score."""
import csv
import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest
from course_factory import make_course

from jaxpath import Config
from jaxpath.classroom.export import NBGRADER_COLUMNS, export

DUE = dt.datetime(2026, 10, 1, 12, 0)
# student: (hours after the due date, extension in hours, auto score of the test cell, manual score of the
# written answer or None, late penalty recorded by the grader)
CLASS = {
    "ontime": (-2, 0, 2.0, 1.0, 0.0),
    "late": (5, 0, 2.0, 0.4, 0.4),              # the case: raw 2.4, penalty 0.4, score 2.0
    "extended": (30, 48, 2.0, 2.0, 0.0),        # late by the clock, within the extension: no penalty
    "overdrawn": (400, 0, 0.0, 0.5, 3.0),       # the penalty exceeds the score: nbgrader floors at 0
    "manual": (1, 0, 0.0, None, 0.1),           # the answer not graded by hand yet
}


def _gradebook(root: Path) -> str:
    from nbgrader.api import Gradebook

    url = f"sqlite:///{root / 'gradebook.db'}"
    with Gradebook(url, "demo") as gb:
        gb.add_assignment("demo", duedate=DUE)
        gb.add_notebook("01_demo", "demo")
        gb.add_grade_cell("double-check", "01_demo", "demo", max_score=2, cell_type="code")
        gb.add_grade_cell("essay", "01_demo", "demo", max_score=2, cell_type="markdown")
        for s in (*CLASS, "absent"):
            gb.add_student(s, first_name=s.title(), last_name="Doe", email=f"{s}@example.org")
        for s, (hours, ext, auto, manual, penalty) in CLASS.items():
            sub = gb.add_submission("demo", s, timestamp=DUE + dt.timedelta(hours=hours))
            sub.extension = dt.timedelta(hours=ext) if ext else None
            nb = gb.find_submission_notebook("01_demo", "demo", s)
            nb.late_submission_penalty = penalty
            for g in nb.grades:
                if g.name == "double-check":
                    g.auto_score = auto
                else:
                    g.auto_score, g.manual_score = None, manual
            gb.db.commit()
    return url


def _rows(path: Path) -> dict:
    return {r["student_id"]: r for r in csv.DictReader(path.open())}


def test_export_matches_nbgrader_export(tmp_path, monkeypatch):
    # nbgrader runs `alembic` from PATH when it creates a gradebook
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    root = make_course(tmp_path / "c")
    url = _gradebook(root)
    theirs = root / "nbgrader.csv"
    subprocess.run([sys.executable, "-m", "nbgrader", "export", f"--db={url}", f"--to={theirs}"], cwd=root,
                   check=True, capture_output=True)
    mine = export(Config.load(root), "demo", db_url=url)
    # student data is written where git never picks it up (build/ is ignored), not into the course root
    assert mine.csv_path.parent == mine.canvas_path.parent == Config.load(root).build / "grades"
    a, b = _rows(theirs), _rows(mine.csv_path)
    assert set(a) == set(b) == {*CLASS, "absent"}
    for student in a:
        for col in NBGRADER_COLUMNS:
            if col in ("raw_score", "late_submission_penalty", "score", "max_score"):
                assert float(b[student][col]) == pytest.approx(float(a[student][col])), (student, col)
            elif col not in ("duedate", "timestamp"):   # the same instants, written by two CSV writers
                assert b[student][col] == a[student][col], (student, col)
    assert (float(b["late"]["raw_score"]), float(b["late"]["late_submission_penalty"]),
            float(b["late"]["score"])) == (2.4, 0.4, pytest.approx(2.0))
    assert float(b["overdrawn"]["score"]) == 0.0 and b["absent"]["status"] == "not submitted"
    assert b["extended"]["extension_hours"] == "48" and b["late"]["extension_hours"] == "" == b["absent"]["extension_hours"]
    canvas = {r[2]: r for r in csv.reader(mine.canvas_path.open())}
    for student in a:
        assert float(canvas[student][5]) == pytest.approx(float(a[student]["score"])), student


def test_canvas_export_maps_students_through_the_roster(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    root = make_course(tmp_path / "c")
    url = _gradebook(root)
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,lms_id,name,sis_user_id,sis_login_id,section\n"
                      + "".join(f"{s},{100 + i},{s.title()} Doe,S{i:03d},{s}@uni.example,A\n"
                                for i, s in enumerate(sorted(CLASS)) if s != "manual"))
    r = export(Config.load(root), "demo", db_url=url, roster=roster)
    canvas = list(csv.reader(r.canvas_path.open()))
    by_id = {row[1]: row for row in canvas[2:]}
    late = sorted(CLASS).index("late")
    assert by_id[str(100 + late)] == ["Late Doe", str(100 + late), f"S{late:03d}", "late@uni.example", "A", "2.0"]
    assert r.not_in_roster == ["absent", "manual"]   # in the gradebook, not in the roster: not uploaded
    assert len(canvas) == 2 + len(CLASS) - 1
