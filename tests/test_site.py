"""`jaxpath site`: the course site built from the real executed chapters (build/), its structure, the
reading map both ways, navigation (solutions outside prev/next), downloads, launch links, offline assets,
links, leaks and build-machine paths. The browser tests are in test_site_browser.py."""
from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import nbformat
import pytest
from site_factory import HUB, ROOT, hrefs, page_of, solutions_of
from site_factory import real_site as _real_site
from site_factory import text_of as _text

from jaxpath import Config
from jaxpath.authoring.chapter import load_chapter
from jaxpath.learner.site import (
    Reading,
    Series,
    check_assets,
    check_leaks,
    check_links,
    check_machine_paths,
    check_reading_map,
    find_machine_paths,
    heading_lines,
    load_pointers,
    load_reading_map,
    parse_html,
    readable_stamp,
    scrub_text,
    site_pages,
)
from jaxpath.manifest import load_manifest, notebook_path


@pytest.fixture(scope="session")
def real_site():
    return _real_site()


@pytest.fixture(scope="session")
def site_out(real_site) -> Path:
    return real_site[2].out


def test_site_builds_without_warnings_or_problems(real_site):
    """How long it takes is printed, not asserted: a loaded machine took 214 s where an idle one takes 20-60 s
    (a timed test rejects good work; `make bench` and docs/performance.md measure speed)."""
    _, _, r = real_site
    assert not r.warnings, "Sphinx warned:\n" + "\n".join(r.warnings)
    assert not r.problems, "the site has problems:\n" + "\n".join(map(str, r.problems))
    assert r.index.exists()
    print(f"fresh site build: {r.wall_seconds:.1f} s (generate {r.generate_seconds:.1f}, sphinx "
          f"{r.sphinx_seconds:.1f}, checks {r.check_seconds:.1f}), {r.pages} pages")


def test_landing_page_lists_the_track_in_two_parts_with_sections(real_site, site_out):
    _, manifest, r = real_site
    index = site_out / "index.html"
    html = index.read_text(encoding="utf-8")
    boxes = re.findall(r'<input type="checkbox" class="jp-done" data-track="(\d+)"', html)
    assert sorted(map(int, boxes)) == [t.number for t in manifest.track] == list(range(1, 13))
    text = _text(index)
    assert "Your progress: 0/12 chapters" in re.sub(r"\s+", " ", text)
    assert "Part i · How JAX thinks" in text and "Part ii · State, the mesh" in text
    for t in manifest.track:
        assert f"Track {t.number:02d} · {t.title}" in text
        assert t.thesis.replace("`", "") in text.replace("`", ""), f"thesis of track chapter {t.number} missing"
    # every section that course.toml says carries a track chapter is linked from the landing page
    refs = {v for tag, attr, v in parse_html(index).refs if tag == "a" and attr == "href"}
    for c in manifest.written():
        for heading in c.sections:
            target = f"{r.docnames[c.id][0]}.html#"
            anchors = [r for r in refs if r.startswith(target)]
            assert anchors, f"no link from the landing page into {c.id}'s sections"
        if c.carries:
            assert any(x.startswith(f"{r.docnames[c.id][0]}.html") for x in refs), f"{c.id} carries the track but is not linked"
    linked_sections = sum(1 for x in refs if re.match(r"release/.+\.html#.+", x))
    assert linked_sections >= sum(len(c.sections) for c in manifest.written())


