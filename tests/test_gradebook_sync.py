"""The gradebook follows source/ whatever an instructor did first: an assignment added with its due date before the
first grading run, a point value changed after it, a new late-penalty rule. Each regrades what it affects, and
nobody is flagged for carrying what an earlier release gave them."""
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from class_factory import answers_from_source, submission, submit
from course_factory import make_course
from nbgrader.api import Gradebook

from jaxpath import Config
from jaxpath.classroom.export import export
from jaxpath.cli import main
from jaxpath.grade import Limits, grade, sandbox_problem
from jaxpath.grade.statuses import GradeStatus

pytestmark = [pytest.mark.slow, pytest.mark.grade]
BIN = Path(sys.executable).parent
LIMITS = Limits(cell_timeout=20, notebook_timeout=120, memory_mb=1024, pids=256)


def _nbgrader(root, *args):
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run([BIN / "nbgrader", *args], cwd=root, env=env, check=True, capture_output=True, text=True)


def _grade(cfg):
    return grade(cfg, "demo", workers=1, limits=LIMITS, sandbox=sandbox_problem() is None)


def test_due_date_first_then_a_point_change_then_a_penalty_rule(tmp_path):
    root = make_course(tmp_path / "c")
    cfg = Config.load(root)
    db = cfg.coursedir().db_url
    # The instructor sets the due date before anything else, as formgrader's "Add new assignment" does.
    Path(db.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    _nbgrader(root, "db", "assignment", "add", "demo", "--duedate=2026-10-01 12:00:00 UTC")
    with Gradebook(db) as gb:
        assert gb.find_assignment("demo").notebooks == []
    # The students' copy, built beside the course's gradebook (so it stays as the instructor left it)
    _nbgrader(root, "generate_assignment", "demo", "--force", f"--CourseDirectory.db_url=sqlite:///{tmp_path / 'x.db'}")
    rel = nbformat.read(root / "release/demo/01_demo.ipynb", as_version=4)
    ok = answers_from_source(nbformat.read(root / "source/demo/01_demo.ipynb", as_version=4))
    submit(root, "early", "demo", "01_demo", submission(rel, ok), timestamp="2026-09-30 10:00:00 UTC")
    submit(root, "late", "demo", "01_demo", submission(rel, ok), timestamp="2026-10-02 10:00:00 UTC")

    r = _grade(cfg)
    by = {s.student: s for s in r.results}
    assert {s.status for s in r.results} == {GradeStatus.GRADED}, r.results
    assert by["early"].score == by["late"].score == by["early"].max_score == 5.0

    # A point value changed in source/: the next run regrades, with the new points, and flags nobody.
    src = root / "source/demo/01_demo.ipynb"
    nb = nbformat.read(src, as_version=4)
    [check] = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "double-check"]
    check.metadata.nbgrader["points"] = 3
    nbformat.write(nb, src)
    r = _grade(cfg)
    by = {s.student: s for s in r.results}
    assert not r.skipped and set(by) == {"early", "late"}, "a point change regrades the notebook's submissions"
    assert {s.status for s in r.results} == {GradeStatus.GRADED}, [s.reason for s in r.results]
    assert by["early"].score == by["early"].max_score == 6.0
    assert "came with 2 point(s)" in by["early"].reason and "graded as worth 3" in by["early"].reason
    assert len(_grade(cfg).skipped) == 2, "nothing changed since: nothing is regraded"

    # A late-penalty rule set in the course's config: the late submission is regraded, and exported net of it.
    (root / "nbgrader_config.py").write_text((root / "nbgrader_config.py").read_text()
                                             + "c.LateSubmissionPlugin.penalty_method = 'zero'\n")
    cfg = Config.load(root)
    r = _grade(cfg)
    assert {s.student for s in r.results} == {"early", "late"}
    rows = {row.split(",")[3]: row.split(",") for row in export(cfg, "demo").csv_path.read_text().splitlines()[1:]}
    assert float(rows["late"][9]) == 0.0 and float(rows["late"][8]) == 6.0, rows["late"]
    assert float(rows["early"][9]) == 6.0
    # An extension for the late student (nbgrader's own field, which nbgrader has no command for): regraded,
    # the penalty is gone
    assert main(["--root", str(root), "extend", "demo", "late", "--days", "2"]) == 0
    r = _grade(cfg)
    assert [s.student for s in r.results] == ["late"] and len(r.skipped) == 1
    rows = {row.split(",")[3]: row.split(",") for row in export(cfg, "demo").csv_path.read_text().splitlines()[1:]}
    assert float(rows["late"][9]) == 6.0 and float(rows["late"][8]) == 0.0, rows["late"]
