"""`jaxpath release`: the student version of every part, made by nbgrader's generate_assignment,
checked for leaks, and swapped into `release/` only when the whole build succeeded.

A part with a due date (`[due]` of course.toml) gets it in the first cell of each of its released notebooks
(nbgrader never shows students the due date), and the release writes it into the course's gradebook, where
nbgrader's late penalty and `jaxpath collect`/`extend`/`export` read it."""
from __future__ import annotations

import filecmp
import json
import os
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..cells import MARKERS, Secrets, find_secrets
from ..config import Config, nbgrader_config
from ..gradebooks import prepare_nbgrader
from ..manifest import Manifest, describe_due, due_utc, load_manifest
from ..problems import Problem

DUE_TAG = "jaxpath-due"
"""The first cell of a released notebook whose part has a due date."""


@dataclass
class ReleaseReport:
    problems: list[Problem] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    """Released files, relative to release/."""
    stale: list[str] = field(default_factory=list)
    """With check=True: files of release/ that differ from a fresh build (or are missing/extra)."""
    due: dict[str, str] = field(default_factory=dict)
    """Part -> its due date as the students read it, for the parts course.toml gives one (written into the
    gradebook unless check=True)."""

    @property
    def ok(self) -> bool:
        return not self.problems and not self.stale


def _generate(config: Config, manifest: Manifest, stage: Path) -> list[Problem]:
    from nbgrader.apps import NbGraderAPI

    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    for part in manifest.parts:
        if (config.source / part).is_dir():
            shutil.copytree(config.source / part, stage / config.source_dir / part,
                            ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    prepare_nbgrader()
    # The course's configuration, rooted in the scratch course, with a throw-away gradebook: a failed or
    # checking build must not touch the course's gradebook.
    nbcfg = nbgrader_config(config.root, f"sqlite:///{stage / 'gradebook.db'}")
    nbcfg.CourseDirectory.root = str(stage)
    nbcfg.CourseDirectory.source_directory = config.source_dir
    nbcfg.CourseDirectory.release_directory = config.release_dir
    api = NbGraderAPI(config=nbcfg)
    problems = []
    for part in manifest.parts:
        if not (stage / config.source_dir / part).is_dir():
            continue
        result = api.generate_assignment(part, force=True, create=True)
        if not result.get("success"):
            log = (result.get("error") or result.get("log") or "").strip().splitlines()
            tail = " | ".join(log[-3:]) if log else "no log"
            problems.append(Problem(f"{config.source_dir}/{part}", f"nbgrader generate_assignment failed: {tail}"))
    return problems


def due_cell_text(part: str, when) -> str:
    return (f"📅 **Due {describe_due(when)}.** Hand in `{part}` before then: **Submit** in the Assignments tab, "
            f"or `nbgrader submit {part}` in a terminal. The newest submission counts; one after this time is late.")


def _add_due_cells(built: Path, manifest: Manifest) -> None:
    """Put each part's due date into the first cell of its released notebooks (a locked markdown cell)."""
    import nbformat

    for part, when in manifest.due.items():
        for path in sorted((built / part).glob("*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            nb.cells = [c for c in nb.cells if DUE_TAG not in c.get("metadata", {}).get("tags", [])]
            cell = nbformat.v4.new_markdown_cell(due_cell_text(part, when))
            cell.id = DUE_TAG
            cell.metadata.update({"tags": [DUE_TAG], "editable": False, "deletable": False})
            nb.cells.insert(0, cell)
            nbformat.write(nb, path)


def record_due_dates(config: Config, manifest: Manifest) -> None:
    """The due dates of course.toml into the course's gradebook (nbgrader's assignment `duedate`, in UTC)."""
    if not manifest.due:
        return
    from nbgrader.api import Gradebook

    prepare_nbgrader()
    with Gradebook(config.db_url, config.course_id) as gb:
        for part, when in manifest.due.items():
            gb.update_or_create_assignment(part, duedate=due_utc(when))


def source_cells(config: Config):
    """(path relative to the course, cell index, source) of every cell of every source chapter; a notebook
    that cannot be read is skipped (validate reports it)."""
    for nb_path in sorted(config.source.glob("*/*.ipynb")):
        try:
            cells = json.loads(nb_path.read_text(encoding="utf-8"))["cells"]
        except (ValueError, KeyError, UnicodeDecodeError):
            continue
        for i, cell in enumerate(cells):
            src = cell.get("source", "")
            yield nb_path.relative_to(config.root), i, "".join(src) if isinstance(src, list) else src


def course_secrets(config: Config) -> Secrets:
    """The secrets of the whole course: solution and hidden-test lines of every source chapter, and every
    line of every variant answer, that appear nowhere in the public part of any source chapter."""
    extra: list[tuple[str, str]] = []
    for v_path in sorted(config.variants.glob("*/*.toml")) if config.variants.exists() else []:
        rel = v_path.relative_to(config.root)
        try:
            data = tomllib.loads(v_path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue
        for name, entry in data.items():
            for kind in ("wrong", "alternative"):
                for n, v in enumerate(entry.get(kind, []) if isinstance(entry, dict) else [], start=1):
                    extra += [(f"{rel}, [{name}] {kind} answer {n}", line) for line in str(v.get("code", "")).split("\n")]
    return find_secrets(((f"{rel}, cell {i + 1}", src) for rel, i, src in source_cells(config)), extra)


def _file_lines(path: Path) -> list[tuple[str, str]]:
    """(where, line) pairs of a released file; notebooks are read cell by cell."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return []
    if path.suffix == ".ipynb":
        try:
            nb = json.loads(text)
            out = []
            for i, cell in enumerate(nb.get("cells", [])):
                src = cell.get("source", "")
                src = "".join(src) if isinstance(src, list) else src
                out += [(f"cell {i + 1}", l) for l in src.split("\n")]
                for o in cell.get("outputs", []):
                    t = o.get("text", "")
                    out += [(f"cell {i + 1} output", l) for l in ("".join(t) if isinstance(t, list) else t).split("\n")]
            return out
        except ValueError:
            pass
    return [(f"line {n}", l) for n, l in enumerate(text.split("\n"), start=1)]


def find_leaks(config: Config, release_dir: Path, shown_as: str | None = None) -> list[Problem]:
    secrets = course_secrets(config).all
    problems = []
    for f in sorted(p for p in release_dir.rglob("*") if p.is_file()):
        rel = f"{shown_as or release_dir.name}/{f.relative_to(release_dir)}"
        for where, line in _file_lines(f):
            s = line.strip()
            if any(m in s for m in MARKERS):
                problems.append(Problem(rel, f"{where}: an nbgrader marker survived the release: {s!r}"))
            elif s in secrets:
                problems.append(Problem(rel, f"{where}: leaks a line from {secrets[s]}: {s!r}"))
    return problems


def _listing(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file())


def release(config: Config, *, check: bool = False) -> ReleaseReport:
    """Build the student version of every part. With check=True, compare it with release/ instead of
    replacing it. A failed build leaves release/ exactly as it was."""
    manifest = load_manifest(config)
    stage = config.build / "release-stage"
    report = ReleaseReport()
    report.problems += _generate(config, manifest, stage)
    built = stage / config.release_dir
    report.due = {part: describe_due(when) for part, when in manifest.due.items()}
    if not report.problems:
        _add_due_cells(built, manifest)
        report.problems += find_leaks(config, built, config.release_dir)
    if report.problems:
        return report
    report.files = _listing(built)
    if check:
        current = config.release
        have = set(_listing(current)) if current.exists() else set()
        want = set(report.files)
        report.stale = sorted((have ^ want) | {f for f in have & want
                                               if not filecmp.cmp(current / f, built / f, shallow=False)})
        shutil.rmtree(stage, ignore_errors=True)
        return report
    old = config.build / "release-previous"
    shutil.rmtree(old, ignore_errors=True)
    if config.release.exists():
        os.replace(config.release, old)
    os.replace(built, config.release)
    shutil.rmtree(old, ignore_errors=True)
    shutil.rmtree(stage, ignore_errors=True)
    record_due_dates(config, manifest)
    return report
