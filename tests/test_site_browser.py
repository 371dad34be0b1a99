"""The course site in headless Debian chromium (Playwright): earned progress through `jaxpath serve` (a learner
solves basics/01's core exercises in a copy of the release and runs `jaxpath check`), self-marks from the file
system, prev/next, every figure and link, console errors, launch links and a chapter page's outputs.
Screenshots go to build/screenshots/<test name>/."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import unquote

import nbformat
import pytest
from site_factory import HUB, ROOT, real_site, save_screenshot, solve

from jaxpath import Config
from jaxpath.learner.site import site_pages

pytestmark = pytest.mark.browser
JAXPATH = Path(sys.executable).parent / "jaxpath"


@pytest.fixture(scope="session")
def site():
    return real_site()


@pytest.fixture
def browser(chromium):
    return chromium


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


class Served:
    """`jaxpath serve` as a learner runs it, on a free loopback port; ready once it prints its URL."""

    def __init__(self, site_dir: Path, work: Path, lab_url: str = ""):
        cmd = [str(JAXPATH), "--root", str(ROOT), "serve", "--site", str(site_dir), "--work", str(work), "--port", "0"]
        if lab_url:
            cmd += ["--lab-url", lab_url]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"})
        line = self.proc.stdout.readline()  # blocks until the readiness line (or the process ends)
        m = re.search(r"serving (http://127\.0\.0\.1:\d+/)", line)
        if not m:
            self.stop()
            raise AssertionError(f"jaxpath serve did not start: {line}{self.proc.stdout.read()}")
        self.url = m.group(1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


@pytest.fixture
def served(site, tmp_path):
    servers = []

    def start(work: Path, lab_url: str = "") -> Served:
        s = Served(site[2].out, work, lab_url)
        servers.append(s)
        return s
    yield start
    for s in servers:
        s.stop()


def _status(pg, n: int) -> str:
    return pg.locator(f".jp-status[data-track='{n}']").inner_text().strip()


@pytest.mark.slow
def test_served_landing_page_shows_track_01_earned_after_jaxpath_check(page, served, tmp_path, request):
    work = tmp_path / "work"
    shutil.copytree(ROOT / "release", work)
    s = served(work)
    page.goto(s.url + "index.html")
    page.wait_for_selector(".jp-progress[data-loaded='true']")
    assert page.locator(".jp-earned-count").inner_text() == "0"
    assert _status(page, 1).startswith("Not started") and "next: Basics 01, Exercise 1:" in _status(page, 1)
    assert page.locator(".jp-progress-kind").inner_text() == "(self-marked)"
    save_screenshot(page, tmp_path, request, "1-landing-served-not-started")

    notebook = solve(work, "basics/01_introduction", 2)  # the core exercises, as the learner writes them
    check = subprocess.run([str(JAXPATH), "--root", str(ROOT), "check", str(notebook)], capture_output=True, text=True,
                           timeout=600)
    assert "2/4 self-checks pass" in check.stdout, check.stdout + check.stderr
    page.reload()
    page.wait_for_selector(".jp-progress[data-loaded='true']")
    assert page.locator(".jp-earned-count").inner_text() == "1"
    assert _status(page, 1).startswith("✓ Earned") and "2/2" in _status(page, 1)
    assert _status(page, 8).startswith("◐ In progress"), "randomness also needs advanced/10"
    assert page.locator(".jp-status.jp-state-earned").count() == 1
    assert page.locator("input.jp-done:checked").count() == 0, "earned is not the same as self-marked"
    page.locator(".jp-progress").scroll_into_view_if_needed()
    save_screenshot(page, tmp_path, request, "2-progress-view-earned-1-of-12")
    page.locator("#track-01").scroll_into_view_if_needed()
    save_screenshot(page, tmp_path, request, "3-progress-view-track-01-earned")
    assert page.errors == []


@pytest.mark.slow
def test_chapter_page_links_into_a_local_jupyterlab_when_served_beside_one(page, served, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    s = served(work, lab_url="http://127.0.0.1:8888")
    page.goto(s.url + "release/basics/02_jit.html")
    link = page.locator("a.jp-launch-local-link")
    link.wait_for()
    assert link.get_attribute("href") == "http://127.0.0.1:8888/lab/tree/basics/02_jit.ipynb"
    hub = page.locator(f"a[href^='{HUB['hub_url']}/hub/user-redirect/git-pull']")
    assert hub.count() == 1 and "release/basics/02_jit.ipynb" in unquote(hub.get_attribute("href"))
    assert page.errors == []


def test_file_system_site_keeps_self_marks_labelled_as_such(page, site, tmp_path, request):
    out = site[2].out
    page.goto((out / "index.html").as_uri())
    boxes = page.locator("input.jp-done")
    assert boxes.count() == 12
    assert page.locator("h3", has_text=re.compile(r"^\s*Track \d\d · ")).count() == 12
    assert page.locator(".jp-earned-text").is_hidden() and page.locator(".jp-status:visible").count() == 0
    save_screenshot(page, tmp_path, request, "1-landing-from-file")
    boxes.nth(2).check()
    page.reload()
    text = re.sub(r"\s+", " ", page.locator(".jp-progress").inner_text())
    assert "Your progress: 1/12 chapters (self-marked)" in text
    page.locator("a[href^='release/basics/03_grad.html']").first.click()
    page.wait_for_load_state()
    assert "03_grad.html" in page.url and page.locator(".jp-stamp").count() == 1
    assert page.errors == []


def test_next_never_reaches_a_solutions_page(page, site):
    config, manifest, r = site
    page.goto((r.out / "index.html").as_uri())
    visited = []
    for _ in range(len(manifest.written()) + 5):
        nxt = page.locator("a.right-next")
        if nxt.count() == 0:
            break
        nxt.first.click()
        page.wait_for_load_state()
        visited.append(page.url)
        assert "/solutions/" not in page.url, visited
    expected = [cid for s in manifest.stages for cid in s.chapters if cid in r.docnames]
    chapters = [re.search(r"release/(.+)\.html", u).group(1) for u in visited if "/release/" in u]
    assert chapters == expected


def test_every_figure_loads_and_a_chapter_with_one_is_captured(page, site, tmp_path, request):
    _, manifest, r = site
    figures = 0
    for c in manifest.written():
        page.goto((r.out / f"{r.docnames[c.id][0]}.html").as_uri())
        sizes = page.evaluate("""async () => {
            const imgs = Array.from(document.querySelectorAll('article img'));
            await Promise.all(imgs.map(i => i.complete ? null : new Promise(ok => { i.onload = i.onerror = ok; })));
            return imgs.map(i => [i.getAttribute('src'), i.naturalWidth, i.naturalHeight]);
        }""")
        for src, w, h in sizes:
            assert w > 0 and h > 0, f"{c.id}: {src} did not load"
        figures += len(sizes)
        if c.id == "basics/03_grad" and sizes:
            page.locator(".cell_output img").first.scroll_into_view_if_needed()
            save_screenshot(page, tmp_path, request, "chapter-with-figure")
    assert figures >= 8
    assert page.errors == []


def test_every_internal_link_resolves_no_console_errors_and_no_machine_path(page, site, served, tmp_path):
    config, _, r = site
    s = served(tmp_path)
    out = r.out
    pages = [p.relative_to(out).as_posix() for p in site_pages(out)]
    ids: dict[str, set[str]] = {}
    targets: dict[str, set[str]] = {}
    errors: dict[str, list[str]] = {}
    for rel in pages:
        page.errors.clear()
        page.goto(s.url + rel, wait_until="load")
        found = page.evaluate("""() => {
            const out = [];
            for (const el of document.querySelectorAll('[href], [src]')) {
                for (const a of ['href', 'src']) {
                    if (el.hasAttribute(a) && el.tagName !== 'svg')
                        out.push(el[a] instanceof SVGAnimatedString ? el[a].baseVal : el[a]);
                }
            }
            return {ids: Array.from(document.querySelectorAll('[id]'), e => e.id), urls: out,
                    text: document.body.innerText};
        }""")
        ids[rel] = set(found["ids"])
        leaked = re.findall(r"/tmp/\S+|ipykernel_\d+|\S+/lib/python3\.\d+/\S*|" + re.escape(str(config.root)), found["text"])
        assert not leaked, f"{rel} shows build-machine paths: {leaked[:3]}"
        for url in found["urls"]:
            if url.startswith(s.url):
                targets.setdefault(url, set()).add(rel)
            else:
                assert not url.startswith("file:"), f"{rel}: a file: link {url}"
        if page.errors:
            errors[rel] = list(page.errors)
    assert not errors, f"console errors: {errors}"
    missing, bad_anchor = [], []
    statuses: dict[str, int] = {}
    for url, sources in sorted(targets.items()):
        path, _, frag = url[len(s.url):].partition("#")
        path = path.split("?")[0] or "index.html"
        if path not in statuses:
            try:
                with urllib.request.urlopen(s.url + path, timeout=10) as resp:
                    statuses[path] = resp.status
            except urllib.error.HTTPError as e:
                statuses[path] = e.code
        if statuses[path] != 200:
            missing.append(f"{url} ({statuses[path]}) from {sorted(sources)[:2]}")
        elif frag and path.endswith(".html"):
            if path not in ids:
                ids[path] = set(re.findall(r'\bid="([^"]+)"', (out / path).read_text(encoding="utf-8")))
            if unquote(frag) not in ids[path]:
                bad_anchor.append(f"{url} from {sorted(sources)[:2]}")
    assert not missing, f"{len(missing)} broken link(s): {missing[:10]}"
    assert not bad_anchor, f"{len(bad_anchor)} link(s) to a missing anchor: {bad_anchor[:10]}"
    assert len(pages) >= 40 and len(targets) > 200


def test_chapter_page_shows_executed_output_its_stamp_and_math(page, site, tmp_path, request):
    _, _, r = site
    config = Config.load(ROOT)
    nb = nbformat.read(config.build / "self-study" / "basics" / "02_jit.ipynb", as_version=4)
    first_output = next(o["text"].strip().splitlines()[0] for c in nb.cells if c.cell_type == "code"
                        for o in c.get("outputs", []) if o.get("output_type") == "stream" and o["text"].strip())
    page.goto((r.out / "release/basics/02_jit.html").as_uri())
    stamp = page.locator(".jp-stamp")
    assert stamp.count() == 1 and stamp.is_visible()
    assert re.search(r"Executed with jax \d.* on \d{4}-\d\d-\d\d at \d\d:\d\d UTC", stamp.inner_text())
    assert page.locator(".cell_output").count() > 20
    assert first_output in page.locator("main").inner_text(), "the first real output of the run is not shown"
    save_screenshot(page, tmp_path, request, "1-chapter-top")
    page.goto((r.out / "solutions/basics/02_jit.html").as_uri())
    assert page.locator(".jp-stamp").count() == 1 and "Reference solution" in page.locator("main").inner_text()
    page.goto((r.out / "release/advanced/11_scientific_computing.html").as_uri())
    page.wait_for_selector("mjx-container", state="attached", timeout=30_000)
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=30_000)
    page.evaluate("() => MathJax.startup.promise")
    assert page.locator("mjx-container").count() > 20
    assert "\\(" not in page.locator("article").inner_text(), "a formula was left as TeX source"
    assert page.errors == []
