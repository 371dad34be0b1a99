"""`jaxpath appendix`: per chapter, the reference-solutions appendix and the self-study edition.

Both are made from the executed reference chapter that `validate` wrote (build/executed/), so the
solutions shown are the ones that ran, with their real outputs:

- build/appendix/<part>/<chapter>.ipynb: each exercise's statement, executed reference solution and
  the self-check it passes (hidden tests removed);
- build/self-study/<part>/<chapter>.ipynb: the chapter as a student gets it (stubs, no hidden tests),
  with the main text's outputs, and the appendix at its end.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from ..config import Config
from ..files import write_atomic
from ..manifest import load_manifest, notebook_path, variants_path
from ..problems import Problem
from .chapter import Chapter, load_chapter, solution_source, stub_source, visible_source

APPENDIX_TAG = "jaxpath-appendix"


@dataclass
class AppendixReport:
    written: list[Path] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def _clean(cell):
    cell = copy.deepcopy(cell)
    cell.metadata.pop("nbgrader", None)
    cell.metadata.pop("execution", None)
    if "id" in cell:  # the self-study edition holds both the original and its appendix copy
        cell["id"] = ("a-" + cell["id"])[:64]
    return cell


def appendix_cells(ch: Chapter, executed: nbformat.NotebookNode) -> list:
    """The appendix: one block per exercise, from the executed reference notebook."""
    offset = len(executed.cells) - len(ch.nb.cells)  # the stamp cell validate inserts at the top
    cells = []
    head = nbformat.v4.new_markdown_cell(id="appendix-head", source=
        f"## Appendix: reference solutions\n\nOne way to solve each exercise of *{ch.title}*, run on the "
        "pinned stack; the 🧪 self-check under each solution shows it passing. Try the exercise before you read it.")
    head.metadata["tags"] = [APPENDIX_TAG]
    cells.append(head)
    for ex in ch.exercises:
        for i in ex.statement:
            c = _clean(executed.cells[i + offset])
            if i == ex.heading:
                first, _, rest = c.source.partition("\n")
                c.source = "### " + first.lstrip("#").strip() + " (solution)" + ("\n" + rest if rest else "")
            cells.append(c)
        answer = _clean(executed.cells[ex.answer + offset])
        answer.source = solution_source(answer.source).replace("# ✍️ Your answer", "# ✍️ Reference solution", 1)
        cells.append(answer)
        for t in ex.tests:
            test = _clean(executed.cells[t + offset])
            test.source = visible_source(test.source)
            cells.append(test)
    for c in cells:
        c.metadata.setdefault("tags", [])
        if APPENDIX_TAG not in c.metadata["tags"]:
            c.metadata["tags"].append(APPENDIX_TAG)
    return cells


def appendix_notebook(ch: Chapter, executed: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(metadata=copy.deepcopy(executed.metadata))
    title = nbformat.v4.new_markdown_cell(f"# Reference solutions: {ch.title}")
    nb.cells = [title, copy.deepcopy(executed.cells[0])] + appendix_cells(ch, executed)
    return nb


def self_study_notebook(ch: Chapter, executed: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student's chapter (stubs, visible self-checks) with main-text outputs, then the appendix."""
    offset = len(executed.cells) - len(ch.nb.cells)
    nb = copy.deepcopy(executed)
    answers = {e.answer + offset for e in ch.exercises}
    tests = {t + offset for e in ch.exercises for t in e.tests}
    for i, cell in enumerate(nb.cells):
        if i in answers:
            cell.source = stub_source(cell.source)
        elif i in tests:
            cell.source = visible_source(cell.source)
        if i in answers or i in tests:
            cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("nbgrader", None)
    nb.cells += appendix_cells(ch, executed)
    return nb


def _write(nb, path: Path) -> None:
    write_atomic(path, nbformat.writes(nb))


def appendix(config: Config, chapters: list[str] | None = None) -> AppendixReport:
    """Write the appendix and self-study edition of each validated chapter."""
    manifest = load_manifest(config)
    report = AppendixReport()
    ids = chapters or [c.id for c in manifest.written()]
    for cid in ids:
        executed_path = config.executed / f"{cid}.ipynb"
        if not executed_path.exists():
            report.problems.append(Problem(str(executed_path.relative_to(config.root)),
                                           f"no executed copy of {cid}: run `jaxpath validate {cid}` first"))
            continue
        ch = load_chapter(notebook_path(config, cid), cid, config.root, variants_path(config, cid))
        executed = nbformat.read(executed_path, as_version=4)
        for kind, nb in (("appendix", appendix_notebook(ch, executed)), ("self-study", self_study_notebook(ch, executed))):
            out = config.build / kind / f"{cid}.ipynb"
            _write(nb, out)
            report.written.append(out)
    return report
