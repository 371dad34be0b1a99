"""`jaxpath check`: per-exercise verdicts and an exit status that tells (nbgrader validate always exits 0)."""
import nbformat
import pytest
from course_factory import good_cells, make_course

from jaxpath.classroom.sample import answers_from_source, submission
from jaxpath.cli import main

pytestmark = pytest.mark.slow


def test_check_passes_the_solution_and_fails_the_stub_and_records_each_verdict(tmp_path, capsys):
    cells = good_cells()
    # a message with brackets in it, printed as the notebook says it (rich would take [idx] for markup)
    cells[14].source = cells[14].source.replace("'square(3) should be 9'", "'square(3) should be 9, not table[idx]'")
    root = make_course(tmp_path / "c", cells)
    work = tmp_path / "work"
    (work / "demo").mkdir(parents=True)
    src = nbformat.read(root / "source/demo/01_demo.ipynb", as_version=4)
    from jaxpath.authoring.chapter import is_answer, is_test, stub_source, visible_source

    student = nbformat.from_dict(src)
    for c in student.cells:  # what a student gets: stubs and visible self-checks
        if is_answer(c):
            c.source = stub_source(c.source)
        elif is_test(c):
            c.source = visible_source(c.source)
    nbformat.write(student, work / "demo" / "stub.ipynb")
    nbformat.write(submission(student, {**answers_from_source(src), "square-answer": "def square(x):\n    return 2 * x"}),
                   work / "demo" / "partly.ipynb")
    nbformat.write(submission(student, answers_from_source(src)), work / "demo" / "done.ipynb")
    assert main(["--root", str(root), "check", str(work / "demo" / "done.ipynb")]) == 0
    out = capsys.readouterr().out
    assert "3/3 self-checks pass" in out and "recorded in" in out
    assert main(["--root", str(root), "check", str(work / "demo" / "partly.ipynb")]) == 1
    out = capsys.readouterr().out
    assert "✗ fails  Exercise 2: square" in out and "square(3) should be 9, not table[idx]" in out
    assert "2/3 self-checks pass" in out
    assert "note" not in out, "the chapter's intended errors are not reported"
    assert main(["--root", str(root), "check", "--no-record", str(work / "demo" / "stub.ipynb")]) == 1
    assert "0/3 self-checks pass" in capsys.readouterr().out
    from jaxpath.learner.progress import chapter_hash, load_records

    records = load_records(work)
    assert set(records) == {"demo/done", "demo/partly"}, "the stub was checked with --no-record"
    assert all(records["demo/done"]["exercises"].values()) and len(records["demo/done"]["exercises"]) == 3
    assert [v for v in records["demo/partly"]["exercises"].values()].count(False) == 1
    assert records["demo/done"]["hash"] == chapter_hash(student), "the hash is the released chapter's"
    (work / "demo" / "broken.ipynb").write_text("{")
    assert main(["--root", str(root), "check", str(work / "demo" / "broken.ipynb")]) == 1
    assert "not valid JSON" in capsys.readouterr().out


def test_an_exercise_passes_only_when_every_visible_requirement_does(tmp_path, capsys):
    """Partial credit at grading time, pass/fail for the learner: one visible requirement failing fails the
    exercise, in the printed lines and in the record the site's earned progress reads."""
    from jaxpath import Config
    from jaxpath.authoring.requirements import write_requirements
    from jaxpath.learner.progress import load_records

    cells = good_cells()
    cells[11].source = ("# 🧪 Self-check\nwith check('R1'):\n    assert double(3) == 6, 'double(3) should be 6'\n"
                        "with check('R2'):\n    assert double(-1.5) == -3.0, 'negative floats too'\n"
                        "### BEGIN HIDDEN TESTS\nwith check('R3'):\n    assert double(0) == 0, 'zero stays zero'\n"
                        "### END HIDDEN TESTS")
    variants = ('[double.requirements]\nR1 = "twice a positive x"\nR2 = "twice a negative x"\nR3 = "zero"\n'
                "[double.points]\nR1 = 1\nR2 = 0.5\nR3 = 0.5\n")
    from course_factory import VARIANTS

    root = make_course(tmp_path / "c", cells, variants + VARIANTS.replace("[double]\n", "", 1))
    write_requirements(Config.load(root))
    from jaxpath.authoring.chapter import is_answer, is_test, stub_source, visible_source

    src = nbformat.read(root / "source/demo/01_demo.ipynb", as_version=4)
    student = nbformat.from_dict(src)
    for c in student.cells:
        if is_answer(c):
            c.source = stub_source(c.source)
        elif is_test(c):
            c.source = visible_source(c.source)
    work = tmp_path / "work"
    (work / "demo").mkdir(parents=True)
    answers = {**answers_from_source(src), "double-answer": "def double(x):\n    return 2 * abs(x)"}
    nbformat.write(submission(student, answers), work / "demo" / "abs.ipynb")
    assert main(["--root", str(root), "check", str(work / "demo" / "abs.ipynb")]) == 1
    out = capsys.readouterr().out
    assert "✗ fails  Exercise 1: double" in out
    assert "✓ R1 (1 pt)" in out and "✗ R2 (0.5 pt): negative floats too" in out
    assert "· R3 (0.5 pt): checked when your notebook is graded" in out
    assert "2/3 self-checks pass" in out
    assert load_records(work)["demo/abs"]["exercises"] == {"double-check": False, "square-check": True,
                                                           "halve-check": True}