def test_every_chapter_has_a_page_a_solutions_page_and_three_downloads(real_site, site_out):
    config, manifest, r = real_site
    assert sorted(r.chapters) == sorted(c.id for c in manifest.written())
    for c in manifest.written():
        page, sol = page_of(r, c.id), solutions_of(r, c.id)
        assert page.exists() and sol.exists(), c.id
        assert r.docnames[c.id] == (f"release/{c.id}", f"solutions/{c.id}")
        html = page.read_text(encoding="utf-8")
        assert re.search(r'<div class="[^"]*\bjp-stamp\b', html), f"{c.id}: no provenance block"
        assert re.search(r"<h1>Basics \d\d · |<h1>Advanced \d\d · ", html), f"{c.id}: the title has no part label"
        downloads = {Path(v).name: page.parent / v for v in hrefs(page) if "_downloads/" in v}
        assert set(downloads) == {f"{c.stem}-student.ipynb", f"{c.stem}.ipynb", f"{c.stem}-solutions.ipynb"}, c.id
        student = nbformat.read(downloads[f"{c.stem}-student.ipynb"], as_version=4)
        released = nbformat.read(config.release / f"{c.id}.ipynb", as_version=4)
        assert [x.source for x in student.cells] == [x.source for x in released.cells], f"{c.id}: not the release"
        assert not any(x.get("outputs") for x in student.cells)
        self_study = nbformat.read(downloads[f"{c.stem}.ipynb"], as_version=4)
        solutions = nbformat.read(downloads[f"{c.stem}-solutions.ipynb"], as_version=4)
        assert len(self_study.cells) > len(student.cells) and len(solutions.cells) > 3
        assert "jaxpath-appendix" in json.dumps([x.metadata for x in self_study.cells]) or \
            len(self_study.cells) >= len(student.cells) + len(solutions.cells) // 2
    for name in ("learning-path", "reading-map", "below-the-course"):
        assert (site_out / f"{name}.html").exists(), name


def test_chapter_pages_carry_the_stamp_of_their_executed_notebook(real_site, site_out):
    config, manifest, r = real_site
    for c in manifest.written():
        stamp = json.loads((config.build / "self-study" / f"{c.id}.ipynb").read_text())["metadata"]["jaxpath"]["executed"]
        text = re.sub(r"\s+", " ", _text(page_of(r, c.id)))
        line = readable_stamp(stamp)
        assert line in text, f"{c.id}: the stamp of the executed notebook is not on its page"
        assert stamp["platform"] not in line and stamp["date"][:10] in line and stamp["jax"] in line
    landing = re.sub(r"\s+", " ", _text(site_out / "index.html"))
    assert "jax 0.12.0.1" in landing and "Every chapter was executed before it was published" in landing


def test_learning_path_page_has_every_stage_chapter_and_must_read(real_site, site_out):
    config, manifest, _ = real_site
    page = site_out / "learning-path.html"
    text = _text(page)
    for stage in manifest.stages:
        assert stage.title in text
    from jaxpath.authoring.path import chapter_heading

    headings = [h.strip() for h in re.findall(r"<h3>(.*?)<a", page.read_text(encoding="utf-8"))]
    expected = [chapter_heading(manifest.chapters[cid]) for s in manifest.stages for cid in s.chapters]
    assert headings == expected, "the learning path's headings are the chapters' titles, in stage order"
    for s in manifest.stages:  # a stage that names its chapters lists them in the order it names them
        numbers = [manifest.chapters[cid].stem[:2] for cid in s.chapters]
        named = re.findall(r"\b(\d\d)\b", s.title.split("(")[-1]) if "(" in s.title else []
        if len(named) == len(numbers):
            assert named == numbers, s.title
    for c in manifest.written():
        ch = load_chapter(notebook_path(config, c.id), c.id, config.root)
        assert f"{len(ch.must_read())} must-read · {len(ch.optional())} optional to skip" in text, c.id
    must_links = [v for v in hrefs(page) if re.match(r"release/.+\.html#", v)]
    total_must = sum(len(load_chapter(notebook_path(config, c.id), c.id, config.root).must_read())
                     for c in manifest.written())
    assert len(must_links) >= total_must


# ---------------------------------------------------------------------------------------------------
# The reading map
# ---------------------------------------------------------------------------------------------------

def _chapter_headings(config: Config, manifest) -> dict[str, set[str]]:
    out = {}
    for c in manifest.written():
        nb = nbformat.read(notebook_path(config, c.id), as_version=4)
        out[c.id] = {text for cell in nb.cells if cell.cell_type == "markdown"
                     for _, _, text in heading_lines(cell.source)}
    return out


def test_reading_map_assigns_every_tutorial_page_to_a_chapter_and_section_that_exist():
    config = Config.load(ROOT)
    manifest = load_manifest(config)
    series, readings, problems = load_reading_map(config)
    assert not problems
    assert len(series) == 6 and len(readings) >= 40
    problems = check_reading_map(manifest, series, readings, _chapter_headings(config, manifest))
    assert not problems, "\n".join(map(str, problems))
    for s in series:
        assert any(r.series == s.id for r in readings), f"series {s.id} lists no page"
    pointers, problems = load_pointers(config)
    assert not problems and len(pointers) >= 8
    for p in pointers:
        assert p.url.startswith("https://") and (not p.chapter or p.chapter in manifest.chapters)


