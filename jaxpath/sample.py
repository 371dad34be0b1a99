"""A small synthetic class, graded in a scratch copy of the course: what `make` ends with, so a newcomer
sees the platform's main job from the first command.

Students are made from the course's own material: the reference solutions (correct), for every exercise a
wrong answer from the variants file that loses part of its points (partly wrong: the one with a hint where
there is one, so that its page names the mistake), the released stub, a crash, an endless loop, and a
broken file.
"""
from __future__ import annotations

import json
import shutil
import tomllib
from dataclasses import dataclass, field
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
    expected: dict[tuple[str, str], float] = field(default_factory=dict)
    """(student, notebook) -> the points its answers earn, for the students whose score is known in advance
    (correct, partly_wrong, stub): what both `jaxpath grade` and stock `nbgrader autograde` must give."""


def _breaks(wrong: dict) -> tuple[str, ...]:
    b = wrong.get("breaks", ())
    return (b,) if isinstance(b, str) else tuple(b)


def telling_wrong(entry: dict) -> tuple[str, float] | None:
    """An exercise's wrong answer for the partly-wrong student, and the points it loses: one that loses some
    but not all of them (with a hint, where one has), else the first; None for an exercise without one."""
    weights, wrong = entry.get("points", {}), entry.get("wrong", [])
    partial = [w for w in wrong if weights and 0 < len(_breaks(w)) < len(weights)]
    pick = next(iter([w for w in partial if w.get("hint")] + partial + wrong), None)
    if pick is None:
        return None
    lost = sum(weights[r] for r in _breaks(pick)) if weights else None
    return pick["code"], lost


def partly_wrong(source_nb, variants: dict) -> tuple[dict[str, str], float]:
    """The answers of a student who makes, in every exercise, the mistake `telling_wrong` picks (grade_id ->
    code), and the points these answers lose."""
    answers, lost = answers_from_source(source_nb), 0.0
    for gid in list(answers):
        name = gid.removesuffix("-answer")
        pick = telling_wrong(variants.get(name, {}))
        if pick is not None:
            answers[gid] = pick[0]
            cells = [c for c in source_nb.cells if grade_id(c) == f"{name}-check"]
            lost += pick[1] if pick[1] is not None else sum(float(c.metadata.nbgrader["points"]) for c in cells)
    return answers, lost


def copy_proof(config: Config, dest: Config, chapter_id: str) -> bool:
    """Copy the chapter's validate proof (it records the known mistakes the feedback pages name) from `config`'s
    build into `dest`'s; False when the chapter was not validated here."""
    from .validate import proof_path

    proof = proof_path(config, chapter_id)
    if not proof.exists():
        return False
    there = proof_path(dest, chapter_id)
    there.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(proof, there)
    return True


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
    expected: dict[tuple[str, str], float] = {}
    for cid in chapters:
        stem = cid.split("/")[1]
        src = nbformat.read(config.source / f"{cid}.ipynb", as_version=4)
        rel = nbformat.read(dest / "release" / part / f"{stem}.ipynb", as_version=4)
        ok = answers_from_source(src)
        first = next(iter(ok))
        variants = tomllib.loads((config.variants / f"{cid}.toml").read_text())
        total = sum(float(c.metadata.nbgrader.get("points", 0) or 0) for c in src.cells
                    if c.metadata.get("nbgrader", {}).get("grade"))
        wrong, lost = partly_wrong(src, variants)
        expected.update({("correct", stem): total, ("partly_wrong", stem): total - lost, ("stub", stem): 0.0})
        submit(dest, "correct", part, stem, submission(rel, ok))
        submit(dest, "partly_wrong", part, stem, submission(rel, wrong))
        submit(dest, "stub", part, stem, rel)
        submit(dest, "crashing", part, stem, submission(rel, {**ok, first: "import os\nos._exit(1)"}))
        submit(dest, "looping", part, stem, submission(rel, {**ok, first: "while True:\n    pass"}))
        submit(dest, "malformed", part, stem, raw=nbformat.writes(submission(rel, ok)).encode()[:2000])
        copy_proof(config, Config(dest), cid)
    return SampleClass(dest, part, students, expected)
