"""The build: write the Sphinx source tree (build/site-src/) from the manifest, site-data/ and build/, run Sphinx
in-process into build/site/, and check the result. Files are written only when they change, so that a
rebuild redoes only what changed."""
from __future__ import annotations

import io
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import nbformat

from ...config import Config
from ...files import write_atomic
from ...manifest import load_manifest
from ...problems import Problem
from .chapters import ChapterPage, chapter_page, download_copy, finish_page
from .checks import check_assets, check_leaks, check_links, check_machine_paths, site_pages
from .data import check_reading_map, load_pointers, load_reading_map, load_site_settings
from .pages import chapter_box, index_page, learning_path_page, pointers_page, reading_map_page
from .render import static_files
from .sphinx_config import mathjax_files, sphinx_settings

SITE_SRC, SITE_OUT = "site-src", "site"
CLASS_SRC, CLASS_OUT = "site-class-src", "site-class"


@dataclass
class SiteReport:
    out: Path
    src: Path
    chapters: list[str] = field(default_factory=list)
    """Chapter ids with a page."""
    pages: int = 0
    """HTML pages written."""
    docnames: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Chapter id -> (its page, its solutions page), as Sphinx docnames."""
    warnings: list[str] = field(default_factory=list)
    """Sphinx's warnings (any warning fails a strict build)."""
    problems: list[Problem] = field(default_factory=list)
    generate_seconds: float = 0.0
    sphinx_seconds: float = 0.0
    check_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems and not self.warnings

    @property
    def index(self) -> Path:
        return self.out / "index.html"

    @property
    def seconds(self) -> float:
        return self.generate_seconds + self.sphinx_seconds + self.check_seconds


def write_if_changed(path: Path, data: str | bytes) -> None:
    data = data.encode("utf-8") if isinstance(data, str) else data
    if path.exists() and path.read_bytes() == data:
        return
    write_atomic(path, data)


def _prune(root: Path, keep: set[Path]) -> None:
    """Remove generated files that the current build did not write (a chapter removed from the manifest)."""
    for p in sorted(root.rglob("*"), reverse=True):
        if ".doctrees" in p.relative_to(root).parts:
            continue
        if p.is_file() and p not in keep:
            p.unlink()
        elif p.is_dir() and not any(p.iterdir()):
            p.rmdir()


def generate_source(config: Config, src: Path, problems: list[Problem], **site_overrides) -> tuple[dict[str, ChapterPage], dict]:
    """Write the Sphinx source tree of the site into `src`; return the chapter pages by chapter id and the
    Sphinx settings. `site_overrides` replace fields of course.toml's [site] (a hub URL, a repository)."""
    manifest = load_manifest(config)
    settings, s_problems = load_site_settings(config, **site_overrides)
    problems += s_problems
    src.mkdir(parents=True, exist_ok=True)
    pages: dict[str, ChapterPage] = {}
    for entry in manifest.written():
        page = chapter_page(config, entry, problems)
        if page:
            pages[entry.id] = page
    series, readings, rm_problems = load_reading_map(config)
    problems += rm_problems
    problems += check_reading_map(manifest, series, readings, {cid: set(p.labels) for cid, p in pages.items()})
    pointers, p_problems = load_pointers(config)
    problems += p_problems
    out: dict[Path, str | bytes] = {
        src / "index.md": index_page(config, manifest, settings, pages, problems),
        src / "learning-path.md": learning_path_page(config, pages, problems, settings.for_class),
        src / "reading-map.md": reading_map_page(manifest, series, readings, pages, problems),
        src / "below-the-course.md": pointers_page(pointers, pages, problems),
    }
    for cp in pages.values():
        if settings.for_class:  # a graded class gets the student version only: no solutions, no self-study edition
            cp.files = {k: v for k, v in cp.files.items() if k == "student"}
        body, sol = finish_page(cp, chapter_box(manifest, settings, cp, readings, pages, problems))
        out[src / f"{cp.docname}.ipynb"] = nbformat.writes(body)
        if not settings.for_class:
            out[src / f"{cp.solutions}.ipynb"] = nbformat.writes(sol)
        for kind, rel in cp.files.items():
            out[src / rel] = download_copy(config, cp, kind)
    static = static_files()
    for f in static:
        out[src / "_static" / f.name] = f.read_bytes()
    mj_base, mj_files = mathjax_files()
    for f in mj_files:
        out[src / "_static" / "mathjax" / f.relative_to(mj_base)] = f.read_bytes()
    for path, data in out.items():
        write_if_changed(path, data)
    _prune(src, set(out))
    return pages, sphinx_settings(manifest.course_title, settings, [f.name for f in static], bool(mj_files))


