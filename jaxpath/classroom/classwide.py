"""What the class-wide views (`jaxpath similar`, `jaxpath clusters`) share: finding a class's notebooks of a part and
reading them as plain JSON (a student's file may be anything; nbformat's validation is not needed to read cells)."""
from __future__ import annotations

import json
from pathlib import Path


def read_json(path: Path) -> dict:
    """A notebook as plain JSON; ValueError when it is not a notebook's shape (a dict with a list of cells)."""
    with open(path, encoding="utf-8") as f:
        nb = json.load(f)
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError("no list of cells")
    return nb


def cell_text(cell) -> str:
    """A cell's source as one string (nbformat's JSON may hold it as a list of lines)."""
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else str(s)


def student_notebooks(root: Path, part: str, notebooks) -> tuple[list[str], list[tuple[str, str, Path]]]:
    """In `root` (submitted/ or autograded/): (the students with a folder for the part, [(student, notebook, path)] of
    the given notebooks they have there), in order of student and notebook."""
    students, found = [], []
    if not root.is_dir():
        return students, found
    for sdir in sorted(p for p in root.iterdir() if p.is_dir()):
        pdir = sdir / part
        if not pdir.is_dir():
            continue
        students.append(sdir.name)
        found += [(sdir.name, nb, pdir / f"{nb}.ipynb") for nb in sorted(notebooks) if (pdir / f"{nb}.ipynb").is_file()]
    return students, found
