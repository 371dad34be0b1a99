"""`jaxpath site`: the course site built from the real executed chapters (build/), its structure, the
reading map, offline assets, links and leaks; and in headless Debian chromium: the track and the progress
counter, every link of every page, console errors, and a chapter page's outputs and stamp."""
from __future__ import annotations

import functools
import http.server
import json
import re
import shutil
import threading
import time
from pathlib import Path

import nbformat
import pytest

from jaxpath import Config
from jaxpath.chapter import load_chapter
from jaxpath.manifest import load_manifest, notebook_path
from jaxpath.site import (
    Reading, Series, build_site, check_assets, check_leaks, check_links, check_reading_map, heading_lines,
    load_pointers, load_reading_map, parse_html, site_pages,
)

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SITE_BUILD_LIMIT_S = 120  # the issue: the site adds under 2 minutes to the build


# ---------------------------------------------------------------------------------------------------
# Fixtures: one site per test session, built from the real build/ outputs
# ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def real_site(tmp_path_factory):
    """The site of the real course, built once per session into a scratch folder (build/ is only read)."""
    config = Config.load(ROOT)
    manifest = load_manifest(config)
    missing = [c.id for c in manifest.written() if not (config.build / "self-study" / f"{c.id}.ipynb").exists()
               or not (config.build / "appendix" / f"{c.id}.ipynb").exists()]
    if missing:
        no_exec = [cid for cid in missing if not (config.executed / f"{cid}.ipynb").exists()]
        if no_exec:
            pytest.fail(f"build/executed/ lacks {', '.join(no_exec)}: run `make` (or `jaxpath build`) before the "
                        "site tests; they render the executed chapters")
        from jaxpath.appendix import appendix

        r = appendix(config, missing)
        assert not r.problems, "jaxpath appendix failed: " + "; ".join(map(str, r.problems))
    base = tmp_path_factory.mktemp("site")
    t0 = time.perf_counter()
    report = build_site(config, out=base / "site", src=base / "site-src")
    report.wall_seconds = time.perf_counter() - t0
    return config, manifest, report


@pytest.fixture(scope="session")
def site_out(real_site) -> Path:
    return real_site[2].out


def _text(path: Path) -> str:
    return "".join(parse_html(path).text)


def _save_screenshot(page, tmp_path: Path, request, name: str) -> Path:
    """A screenshot in the test's folder, copied to build/screenshots/<test name>/ for a person to look at."""
    shot = tmp_path / f"{name}.png"
    page.screenshot(path=str(shot), full_page=False)
    keep = ROOT / "build" / "screenshots" / request.node.name
    keep.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, keep / shot.name)
    return shot


# ---------------------------------------------------------------------------------------------------
# The build and the generated structure
# ---------------------------------------------------------------------------------------------------

def test_site_builds_without_warnings_or_problems_and_in_time(real_site):
    _, _, r = real_site
    assert not r.warnings, "Sphinx warned:\n" + "\n".join(r.warnings)
    assert not r.problems, "the site has problems:\n" + "\n".join(map(str, r.problems))
    assert r.index.exists()
    assert r.wall_seconds < SITE_BUILD_LIMIT_S, f"a fresh site build took {r.wall_seconds:.0f} s"
    print(f"fresh site build: {r.wall_seconds:.1f} s (generate {r.generate_seconds:.1f}, sphinx "
          f"{r.sphinx_seconds:.1f}, checks {r.check_seconds:.1f}), {r.pages} pages")


def test_landing_page_lists_the_track_in_two_parts_with_sections(real_site, site_out):
    _, manifest, _ = real_site
    index = site_out / "index.html"
    html = index.read_text(encoding="utf-8")
    boxes = re.findall(r'<input type="checkbox" class="jp-done" data-track="(\d+)"', html)
    assert sorted(map(int, boxes)) == [t.number for t in manifest.track] == list(range(1, 13))
    text = _text(index)
    assert "Your progress: 0/12 chapters" in re.sub(r"\s+", " ", text)
    assert "Part i · How JAX thinks" in text and "Part ii · State, the mesh" in text
    for t in manifest.track:
        assert f"{t.number:02d} · {t.title}" in text
        assert t.thesis.replace("`", "") in text.replace("`", ""), f"thesis of track chapter {t.number} missing"
    # every section that course.toml says carries a track chapter is linked from the landing page
    refs = {v for tag, attr, v in parse_html(index).refs if tag == "a" and attr == "href"}
    for c in manifest.written():
        for heading in c.sections:
            target = f"chapters/{c.id}.html#"
            anchors = [r for r in refs if r.startswith(target)]
            assert anchors, f"no link from the landing page into {c.id}'s sections"
        if c.carries:
            assert any(r.startswith(f"chapters/{c.id}.html") for r in refs), f"{c.id} carries the track but is not linked"
    linked_sections = sum(1 for r in refs if re.match(r"chapters/.+\.html#.+", r))
    assert linked_sections >= sum(len(c.sections) for c in manifest.written())


