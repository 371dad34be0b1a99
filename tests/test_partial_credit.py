"""A test cell whose last expression is a number scores that number, as nbgrader scores it
(nbgrader.utils.determine_grade): the line the grader adds to a test cell keeps the cell's value."""
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from class_factory import submission, submit
from course_factory import CHECK_META, good_cells, make_course
from nbgrader.api import Gradebook

from jaxpath import Config
from jaxpath.grade import Limits, grade, sandbox_problem
from jaxpath.grade.integrity import with_trailer

BIN = Path(sys.executable).parent
CHECKS = {  # grade id -> a test cell that ends in a number (worth 4 points each)
    "double-check": "score = float(double(3) == 6) + float(double(-1) == -2)\nscore",
    "square-check": "a = square(3) == 9\nb = square(-2) == 4\n0.5 * a + 1.5 * b  # the weights",
    "halve-check": "ok = halve(3) == 1.5\nfloat(ok) * 3;",   # `;` shows nothing: nbgrader gives full marks
}


def test_with_trailer_keeps_the_last_value_and_its_semicolon():
    src = with_trailer("ok = 1\nfloat(ok) * 3  # score", "T")
    assert src.endswith("\n__import__('sys').modules['_jaxpath_integrity'].last_value")
    assert "ended = 'T'" in src
    assert with_trailer("score;", "T").endswith(".last_value;")
    assert with_trailer("x = 1", "T") == "x = 1\n__import__('sys').modules['_jaxpath_integrity'].ended = 'T'"
    assert with_trailer("%time x", "T").endswith("ended = 'T'")  # not Python: left as it was


@pytest.mark.slow
@pytest.mark.grade
@pytest.mark.parametrize("sandbox", [pytest.param(True, id="sandboxed"), pytest.param(False, id="unsandboxed",
                                                                                    marks=pytest.mark.full)])
def test_partial_credit_scores_as_nbgrader_scores_it(tmp_path, sandbox):
    """In the sandbox (where the host can build one) and without it: the trailer is the same, the kernel's start
    is not. The parity case partial_credit (tests/test_parity.py) adds non-numeric values, manual grading, a task
    and a value above the cell's points."""
    if sandbox and sandbox_problem() is not None:
        pytest.skip(f"no sandbox here: {sandbox_problem()}")
    cells = good_cells()
    for c in cells:
        gid = c.metadata.get("nbgrader", {}).get("grade_id")
        if gid in CHECKS:
            c.source = f"# 🧪 Self-check\n{CHECKS[gid]}"
            c.metadata.nbgrader = {**CHECK_META, "points": 4, "grade_id": gid}
    root = make_course(tmp_path / "c", cells)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run([BIN / "nbgrader", "generate_assignment", "demo", "--force"], cwd=root, env=env, check=True,
                   capture_output=True)
    rel = nbformat.read(root / "release/demo/01_demo.ipynb", as_version=4)
    answers = {"double-answer": "def double(x):\n    return 6 if x == 3 else 0",   # right on one input of two
               "square-answer": "def square(x):\n    return x * x",
               "halve-answer": "def halve(x):\n    return x / 2"}
    submit(root, "ada", "demo", "01_demo", submission(rel, answers))
    cfg = Config.load(root)
    grade(cfg, "demo", workers=1, limits=Limits(cell_timeout=60, notebook_timeout=300, memory_mb=2048, pids=256),
          sandbox=sandbox, compile_cache=False)
    theirs_db = f"sqlite:///{tmp_path / 'nbgrader.db'}"
    for args in (["generate_assignment", "demo", "--force"], ["autograde", "demo", "--force"]):
        subprocess.run([BIN / "nbgrader", *args, f"--CourseDirectory.db_url={theirs_db}",
                        "--CourseDirectory.autograded_directory=autograded-nbgrader"], cwd=root, env=env, check=True,
                       capture_output=True)

    def scores(url):
        with Gradebook(url) as gb:
            nb = gb.find_submission_notebook("01_demo", "demo", "ada")
            return {g.name: g.score for g in nb.grades}

    ours, theirs = scores(cfg.db_url), scores(theirs_db)
    assert theirs["double-check"] == 1.0 and theirs["square-check"] == 2.0 and theirs["halve-check"] == 4.0, theirs
    assert ours == theirs