def test_reading_map_check_fails_on_unassigned_pages_and_unknown_chapters():
    manifest = load_manifest(Config.load(ROOT))
    series = [Series("101", "JAX 101", "https://docs.jax.dev/en/latest/101/index.html")]
    readings = [
        Reading("101", "Unassigned page", "https://docs.jax.dev/en/latest/101/a.html", ""),
        Reading("101", "Unknown chapter", "https://docs.jax.dev/en/latest/101/b.html", "basics/99_nothing"),
        Reading("101", "Unknown heading", "https://docs.jax.dev/en/latest/101/c.html", "basics/02_jit", "No such heading"),
        Reading("999", "Unknown series", "https://example.org/d.html", "basics/02_jit"),
        Reading("101", "Fine", "https://docs.jax.dev/en/latest/101/e.html", "basics/02_jit"),
        Reading("101", "Also nowhere", "https://docs.jax.dev/en/latest/101/f.html", "basics/02_jit",
                also=(("basics/99_nothing", "A heading"), ("basics/02_jit", "A heading"))),
        Reading("101", "Also no heading", "https://docs.jax.dev/en/latest/101/g.html", "basics/04_vmap",
                also=(("basics/02_jit", "Nope"),)),
    ]
    problems = [str(p) for p in check_reading_map(manifest, series, readings, {"basics/02_jit": {"A heading"}})]
    joined = "\n".join(problems)
    assert "'Unassigned page': assigned to no chapter" in joined
    assert "'Unknown chapter': chapter 'basics/99_nothing' is not in course.toml" in joined
    assert "'Unknown heading': basics/02_jit has no heading 'No such heading'" in joined
    assert "'Unknown series': series '999'" in joined and "not a page of https://docs.jax.dev/" in joined
    assert "'Also nowhere': [[reading.also]] chapter 'basics/99_nothing' is not a written" in joined
    assert "'Also nowhere': [[reading.also]] chapter 'basics/02_jit'" in joined
    assert "'Also no heading': [[reading.also]] basics/02_jit has no heading 'Nope'" in joined
    assert not any("'Fine'" in p for p in problems)
    assert all(p.startswith("site-data/reading-map.toml") for p in problems)


def test_reading_map_page_lists_every_page_with_its_url_and_chapter(site_out):
    config = Config.load(ROOT)
    _, readings, _ = load_reading_map(config)
    page = site_out / "reading-map.html"
    refs = [v for tag, attr, v in parse_html(page).refs if tag == "a"]
    text = _text(page)
    for r in readings:
        assert r.url in refs, f"{r.title}: URL not on the page"
        assert r.title in text.replace("\u2019", "'"), r.title  # Sphinx prints typographic apostrophes
    for r in readings:
        assert any(v.startswith(f"release/{r.chapter}.html") for v in refs)


# ---------------------------------------------------------------------------------------------------
# Offline, links, leaks: the site's own checks, and proof that they catch what they claim to
# ---------------------------------------------------------------------------------------------------

def test_no_page_loads_a_remote_asset(site_out):
    assert check_assets(site_out) == []
    for page in site_pages(site_out):  # a second, independent look at the raw HTML
        html = page.read_text(encoding="utf-8")
        bad = re.findall(r'<script[^>]+src="(?:https?:)?//[^"]*"|<link[^>]+href="(?:https?:)?//[^"]*"'
                         r'|<img[^>]+src="(?:https?:)?//[^"]*"', html)
        assert not bad, f"{page.relative_to(site_out)} loads {bad[:3]}"
        assert "cdn.jsdelivr" not in html and "mathjax@" not in html.lower()


def test_asset_and_link_checks_catch_remote_assets_missing_files_and_anchors(tmp_path):
    (tmp_path / "index.html").write_text(
        '<html><head><script src="https://cdn.example.org/x.js"></script>'
        '<link rel="stylesheet" href="//cdn.example.org/x.css"></head><body id="top">'
        '<a href="https://docs.jax.dev/">fine: a link, not an asset</a>'
        '<a href="other.html#nowhere">x</a><a href="gone.html">y</a><a href="#top">ok</a>'
        '<img src="img/missing.png"></body></html>')
    (tmp_path / "other.html").write_text('<html><body><p id="here">x</p></body></html>')
    assets = [str(p) for p in check_assets(tmp_path)]
    assert len(assets) == 2 and all("loads a remote asset" in p for p in assets)
    links = "\n".join(map(str, check_links(tmp_path)))
    assert "other.html has no anchor #nowhere" in links
    assert "gone.html does not exist" in links and "img/missing.png does not exist" in links
    assert "#top" not in links


