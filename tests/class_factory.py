"""Synthetic students for grading tests: submissions made from a course's released notebooks."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat

from jaxpath.chapter import is_answer, solution_source


def answers_from_source(source_nb) -> dict[str, str]:
    """grade_id -> the reference answer's code (solution markers removed)."""
    return {c.metadata.nbgrader["grade_id"]: solution_source(c.source) for c in source_nb.cells if is_answer(c)}


def submission(release_nb, answers: dict[str, str]):
    """The released notebook with some answer cells filled in (grade_id -> code)."""
    nb = nbformat.from_dict(json.loads(nbformat.writes(release_nb)))
    for c in nb.cells:
        gid = c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in answers:
            c.source = answers[gid]
    return nb


def submit(root: Path, student: str, part: str, name: str, nb=None, raw: bytes | None = None,
           timestamp: str | None = "2026-11-20 10:00:00.000000 UTC") -> Path:
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


def reset_submissions(root: Path) -> None:
    shutil.rmtree(root / "submitted", ignore_errors=True)