def test_every_chapter_has_a_page_a_solutions_page_and_downloads(real_site, site_out):
    _, manifest, r = real_site
    assert sorted(r.chapters) == sorted(c.id for c in manifest.written())
    for c in manifest.written():
        page = site_out / "chapters" / f"{c.id}.html"
        sol = site_out / "chapters" / f"{c.id}-solutions.html"
        assert page.exists() and sol.exists(), c.id
        html = page.read_text(encoding="utf-8")
        assert re.search(r'<div class="[^"]*\bjp-stamp\b', html), f"{c.id}: no provenance block"
        downloads = [v for tag, attr, v in parse_html(page).refs if "_downloads/" in v]
        names = {Path(v).name for v in downloads}
        assert {f"{c.stem}.ipynb", f"{c.stem}-solutions.ipynb"} <= names, f"{c.id}: downloads {names}"
        for v in downloads:
            nb = nbformat.read(page.parent / v, as_version=4)  # a real notebook, not an empty file
            assert len(nb.cells) > 3
    for name in ("learning-path", "reading-map", "below-the-course"):
        assert (site_out / f"{name}.html").exists(), name


def test_chapter_pages_carry_the_stamp_of_their_executed_notebook(real_site, site_out):
    config, manifest, _ = real_site
    from jaxpath.execute import stamp_text

    for c in manifest.written():
        stamp = json.loads((config.build / "self-study" / f"{c.id}.ipynb").read_text())["metadata"]["jaxpath"]["executed"]
        text = re.sub(r"\s+", " ", _text(site_out / "chapters" / f"{c.id}.html"))
        assert stamp_text(stamp).strip("*") in text, f"{c.id}: the stamp of the executed notebook is not on its page"
    landing = re.sub(r"\s+", " ", _text(site_out / "index.html"))
    assert "jax 0.12.0.1" in landing and "Every chapter was executed before it was published" in landing


def test_learning_path_page_has_every_stage_chapter_and_must_read(real_site, site_out):
    config, manifest, _ = real_site
    page = site_out / "learning-path.html"
    text = _text(page)
    for stage in manifest.stages:
        assert stage.title in text
    for c in manifest.written():
        ch = load_chapter(notebook_path(config, c.id), c.id, config.root)
        assert f"{len(ch.must_read())} must-read · {len(ch.optional())} optional to skip" in text, c.id
    must_links = [v for tag, attr, v in parse_html(page).refs if tag == "a" and re.match(r"chapters/.+\.html#", v)]
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
    ]
    problems = [str(p) for p in check_reading_map(manifest, series, readings, {"basics/02_jit": {"A heading"}})]
    joined = "\n".join(problems)
    assert "'Unassigned page': assigned to no chapter" in joined
    assert "'Unknown chapter': chapter 'basics/99_nothing' is not in course.toml" in joined
    assert "'Unknown heading': basics/02_jit has no heading 'No such heading'" in joined
    assert "'Unknown series': series '999'" in joined and "not a page of https://docs.jax.dev/" in joined
    assert not any("'Fine'" in p for p in problems)
    assert all(p.startswith("docs/reading-map.toml") for p in problems)


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
        assert any(v.startswith(f"chapters/{r.chapter}.html") for v in refs)


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
    assert check_leaks(config, site_out, [f"chapters/{c.id}" for c in manifest.written()],
                       [f"chapters/{c.id}-solutions" for c in manifest.written()]) == []
    hidden, solution, _ = _secret_regions(config, manifest)
    for c in manifest.written():
        text = _text(site_out / "chapters" / f"{c.id}.html")
        lines = {l.strip() for l in text.split("\n")}
        assert "YOUR CODE HERE" in text, f"{c.id}: the page does not show the stubs"
        assert "BEGIN HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text
        assert not (lines & hidden), f"{c.id}: hidden-test lines on the chapter page: {sorted(lines & hidden)[:3]}"
        assert not (lines & solution), f"{c.id}: reference-solution lines on the chapter page: {sorted(lines & solution)[:3]}"
        # the solutions page shows the reference solutions, and still no hidden test
        sol_lines = {l.strip() for l in _text(site_out / "chapters" / f"{c.id}-solutions.html").split("\n")}
        assert sol_lines & solution, f"{c.id}: no reference solution on the solutions page"
        assert not (sol_lines & hidden - solution), f"{c.id}: hidden-test lines on the solutions page"
    assert hidden, "no hidden-test line found in the sources: the test would prove nothing"


