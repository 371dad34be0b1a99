"""Chapter pages: each chapter as a student gets it (the self-study edition without its appendix: stubs,
visible self-checks, the real outputs of the main text), and its reference solutions on a page of their own
that is outside the prev/next chain and the sidebar (an "after you tried" link at the end of the exercises
leads there)."""
from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field

import nbformat

from ...authoring.appendix import APPENDIX_TAG
from ...authoring.path import chapter_heading, chapter_label
from ...cells import headings as heading_lines
from ...config import Config
from ...execute import stamp_text
from ...manifest import ChapterEntry
from ...problems import Problem
from .clean import scrub_notebook
from .render import render

STAMP_TAG = "jaxpath-stamp"
_NUMBERED_TITLE = re.compile(r"^\d+\s*·\s*")


def _slug(text: str) -> str:
    from docutils.nodes import make_id

    return make_id(text)[:90].rstrip("-")


def label_headings(nb: nbformat.NotebookNode, prefix: str) -> dict[str, str]:
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


readable_stamp = stamp_text
"""The stamp's words on a chapter page: the line its executed notebook's first cell shows (jaxpath.execute)."""


@dataclass
class ChapterPage:
    entry: ChapterEntry
    docname: str
    """The page: '<release dir>/<part>/<stem>', the student notebook's path in the course repository (so
    that the theme's launch link opens that notebook)."""
    solutions: str
    """The solutions page: 'solutions/<part>/<stem>'."""
    title: str
    """'Basics 01 · Arrays: …' (the part-qualified label and the chapter's title)."""
    labels: dict[str, str]
    """Heading text -> the label of its section on the page (the first heading of that text)."""
    stamp: dict
    files: dict[str, str] = field(default_factory=dict)
    """Download kind ('student', 'self-study', 'solutions') -> path under the Sphinx source tree."""
    body: nbformat.NotebookNode | None = None
    solutions_body: nbformat.NotebookNode | None = None

    @property
    def label(self) -> str:
        return chapter_label(self.entry)

    @property
    def anchor(self) -> str:
        """The label of the chapter's title heading."""
        return next(iter(self.labels.values()))


def _strip_stamp_cells(nb: nbformat.NotebookNode) -> None:
    nb.cells = [c for c in nb.cells if STAMP_TAG not in c.get("metadata", {}).get("tags", [])]


def _title_index(nb: nbformat.NotebookNode) -> tuple[int, str]:
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            for _, level, text in heading_lines(cell.source):
                if level == 1:
                    return i, text
    return -1, ""


def _retitle(nb: nbformat.NotebookNode, index: int, title: str, new: str) -> None:
    """Replace the text of the level-1 heading `title` in cell `index` with `new`."""
    cell = nb.cells[index]
    cell.source = re.sub(rf"^#\s+{re.escape(title)}\s*$", f"# {new}", cell.source, count=1, flags=re.M)


def _clean_metadata(nb: nbformat.NotebookNode) -> None:
    keep = {k: nb.metadata[k] for k in ("kernelspec", "language_info", "jaxpath") if k in nb.metadata}
    nb.metadata = nbformat.NotebookNode(keep)
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
        cell.metadata.pop("widgets", None)


