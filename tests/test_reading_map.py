"""site-data/reading-map.toml: every official tutorial page (and every topic of the Sharp Bits) is either taught in a
named section of a course chapter that exists, or marked read-only with a one-line reason; every page records
the docs version it was checked against."""
import tomllib
from pathlib import Path

import nbformat
import pytest

from jaxpath.cells import headings

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT / "site-data" / "reading-map.toml"
SHARP_BITS_URL = "https://docs.jax.dev/en/latest/notebooks/Common_Gotchas_in_JAX.html"
SHARP_BITS_TOPICS = {
    "Pure functions", "In-place updates", "Out-of-bounds indexing", "Non-array inputs: NumPy vs. JAX",
    "Random numbers", "Control flow", "Dynamic shapes", "NaNs", "Double (64bit) precision",
    "Miscellaneous divergences from NumPy",
}


def markdown_headings(source: str) -> list[str]:
    """The text of every markdown heading in a cell's source, outside fenced code blocks (jaxpath's own parser)."""
    return [text for _, _, text in headings(source)]


def chapter_headings(chapter: str) -> set[str]:
    nb = nbformat.read(ROOT / "source" / f"{chapter}.ipynb", as_version=4)
    return {h for cell in nb.cells if cell.cell_type == "markdown" for h in markdown_headings(cell.source)}


def _where_problems(where: str, item: dict, chapters: set[str], headings) -> list[str]:
    """One entry or topic: a chapter of the course, and either a section that is a heading of that chapter
    (taught) or read_only = true with a note (and then no section)."""
    problems = []
    chapter = item.get("chapter", "")
    if chapter not in chapters:
        problems.append(f"{where}: chapter {chapter!r} is not a chapter of course.toml")
    section, read_only, note = item.get("section"), item.get("read_only", False), str(item.get("note", "")).strip()
    if read_only is not True and read_only is not False:
        problems.append(f"{where}: read_only must be true or false, not {read_only!r}")
    if read_only and section:
        problems.append(f"{where}: read-only and taught in {section!r} at once; pick one")
    elif read_only and not note:
        problems.append(f"{where}: read-only without a note saying why the course leaves it to the docs")
    elif read_only and "\n" in note:
        problems.append(f"{where}: the note of a read-only entry is one line")
    elif not read_only and not section:
        problems.append(f"{where}: parked: neither a section that teaches it nor read_only = true with a note")
    elif section and chapter in chapters and section not in headings(chapter):
        problems.append(f"{where}: {chapter} has no heading {section!r}")
    return problems


def map_problems(data: dict, chapters: set[str], headings) -> list[str]:
    problems = []
    for n, r in enumerate(data.get("reading", []), start=1):
        where = f"[[reading]] {n} {r.get('title', '(no title)')!r}"
        if not str(r.get("checked", "")).strip():
            problems.append(f"{where}: no `checked` (the docs version the entry was checked against)")
        problems += _where_problems(where, r, chapters, headings)
        for k, t in enumerate(r.get("topics", []), start=1):
            twhere = f"{where}, topic {k} {t.get('topic', '(no topic)')!r}"
            if not str(t.get("topic", "")).strip():
                problems.append(f"{twhere}: no topic name")
            problems += _where_problems(twhere, t, chapters, headings)
        for k, a in enumerate(r.get("also", []), start=1):
            awhere = f"{where}, also {k} {a.get('chapter', '(no chapter)')!r}"
            if a.get("read_only") or not a.get("section"):
                problems.append(f"{awhere}: a chapter the page is also read with names the section that builds on it")
            elif a.get("chapter") == r.get("chapter"):
                problems.append(f"{awhere}: the page's own chapter again")
            else:
                problems += _where_problems(awhere, a, chapters, headings)
    return problems


