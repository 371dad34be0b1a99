"""Every real chapter's reference solutions, graded the way a class is: each must come out *graded* with
full marks. This is where a false alarm of the grader's integrity checks (something a chapter's own code
changes that the checks took for tampering) or a sandbox limit too tight for a chapter would show."""
import shutil
from pathlib import Path

import nbformat
import pytest

from jaxpath import Config
from jaxpath.config import ensure_venv_on_path, nbgrader_config
from jaxpath.grade import Limits, grade, sandbox_problem
from jaxpath.sample import answers_from_source, submission, submit

pytestmark = [pytest.mark.slow, pytest.mark.grade, pytest.mark.chapters, pytest.mark.full]
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("part", ["basics", "advanced"])
def test_reference_solutions_grade_clean(part, tmp_path):
    from nbgrader.apps import NbGraderAPI

    dest = tmp_path / "course"
    dest.mkdir()
    for name in ("nbgrader_config.py", "course.toml"):
        shutil.copy(ROOT / name, dest / name)
    shutil.copytree(ROOT / "source" / part, dest / "source" / part)
    (dest / "gradebook").mkdir()
    ensure_venv_on_path()
    result = NbGraderAPI(config=nbgrader_config(dest)).generate_assignment(part, force=True, create=True)
    assert result.get("success"), result.get("error")
    chapters = sorted(p.stem for p in (dest / "source" / part).glob("*.ipynb"))
    for stem in chapters:
        src = nbformat.read(dest / "source" / part / f"{stem}.ipynb", as_version=4)
        rel = nbformat.read(dest / "release" / part / f"{stem}.ipynb", as_version=4)
        submit(dest, "reference", part, stem, submission(rel, answers_from_source(src)))
    report = grade(Config.load(dest), part, workers=2, limits=Limits(cell_timeout=180, notebook_timeout=900),
                   sandbox=sandbox_problem() is None)
    got = {s.notebook: (s.status, s.score, s.max_score, s.reason) for s in report.results}
    assert sorted(got) == chapters
    bad = {nb: v for nb, v in got.items() if v[0] != "graded" or v[1] != v[2] or not v[2]}
    assert not bad, bad