def test_the_built_site_has_no_broken_internal_link(site_out):
    assert check_links(site_out) == []


def _secret_regions(config: Config, manifest) -> tuple[set[str], set[str], set[str]]:
    """(hidden-test lines, solution lines, public lines) of the source chapters, by nbgrader's markers."""
    hidden, solution, public = set(), set(), set()
    for c in manifest.written():
        nb = json.loads(notebook_path(config, c.id).read_text())
        for cell in nb["cells"]:
            region = public
            for line in "".join(cell["source"]).split("\n"):
                if "BEGIN HIDDEN TESTS" in line:
                    region = hidden
                elif "BEGIN SOLUTION" in line:
                    region = solution
                elif "END HIDDEN TESTS" in line or "END SOLUTION" in line:
                    region = public
                else:
                    region.add(line.strip())
    hidden = {l for l in hidden if len(l) >= 12} - public
    return hidden, solution - public, public


def test_chapter_pages_are_the_student_version(real_site, site_out):
    config, manifest, _ = real_site
    assert check_leaks(config, site_out, [f"release/{c.id}" for c in manifest.written()],
                       [f"solutions/{c.id}" for c in manifest.written()]) == []
    hidden, solution, _ = _secret_regions(config, manifest)
    for c in manifest.written():
        text = _text(site_out / "release" / f"{c.id}.html")
        lines = {l.strip() for l in text.split("\n")}
        assert "YOUR CODE HERE" in text, f"{c.id}: the page does not show the stubs"
        assert "BEGIN HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text
        assert not (lines & hidden), f"{c.id}: hidden-test lines on the chapter page: {sorted(lines & hidden)[:3]}"
        assert not (lines & solution), f"{c.id}: reference-solution lines on the chapter page: {sorted(lines & solution)[:3]}"
        # the solutions page shows the reference solutions, and still no hidden test
        sol_lines = {l.strip() for l in _text(site_out / "solutions" / f"{c.id}.html").split("\n")}
        assert sol_lines & solution, f"{c.id}: no reference solution on the solutions page"
        assert not (sol_lines & hidden - solution), f"{c.id}: hidden-test lines on the solutions page"
    assert hidden, "no hidden-test line found in the sources: the test would prove nothing"


def test_leak_check_catches_a_hidden_test_line_on_a_chapter_page(real_site, tmp_path):
    config, manifest, _ = real_site
    from jaxpath.authoring.release import course_secrets

    secrets = course_secrets(config)
    line = sorted(secrets.hidden)[0]
    solution_line = sorted(secrets.solution)[0]
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "x.html").write_text(f"<html><body><pre>{line}\nprint(1)</pre></body></html>")
    (tmp_path / "chapters" / "x-solutions.html").write_text(
        f"<html><body><pre>{solution_line}</pre><pre>{line}</pre></body></html>")
    problems = [str(p) for p in check_leaks(config, tmp_path, ["chapters/x"], ["chapters/x-solutions"])]
    assert any(p.startswith("site/chapters/x.html") and "hidden test" in p for p in problems), problems
    assert any(p.startswith("site/chapters/x-solutions.html") and "hidden test" in p for p in problems), problems
    assert not any(repr(solution_line) in p and "x-solutions" in p for p in problems), \
        "a reference solution is allowed on the solutions page"


def test_headings_get_unique_labels_and_code_fences_are_not_headings():
    from jaxpath.learner.site import label_headings as _label_headings

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 01 · Title\n\n> thesis"),
        nbformat.v4.new_markdown_cell("## Exercises\nSome text\n### Same\n```python\n# not a heading\n```"),
        nbformat.v4.new_code_cell("# a comment, not a heading"),
        nbformat.v4.new_markdown_cell("### Same\nagain"),
    ]
    labels = _label_headings(nb, "basics/01_x")
    assert set(labels) == {"01 · Title", "Exercises", "Same"}
    assert labels["Same"] == "basics-01-x-same"  # the first heading of a text keeps the plain label
    assert "(basics-01-x-same-2)=\n### Same" in nb.cells[3].source
    assert "Some text\n\n(basics-01-x-same)=\n### Same" in nb.cells[1].source
    assert "# not a heading" in nb.cells[1].source and "not-a-heading" not in nb.cells[1].source
    assert nb.cells[2].source == "# a comment, not a heading"


