"""The course loop end to end, with nbgrader's own commands and jaxpath, for two students (and one more who
handed in through the LMS): release, fetch, check, submit, collect, grade, feedback, release and fetch it."""
import json
import zipfile
from pathlib import Path

import nbformat
import pytest
from loop_factory import REPO, Student, instructor_course, release
from nbgrader.api import Gradebook

from jaxpath import Config
from jaxpath.classroom.sample import answers_from_source
from jaxpath.config import nbgrader_config
from jaxpath.grade import sandbox_problem

pytestmark = [pytest.mark.slow, pytest.mark.grade]
HIDDEN = ["double(-1.5)", "negative floats too", "square(-2)", "negative numbers square", "isinstance(halve(4), float)",
          "BEGIN HIDDEN TESTS"]


def test_exchange_is_course_local_unless_jaxpath_exchange_is_set(monkeypatch):
    monkeypatch.delenv("JAXPATH_EXCHANGE", raising=False)
    assert nbgrader_config(REPO).Exchange.root == str(REPO / "exchange")
    monkeypatch.setenv("JAXPATH_EXCHANGE", "/srv/nbgrader/exchange")
    assert nbgrader_config(REPO).Exchange.root == "/srv/nbgrader/exchange"


def answer(path: Path, answers: dict[str, str]) -> None:
    """Fill answer cells the way a student's editor saves them: straight into the notebook's JSON."""
    nb = json.loads(path.read_text())
    filled = set()
    for cell in nb["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell["source"] = answers[gid].splitlines(keepends=True)
            filled.add(gid)
    assert filled == set(answers), f"no such answer cell in {path}: {set(answers) - filled}"
    path.write_text(json.dumps(nb, indent=1))


def test_course_loop_two_students(tmp_path):
    ins = instructor_course(tmp_path)
    root = ins.root
    # 1. the instructor releases the part through the exchange (JAXPATH_EXCHANGE, not the course-local one)
    release(ins)
    assert (ins.exchange / "demo/outbound/demo/01_demo.ipynb").exists()
    assert not (root / "exchange").exists()
    correct = answers_from_source(nbformat.read(root / "source/demo/01_demo.ipynb", as_version=4))
    ada = Student("ada", tmp_path / "home-ada", ins.exchange).setup()
    bo = Student("bo", tmp_path / "home-bo", ins.exchange).setup()

    # 2. each student fetches, answers, checks and submits
    wrong = {**correct, "square-answer": "def square(x):\n    return 2 * x"}
    for student, answers, passing in ((ada, correct, 3), (bo, wrong, 2)):
        student.nbgrader("fetch_assignment", "demo")
        nb = student.work / "demo/01_demo.ipynb"
        assert "raise NotImplementedError" in nb.read_text() and "BEGIN HIDDEN" not in nb.read_text()
        answer(nb, answers)
        checked = student.nbgrader("validate", nb)
        assert ("Success! Your notebook passes all the tests." in checked.stdout) == (student is ada), checked.stdout
        check = student.jaxpath("check", nb, ok=False)
        assert check.returncode == (0 if student is ada else 1), check.stdout + check.stderr
        assert f"{passing}/3 self-checks pass" in check.stdout, check.stdout
        student.nbgrader("submit", "demo")
    inbound = sorted(p.name.split("+")[0] for p in (ins.exchange / "demo/inbound").iterdir())
    assert inbound == ["ada", "bo"], inbound

    # a third student handed in through the LMS (a Canvas zip), in the same class
    (root / "roster.csv").write_text("student_id,lms_id\ncy,1003\n")
    cy_nb = tmp_path / "cy.ipynb"
    cy_nb.write_bytes((ada.work / "demo/01_demo.ipynb").read_bytes())
    with zipfile.ZipFile(tmp_path / "lms.zip", "w") as zf:
        zf.write(cy_nb, "young_1003_77_01_demo.ipynb")
    ins.jaxpath("collect", tmp_path / "lms.zip", "demo", "--roster", root / "roster.csv")

    # 3. the instructor collects, grades, writes feedback and releases it
    ins.nbgrader("collect", "demo")
    for s in ("ada", "bo"):
        assert (root / f"submitted/{s}/demo/01_demo.ipynb").exists()
        assert (root / f"submitted/{s}/demo/submission_secret.txt").exists()
    grade_args = ["grade", "demo", "--workers", "2", "--cell-timeout", "30"]
    if sandbox_problem():
        grade_args.append("--no-sandbox")
    graded = ins.jaxpath(*grade_args)
    assert "3 graded" in graded.stdout, graded.stdout
    db_url = Config.load(root).db_url
    assert db_url == f"sqlite:///{root / 'gradebook/gradebook.db'}"
    with Gradebook(db_url, "demo") as gb:
        scores = {s: (gb.find_submission("demo", s).score, gb.find_submission("demo", s).max_score)
                  for s in ("ada", "bo", "cy")}
        per_cell = {g.name: g.score for g in gb.find_submission_notebook("01_demo", "demo", "bo").grades}
        submitted_at = gb.find_submission("demo", "ada").timestamp
    assert scores == {"ada": (5.0, 5.0), "bo": (3.0, 5.0), "cy": (5.0, 5.0)}
    assert per_cell == {"double-check": 2.0, "square-check": 0.0, "halve-check": 1.0}
    ada_cache = next((ada.home / ".local/share/jupyter/nbgrader_cache/demo").glob("ada+demo+*"))
    assert submitted_at.strftime("%Y-%m-%d %H:%M:%S") in (ada_cache / "timestamp.txt").read_text()

    fb = ins.jaxpath("feedback", "demo")
    assert "wrote 3 feedback page(s)" in fb.stdout, fb.stdout
    assert "feedback/cy/demo: the submission did not come through the exchange" in fb.stdout, fb.stdout
    for s in ("ada", "bo", "cy"):  # what nbgrader release_feedback reads
        for f in ("01_demo.html", "timestamp.txt", "submission_secret.txt"):
            assert (root / f"feedback/{s}/demo/{f}").is_file(), (s, f)
    assert (root / "feedback/ada/demo/submission_secret.txt").read_text() == \
        (root / "submitted/ada/demo/submission_secret.txt").read_text()
    released = ins.nbgrader("release_feedback", "demo")
    assert released.stderr.count("Releasing feedback for student") == 3, released.stderr
    assert len(list((ins.exchange / "demo/feedback").glob("*.html"))) == 3

    # ... and each student fetches their own feedback, with their score and without hidden tests
    for student, score, failed in ((ada, "5.0 / 5.0", 0), (bo, "3.0 / 5.0", 1)):
        student.nbgrader("fetch_feedback", "demo")
        pages = list((student.work / "demo/feedback").glob("*/01_demo.html"))
        assert len(pages) == 1, pages
        page = pages[0].read_text()
        assert f"01_demo (Score: {score})" in page, "their own page, with their score"
        assert page.count("(Score: 0.0 / 2.0)") == failed, "bo's square-check scored nothing, in his page only"
        assert "square(3) should be 9" in page  # the visible self-check is shown
        for h in HIDDEN:
            assert h not in page, (student.id, h)
