"""The site of the real course, built once per test process from build/ (only read) into a scratch folder, with
a JupyterHub and a repository set (so the launch links exist), and what the site tests share."""
from __future__ import annotations

import atexit
import fcntl
import functools
import os
import pickle
import shutil
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from jaxpath import Config
from jaxpath.classroom.sample import answers_from_source, submission
from jaxpath.files import write_atomic
from jaxpath.learner.site import parse_html
from jaxpath.manifest import load_manifest

ROOT = Path(__file__).resolve().parent.parent
HUB = {"hub_url": "https://hub.example.org", "repository": "https://github.com/example/jax-path", "branch": "main"}
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOTS = ROOT / "build" / "screenshots"
_BUILT: list[Path] = []


def remove_built_sites() -> None:
    """Remove the site builds of this test process (its session's end calls it: tests/conftest.py)."""
    while _BUILT:
        shutil.rmtree(_BUILT.pop(), ignore_errors=True)


def _shared_site_dir() -> Path | None:
    """The one site build of this test run that its test processes share (tests/conftest.py names the run), or
    None outside a test run."""
    token = os.environ.get("JAXPATH_TEST_RUN")
    return Path(tempfile.gettempdir()) / f"jaxpath-site-{token}" if token else None


def remove_shared_site() -> None:
    """Remove the run's shared site build (the controlling process calls it once its workers are gone)."""
    shared = _shared_site_dir()
    if shared is not None:
        shutil.rmtree(shared, ignore_errors=True)


@functools.cache
def real_site():
    """(config, manifest, report) of the real course's site, with report.wall_seconds the build's time. Built once
    per test run: the first test process to ask builds it under a lock on the shared folder while the others
    wait on that lock, then read the report it saved."""
    shared = _shared_site_dir()
    if shared is None:
        base = Path(tempfile.mkdtemp(prefix="jaxpath-site-"))
        _BUILT.append(base)  # cached for the whole test process: removed when its session ends
        atexit.register(shutil.rmtree, base, True)  # (and at exit, for a process that ends some other way)
        return _build_real_site(base)
    shared.mkdir(exist_ok=True)
    with open(shared / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the builder's file closes, however it ends
        saved = shared / "report.pickle"
        if saved.exists():
            return pickle.loads(saved.read_bytes())
        built = _build_real_site(shared)
        write_atomic(saved, pickle.dumps(built))
        return built


def _build_real_site(base: Path):
    from jaxpath.learner.site import build_site

    config = Config.load(ROOT)
    manifest = load_manifest(config)
    missing = [c.id for c in manifest.written() if not (config.build / "self-study" / f"{c.id}.ipynb").exists()
               or not (config.build / "appendix" / f"{c.id}.ipynb").exists()]
    if missing:
        no_exec = [cid for cid in missing if not (config.executed / f"{cid}.ipynb").exists()]
        if no_exec:
            pytest.fail(f"build/executed/ lacks {', '.join(no_exec)}: run `make` (or `jaxpath build`) before the "
                        "site tests; they render the executed chapters")
        from jaxpath.authoring.appendix import appendix

        r = appendix(config, missing)
        assert not r.problems, "jaxpath appendix failed: " + "; ".join(map(str, r.problems))
    t0 = time.perf_counter()
    report = build_site(config, out=base / "site", src=base / "site-src", **HUB)
    report.wall_seconds = time.perf_counter() - t0
    return config, manifest, report


def text_of(path: Path) -> str:
    return "".join(parse_html(path).text)


def page_of(report, cid: str) -> Path:
    return report.out / f"{report.docnames[cid][0]}.html"


def solutions_of(report, cid: str) -> Path:
    return report.out / f"{report.docnames[cid][1]}.html"


def hrefs(path: Path) -> list[str]:
    return [v for tag, attr, v in parse_html(path).refs if tag == "a" and attr == "href"]


def save_screenshot(page, tmp_path: Path, request, name: str) -> Path:
    """A screenshot in the test's folder, copied to build/screenshots/<test name>/ for a person to look at."""
    shot = tmp_path / f"{name}.png"
    page.screenshot(path=str(shot), full_page=False)
    keep = SCREENSHOTS / request.node.name
    keep.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, keep / shot.name)
    return shot


def solve(work: Path, chapter: str, exercises: int) -> Path:
    """Fill in the first `exercises` answers of `chapter` in the work folder with the reference answers."""
    config = Config.load(ROOT)
    answers = answers_from_source(nbformat.read(config.source / f"{chapter}.ipynb", as_version=4))
    keep = dict(list(answers.items())[:exercises])
    path = work / f"{chapter}.ipynb"
    nbformat.write(submission(nbformat.read(path, as_version=4), keep), path)
    return path