def run_sphinx(src: Path, out: Path, doctrees: Path, settings: dict, jobs: int = 2) -> list[str]:
    """Build the HTML in-process with `settings` as the whole configuration (no conf.py); return Sphinx's
    warnings (one string each)."""
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    status, warning = io.StringIO(), io.StringIO()
    with patch_docutils(str(src)), docutils_namespace():
        app = Sphinx(str(src), None, str(out), str(doctrees), "html", confoverrides=settings, status=status,
                     warning=warning, freshenv=False, warningiserror=False, parallel=max(1, jobs), keep_going=True)
        app.build()
    lines = [l.strip() for l in re.split(r"\n(?=\S)", warning.getvalue()) if l.strip()]
    return [re.sub(r"\x1b\[[0-9;]*m", "", l) for l in lines]


def build_site(config: Config, out: Path | None = None, *, jobs: int = 2, src: Path | None = None,
               on_step: Callable[[str], None] | None = None, for_class: bool = False, **site_overrides) -> SiteReport:
    """Generate the Sphinx source from the manifest and build/, build the site, and check it.

    out: the site folder (default build/site/, opened at index.html); src: the generated Sphinx source
    (default build/site-src/, with Sphinx's cache in .doctrees/ under it, so that a rebuild redoes only
    what changed); for_class: the site a graded class may see (SiteSettings.for_class), by default into
    build/site-class/; site_overrides: fields of course.toml's [site] to replace (hub_url, repository, branch)."""
    step = on_step or (lambda s: None)
    out = Path(out) if out else config.build / (CLASS_OUT if for_class else SITE_OUT)
    src = Path(src) if src else config.build / (CLASS_SRC if for_class else SITE_SRC)
    if for_class:
        site_overrides["for_class"] = True
    report = SiteReport(out=out.resolve(), src=src.resolve())
    t0 = time.perf_counter()
    step("generate")
    pages, settings = generate_source(config, report.src, report.problems, **site_overrides)
    report.chapters = list(pages)
    report.docnames = {cid: (p.docname, p.solutions) for cid, p in pages.items()}
    report.generate_seconds = time.perf_counter() - t0
    if not pages:
        report.problems.append(Problem(str(config.build.relative_to(config.root)) + "/self-study",
                                       "no chapter to publish: run `jaxpath build` (or `jaxpath appendix`) first"))
        return report
    t1 = time.perf_counter()
    step("sphinx")
    report.out.mkdir(parents=True, exist_ok=True)
    report.warnings = run_sphinx(report.src, report.out, report.src / ".doctrees", settings, jobs=jobs)
    report.sphinx_seconds = time.perf_counter() - t1
    t2 = time.perf_counter()
    step("check")
    report.pages = len(site_pages(report.out))
    if not report.index.exists():
        report.problems.append(Problem(str(report.out), "Sphinx wrote no index.html"))
    report.problems += check_assets(report.out)
    report.problems += check_links(report.out)
    report.problems += check_leaks(config, report.out, [p.docname for p in pages.values()],
                                   [] if for_class else [p.solutions for p in pages.values()])
    report.problems += check_machine_paths(report.out, (config.root, report.src, report.out))
    report.check_seconds = time.perf_counter() - t2
    return report


def clear_site(config: Config) -> None:
    """Remove the generated site and its source (a fresh build follows)."""
    for d in (config.build / SITE_OUT, config.build / SITE_SRC, config.build / CLASS_OUT, config.build / CLASS_SRC):
        shutil.rmtree(d, ignore_errors=True)
