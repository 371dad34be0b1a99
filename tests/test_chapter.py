"""Static checks: what `jaxpath validate --static` catches without a kernel, each naming file and cell."""
import nbformat
import pytest
from course_factory import VARIANTS, good_cells, make_course

from jaxpath.authoring.chapter import check_exercise_counts, load_chapter, stub_source, visible_source
from jaxpath.problems import ChapterError

NB = "source/demo/01_demo.ipynb"


def load(root):
    return load_chapter(root / NB, "demo/01_demo", root, root / "variants/demo/01_demo.toml")


def problems_of(tmp_path, cells=None, variants=VARIANTS):
    root = make_course(tmp_path / "c", cells, variants)
    ch = load(root)
    return ch, [str(p) for p in ch.problems + check_exercise_counts(ch, 3, 2, 1)]


def test_good_chapter_has_no_static_problems(tmp_path):
    ch, problems = problems_of(tmp_path)
    assert problems == []
    assert [e.name for e in ch.exercises] == ["double", "square", "halve"]
    assert [len(e.variants) for e in ch.exercises] == [3, 3, 3]
    assert [s.title for s in ch.must_read()] == ["🟢 Must-read: errors are shown"]
    assert [s.title for s in ch.optional()] == ["⚪ Optional: more"]
    assert ch.exercises[0].tests == [ch.exercises[0].answer + 1]


def test_committed_outputs(tmp_path):
    cells = good_cells()
    cells[3].outputs = [nbformat.v4.new_output("stream", name="stdout", text="2.0\n")]
    _, problems = problems_of(tmp_path, cells)
    assert any(p.startswith(f"{NB}, cell 4:") and "committed outputs" in p for p in problems), problems


def test_duplicate_grade_id(tmp_path):
    cells = good_cells()
    cells[13].metadata.nbgrader.grade_id = "double-answer"  # the square answer takes double's id
    _, problems = problems_of(tmp_path, cells)
    assert any("cell 14" in p and "duplicate grade_id 'double-answer' (also cell 11)" in p for p in problems), problems


def test_missing_points(tmp_path):
    cells = good_cells()
    del cells[11].metadata.nbgrader["points"]
    _, problems = problems_of(tmp_path, cells)
    assert any(f"{NB}, cell 12:" in p and "malformed nbgrader metadata" in p and "points" in p
               for p in problems), problems


def test_missing_schema_version(tmp_path):
    cells = good_cells()
    del cells[10].metadata.nbgrader["schema_version"]
    _, problems = problems_of(tmp_path, cells)
    assert any("cell 11" in p and "malformed nbgrader metadata" in p for p in problems), problems


def test_tag_without_emoji_and_emoji_without_tag(tmp_path):
    cells = good_cells()
    cells[4].source = "## Must-read without its emoji"
    cells[6].metadata.tags = []
    _, problems = problems_of(tmp_path, cells)
    assert any("cell 5" in p and "tagged must-read but the heading does not start with 🟢" in p for p in problems)
    assert any("cell 7" in p and "starts with ⚪ but the cell is not tagged optional" in p for p in problems)


def test_solution_region_outside_a_solution_cell(tmp_path):
    cells = good_cells()
    cells[3].source = "### BEGIN SOLUTION\nprint(1)\n### END SOLUTION"
    _, problems = problems_of(tmp_path, cells)
    assert any("cell 4" in p and "solution would be released" in p for p in problems)


def test_too_few_exercises(tmp_path):
    cells = good_cells()[:-3]
    _, problems = problems_of(tmp_path, cells)
    assert any("has 2 exercise(s); a chapter needs at least 3" in p for p in problems)
    assert any("variants for exercise 'halve', which the chapter does not have" in p for p in problems)


def test_exercise_without_enough_variants(tmp_path):
    variants = VARIANTS.split("[halve]")[0]
    _, problems = problems_of(tmp_path, variants=variants)
    assert any("exercise `halve`" in p and "has 0 wrong and 0 alternative" in p for p in problems), problems


def test_missing_variants_file(tmp_path):
    _, problems = problems_of(tmp_path, variants=None)
    assert any(p.startswith("variants/demo/01_demo.toml: missing") for p in problems)


@pytest.mark.parametrize("content,message", [
    (b'{"cells": [', "not valid JSON"),
    (b"\xff\xfe garbage", "not UTF-8"),
    (b'{"hello": 1}', "not a notebook"),
    (b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5, "extra": 1}', "not a valid nbformat 4"),
])
def test_unreadable_notebook_is_a_clear_error(tmp_path, content, message):
    root = make_course(tmp_path / "c")
    (root / NB).write_bytes(content)
    with pytest.raises(ChapterError) as err:
        load(root)
    assert str(err.value).startswith(NB + ": ") and message in str(err.value)


def test_stub_and_visible_use_nbgrader_rules():
    src = "# ✍️ Your answer\ndef f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION"
    assert stub_source(src) == "# ✍️ Your answer\ndef f(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()"
    test = "assert f(1) == 1\n### BEGIN HIDDEN TESTS\nassert f(2) == 2\n### END HIDDEN TESTS"
    assert visible_source(test) == "assert f(1) == 1"