@pytest.fixture(scope="module")
def reading_map() -> dict:
    return tomllib.loads(MAP.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def course_chapters() -> set[str]:
    manifest = tomllib.loads((ROOT / "course.toml").read_text(encoding="utf-8"))
    return {cid for cid, c in manifest["chapters"].items() if not c.get("planned", False)}


def test_every_entry_is_taught_in_a_real_heading_or_read_only_with_a_reason(reading_map, course_chapters):
    cache: dict[str, set[str]] = {}
    headings = lambda c: cache.setdefault(c, chapter_headings(c))  # noqa: E731
    problems = map_problems(reading_map, course_chapters, headings)
    assert not problems, "\n".join(problems)
    assert len(reading_map["reading"]) >= 48


def test_every_chapter_has_an_official_page_to_read_with_it(reading_map, course_chapters):
    """A chapter page's box lists the official pages to read with it: none is left without one (basics/04 and
    basics/05 are read with pages assigned elsewhere, through [[reading.also]])."""
    named = {r.get("chapter") for r in reading_map["reading"]}
    named |= {t.get("chapter") for r in reading_map["reading"] for t in r.get("topics", []) + r.get("also", [])}
    assert course_chapters - named == set()


def test_the_sharp_bits_lists_each_of_its_topics(reading_map):
    pages = [r for r in reading_map["reading"] if r["url"] == SHARP_BITS_URL]
    assert len(pages) == 1, "the Sharp Bits page is listed once"
    topics = [t["topic"] for t in pages[0].get("topics", [])]
    assert len(topics) == len(set(topics)), "a topic is listed twice"
    assert set(topics) == SHARP_BITS_TOPICS, \
        f"missing {SHARP_BITS_TOPICS - set(topics)}, unknown {set(topics) - SHARP_BITS_TOPICS}"


def test_the_checks_catch_parked_entries_missing_headings_and_unknown_chapters():
    chapters = {"basics/02_jit"}
    headings = lambda c: {"A heading"}  # noqa: E731
    data = {"reading": [
        {"title": "fine", "chapter": "basics/02_jit", "section": "A heading", "checked": "x"},
        {"title": "fine read-only", "chapter": "basics/02_jit", "read_only": True, "note": "why", "checked": "x"},
        {"title": "parked", "chapter": "basics/02_jit", "note": "only a note", "checked": "x"},
        {"title": "no heading", "chapter": "basics/02_jit", "section": "Nope", "checked": "x"},
        {"title": "no chapter", "chapter": "basics/99_none", "section": "A heading", "checked": "x"},
        {"title": "silent read-only", "chapter": "basics/02_jit", "read_only": True, "checked": "x"},
        {"title": "both", "chapter": "basics/02_jit", "read_only": True, "note": "n", "section": "A heading", "checked": "x"},
        {"title": "unchecked", "chapter": "basics/02_jit", "section": "A heading"},
        {"title": "topics", "chapter": "basics/02_jit", "section": "A heading", "checked": "x",
         "topics": [{"topic": "t ok", "chapter": "basics/02_jit", "section": "A heading"},
                    {"topic": "t parked", "chapter": "basics/02_jit"}]},
        {"title": "also", "chapter": "basics/02_jit", "section": "A heading", "checked": "x",
         "also": [{"chapter": "basics/99_none", "section": "A heading"}, {"chapter": "basics/02_jit", "section": "A heading"}]},
    ]}
    joined = "\n".join(map_problems(data, chapters, headings))
    assert "'fine'" not in joined and "'fine read-only'" not in joined and "'t ok'" not in joined
    assert "'parked': parked" in joined
    assert "'no heading': basics/02_jit has no heading 'Nope'" in joined
    assert "'no chapter': chapter 'basics/99_none' is not a chapter" in joined
    assert "'silent read-only': read-only without a note" in joined
    assert "'both': read-only and taught" in joined
    assert "'unchecked': no `checked`" in joined
    assert "'t parked': parked" in joined
    assert "also 1 'basics/99_none': chapter 'basics/99_none' is not a chapter" in joined
    assert "also 2 'basics/02_jit': the page's own chapter again" in joined


def test_headings_inside_code_fences_are_not_headings():
    source = "## Real\n\n```python\n# a comment, not a heading\n```\n### 🟢 Also real\n~~~\n## fenced\n~~~"
    assert markdown_headings(source) == ["Real", "🟢 Also real"]