def test_leak_check_catches_a_hidden_test_line_on_a_chapter_page(real_site, tmp_path):
    config, manifest, _ = real_site
    from jaxpath.site import _secret_kinds

    secrets, hidden = _secret_kinds(config)
    line = sorted(hidden)[0]
    solution_line = sorted(set(secrets) - set(hidden))[0]
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "x.html").write_text(f"<html><body><pre>{line}\nprint(1)</pre></body></html>")
    (tmp_path / "chapters" / "x-solutions.html").write_text(
        f"<html><body><pre>{solution_line}</pre><pre>{line}</pre></body></html>")
    problems = [str(p) for p in check_leaks(config, tmp_path, ["chapters/x"], ["chapters/x-solutions"])]
    assert any(p.startswith("site/chapters/x.html") and "hidden test" in p for p in problems), problems
    assert any(p.startswith("site/chapters/x-solutions.html") and "hidden test" in p for p in problems), problems
    assert not any(repr(solution_line) in p and "x-solutions" in p for p in problems), \
        "a reference solution is allowed on the solutions page"


# ---------------------------------------------------------------------------------------------------
# In the browser: headless Debian chromium, driven by Playwright
# ---------------------------------------------------------------------------------------------------

class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def site_server(site_out):
    """The built site served on a loopback port, as `python -m http.server` would."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(site_out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed at /usr/bin/chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.errors = []
    pg.on("console", lambda m: pg.errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.errors.append(f"pageerror: {e}"))
    # a request cut short because the test moved on to the next page is not an error of the site
    pg.on("requestfailed", lambda r: pg.errors.append(f"request failed: {r.url} ({r.failure})")
          if "ERR_ABORTED" not in (r.failure or "") else None)
    pg.on("response", lambda r: pg.errors.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    yield pg
    context.close()


def _progress(pg) -> str:
    return re.sub(r"\s+", " ", pg.locator(".jp-progress-text").inner_text()).strip()


@pytest.mark.browser
def test_browser_landing_page_progress_survives_a_reload(page, site_server, tmp_path, request):
    page.goto(site_server + "index.html")
    boxes = page.locator("input.jp-done")
    assert boxes.count() == 12
    assert page.locator("h3", has_text=re.compile(r"^\s*\d\d · ")).count() == 12
    assert _progress(page) == "Your progress: 0/12 chapters"
    _save_screenshot(page, tmp_path, request, "1-landing-0-of-12")
    boxes.nth(0).check()
    boxes.nth(4).check()
    assert _progress(page) == "Your progress: 2/12 chapters"
    boxes.nth(4).scroll_into_view_if_needed()
    _save_screenshot(page, tmp_path, request, "2-marked-two")
    page.reload()
    assert _progress(page) == "Your progress: 2/12 chapters"
    assert [boxes.nth(i).is_checked() for i in range(12)] == [i in (0, 4) for i in range(12)]
    page.locator(".jp-progress").scroll_into_view_if_needed()
    _save_screenshot(page, tmp_path, request, "3-after-reload")
    boxes.nth(0).uncheck()
    assert _progress(page) == "Your progress: 1/12 chapters"
    page.locator(".jp-progress-reset").click()
    assert _progress(page) == "Your progress: 0/12 chapters"
    assert page.errors == []


@pytest.mark.browser
def test_browser_site_opens_from_the_file_system(page, site_out, tmp_path, request):
    """No server: index.html opened as a file, the progress kept, and a chapter reached by its link."""
    page.goto((site_out / "index.html").as_uri())
    assert page.locator("input.jp-done").count() == 12
    page.locator("input.jp-done").nth(2).check()
    page.reload()
    assert _progress(page) == "Your progress: 1/12 chapters"
    page.locator("a[href^='chapters/basics/03_grad.html']").first.click()
    page.wait_for_load_state()
    assert page.url.endswith(".html") and "03_grad.html" in page.url
    assert page.locator(".jp-stamp").count() == 1
    _save_screenshot(page, tmp_path, request, "chapter-from-file")
    assert page.errors == []


@pytest.mark.browser
def test_browser_every_internal_link_resolves_and_no_console_errors(page, site_server, site_out):
    import urllib.error
    import urllib.request

    pages = [p.relative_to(site_out).as_posix() for p in site_pages(site_out)]
    ids: dict[str, set[str]] = {}
    targets: dict[str, set[str]] = {}
    errors: dict[str, list[str]] = {}
    for rel in pages:
        page.errors.clear()
        page.goto(site_server + rel, wait_until="load")
        found = page.evaluate("""() => {
            const out = [];
            for (const el of document.querySelectorAll('[href], [src]')) {
                for (const a of ['href', 'src']) {
                    if (el.hasAttribute(a) && el.tagName !== 'svg')
                        out.push(el[a] instanceof SVGAnimatedString ? el[a].baseVal : el[a]);
                }
            }
            return {ids: Array.from(document.querySelectorAll('[id]'), e => e.id), urls: out};
        }""")
        ids[rel] = set(found["ids"])
        for url in found["urls"]:
            if url.startswith(site_server):
                targets.setdefault(url, set()).add(rel)
            else:
                assert not url.startswith("file:"), f"{rel}: a file: link {url}"
        if page.errors:
            errors[rel] = list(page.errors)
    assert not errors, f"console errors: {errors}"
    missing, bad_anchor = [], []
    statuses: dict[str, int] = {}
    for url, sources in sorted(targets.items()):
        path, _, frag = url[len(site_server):].partition("#")
        path = path.split("?")[0] or "index.html"
        if path not in statuses:
            try:
                with urllib.request.urlopen(site_server + path, timeout=10) as resp:
                    statuses[path] = resp.status
            except urllib.error.HTTPError as e:
                statuses[path] = e.code
        if statuses[path] != 200:
            missing.append(f"{url} ({statuses[path]}) from {sorted(sources)[:2]}")
        elif frag and path.endswith(".html"):
            if path not in ids:
                text = (site_out / path).read_text(encoding="utf-8")
                ids[path] = set(re.findall(r'\bid="([^"]+)"', text))
            from urllib.parse import unquote

            if unquote(frag) not in ids[path]:
                bad_anchor.append(f"{url} from {sorted(sources)[:2]}")
    assert not missing, f"{len(missing)} broken link(s): {missing[:10]}"
    assert not bad_anchor, f"{len(bad_anchor)} link(s) to a missing anchor: {bad_anchor[:10]}"
    assert len(pages) >= 40 and len(targets) > 200


@pytest.mark.browser
def test_browser_chapter_page_shows_executed_output_and_its_stamp(page, site_server, tmp_path, request):
    config = Config.load(ROOT)
    nb = nbformat.read(config.build / "self-study" / "basics" / "02_jit.ipynb", as_version=4)
    first_output = next(o["text"].strip().splitlines()[0] for c in nb.cells if c.cell_type == "code"
                        for o in c.get("outputs", []) if o.get("output_type") == "stream" and o["text"].strip())
    page.goto(site_server + "chapters/basics/02_jit.html")
    stamp = page.locator(".jp-stamp")
    assert stamp.count() == 1 and stamp.is_visible()
    assert re.search(r"Executed with jax \d", stamp.inner_text())
    outputs = page.locator(".cell_output")
    assert outputs.count() > 20
    assert first_output in page.locator("main").inner_text(), "the first real output of the run is not shown"
    assert page.locator(".cell_output .output.traceback, .cell_output pre").count() > 0
    _save_screenshot(page, tmp_path, request, "1-chapter-top")
    outputs.nth(3).scroll_into_view_if_needed()
    _save_screenshot(page, tmp_path, request, "2-chapter-output")
    page.goto(site_server + "chapters/basics/02_jit-solutions.html")
    assert page.locator(".jp-stamp").count() == 1 and "Reference solution" in page.locator("main").inner_text()
    _save_screenshot(page, tmp_path, request, "3-solutions")
    # TeX is typeset by the site's own MathJax (no CDN): no raw \( ... \) left, every formula rendered
    page.goto(site_server + "chapters/advanced/11_scientific_computing.html")
    page.wait_for_selector("mjx-container", state="attached", timeout=30_000)
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=30_000)
    page.evaluate("() => MathJax.startup.promise")
    assert page.locator("mjx-container").count() > 20
    assert "\\(" not in page.locator("article").inner_text(), "a formula was left as TeX source"
    page.locator("mjx-container").nth(5).scroll_into_view_if_needed()
    _save_screenshot(page, tmp_path, request, "4-math")
    assert page.errors == []


def test_headings_get_unique_labels_and_code_fences_are_not_headings():
    from jaxpath.site import _label_headings

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
