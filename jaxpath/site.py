"""`jaxpath site`: the course site, a static HTML book made from the executed chapters.

The generator is Sphinx with MyST-NB (`nb_execution_mode = "off"`: the notebooks are rendered as the
build executed them) and sphinx-book-theme, the stack of Jupyter Book 1. It bundles its theme, so the
build needs no network; the site it makes references no remote asset either (MathJax is replaced by a
renderer that shows TeX as text, intersphinx is off) and opens from the file system.

`build_site` writes a Sphinx source tree into build/site-src/ from the manifest and the build outputs:

- index.md: the 12-chapter track of seed 001 in its two parts, each track chapter linked to the exact
  chapter sections that carry it (course.toml), with its thesis; a progress counter ("Your progress:
  k/12 chapters") that a learner moves by marking chapters done, kept in localStorage; the stamp of
  the build;
- chapters/<part>/<chapter>.ipynb: the chapter as a student gets it (the self-study edition of
  build/self-study/ without its appendix: stubs, visible self-checks, real outputs of the main text),
  its provenance stamp, and links to download the self-study edition and the solutions appendix;
- chapters/<part>/<chapter>-solutions.ipynb: the reference-solutions appendix (build/appendix/);
- learning-path.md: LEARNING_PATH.md's content (seed 000's form) with links into the chapters;
- reading-map.md: every page of the official JAX tutorial series (docs/reading-map.toml) and the
  chapter (and section) it is assigned to;
- below-the-course.md: kernel-level topics the course names but does not teach (docs/pointers.toml).

Then it runs Sphinx in-process into build/site/ and checks the result: no Sphinx warning (a broken
reference is one), no remote asset, every internal link and anchor resolves, and no solution, hidden
test or variant line on a chapter page (no hidden test line on a solutions page).
"""
from __future__ import annotations

import copy
import html
import io
import json
import os
import re
import shutil
import time
import tomllib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path
from typing import Callable
from urllib.parse import unquote, urlsplit

import nbformat

from .appendix import APPENDIX_TAG
from .config import Config
from .files import write_atomic
from .manifest import ChapterEntry, Manifest, load_manifest
from .problems import Problem

