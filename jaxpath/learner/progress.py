"""Progress a learner earns: `jaxpath check` records each exercise's verdict in the learner's work folder,
with the hash of the chapter it ran (the hash of its self-check cells, which a student cannot change), and
`progress` turns the records into the state of the 12 track chapters.

The work folder is the folder that holds one folder per part, as `nbgrader fetch_assignment` or a copy of
release/ lays it out (`<work>/basics/02_jit.ipynb`); the records are `<work>/.jaxpath/progress.json`.

A track chapter is *earned* when the core exercises (the first two, AUTHORING.md) of every course chapter
that carries it pass in a record whose hash is the released chapter's; *in progress* when some exercise of a
carrying chapter passes; *not started* otherwise. A record made on another version of a chapter is stale:
it counts for nothing until `jaxpath check` runs again."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import nbformat

from ..authoring.chapter import load_chapter
from ..authoring.path import chapter_label
from ..cells import grade_id, is_test
from ..config import Config
from ..errors import JaxpathError
from ..files import write_atomic
from ..manifest import load_manifest, notebook_path

RECORDS = Path(".jaxpath") / "progress.json"
CORE = 2
"""The first CORE exercises of a chapter are its core ones."""
EARNED, IN_PROGRESS, NOT_STARTED = "earned", "in progress", "not started"


class ProgressError(JaxpathError):
    pass


def chapter_hash(nb: nbformat.NotebookNode) -> str:
    """The identity of a chapter's version as a learner holds it: its self-check cells, ids and sources."""
    h = hashlib.sha256()
    for cell in nb.cells:
        if is_test(cell):
            h.update(f"{grade_id(cell)}\0{cell.source}\0".encode())
    return h.hexdigest()[:16]


def work_folder(notebook: Path) -> tuple[Path, str]:
    """(the work folder, the chapter id) of a notebook at <work>/<part>/<chapter>.ipynb."""
    notebook = Path(notebook).resolve()
    return notebook.parent.parent, f"{notebook.parent.name}/{notebook.stem}"


def load_records(work: Path) -> dict:
    """Chapter id -> its record ({"hash", "checked", "exercises": {check grade id: passed}})."""
    path = Path(work) / RECORDS
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise ProgressError(f"{path}: not valid JSON ({e}); delete it and run `jaxpath check` again") from None
    return data.get("chapters", {}) if isinstance(data, dict) else {}


def record_check(notebook: Path, nb: nbformat.NotebookNode, verdicts: dict[str, bool]) -> Path:
    """Record the verdict of every self-check of one run of `notebook` (check grade id -> passed)."""
    work, cid = work_folder(notebook)
    chapters = load_records(work)
    chapters[cid] = {"hash": chapter_hash(nb), "checked": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                     "exercises": dict(verdicts)}
    path = work / RECORDS
    write_atomic(path, json.dumps({"version": 1, "chapters": chapters}, indent=1, sort_keys=True) + "\n")
    return path


@dataclass(frozen=True)
class Exercise:
    chapter: str
    name: str
    number: int
    title: str
    checks: tuple[str, ...]
    """Grade ids of its self-check cells."""

    @property
    def core(self) -> bool:
        return self.number <= CORE


@dataclass
class TrackProgress:
    number: int
    title: str
    state: str
    chapters: list[str]
    """The course chapters that carry it, in course order."""
    core_done: int = 0
    core_total: int = 0
    next: Exercise | None = None
    """The first core exercise that does not pass yet (None when earned)."""


@dataclass
class Progress:
    work: Path
    tracks: list[TrackProgress]
    passed: dict[str, set[str]] = field(default_factory=dict)
    """Chapter id -> names of its exercises that pass (current records only)."""
    stale: list[str] = field(default_factory=list)
    """Chapters whose record was made on another version of the chapter."""
    labels: dict[str, str] = field(default_factory=dict)
    """Chapter id -> 'Basics 01'."""

    @property
    def earned(self) -> int:
        return sum(t.state == EARNED for t in self.tracks)

    def as_json(self) -> dict:
        def ex(e: Exercise | None):
            return None if e is None else {"chapter": e.chapter, "label": self.labels.get(e.chapter, e.chapter),
                                           "exercise": e.number, "name": e.name, "title": e.title}
        return {"work": str(self.work), "earned": self.earned, "total": len(self.tracks), "stale": self.stale,
                "tracks": [{"number": t.number, "title": t.title, "state": t.state, "chapters": t.chapters,
                            "core_done": t.core_done, "core_total": t.core_total, "next": ex(t.next)}
                           for t in self.tracks],
                "passed": {c: sorted(n) for c, n in self.passed.items()}}


@dataclass
class Course:
    """What progress is measured against: the track, the exercises of each chapter, the released hashes."""
    config: Config
    track: list
    carriers: dict[int, list[str]]
    exercises: dict[str, list[Exercise]]
    hashes: dict[str, str]
    labels: dict[str, str]

    @classmethod
    def load(cls, config: Config) -> "Course":
        manifest = load_manifest(config)
        exercises, hashes = {}, {}
        for c in manifest.written():
            ch = load_chapter(notebook_path(config, c.id), c.id, config.root)
            exercises[c.id] = [Exercise(c.id, e.name, e.number, e.title,
                                        tuple(grade_id(ch.nb.cells[i]) or "" for i in e.tests)) for e in ch.exercises]
            released = config.release / f"{c.id}.ipynb"
            if released.exists():
                hashes[c.id] = chapter_hash(nbformat.read(released, as_version=4))
        carriers: dict[int, list[str]] = {}
        for c in manifest.written():
            for n in c.carries:
                carriers.setdefault(n, []).append(c.id)
        return cls(config, list(manifest.track), carriers, exercises, hashes,
                   {c.id: chapter_label(c) for c in manifest.written()})

    def progress(self, work: Path) -> Progress:
        work = Path(work).resolve()
        if not work.is_dir():
            raise ProgressError(f"{work}: no such folder (the work folder holds one folder per part)")
        records = load_records(work)
        passed: dict[str, set[str]] = {}
        stale = []
        for cid, rec in records.items():
            if cid not in self.exercises:
                continue
            if cid in self.hashes and rec.get("hash") != self.hashes[cid]:
                stale.append(cid)
                continue
            verdicts = rec.get("exercises", {})
            passed[cid] = {e.name for e in self.exercises[cid]
                           if e.checks and all(verdicts.get(g) is True for g in e.checks)}
        tracks = []
        for t in self.track:
            chapters = self.carriers.get(t.number, [])
            core = [e for cid in chapters for e in self.exercises.get(cid, []) if e.core]
            done = [e for e in core if e.name in passed.get(e.chapter, set())]
            any_pass = any(passed.get(cid) for cid in chapters)
            state = EARNED if core and len(done) == len(core) else IN_PROGRESS if any_pass else NOT_STARTED
            nxt = next((e for e in core if e.name not in passed.get(e.chapter, set())), None)
            tracks.append(TrackProgress(t.number, t.title, state, chapters, len(done), len(core), nxt))
        return Progress(work, tracks, passed, sorted(stale), self.labels)


def progress(config: Config, work: Path) -> Progress:
    """The state of every track chapter for the work folder `work`."""
    return Course.load(config).progress(work)
