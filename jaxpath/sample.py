"""A small synthetic class, graded in a scratch copy of the course: what `make` ends with, so a newcomer
sees the platform's main job from the first command.

Students are made from the course's own material: the reference solutions (correct), a wrong answer from
the variants file (partly wrong), the released stub, a crash, an endless loop, and a broken file.
"""
from __future__ import annotations

import json
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .cells import grade_id, is_answer, solution_source
from .config import Config

SAMPLE_CHAPTERS = ("basics/01_introduction", "basics/02_jit")
TIMESTAMP = "2026-11-20 10:00:00.000000 UTC"


def answers_from_source(source_nb) -> dict[str, str]:
    """grade_id -> the reference answer's code (solution markers removed)."""
    return {c.metadata.nbgrader["grade_id"]: solution_source(c.source) for c in source_nb.cells if is_answer(c)}


def submission(release_nb, answers: dict[str, str]):
    """The released notebook with some answer cells filled in (grade_id -> code)."""
    nb = nbformat.from_dict(json.loads(nbformat.writes(release_nb)))
    for c in nb.cells:
        gid = grade_id(c)
        if gid in answers:
            c.source = answers[gid]
    return nb


def submit(root: Path, student: str, part: str, name: str, nb=None, raw: bytes | None = None,
           timestamp: str | None = TIMESTAMP) -> Path:
    d = root / "submitted" / student / part
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}.ipynb"
    if raw is not None:
        path.write_bytes(raw)
    else:
        nbformat.write(nb, path)
    if timestamp is not None:
        (d / "timestamp.txt").write_text(timestamp)
    return path


@dataclass
class SampleClass:
    root: Path
    part: str
    students: list[str]


def make_sample_class(config: Config, dest: Path, chapters=SAMPLE_CHAPTERS) -> SampleClass:
    """A scratch course at `dest` holding `chapters` and six synthetic students."""
    from nbgrader.apps import NbGraderAPI

    from .config import ensure_venv_on_path, nbgrader_config

    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    parts = {c.split("/")[0] for c in chapters}
    if len(parts) != 1:
        raise ValueError("the sample class grades chapters of one part")
    part = parts.pop()
    for name in ("nbgrader_config.py", "course.toml"):
        shutil.copy(config.root / name, dest / name)
    (dest / "source" / part).mkdir(parents=True)
    for cid in chapters:
        shutil.copy(config.source / f"{cid}.ipynb", dest / "source" / f"{cid}.ipynb")
    (dest / "gradebook").mkdir()
    ensure_venv_on_path()
    result = NbGraderAPI(config=nbgrader_config(dest)).generate_assignment(part, force=True, create=True)
    if not result.get("success"):
        raise RuntimeError(f"nbgrader generate_assignment failed: {result.get('error')}")
    students = ["correct", "partly_wrong", "stub", "crashing", "looping", "malformed"]
    for cid in chapters:
        stem = cid.split("/")[1]
        src = nbformat.read(config.source / f"{cid}.ipynb", as_version=4)
        rel = nbformat.read(dest / "release" / part / f"{stem}.ipynb", as_version=4)
        ok = answers_from_source(src)
        first = next(iter(ok))
        variants = tomllib.loads((config.variants / f"{cid}.toml").read_text())
        wrong = variants[first.removesuffix("-answer")]["wrong"][0]["code"]
        submit(dest, "correct", part, stem, submission(rel, ok))
        submit(dest, "partly_wrong", part, stem, submission(rel, {**ok, first: wrong}))
        submit(dest, "stub", part, stem, rel)
        submit(dest, "crashing", part, stem, submission(rel, {**ok, first: "import os\nos._exit(1)"}))
        submit(dest, "looping", part, stem, submission(rel, {**ok, first: "while True:\n    pass"}))
        submit(dest, "malformed", part, stem, raw=nbformat.writes(submission(rel, ok)).encode()[:2000])
    return SampleClass(dest, part, students)
