"""`jaxpath release`: nbgrader's student version, with nothing secret in it, swapped in only on success."""
import json

import nbformat
import pytest
from course_factory import code

from jaxpath.authoring.release import course_secrets, find_leaks, release

pytestmark = pytest.mark.slow


def test_release_has_stubs_and_no_secrets(course_config):
    r = release(course_config)
    assert r.ok and r.files == ["demo/01_demo.ipynb"]
    nb = nbformat.read(course_config.release / "demo/01_demo.ipynb", as_version=4)
    text = json.dumps(nb.cells)
    assert "raise NotImplementedError()" in text
    for secret in ("return 2 * x", "BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "negative floats too", "return x + 2"):
        assert secret not in text
    assert "double(3) should be 6" in text  # the visible self-check is released
    assert not (course_config.root / "gradebook").exists(), "a release must not touch the course gradebook"
    assert release(course_config, check=True).stale == []


def test_secret_lines_come_from_solutions_hidden_tests_and_variants(course_config):
    secrets = course_secrets(course_config).all
    assert "return 2 * x" in secrets and "cell 11" in secrets["return 2 * x"]
    assert secrets["assert double(-1.5) == -3.0, 'negative floats too'"].endswith("cell 12 (hidden test)")
    assert "[double] wrong answer 1" in secrets["return x + 2"]
    assert "def double(x):" not in secrets  # public: the stub keeps the signature


def test_leak_detection_names_file_and_cell(course_config, tmp_path):
    fake = tmp_path / "rel" / "demo"
    fake.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [code("print(1)"), code("def double(x):\n    return x + 2")]
    nbformat.write(nb, fake / "01_demo.ipynb")
    (fake / "notes.txt").write_text("### BEGIN HIDDEN TESTS\n")
    leaks = [str(p) for p in find_leaks(course_config, tmp_path / "rel", "release")]
    assert any(l.startswith("release/demo/01_demo.ipynb: cell 2: leaks a line from variants/demo/01_demo.toml, "
                            "[double] wrong answer 1") for l in leaks), leaks
    assert any(l.startswith("release/demo/notes.txt: line 1: an nbgrader marker survived") for l in leaks), leaks


def test_failed_release_leaves_previous_release_intact(course_config):
    assert release(course_config).ok
    before = (course_config.release / "demo/01_demo.ipynb").read_bytes()
    # Break the source for nbgrader: a solution region in a cell that is not a solution cell.
    path = course_config.source / "demo/01_demo.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[3].source = "### BEGIN SOLUTION\nprint(2)\n### END SOLUTION"
    nbformat.write(nb, path)
    r = release(course_config)
    assert not r.ok and "generate_assignment failed" in str(r.problems[0])
    assert (course_config.release / "demo/01_demo.ipynb").read_bytes() == before


def test_check_reports_stale_release(course_config):
    assert release(course_config).ok
    path = course_config.source / "demo/01_demo.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[3].source = "print('changed')"
    nbformat.write(nb, path)
    assert release(course_config, check=True).stale == ["demo/01_demo.ipynb"]


@pytest.mark.chapters
def test_committed_release_is_current_and_clean(real_config):
    r = release(real_config, check=True)
    assert r.problems == []
    assert r.stale == [], f"release/ is stale ({r.stale}): run `make release` and commit it"
    assert find_leaks(real_config, real_config.release) == []


def test_failed_build_releases_nothing(course_config):
    from jaxpath.authoring.build import build

    first = build(course_config)
    assert first.ok and (course_config.root / "LEARNING_PATH.md").exists()
    before = (course_config.release / "demo/01_demo.ipynb").read_bytes()
    path = course_config.source / "demo/01_demo.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[3].source = "print('changed, then broken')\nraise RuntimeError('boom')"
    nbformat.write(nb, path)
    second = build(course_config)
    assert not second.ok and second.release is None
    assert any("RuntimeError: boom" in str(p) for r in second.chapters for p in r.problems)
    assert (course_config.release / "demo/01_demo.ipynb").read_bytes() == before