# ---------------------------------------------------------------------------------------------------
# Navigation, the chapter box both ways, the topics beyond the docs, launch links, paths, figures
# ---------------------------------------------------------------------------------------------------

def _rel_links(path: Path, rel: str) -> list[str]:
    html = path.read_text(encoding="utf-8")
    return re.findall(rf'<link rel="{rel}" title="[^"]*" href="([^"]+)"', html)


def test_prev_next_and_the_sidebar_never_lead_to_a_solutions_page(real_site, site_out):
    _, manifest, r = real_site
    chain, page = [], site_out / "index.html"
    seen = set()
    while page not in seen:  # follow "next" from the landing page to the end
        seen.add(page)
        chain.append(page.relative_to(site_out).as_posix())
        nxt = _rel_links(page, "next")
        if not nxt:
            break
        page = (page.parent / nxt[0]).resolve()
    chapters = [f"release/{cid}.html" for s in manifest.stages for cid in s.chapters if cid in r.docnames]
    assert [c for c in chain if c.startswith("release/")] == chapters, "prev/next runs through the chapters in order"
    assert not any("solutions" in c for c in chain)
    for p in site_pages(site_out):
        for rel in ("prev", "next"):
            assert not any("solutions/" in v for v in _rel_links(p, rel)), f"{p.relative_to(site_out)}: {rel} is a solutions page"
    sidebar = re.search(r'<nav class="[^"]*bd-docs-nav[^"]*".*?</nav>', (site_out / "index.html").read_text(encoding="utf-8"),
                        re.S)
    assert sidebar and "solutions/" not in sidebar.group(0)
    labels = re.findall(r'<a[^>]*href="release/[^"]+"[^>]*>([^<]+)<', sidebar.group(0))
    assert len(labels) == len(chapters) and all(re.match(r"(Basics|Advanced) \d\d · ", x) for x in labels), labels[:3]


def test_each_chapter_page_ends_its_exercises_with_an_after_you_tried_link(real_site):
    _, manifest, r = real_site
    for c in manifest.written():
        page = page_of(r, c.id)
        html = page.read_text(encoding="utf-8")
        after = html.index("After you tried")
        last_exercise = html.rfind("<h3>Exercise ")
        assert 0 < last_exercise < after, f"{c.id}: the link does not come after the exercises"
        assert f'href="../../solutions/{c.id}.html"' in html[after:after + 1500], c.id
        sol_html = solutions_of(r, c.id).read_text(encoding="utf-8")
        assert f"../../release/{c.id}.html" in sol_html, f"{c.id}: no way back from the solutions"


def test_chapter_box_links_the_track_and_the_docs_both_ways(real_site, site_out):
    config, manifest, r = real_site
    _, readings, _ = load_reading_map(config)
    index_refs = set(hrefs(site_out / "index.html"))
    map_refs = set(hrefs(site_out / "reading-map.html"))
    for c in manifest.written():
        page = page_of(r, c.id)
        html = page.read_text(encoding="utf-8")
        box = re.search(r'<div class="[^"]*\bjp-where\b[^"]*">.*?</div>', html, re.S)
        assert box, f"{c.id}: no box"
        box_refs = re.findall(r'href="([^"]+)"', box.group(0))
        for n in c.carries:
            assert f"../../index.html#track-{n:02d}" in box_refs, f"{c.id}: no link to track {n}"
            assert any(x.startswith(f"release/{c.id}.html") for x in index_refs), f"track {n} does not link {c.id}"
        mine = [x for x in readings if c.id in dict(x.chapters())]
        assert mine, f"{c.id}: no official page to read with it"
        for x in mine:
            assert x.url in box_refs, f"{c.id}: the box lacks {x.title}"
            assert any(v.startswith(f"release/{c.id}.html") for v in map_refs)
        if mine:
            assert any(v.startswith("../../reading-map.html#reading-") for v in box_refs), f"{c.id}: no link to the map"
    assert sum(bool(x.section) for x in readings) > 10
    assert any(x.also for x in readings)


