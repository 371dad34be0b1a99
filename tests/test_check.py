"""`jaxpath check`: per-exercise verdicts and an exit status that tells (nbgrader validate always exits 0)."""
import nbformat
import pytest

from jaxpath.cli import main
from jaxpath.sample import answers_from_source, submission

from course_factory import make_course

pytestmark = pytest.mark.slow


def test_check_passes_the_solution_and_fails_the_stub(tmp_path, capsys):
    root = make_course(tmp_path / "c")
    src = nbformat.read(root / "source/demo/01_demo.ipynb", as_version=4)
    from jaxpath.chapter import stub_source, visible_source, is_answer, is_test

    student = nbformat.from_dict(src)
    for c in student.cells:  # what a student gets: stubs and visible self-checks
        if is_answer(c):
            c.source = stub_source(c.source)
        elif is_test(c):
            c.source = visible_source(c.source)
    nbformat.write(student, tmp_path / "stub.ipynb")
    nbformat.write(submission(student, {**answers_from_source(src), "square-answer": "def square(x):\n    return 2 * x"}),
                   tmp_path / "partly.ipynb")
    nbformat.write(submission(student, answers_from_source(src)), tmp_path / "done.ipynb")
    assert main(["check", str(tmp_path / "done.ipynb")]) == 0
    assert "3/3 self-checks pass" in capsys.readouterr().out
    assert main(["check", str(tmp_path / "partly.ipynb")]) == 1
    out = capsys.readouterr().out
    assert "✗ fails  Exercise 2: square" in out and "square(3) should be 9" in out and "2/3 self-checks pass" in out
    assert "note" not in out, "the chapter's intended errors are not reported"
    assert main(["check", str(tmp_path / "stub.ipynb")]) == 1
    assert "0/3 self-checks pass" in capsys.readouterr().out
    (tmp_path / "broken.ipynb").write_text("{")
    assert main(["check", str(tmp_path / "broken.ipynb")]) == 1
    assert "not valid JSON" in capsys.readouterr().out
