"""The graded sample class (`jaxpath sample`), scored by `jaxpath grade` and by stock `nbgrader autograde` on an
identical copy: per-requirement partial credit gives the same points under both, the points the variants file
says each wrong answer loses, and the feedback pages list each requirement and name the known mistake."""
import html
import re
from pathlib import Path

import pytest

from jaxpath.classroom.feedback import feedback
from jaxpath.classroom.sample import SAMPLE_CHAPTERS

pytestmark = [pytest.mark.slow, pytest.mark.grade, pytest.mark.full]


@pytest.fixture
def graded(graded_sample):
    """(SampleClass, its Config, jaxpath's scores, stock nbgrader's): conftest's `graded_sample`, made once per
    test process (tests/sample_factory.py)."""
    return graded_sample


def test_both_graders_give_the_points_each_wrong_answer_should_lose(graded):
    sample, _, ours, theirs = graded
    assert ours == theirs
    got = {k: v for k, v in ours.items() if len(k) == 2}
    assert got == sample.expected
    partial = [k for k in sample.expected if k[0] == "partly_wrong"]
    assert all(0 < got[k] < got[("correct", k[1])] for k in partial), got  # partial credit, not all or nothing
    cells = [k for k in ours if len(k) == 3 and k[0] == "partly_wrong"]
    assert any(0 < ours[k] < ours[("correct", *k[1:])] for k in cells), "no cell scored part of its points"


def test_the_pages_list_each_requirement_and_name_the_known_mistakes(graded):
    _, cfg, _, _ = graded
    pages = feedback(cfg, "basics")
    assert not pages.problems, pages.problems
    for chapter in SAMPLE_CHAPTERS:
        page = (cfg.root / "feedback" / "partly_wrong" / f"{chapter}.html").read_text(encoding="utf-8")
        text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))
        summary = text[text.index("Your results"):text.index("Your results") + 6000]
        assert re.search(r"◐ [0-9.]+ of [0-9.]+ points", summary), summary[:1500]
        assert re.search(r"✗ R\d+ \(0/[0-9.]+\) \S", summary) and re.search(r"✓ R\d+ \([0-9.]+/", summary)
        assert "A known mistake." in summary, f"{chapter}: no hint on the page\n{summary[:3000]}"


def _failed_requirements(root: Path, student: str, chapter: str, exercise: str) -> list[str]:
    """The ✗ lines (requirement, points, message) that the exercise's test cell printed when graded."""
    import nbformat

    nb = nbformat.read(root / "autograded" / student / f"{chapter}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == f"{exercise}-check")
    text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
    return [line.strip() for line in text.splitlines() if line.strip().startswith("✗")]


def test_the_shared_mistake_fails_alike_and_is_no_known_mistake(graded):
    """The students of the sample's shared mistake wrote it independently, yet fail the same requirements with
    the same messages on the hidden tests too; the variants file does not know it, so no page explains it."""
    sample, cfg, ours, _ = graded
    m = sample.shared_mistake
    assert m is not None and len(m.students) == 2
    failed = {s: _failed_requirements(sample.root, s, m.chapter, m.exercise) for s in m.students}
    first = failed[m.students[0]]
    assert [line.split()[1] for line in first] == list(m.breaks), failed
    assert all(lines == first for lines in failed.values()), failed
    stem = m.chapter.split("/")[1]
    for s in m.students:
        assert ours[(s, stem, f"{m.exercise}-check")] < ours[("correct", stem, f"{m.exercise}-check")]
    pages = feedback(cfg, "basics", students=list(m.students))
    assert not pages.problems, pages.problems
    for s in m.students:
        page = (cfg.root / "feedback" / s / f"{m.chapter}.html").read_text(encoding="utf-8")
        assert "A known mistake." not in html.unescape(page), f"{s}: the shared mistake matched a known one"


@pytest.mark.browser
def test_a_partly_wrong_page_in_chromium(graded, chromium, tmp_path, request):
    """What the student sees first: the results table, a requirement that failed with its message, and the
    known mistake explained; a screenshot kept for a person to look at."""
    from site_factory import save_screenshot

    _, cfg, _, _ = graded
    feedback(cfg, "basics", students=["partly_wrong"])
    pg = chromium.new_page(viewport={"width": 1280, "height": 1000})
    try:
        errors = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto((cfg.root / "feedback" / "partly_wrong" / f"{SAMPLE_CHAPTERS[0]}.html").as_uri())
        table = pg.locator("table.jp-results")
        assert table.bounding_box()["y"] < 500
        failed = pg.locator("li.jp-requirement", has_text="✗").first
        assert failed.is_visible() and len(failed.inner_text()) > 20
        hint = pg.locator("p.jp-hint").first
        assert hint.is_visible() and "A known mistake" in hint.inner_text()
        shot = save_screenshot(pg, tmp_path, request, "feedback-partial-credit")
        assert shot.stat().st_size > 10_000 and not errors, errors
    finally:
        pg.close()