def test_landing_page_names_the_four_topics_beyond_the_docs_and_links_their_sections(real_site, site_out):
    _, _, r = real_site
    text = re.sub(r"\s+", " ", _text(site_out / "index.html"))
    refs = hrefs(site_out / "index.html")
    topics = {"The cache key": "basics/02_jit", "The cost model of reverse mode": "basics/03_grad",
              "The sharding ladder": "advanced/03_distributed", "The benchmarking method": "advanced/02_performance"}
    assert "Where the course goes beyond the docs" in text
    for title, cid in topics.items():
        assert title in text, title
        assert any(v.startswith(f"release/{cid}.html#") for v in refs), f"{title}: no link into {cid}"


def test_launch_links_are_the_themes_jupyterhub_nbgitpuller_links(real_site, site_out):
    _, manifest, r = real_site
    for c in manifest.written():
        links = [v for v in hrefs(page_of(r, c.id)) if v.startswith(HUB["hub_url"])]
        assert len(links) == 1, f"{c.id}: {links}"
        url = urlsplit(links[0])
        assert url.path == "/hub/user-redirect/git-pull"
        q = parse_qs(url.query)
        assert q == {"repo": [HUB["repository"]], "branch": [HUB["branch"]],
                     "urlpath": [f"lab/tree/jax-path/release/{c.id}.ipynb"]}, q
        assert (ROOT / "release" / f"{c.id}.ipynb").exists(), "the link opens a notebook the repository has"
        assert not [v for v in hrefs(solutions_of(r, c.id)) if v.startswith(HUB["hub_url"])]


def test_no_page_shows_a_path_of_the_build_machine(real_site, site_out):
    config, _, r = real_site
    assert check_machine_paths(site_out, (config.root, r.src)) == []
    bad = re.compile(r"site-packages/|/tmp/|ipykernel_|" + re.escape(str(config.root)))
    for p in site_pages(site_out):  # an independent look: no absolute path before site-packages, no /tmp
        for m in bad.finditer(p.read_text(encoding="utf-8")):
            before = p.read_text(encoding="utf-8")[max(0, m.start() - 40):m.start()]
            assert not re.search(r"/[\w.+-]+/?$", before) and m.group(0) != "/tmp/", \
                f"{p.relative_to(site_out)}: {before + m.group(0)!r}"


def test_path_scrubbing_and_the_path_check():
    raw = ("File /opt/x/.venv/lib/python3.12/site-packages/jax/_src/core.py:12 in /tmp/ipykernel_77/123.py:4, "
           "/usr/lib/python3.12/inspect.py, saved to /tmp/tmpa1b2/model.bin")
    assert len(find_machine_paths(raw)) >= 4
    clean = scrub_text(raw)
    assert clean == ("File site-packages/jax/_src/core.py:12 in <cell>:4, python3.12/inspect.py, "
                     "saved to <tmp>/model.bin")
    assert find_machine_paths(clean) == []
    # the course checkout is a machine path too, wherever it is (a checkout under /tmp is also a temp path)
    assert find_machine_paths("/home/ci/course/build/x", (Path("/home/ci/course"),)) == ["/home/ci/course"]
    assert str(ROOT) in find_machine_paths(f"{ROOT}/build/x", (ROOT,))


def test_check_machine_paths_catches_a_kernel_path_on_a_page(tmp_path):
    (tmp_path / "a.html").write_text("<html><body><pre>File /tmp/ipykernel_9/1.py:3</pre></body></html>")
    (tmp_path / "b.html").write_text("<html><body><pre>site-packages/jax/_src/core.py</pre></body></html>")
    problems = [str(p) for p in check_machine_paths(tmp_path)]
    assert len(problems) == 1 and problems[0].startswith("site/a.html") and "ipykernel_9" in problems[0]


def test_figures_are_on_at_least_eight_chapter_pages(real_site):
    _, manifest, r = real_site
    with_figures = []
    for c in manifest.written():
        html = page_of(r, c.id).read_text(encoding="utf-8")
        imgs = re.findall(r'<img [^>]*src="([^"]+\.png)"', html)
        for src in imgs:
            assert (page_of(r, c.id).parent / src).stat().st_size > 1000, f"{c.id}: {src}"
        if imgs:
            with_figures.append(c.id)
    assert len(with_figures) >= 8, with_figures