def normalize(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    for c in nb.cells:
        c.pop("id", None)
    nb.nbformat, nb.nbformat_minor = 4, 4
    return nb


def _exercises_end(nb: nbformat.NotebookNode) -> int:
    """Where the exercises end: the first heading of level 1 or 2 after `## Exercises`, or the end."""
    start = None
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        for _, level, text in heading_lines(cell.source):
            if start is None and level == 2 and text.strip().lower() == "exercises":
                start = i
            elif start is not None and i > start and level <= 2:
                return i
    return len(nb.cells)


def _info_cell(source: str, tag: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_markdown_cell(source)
    cell.metadata["tags"] = [tag]
    return cell


def chapter_page(config: Config, entry: ChapterEntry, problems: list[Problem]) -> ChapterPage | None:
    """Read the chapter's build outputs and make its page and its solutions page (not yet written: the info
    box needs the other pages, see `finish_page`)."""
    cid = entry.id
    ss_path = config.build / "self-study" / f"{cid}.ipynb"
    ap_path = config.build / "appendix" / f"{cid}.ipynb"
    st_path = config.release / f"{cid}.ipynb"
    for p in (ss_path, ap_path, st_path):
        if not p.exists():
            fix = "`jaxpath release`" if p == st_path else f"`jaxpath appendix {cid}` (after `jaxpath validate {cid}`)"
            problems.append(Problem(str(p.relative_to(config.root)), f"missing: run {fix}"))
    if not (ss_path.exists() and ap_path.exists() and st_path.exists()):
        return None
    ss_rel = str(ss_path.relative_to(config.root))
    self_study = nbformat.read(ss_path, as_version=4)
    stamp = self_study.metadata.get("jaxpath", {}).get("executed", {}) or {}
    if not stamp:
        problems.append(Problem(ss_rel, "carries no provenance stamp in its metadata: rebuild it with "
                                        "`jaxpath validate` and `jaxpath appendix`"))
        return None
    cut = next((i for i, c in enumerate(self_study.cells) if APPENDIX_TAG in c.get("metadata", {}).get("tags", [])),
               len(self_study.cells))
    page = copy.deepcopy(self_study)
    page.cells = page.cells[:cut]
    _strip_stamp_cells(page)
    _clean_metadata(page)
    scrub_notebook(page, (config.root,))
    ti, title = _title_index(page)
    if ti < 0:
        problems.append(Problem(ss_rel, "has no `# NN · Title` heading: the page would have no title"))
        return None
    full_title = f"{chapter_label(entry)} · {_NUMBERED_TITLE.sub('', title)}"
    _retitle(page, ti, title, full_title)
    labels = label_headings(page, cid)
    sol = nbformat.read(ap_path, as_version=4)
    _strip_stamp_cells(sol)
    _clean_metadata(sol)
    scrub_notebook(sol, (config.root,))
    si, s_title = _title_index(sol)
    if si >= 0:
        _retitle(sol, si, s_title, f"{chapter_label(entry)} · reference solutions")
    label_headings(sol, f"{cid} solutions")
    sol.metadata["orphan"] = True  # front matter: in no toctree, so neither in prev/next nor in the sidebar
    files = {"student": f"files/{cid}-student.ipynb", "self-study": f"files/{cid}.ipynb",
             "solutions": f"files/{cid}-solutions.ipynb"}
    return ChapterPage(entry, f"{config.release_dir}/{cid}", f"solutions/{cid}", full_title, labels, stamp, files,
                       page, sol)


def finish_page(cp: ChapterPage, box: dict) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode | None]:
    """The chapter page with its info box under the title and the "after you tried" link after the
    exercises, and the solutions page with its way back; `box` is the template context of the info box."""
    page = copy.deepcopy(cp.body)
    ti, _ = _title_index(page)
    up = "../" * cp.docname.count("/")
    context = dict(page=cp, stamp=readable_stamp(cp.stamp), up=up, **box)
    page.cells.insert(_exercises_end(page), _info_cell(render("after-you-tried.md.j2", **context), "jaxpath-site-after"))
    page.cells.insert(ti + 1, _info_cell(render("chapter-info.md.j2", **context), "jaxpath-site-info"))
    if box.get("for_class"):  # a graded class's site has no solutions page
        return normalize(page), None
    sol = copy.deepcopy(cp.solutions_body)
    si, _ = _title_index(sol)
    sol.cells.insert(si + 1 if si >= 0 else 0, _info_cell(render("solutions-info.md.j2", **context), "jaxpath-site-info"))
    return normalize(page), normalize(sol)


def download_copy(config: Config, cp: ChapterPage, kind: str) -> str:
    """The text of a download: the notebook with the machine's paths taken out of its outputs."""
    source = {"student": config.release / f"{cp.entry.id}.ipynb",
              "self-study": config.build / "self-study" / f"{cp.entry.id}.ipynb",
              "solutions": config.build / "appendix" / f"{cp.entry.id}.ipynb"}[kind]
    nb = nbformat.read(source, as_version=4)
    return nbformat.writes(scrub_notebook(nb, (config.root,)))


__all__ = ["ChapterPage", "chapter_heading", "chapter_page", "download_copy", "finish_page", "heading_lines",
           "label_headings", "readable_stamp"]