SITE_SRC, SITE_OUT = "site-src", "site"
READING_MAP, POINTERS = "docs/reading-map.toml", "docs/pointers.toml"
STAMP_TAG = "jaxpath-stamp"
ASSETS = Path(__file__).parent / "site_assets"
PART_TITLES = {"i": "Part i · How JAX thinks", "ii": "Part ii · State, the mesh, honest measurement, the training run"}
PART_BLURBS = {
    "i": "Eight chapters that turn JAX's behaviour into something you can work out in advance instead of "
         "something you memorize: what an array is, what tracing records, when jit compiles, what grad and "
         "vmap do to the record, which control flow survives it, the pytree contract, and explicit keys.",
    "ii": "Four chapters on running that model for real: state passed by hand, arrays spread over a mesh of "
          "devices, timings you can trust, and one training loop that uses everything the track taught.",
}
_HEADING = re.compile(r"^(#{1,6})\s+(.*\S)\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


# ---------------------------------------------------------------------------------------------------
# Data: the reading map and the pointers
# ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Series:
    id: str
    title: str
    url: str


@dataclass(frozen=True)
class Reading:
    series: str
    title: str
    url: str
    chapter: str
    section: str = ""
    note: str = ""


@dataclass(frozen=True)
class Pointer:
    topic: str
    line: str
    url: str
    chapter: str = ""
    section: str = ""


def _read_toml(config: Config, rel: str) -> tuple[dict, list[Problem]]:
    path = config.root / rel
    try:
        return tomllib.loads(path.read_text(encoding="utf-8")), []
    except FileNotFoundError:
        return {}, [Problem(rel, "not found")]
    except tomllib.TOMLDecodeError as e:
        return {}, [Problem(rel, f"not valid TOML ({e})")]


def load_reading_map(config: Config) -> tuple[list[Series], list[Reading], list[Problem]]:
    """The official tutorial pages and the chapter each is assigned to (docs/reading-map.toml)."""
    data, problems = _read_toml(config, READING_MAP)
    series = [Series(str(s.get("id", "")), s.get("title", ""), s.get("url", "")) for s in data.get("series", [])]
    readings = []
    for n, r in enumerate(data.get("reading", []), start=1):
        missing = [k for k in ("series", "title", "url") if not r.get(k)]
        if missing:
            problems.append(Problem(READING_MAP, f"[[reading]] number {n} has no {', '.join(missing)}"))
            continue
        readings.append(Reading(str(r["series"]), r["title"], r["url"], r.get("chapter", ""),
                                r.get("section", ""), r.get("note", "")))
    return series, readings, problems


def load_pointers(config: Config) -> tuple[list[Pointer], list[Problem]]:
    data, problems = _read_toml(config, POINTERS)
    pointers = []
    for n, p in enumerate(data.get("pointer", []), start=1):
        missing = [k for k in ("topic", "line", "url") if not p.get(k)]
        if missing:
            problems.append(Problem(POINTERS, f"[[pointer]] number {n} has no {', '.join(missing)}"))
            continue
        pointers.append(Pointer(p["topic"], p["line"], p["url"], p.get("chapter", ""), p.get("section", "")))
    return pointers, problems


def check_reading_map(manifest: Manifest, series: list[Series], readings: list[Reading],
                      headings: dict[str, set[str]] | None = None) -> list[Problem]:
    """Every listed tutorial page is assigned to a written chapter of the manifest (and to a heading the
    chapter has, when a section is named); every page has a known series and a docs.jax.dev URL."""
    problems = []
    known = {s.id for s in series}
    seen: dict[str, str] = {}
    for r in readings:
        where = f"[[reading]] {r.title!r}"
        if r.series not in known:
            problems.append(Problem(READING_MAP, f"{where}: series {r.series!r} is not a [[series]] of the file"))
        if not r.url.startswith("https://docs.jax.dev/"):
            problems.append(Problem(READING_MAP, f"{where}: the URL {r.url!r} is not a page of https://docs.jax.dev/"))
        if r.url in seen:
            problems.append(Problem(READING_MAP, f"{where}: the URL is listed twice (also for {seen[r.url]!r})"))
        seen[r.url] = r.title
        if not r.chapter:
            problems.append(Problem(READING_MAP, f"{where}: assigned to no chapter (add `chapter = \"<part>/<name>\"`)"))
            continue
        entry = manifest.chapters.get(r.chapter)
        if entry is None:
            problems.append(Problem(READING_MAP, f"{where}: chapter {r.chapter!r} is not in course.toml"))
        elif entry.planned:
            problems.append(Problem(READING_MAP, f"{where}: chapter {r.chapter} is planned, not written"))
        elif r.section and headings is not None and r.section not in headings.get(r.chapter, set()):
            problems.append(Problem(READING_MAP, f"{where}: {r.chapter} has no heading {r.section!r}"))
    return problems


# ---------------------------------------------------------------------------------------------------
# Chapter pages
# ---------------------------------------------------------------------------------------------------

def _slug(text: str) -> str:
    from docutils.nodes import make_id

    return make_id(text)[:90].rstrip("-")


def heading_lines(source: str) -> list[tuple[int, int, str]]:
    """(line index, level, text) of every markdown heading of a cell, outside fenced code."""
    out, fenced = [], False
    for i, line in enumerate(source.split("\n")):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else _HEADING.match(line)
        if m:
            out.append((i, len(m.group(1)), m.group(2)))
    return out


@dataclass
class ChapterPage:
    entry: ChapterEntry
    docname: str
    """'chapters/<part>/<stem>' (the page), and its solutions page docname + '-solutions'."""
    title: str
    labels: dict[str, str]
    """Heading text -> the label of its section on the page (the first heading of that text)."""
    stamp: dict
    stamp_line: str


def _label_headings(nb: nbformat.NotebookNode, prefix: str) -> dict[str, str]:
    """Put a MyST target `(label)=` before every heading of the notebook, so that the site links to
    sections by label (a broken one is a Sphinx warning, which fails the build). Returns heading text ->
    label of its first occurrence."""
    labels: dict[str, str] = {}
    used: set[str] = set()
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        found = heading_lines(cell.source)
        if not found:
            continue
        assigned = []
        for i, _, text in found:  # top-down, so that the first heading of a text gets the plain label
            base = _slug(f"{prefix} {text}") or _slug(prefix)
            label, n = base, 2
            while label in used:
                label, n = f"{base}-{n}", n + 1
            used.add(label)
            labels.setdefault(text, label)
            assigned.append((i, label))
        lines = cell.source.split("\n")
        for i, label in reversed(assigned):
            lines[i:i] = ["", f"({label})="] if i else [f"({label})="]
        cell.source = "\n".join(lines)
    return labels


def _stamp_of(nb: nbformat.NotebookNode) -> tuple[dict, str]:
    """The provenance stamp the executed notebook carries: (metadata, the visible line)."""
    from .execute import stamp_text

    stamp = nb.metadata.get("jaxpath", {}).get("executed", {}) or {}
    line = ""
    for cell in nb.cells:
        if STAMP_TAG in cell.get("metadata", {}).get("tags", []):
            line = cell.source.strip().strip("*").strip()
            break
    if not line and stamp:
        line = stamp_text(stamp)
    return stamp, line


def _strip_stamp_cells(nb: nbformat.NotebookNode) -> None:
    nb.cells = [c for c in nb.cells if STAMP_TAG not in c.get("metadata", {}).get("tags", [])]


def _title_index(nb: nbformat.NotebookNode) -> tuple[int, str]:
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            for _, level, text in heading_lines(cell.source):
                if level == 1:
                    return i, text
    return -1, ""


def _provenance_block(stamp_line: str) -> str:
    return ("```{admonition} Provenance\n:class: jp-stamp\n"
            f"{stamp_line} Every output on this page is the real output of that run.\n```")


def _clean_metadata(nb: nbformat.NotebookNode) -> None:
    keep = {k: nb.metadata[k] for k in ("kernelspec", "language_info", "jaxpath") if k in nb.metadata}
    nb.metadata = nbformat.NotebookNode(keep)
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
        cell.metadata.pop("widgets", None)


def chapter_page(config: Config, entry: ChapterEntry, src: Path, problems: list[Problem]) -> ChapterPage | None:
    """Write the chapter's page and its solutions page into the Sphinx source tree; copy the downloads."""
    cid = entry.id
    ss_path = config.build / "self-study" / f"{cid}.ipynb"
    ap_path = config.build / "appendix" / f"{cid}.ipynb"
    for p in (ss_path, ap_path):
        if not p.exists():
            problems.append(Problem(str(p.relative_to(config.root)),
                                    f"missing: run `jaxpath appendix {cid}` (after `jaxpath validate {cid}`)"))
    if not (ss_path.exists() and ap_path.exists()):
        return None
    ss_rel = str(ss_path.relative_to(config.root))
    self_study = nbformat.read(ss_path, as_version=4)
    appendix_nb = nbformat.read(ap_path, as_version=4)
    stamp, stamp_line = _stamp_of(self_study)
    if not stamp_line:
        problems.append(Problem(ss_rel, "carries no provenance stamp (no `jaxpath-stamp` cell, no metadata): "
                                        "rebuild it with `jaxpath validate` and `jaxpath appendix`"))
        return None
    cut = next((i for i, c in enumerate(self_study.cells) if APPENDIX_TAG in c.get("metadata", {}).get("tags", [])),
               len(self_study.cells))
    page = copy.deepcopy(self_study)
    page.cells = page.cells[:cut]
    _strip_stamp_cells(page)
    _clean_metadata(page)
    ti, title = _title_index(page)
    if ti < 0:
        problems.append(Problem(ss_rel, "has no `# NN · Title` heading: the page would have no title"))
        return None
    docname = f"chapters/{cid}"
    stem = entry.stem
    labels = _label_headings(page, cid)
    downloads = (
        f"{_provenance_block(stamp_line)}\n\n"
        f"**Work on it yourself:** download the {{download}}`self-study edition <../../files/{cid}.ipynb>` "
        f"(this chapter as a notebook, with the reference solutions in an appendix at its end), "
        f"or the {{download}}`solutions appendix <../../files/{cid}-solutions.ipynb>` alone; "
        f"read the solutions on the page {{doc}}`{stem}-solutions`. Try the exercises first.\n\n"
        f"```{{toctree}}\n:hidden:\n\n{stem}-solutions\n```")
    info = nbformat.v4.new_markdown_cell(downloads)
    info.metadata["tags"] = ["jaxpath-site-info"]
    page.cells.insert(ti + 1, info)
    for c in page.cells:
        c.pop("id", None)
    page.nbformat_minor = max(page.get("nbformat_minor", 4), 4)

    sol = copy.deepcopy(appendix_nb)
    a_stamp, a_line = _stamp_of(sol)
    _strip_stamp_cells(sol)
    _clean_metadata(sol)
    si, _ = _title_index(sol)
    back = nbformat.v4.new_markdown_cell(
        f"{_provenance_block(a_line or stamp_line)}\n\nThe exercises themselves are in {{doc}}`{stem}`; "
        f"download this appendix as a {{download}}`notebook <../../files/{cid}-solutions.ipynb>`.")
    sol.cells.insert(si + 1 if si >= 0 else 0, back)
    _label_headings(sol, f"{cid} solutions")
    for c in sol.cells:
        c.pop("id", None)

    _write_if_changed(src / f"{docname}.ipynb", nbformat.writes(_normalize(page)))
    _write_if_changed(src / f"{docname}-solutions.ipynb", nbformat.writes(_normalize(sol)))
    _copy_if_changed(ss_path, src / "files" / f"{cid}.ipynb")
    _copy_if_changed(ap_path, src / "files" / f"{cid}-solutions.ipynb")
    return ChapterPage(entry, docname, title, labels, stamp, stamp_line)


def _normalize(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    for c in nb.cells:
        c.pop("id", None)
    nb.nbformat, nb.nbformat_minor = 4, 4
    return nb


# ---------------------------------------------------------------------------------------------------
# The generated pages
# ---------------------------------------------------------------------------------------------------

def _ref(label: str) -> str:
    return f"{{ref}}`{label}`"


def _doc(docname: str, text: str | None = None) -> str:
    if text:
        text = text.replace("`", "").replace("<", "‹").replace(">", "›")
        return f"{{doc}}`{text} </{docname}>`"
    return f"{{doc}}`/{docname}`"


def _section_link(pages: dict[str, ChapterPage], cid: str, heading: str, where: str,
                  problems: list[Problem]) -> str | None:
    page = pages.get(cid)
    if page is None:
        return None
    label = page.labels.get(heading)
    if label is None:
        problems.append(Problem(where, f"{cid} has no heading {heading!r} (the page has no section to link to)"))
        return None
    return _ref(label)


def _stamp_summary(pages: list[ChapterPage]) -> str:
    stamps = [p.stamp for p in pages if p.stamp]
    if not stamps:
        return "The chapters carry no execution stamp."

    def values(key):
        return sorted({str(s[key]) for s in stamps if key in s})

    pkgs = ", ".join(f"{k} {'/'.join(values(k))}" for k in ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint")
                     if values(k))
    dates = sorted(s["date"] for s in stamps if "date" in s)
    devices = {}
    for p in pages:
        devices.setdefault(p.stamp.get("devices"), []).append(p.entry.id)
    dev_txt = "; ".join(f"{n} device{'s' if n != 1 else ''} ({len(ids)} chapter{'s' if len(ids) != 1 else ''})"
                        for n, ids in sorted(devices.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)))
    backends = "/".join(v.upper() for v in values("backend")) or "an unknown backend"
    span = dates[0][:10] if dates and dates[0][:10] == dates[-1][:10] else (
        f"{dates[0][:10]} to {dates[-1][:10]}" if dates else "an unknown date")
    return (f"Every chapter was executed before it was published, and every printed output on these pages is "
            f"the output of that run: {pkgs}; Python {'/'.join(values('python'))} on {backends}, "
            f"{dev_txt} (the sharding chapters simulate eight host devices); {'/'.join(values('platform'))}; "
            f"{span}. Each chapter page states its own run at its top. Where the API of the pinned JAX differs "
            "from the spelling older tutorials use, the chapter says so and runs both.")


def _versions() -> str:
    from importlib.metadata import version

    return ", ".join(f"{n} {version(n)}" for n in ("sphinx", "myst-nb", "sphinx-book-theme"))


def index_page(config: Config, manifest: Manifest, pages: dict[str, ChapterPage], problems: list[Problem]) -> str:
    total = len(manifest.track)
    lines = [
        f"# {manifest.course_title}",
        "",
        "**Learn to think in JAX.** Behind all of JAX sits one idea: JAX records the function you write as a "
        "program, and every feature you meet (grad, vmap, jit, sharding) is a transformation applied to that "
        f"record. The {total} chapters of the track below build that model until JAX stops surprising you "
        "(part i), then use it at production scale (part ii). Each track chapter links to the sections of the "
        "course notebooks that teach it.",
        "",
        "```{raw} html",
        f'<p class="jp-progress" data-course="{html.escape(config.course_id)}" data-total="{total}">'
        f'<span class="jp-progress-text">Your progress: <span class="jp-progress-count">0</span>/{total} '
        'chapters</span> <button type="button" class="jp-progress-reset">Clear</button>'
        '<span class="jp-progress-note"></span></p>',
        "```",
        "",
        "Mark a chapter done when you can explain its thesis in your own words and have solved the first two "
        "exercises of the sections it links to. The marks stay in this browser (its local storage), nowhere else.",
        "",
    ]
    carriers: dict[int, list[ChapterEntry]] = {}
    for c in manifest.written():
        for n in c.carries:
            carriers.setdefault(n, []).append(c)
    by_part: dict[str, list] = {}
    for t in manifest.track:
        by_part.setdefault(t.part, []).append(t)
    for part, chapters in by_part.items():
        lines += [f"## {PART_TITLES.get(part, 'Part ' + part)}", "", PART_BLURBS.get(part, ""), ""]
        for t in chapters:
            lines += [f"(track-{t.number:02d})=", f"### {t.number:02d} · {t.title}", "",
                      f"```{{epigraph}}\n{t.thesis}\n```" if t.thesis else "", ""]
            taught = []
            for c in carriers.get(t.number, []):
                page = pages.get(c.id)
                if page is None:
                    continue
                secs = [h for h, ns in c.sections.items() if t.number in ns]
                if secs:
                    links = [_section_link(pages, c.id, h, "course.toml", problems) for h in secs]
                    links = [l for l in links if l]
                    taught.append(f"- {_doc(page.docname, page.title)}: " + "; ".join(links))
                else:
                    taught.append(f"- {_doc(page.docname, page.title)} (the whole chapter)")
            if not taught:
                problems.append(Problem("course.toml", f"track chapter {t.number} ({t.title}) is carried by no "
                                                       "written chapter: the landing page has nothing to link"))
            lines += ["Where the course teaches it:", ""] + taught + [""]
            lines += ["```{raw} html",
                      f'<label class="jp-mark"><input type="checkbox" class="jp-done" data-track="{t.number}"> '
                      f'Mark chapter {t.number:02d} ({html.escape(t.title)}) done</label>',
                      "```", ""]
    others = [c for c in manifest.written() if not c.carries and c.id in pages]
    if others:
        lines += ["## Beyond the track", "",
                  "These chapters carry no chapter of the track: they teach tools you reach for once the model is in "
                  "place.", ""]
        lines += [f"- {_doc(pages[c.id].docname, pages[c.id].title)}" for c in others] + [""]
    lines += [
        "## What else is here", "",
        f"- {_doc('learning-path')}: the order to read the notebooks in, and which extras are must-read.",
        f"- {_doc('reading-map')}: every page of the official JAX tutorial series, and the chapter to read it with.",
        f"- {_doc('below-the-course')}: compiler and hardware topics the course names and points to, but does not teach.",
        "",
        "## How it was made", "",
        _stamp_summary(list(pages.values())),
        "",
        f"This site was generated by `jaxpath site` on {datetime.now(timezone.utc).date().isoformat()} with "
        f"{_versions()}; it works offline.",
        "",
    ]
    # the sidebar: chapters by stage, then the course pages
    for stage in manifest.stages:
        docs = [pages[cid].docname for cid in stage.chapters if cid in pages]
        if docs:
            lines += ["```{toctree}", ":hidden:", f":caption: {stage.title}", ""] + docs + ["```", ""]
    lines += ["```{toctree}", ":hidden:", ":caption: The course", "", "learning-path", "reading-map",
              "below-the-course", "```", ""]
    return "\n".join(lines)


def learning_path_page(config: Config, pages: dict[str, ChapterPage], problems: list[Problem]) -> str:
    from .path import HOW_TO_USE, learning_path_data

    data = learning_path_data(config)
    lines = ["# Core learning path (first pass)", "", f"**{data.summary()}**", "", HOW_TO_USE, ""]
    for stage, chapters in data.stages:
        lines += [f"## {stage.title}", ""]
        for c in chapters:
            cid = c.entry.id
            if c.entry.planned:
                lines += [f"### {cid} (planned: not written yet)", ""]
                continue
            page = pages.get(cid)
            name = _doc(page.docname, cid) if page else f"`{cid}`"
            lines += [f"### {cid}", "",
                      f"{name}, *{c.entry.title}*: {len(c.must)} must-read · {len(c.optional)} optional to skip", ""]
            if not c.must:
                lines += ["- (no must-read extras)", ""]
                continue
            for s in c.must:
                link = _section_link(pages, cid, s.title, "LEARNING_PATH.md", problems) if page else None
                lines.append(f"- {link}" if link else f"- {s.title}")
            lines.append("")
    return "\n".join(lines)


def reading_map_page(manifest: Manifest, series: list[Series], readings: list[Reading],
                     pages: dict[str, ChapterPage], problems: list[Problem]) -> str:
    lines = [
        "# Reading map", "",
        f"Every page of the official JAX tutorial series ({len(readings)} pages in {len(series)} parts) is "
        "assigned reading somewhere on the path. Read each page together with the chapter (and section) "
        "named beside it: the chapter runs the idea on the pinned stack, the page is the reference it "
        "builds on. Where a chapter only touches a page, the note says what is left to the page.", "",
    ]
    for s in series:
        rows = [r for r in readings if r.series == s.id]
        lines += [f"## {s.title}", "", f"The series' own table of contents: <{s.url}>", "",
                  "| Tutorial page | Read it with | Note |", "|---|---|---|"]
        for r in rows:
            page = pages.get(r.chapter)
            where = _doc(page.docname, f"{r.chapter}") if page else f"`{r.chapter}`"
            if r.section and page:
                link = _section_link(pages, r.chapter, r.section, READING_MAP, problems)
                if link:
                    where += f", {link}"
            note = r.note.replace("|", "\\|")
            lines.append(f"| [{r.title}]({r.url}) | {where} | {note} |")
        lines.append("")
    # the same map, chapter by chapter
    lines += ["## By chapter", ""]
    for c in manifest.written():
        rs = [r for r in readings if r.chapter == c.id]
        if rs and c.id in pages:
            lines.append(f"- {_doc(pages[c.id].docname, c.id)}: " + "; ".join(f"[{r.title}]({r.url})" for r in rs))
    lines.append("")
    return "\n".join(lines)


def pointers_page(pointers: list[Pointer], pages: dict[str, ChapterPage], problems: list[Problem]) -> str:
    lines = [
        "# Below the course", "",
        "The course stops at the level of the programs you write and the numbers they print. Underneath are the "
        "compiler, the kernels and the hardware. The chapters name these layers where they show up, and this "
        "page points to the official material on each. Nothing here is taught on this site.", "",
    ]
    for p in pointers:
        lines += [f"## {p.topic}", "", p.line, "", f"Official page: <{p.url}>", ""]
        if p.chapter:
            page = pages.get(p.chapter)
            if page is None:
                problems.append(Problem(POINTERS, f"pointer {p.topic!r}: chapter {p.chapter!r} has no page "
                                                  "(not in course.toml, or not built)"))
                continue
            where = _doc(page.docname, p.chapter)
            if p.section:
                link = _section_link(pages, p.chapter, p.section, POINTERS, problems)
                if link:
                    where += f", {link}"
            lines += [f"Where the course meets it: {where}.", ""]
    return "\n".join(lines)


CONF_PY = '''\
# Generated by `jaxpath site`; do not edit (edit jaxpath/site.py).
project = {title!r}
author = "the JAX path"
copyright = "the JAX path authors"
extensions = ["myst_nb"]
exclude_patterns = ["files/**", "_build", "**.ipynb_checkpoints"]
master_doc = root_doc = "index"
language = "en"

nb_execution_mode = "off"            # render the notebooks exactly as the course build executed them
nb_merge_streams = True
nb_ipywidgets_js = {{}}               # never load widget scripts from a CDN
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 0
suppress_warnings = ["myst.header"]  # notebooks may step from # to ### on purpose

html_theme = "sphinx_book_theme"
html_title = {title!r}
html_static_path = ["_static"]
html_css_files = ["jaxpath.css"]
html_js_files = ["jaxpath-progress.js"]
html_copy_source = False
html_favicon = "_static/favicon.svg"  # otherwise browsers ask for /favicon.ico, which is not there
html_show_sourcelink = False
html_last_updated_fmt = None
html_context = {{"default_mode": "auto"}}  # an empty mode makes the theme log a console error
html_theme_options = {{
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "navigation_with_keys": False,
    "search_bar_text": "Search the course",
}}
# No CDN: MathJax is served from the site itself (sphinx-mathjax-offline's copy, {mathjax_version}); where
# that package is missing, TeX is shown as text by a local renderer.
html_math_renderer = {math_renderer!r}
mathjax_path = {mathjax_path!r}

from jaxpath.site import sphinx_setup as setup  # noqa: E402
'''


def _visit_math(self, node):
    self.body.append(self.starttag(node, "span", "", CLASS="math jp-tex"))
    self.body.append(self.encode(node.astext()))
    self.body.append("</span>")
    from docutils import nodes

    raise nodes.SkipNode


def _visit_displaymath(self, node):
    self.body.append(self.starttag(node, "div", "", CLASS="math jp-tex"))
    self.body.append(self.encode(node.astext()))
    self.body.append("</div>\n")
    from docutils import nodes

    raise nodes.SkipNode


MATHJAX_PARTS = ("tex-chtml.js", "input/tex/extensions", "output/chtml/fonts/woff-v2", "ui", "a11y")
"""What of MathJax the site serves: the TeX-to-HTML bundle, the TeX packages it loads on demand, its fonts,
its menu and accessibility parts (not the 20 MB speech engine)."""


def mathjax_files() -> tuple[Path | None, list[Path]]:
    """The local MathJax 3 (from the sphinx-mathjax-offline package) and the files the site serves."""
    import importlib.util

    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or not spec.origin:
        return None, []
    base = Path(spec.origin).parent / "static" / "mathjax"
    files = []
    for part in MATHJAX_PARTS:
        p = base / part
        files += [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file())
    return base, files


def sphinx_setup(app) -> dict:
    """The site's Sphinx hooks (imported by the generated conf.py): a math renderer with no CDN."""
    app.add_html_math_renderer("jaxpath_tex", (_visit_math, None), (_visit_displaymath, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}


# ---------------------------------------------------------------------------------------------------
# Writing files only when they change (so that Sphinx rebuilds only what changed)
# ---------------------------------------------------------------------------------------------------

def _write_if_changed(path: Path, text: str) -> None:
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    write_atomic(path, text)


def _copy_if_changed(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists() and dst.read_bytes() == src.read_bytes():
        return
    shutil.copyfile(src, dst)


def _prune(root: Path, keep: set[Path]) -> None:
    """Remove generated files that the current build did not write (a chapter removed from the manifest)."""
    for p in sorted(root.rglob("*"), reverse=True):
        if any(part in (".doctrees",) for part in p.relative_to(root).parts):
            continue
        if p.is_file() and p not in keep:
            p.unlink()
        elif p.is_dir() and not any(p.iterdir()):
            p.rmdir()


# ---------------------------------------------------------------------------------------------------
# Checks of the built site
# ---------------------------------------------------------------------------------------------------

def site_pages(out: Path) -> list[Path]:
    """The HTML pages of the built site (not the theme's template fragments under _static/)."""
    return sorted(p for p in out.rglob("*.html") if "_static" not in p.relative_to(out).parts)


_BLOCK_TAGS = {"p", "div", "pre", "li", "ul", "ol", "tr", "td", "th", "table", "br", "section", "blockquote",
               "h1", "h2", "h3", "h4", "h5", "h6", "dt", "dd", "details", "summary"}


class _Links(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.refs: list[tuple[str, str, str]] = []
        """(tag, attribute, value) of every href and src."""
        self.text: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        d = dict(attrs)
        if d.get("id"):
            self.ids.add(d["id"])
        if tag == "a" and d.get("name"):
            self.ids.add(d["name"])
        for attr in ("href", "src"):
            if d.get(attr) is not None:
                self.refs.append((tag, attr, d[attr]))
        if tag in ("script", "style"):
            self._skip += 1
        if tag in _BLOCK_TAGS:  # block boundaries end a line of text, as a reader sees the page
            self.text.append("\n")

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self._skip:
            self._skip -= 1
        if tag in _BLOCK_TAGS:
            self.text.append("\n")

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)


_PARSED: dict[tuple[Path, float, int], _Links] = {}


def parse_html(path: Path) -> _Links:
    """The ids, links and visible text of a page (cached by path, mtime and size: each check reuses it)."""
    st = path.stat()
    key = (path.resolve(), st.st_mtime, st.st_size)
    if key not in _PARSED:
        if len(_PARSED) > 500:
            _PARSED.clear()
        p = _Links()
        p.feed(path.read_text(encoding="utf-8"))
        _PARSED[key] = p
    return _PARSED[key]


def check_assets(out: Path) -> list[Problem]:
    """No page loads anything from the network: no remote script, stylesheet, image, font or frame."""
    problems = []
    for page in site_pages(out):
        rel = str(page.relative_to(out))
        for tag, attr, value in parse_html(page).refs:
            remote = value.strip().lower().startswith(("http:", "https:", "//"))
            if remote and not (tag == "a" and attr == "href"):
                problems.append(Problem(f"site/{rel}", f"<{tag} {attr}=\"{value}\"> loads a remote asset: the site "
                                                       "must work offline"))
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"@import\s+url\((['\"]?)(https?:)", text):
            problems.append(Problem(f"site/{rel}", "a stylesheet imports a remote URL"))
    for css in sorted(out.rglob("*.css")):
        for m in re.finditer(r"url\((['\"]?)(https?:[^)'\"]*)", css.read_text(encoding="utf-8", errors="replace")):
            problems.append(Problem(f"site/{css.relative_to(out)}", f"a stylesheet loads {m.group(2)}"))
    return problems


def check_links(out: Path) -> list[Problem]:
    """Every internal href and src of every page names a file that exists, and an anchor that the target has."""
    problems = []
    parsed = parse_html
    for page in site_pages(out):
        rel = str(page.relative_to(out))
        for tag, attr, value in parsed(page).refs:
            v = value.strip()
            if not v or v.startswith(("http:", "https:", "//", "mailto:", "javascript:", "data:", "tel:")):
                continue
            parts = urlsplit(v)
            if parts.scheme:
                continue
            target = page if not parts.path else (page.parent / unquote(parts.path))
            target = Path(os.path.normpath(target))
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                shown = target.relative_to(out) if target.is_relative_to(out) else target
                problems.append(Problem(f"site/{rel}", f"<{tag} {attr}=\"{value}\">: {shown} does not exist"))
                continue
            if parts.fragment and target.suffix == ".html":
                frag = unquote(parts.fragment)
                if frag not in parsed(target).ids:
                    problems.append(Problem(f"site/{rel}", f"<{tag} {attr}=\"{value}\">: "
                                                           f"{target.relative_to(out)} has no anchor #{frag}"))
    return problems


def _secret_kinds(config: Config) -> tuple[dict[str, str], dict[str, str]]:
    """(secret lines of solutions and variants, secret lines of hidden tests): lines that appear nowhere in
    the public part of any source chapter, each with where it comes from."""
    from .release import MIN_SECRET_LEN, secret_lines, source_cells

    secrets = secret_lines(config)
    hidden: dict[str, str] = {}
    solution_lines: set[str] = set()
    for rel, i, src in source_cells(config):
        region = None
        for line in src.split("\n"):
            if "BEGIN HIDDEN TESTS" in line:
                region = "hidden"
            elif "BEGIN SOLUTION" in line:
                region = "solution"
            elif "END HIDDEN TESTS" in line or "END SOLUTION" in line:
                region = None
            elif region == "hidden":
                hidden.setdefault(line.strip(), f"{rel}, cell {i + 1} (hidden test)")
            elif region == "solution":
                solution_lines.add(line.strip())
    hidden = {l: o for l, o in hidden.items() if l in secrets and l not in solution_lines and len(l) >= MIN_SECRET_LEN}
    return secrets, hidden


def check_leaks(config: Config, out: Path, chapter_pages: list[str], solution_pages: list[str]) -> list[Problem]:
    """No line of a reference solution, a hidden test or a variant on a chapter page; no hidden-test line on
    a solutions page. Pages are compared by their text, line by line, as a reader sees it."""
    from .release import MARKERS

    secrets, hidden = _secret_kinds(config)
    problems = []
    on_chapters = {**{l: f"{o} (a solution or variant)" for l, o in secrets.items()}, **hidden}
    for docs, forbidden, what in ((chapter_pages, on_chapters, "chapter page"), (solution_pages, hidden, "solutions page")):
        for doc in docs:
            path = out / f"{doc}.html"
            if not path.exists():
                problems.append(Problem(f"site/{doc}.html", f"the {what} was not built"))
                continue
            text = "".join(parse_html(path).text)
            for n, line in enumerate(text.split("\n"), start=1):
                s = line.strip()
                if any(m in s for m in MARKERS):
                    problems.append(Problem(f"site/{doc}.html", f"an nbgrader marker is on the {what}: {s!r}"))
                elif s in forbidden:
                    problems.append(Problem(f"site/{doc}.html", f"the {what} shows a line from {forbidden[s]}: {s!r}"))
    return problems


# ---------------------------------------------------------------------------------------------------
# The build
# ---------------------------------------------------------------------------------------------------

@dataclass
class SiteReport:
    out: Path
    src: Path
    chapters: list[str] = field(default_factory=list)
    """Chapter ids with a page."""
    pages: int = 0
    """HTML pages written."""
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


def generate_source(config: Config, src: Path, problems: list[Problem]) -> dict[str, ChapterPage]:
    """Write the Sphinx source tree of the site into `src`; return the chapter pages by chapter id."""
    manifest = load_manifest(config)
    src.mkdir(parents=True, exist_ok=True)
    pages: dict[str, ChapterPage] = {}
    for entry in manifest.written():
        page = chapter_page(config, entry, src, problems)
        if page:
            pages[entry.id] = page
    series, readings, rm_problems = load_reading_map(config)
    problems += rm_problems
    headings = {cid: set(p.labels) for cid, p in pages.items()}
    problems += check_reading_map(manifest, series, readings, headings)
    pointers, p_problems = load_pointers(config)
    problems += p_problems
    texts = {
        "index.md": index_page(config, manifest, pages, problems),
        "learning-path.md": learning_path_page(config, pages, problems),
        "reading-map.md": reading_map_page(manifest, series, readings, pages, problems),
        "below-the-course.md": pointers_page(pointers, pages, problems),
    }
    mj_base, mj_files = mathjax_files()
    version = ""
    if mj_base is not None:
        m = re.search(r'VERSION="(3[^"]*)"', (mj_base / "tex-chtml.js").read_text(errors="replace"))
        version = f"MathJax {m.group(1)}" if m else "MathJax"
    texts["conf.py"] = CONF_PY.format(title=manifest.course_title, mathjax_version=version or "not installed",
                                      math_renderer="mathjax" if mj_files else "jaxpath_tex",
                                      mathjax_path="mathjax/tex-chtml.js" if mj_files else "")
    for name, text in texts.items():
        _write_if_changed(src / name, text)
    for asset in sorted(ASSETS.iterdir()):
        if asset.is_file():
            _copy_if_changed(asset, src / "_static" / asset.name)
    keep = {src / n for n in texts} | {src / "_static" / a.name for a in ASSETS.iterdir() if a.is_file()}
    for f in mj_files:
        target = src / "_static" / "mathjax" / f.relative_to(mj_base)
        _copy_if_changed(f, target)
        keep.add(target)
    for p in pages.values():
        cid = p.entry.id
        keep |= {src / f"{p.docname}.ipynb", src / f"{p.docname}-solutions.ipynb",
                 src / "files" / f"{cid}.ipynb", src / "files" / f"{cid}-solutions.ipynb"}
    _prune(src, keep)
    return pages


def run_sphinx(src: Path, out: Path, doctrees: Path, jobs: int = 2) -> list[str]:
    """Build the HTML in-process; return Sphinx's warnings (one string each)."""
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    status, warning = io.StringIO(), io.StringIO()
    with patch_docutils(str(src)), docutils_namespace():
        app = Sphinx(str(src), str(src), str(out), str(doctrees), "html", status=status, warning=warning,
                     freshenv=False, warningiserror=False, parallel=max(1, jobs), keep_going=True)
        app.build()
    lines = [l.strip() for l in re.split(r"\n(?=\S)", warning.getvalue()) if l.strip()]
    return [re.sub(r"\x1b\[[0-9;]*m", "", l) for l in lines]


def build_site(config: Config, out: Path | None = None, *, jobs: int = 2, src: Path | None = None,
               on_step: Callable[[str], None] | None = None) -> SiteReport:
    """Generate the Sphinx source from the manifest and build/, build the site, and check it.

    out: the site folder (default build/site/, opened at index.html); src: the generated Sphinx source
    (default build/site-src/, with Sphinx's cache in .doctrees/ under it, so that a rebuild redoes only
    what changed)."""
    step = on_step or (lambda s: None)
    out = Path(out) if out else config.build / SITE_OUT
    src = Path(src) if src else config.build / SITE_SRC
    report = SiteReport(out=out.resolve(), src=src.resolve())
    t0 = time.perf_counter()
    step("generate")
    pages = generate_source(config, report.src, report.problems)
    report.chapters = list(pages)
    report.generate_seconds = time.perf_counter() - t0
    if not pages:
        report.problems.append(Problem(str(config.build.relative_to(config.root)) + "/self-study",
                                       "no chapter to publish: run `jaxpath build` (or `jaxpath appendix`) first"))
        return report
    t1 = time.perf_counter()
    step("sphinx")
    report.out.mkdir(parents=True, exist_ok=True)
    report.warnings = run_sphinx(report.src, report.out, report.src / ".doctrees", jobs=jobs)
    report.sphinx_seconds = time.perf_counter() - t1
    t2 = time.perf_counter()
    step("check")
    report.pages = len(site_pages(report.out))
    if not report.index.exists():
        report.problems.append(Problem(str(report.out), "Sphinx wrote no index.html"))
    report.problems += check_assets(report.out)
    report.problems += check_links(report.out)
    report.problems += check_leaks(config, report.out, [p.docname for p in pages.values()],
                                   [p.docname + "-solutions" for p in pages.values()])
    report.check_seconds = time.perf_counter() - t2
    return report
