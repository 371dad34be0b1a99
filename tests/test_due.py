"""Due dates: `[due]` of course.toml, written at release into the gradebook and the first cell of every
released notebook of the part, and shown on the class site's chapter page in the reader's own time zone."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from jaxpath import Config
from jaxpath.manifest import ManifestError, describe_due, due_utc, load_manifest, parse_due

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("text, utc, words", [
    ("2026-10-01 23:59 Europe/Berlin", "2026-10-01 21:59", "Thursday 1 October 2026, 23:59 (Europe/Berlin), 21:59 UTC"),
    ("2026-05-01 23:59 America/New_York", "2026-05-02 03:59",
     "Friday 1 May 2026, 23:59 (America/New_York), 03:59 UTC on Saturday 2 May"),
    ("2026-10-01T23:59:00+02:00", "2026-10-01 21:59", "Thursday 1 October 2026, 23:59 (UTC+02:00), 21:59 UTC"),
    ("2026-10-01 23:59 UTC", "2026-10-01 23:59", "Thursday 1 October 2026, 23:59 UTC"),
    ("2026-10-01T21:59:00Z", "2026-10-01 21:59", "Thursday 1 October 2026, 21:59 UTC"),
])
def test_a_due_date_is_a_time_with_its_zone(text, utc, words):
    when = parse_due(text)
    assert due_utc(when) == dt.datetime.fromisoformat(utc) and due_utc(when).tzinfo is None  # as nbgrader keeps it
    assert describe_due(when) == words


@pytest.mark.parametrize("text, message", [
    ("2026-10-01 23:59", "is not a date and time with its zone"),
    ("2026-10-01T23:59:00", "is not a date and time with its zone"),
    ("2026-10-01 23:59 Mars/Olympus", "'Mars/Olympus' is not a time zone"),
    ("2026-13-01 23:59 UTC", "month must be in 1..12"),
    (20261001, "a date and time with its zone"),
])
def test_a_due_date_without_a_zone_or_unreadable_is_refused(text, message):
    with pytest.raises(ManifestError, match=message):
        parse_due(text)


def _with_due(course: Path, table: str) -> Config:
    path = course / "course.toml"
    path.write_text(path.read_text() + f"\n[due]\n{table}\n")
    return Config.load(course)


def test_the_manifest_reads_due_dates_and_names_mistakes(course):
    m = load_manifest(_with_due(course, 'demo = 2026-10-01T23:59:00+02:00'))  # TOML's own date-time
    assert due_utc(m.due["demo"]) == dt.datetime(2026, 10, 1, 21, 59)
    (course / "course.toml").write_text((course / "course.toml").read_text().replace("demo = 2026", "nope = 2026"))
    with pytest.raises(ManifestError, match=r"\[due\] names 'nope', which is not a part"):
        load_manifest(Config.load(course))
    (course / "course.toml").write_text((course / "course.toml").read_text().replace(
        "nope = 2026-10-01T23:59:00+02:00", 'demo = "2026-10-01 23:59"'))
    with pytest.raises(ManifestError, match=r"course.toml: \[due\] demo: '2026-10-01 23:59' is not a date"):
        load_manifest(Config.load(course))


def test_the_real_course_sets_no_due_date():
    """Dates belong to a term, not to the repository: release/ is committed without them."""
    assert load_manifest(Config.load(ROOT)).due == {}


@pytest.mark.slow
def test_release_writes_the_due_date_into_the_first_cell_and_the_gradebook(course):
    from nbgrader.api import Gradebook

    from jaxpath.authoring.release import DUE_TAG, release
    from jaxpath.classroom.extend import extend

    config = _with_due(course, 'demo = "2026-05-01 23:59 America/New_York"')
    r = release(config)
    assert r.ok, r.problems
    assert r.due == {"demo": "Friday 1 May 2026, 23:59 (America/New_York), 03:59 UTC on Saturday 2 May"}
    nb = json.loads((config.release / "demo/01_demo.ipynb").read_text())
    first = nb["cells"][0]
    assert first["cell_type"] == "markdown" and first["metadata"]["tags"] == [DUE_TAG]
    assert "Due Friday 1 May 2026, 23:59 (America/New_York), 03:59 UTC on Saturday 2 May" in "".join(first["source"])
    assert first["metadata"]["editable"] is False and first["metadata"]["deletable"] is False
    assert "# 01 · Demo" in "".join(nb["cells"][1]["source"]), "the chapter follows, as nbgrader released it"
    with Gradebook(config.db_url, config.course_id) as gb:
        assert gb.find_assignment("demo").duedate == dt.datetime(2026, 5, 2, 3, 59)
    assert release(config, check=True).stale == []  # the cell comes from course.toml: a rebuild is the same

    # the gradebook's date is the one extensions and the late penalty start from
    with Gradebook(config.db_url, config.course_id) as gb:
        gb.add_student("ada")
    ext = extend(config, "demo", "ada", days=2)
    assert ext.due == dt.datetime(2026, 5, 4, 3, 59)
    from jaxpath.errors import JaxpathError
    from jaxpath.manifest import parse_due

    ext = extend(config, "demo", "ada", until=parse_due("2026-05-03 09:00 Europe/Berlin"))  # 07:00 UTC on the 3rd
    assert ext.extension == dt.timedelta(hours=27, minutes=1) and ext.due == dt.datetime(2026, 5, 3, 7, 0)
    with pytest.raises(JaxpathError, match="is not after the due date of demo"):
        extend(config, "demo", "ada", until=parse_due("2026-05-01 12:00 UTC"))
    with pytest.raises(JaxpathError, match="not both"):
        extend(config, "demo", "ada", days=1, until=parse_due("2026-05-09 12:00 UTC"))

    # a new date in course.toml moves both at the next release
    (course / "course.toml").write_text((course / "course.toml").read_text().replace("2026-05-01 23:59", "2026-05-08 12:00"))
    assert release(Config.load(course)).ok
    with Gradebook(config.db_url, config.course_id) as gb:
        assert gb.find_assignment("demo").duedate == dt.datetime(2026, 5, 8, 16, 0)
    nb = json.loads((config.release / "demo/01_demo.ipynb").read_text())
    assert [c["metadata"].get("tags") for c in nb["cells"]].count([DUE_TAG]) == 1
    assert "Friday 8 May 2026, 12:00 (America/New_York)" in "".join(nb["cells"][0]["source"])


def test_the_class_sites_chapter_box_carries_the_due_instant(course):
    from jaxpath.learner.site.pages import due_context
    from jaxpath.learner.site.render import render

    m = load_manifest(_with_due(course, 'demo = "2026-10-01 23:59 Europe/Berlin"'))
    due = due_context(m, "demo")
    assert due == {"utc": "2026-10-01T21:59:00Z", "text": "Thursday 1 October 2026, 23:59 (Europe/Berlin), 21:59 UTC"}
    assert due_context(m, "other") is None

    class Page:
        files = {"student": "s.ipynb", "self-study": "ss.ipynb", "solutions": "sol.ipynb"}

        class entry:
            part, stem = "demo", "01_demo"

    box = dict(page=Page, stamp="", up="", carries=[], readings=[], reading_label="", launch=False, due=due)
    shown = render("chapter-info.md.j2", for_class=True, **box)
    assert '<time class="jp-due-time" datetime="2026-10-01T21:59:00Z"' in shown and due["text"] in shown
    assert "jp-due" not in render("chapter-info.md.j2", for_class=False, **box), "self-learners have no deadline"


@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="/usr/bin/chromium is missing")
@pytest.mark.parametrize("zone, weekday, clock", [("America/New_York", "Thursday", "17:59"),
                                                  ("Asia/Tokyo", "Friday", "06:59")])
def test_the_site_shows_the_due_date_in_the_readers_time_zone(tmp_path, chromium, zone, weekday, clock):
    """The class site's script, in chromium set to a reader's zone: the same instant, in their clock."""
    from importlib import resources

    script = resources.files("jaxpath.learner.site").joinpath("static", "jaxpath-due.js").read_text()
    words = "Thursday 1 October 2026, 23:59 (Europe/Berlin), 21:59 UTC"
    (tmp_path / "page.html").write_text(
        f'<html><body><p class="jp-due">📅 <b>Due <time class="jp-due-time" datetime="2026-10-01T21:59:00Z" '
        f'title="{words}">{words}</time></b> <span class="jp-due-zone"></span></p><script>{script}</script></body></html>')
    context = chromium.new_context(timezone_id=zone, locale="en-GB")
    try:
        page = context.new_page()
        page.goto((tmp_path / "page.html").as_uri())
        shown = page.locator("time.jp-due-time").inner_text()
        label = page.locator(".jp-due-zone").inner_text()
    finally:
        context.close()
    assert weekday in shown and clock in shown, shown
    assert zone in label and words in label, label
