"""Every real chapter's reference solutions, graded the way a class is: each must come out *graded* with
full marks. This is where a false alarm of the grader's integrity checks (something a chapter's own code
changes that the checks took for tampering) or a sandbox limit too tight for a chapter would show.

In the same class, a student who hands every chapter back as released, and one who makes in every exercise a
mistake the variants file knows (one that loses part of the points, with a hint where it has one): every
notebook of the three gets its feedback page, the mistaken one scores exactly what the variants file says it
loses and each of its pages names a known mistake, and no page shows a line of a hidden test that no released
cell shows."""
import html
import re
import shutil
import tomllib
from pathlib import Path

import nbformat
import pytest

from jaxpath import Config
from jaxpath.authoring.proofs import proof_path
from jaxpath.classroom.feedback import feedback
from jaxpath.classroom.sample import answers_from_source, copy_proof, partly_wrong, submission, submit
from jaxpath.config import nbgrader_config
from jaxpath.grade import Limits, grade, sandbox_problem
from jaxpath.gradebooks import prepare_nbgrader

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
    prepare_nbgrader()
    result = NbGraderAPI(config=nbgrader_config(dest)).generate_assignment(part, force=True, create=True)
    assert result.get("success"), result.get("error")
    chapters = sorted(p.stem for p in (dest / "source" / part).glob("*.ipynb"))
    lost = {}
    for stem in chapters:
        src = nbformat.read(dest / "source" / part / f"{stem}.ipynb", as_version=4)
        rel = nbformat.read(dest / "release" / part / f"{stem}.ipynb", as_version=4)
        submit(dest, "reference", part, stem, submission(rel, answers_from_source(src)))
        submit(dest, "as_released", part, stem, rel)
        wrong, lost[stem] = partly_wrong(src, tomllib.loads((ROOT / "variants" / part / f"{stem}.toml").read_text()))
        submit(dest, "mistaken", part, stem, submission(rel, wrong))
        copy_proof(Config.load(ROOT), Config(dest), f"{part}/{stem}")  # what validate recorded of the known mistakes
    config = Config.load(dest)
    report = grade(config, part, workers=2, limits=Limits(cell_timeout=180, notebook_timeout=900),
                   sandbox=sandbox_problem() is None)
    got = {s.notebook: (s.status, s.score, s.max_score, s.reason) for s in report.results if s.student == "reference"}
    assert sorted(got) == chapters
    bad = {nb: v for nb, v in got.items() if v[0] != "graded" or v[1] != v[2] or not v[2]}
    assert not bad, bad
    untouched = {s.notebook: (s.status, s.score) for s in report.results if s.student == "as_released"}
    assert sorted(untouched) == chapters and all(score == 0 for _, score in untouched.values()), untouched
    mistaken = {s.notebook: (s.status, s.score, s.max_score - lost[s.notebook]) for s in report.results
                if s.student == "mistaken"}
    wrong_points = {nb: v for nb, v in mistaken.items() if v[0] != "graded" or v[1] != v[2]}
    assert sorted(mistaken) == chapters and not wrong_points, wrong_points

    pages = feedback(config, part)
    assert not pages.problems, pages.problems
    written = {(p.parent.parent.name, p.stem) for p in pages.written}
    assert written == {(student, stem) for student in ("reference", "as_released", "mistaken") for stem in chapters}
    no_hint = [stem for stem in chapters if proof_path(config, f"{part}/{stem}").exists()
               and "A known mistake." not in (dest / "feedback" / "mistaken" / part / f"{stem}.html").read_text()]
    assert not no_hint, f"no known mistake named on the pages of {no_hint}"
    assert all(proof_path(config, f"{part}/{stem}").exists() for stem in chapters), "a chapter has no committed proof (proofs/)"
    for stem in chapters:  # read from the source, not from jaxpath.classroom.feedback: nothing secret on any page
        src = nbformat.read(dest / "source" / part / f"{stem}.ipynb", as_version=4)
        rel = nbformat.read(dest / "release" / part / f"{stem}.ipynb", as_version=4)
        secret = secret_lines(src, rel)
        assert secret, f"{stem}: no hidden-test line is secret: the check would pass whatever the pages show"
        for student in ("reference", "as_released", "mistaken"):
            page = (dest / "feedback" / student / part / f"{stem}.html").read_text(encoding="utf-8")
            text = html.unescape(re.sub(r"<[^>]+>", "", page))
            shown = [line for line in secret if line in text]
            assert not shown, f"{student}/{stem}: the page shows hidden-test lines {shown[:3]}"


def secret_lines(source_nb, released_nb) -> set[str]:
    """Lines of hidden tests (12 characters or more, stripped) that no line of the released notebook contains."""
    lines, inside = set(), False
    for c in source_nb.cells:
        for line in c.source.split("\n"):
            if "BEGIN HIDDEN TESTS" in line or "END HIDDEN TESTS" in line:
                inside = "BEGIN" in line
            elif inside and len(line.strip()) >= 12:
                lines.add(line.strip())
    shown = [line for c in released_nb.cells for line in c.source.split("\n")]
    return {s for s in lines if not any(s in line for line in shown)}
