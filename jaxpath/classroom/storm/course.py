"""The storm's course: one cheap notebook (three plain-Python exercises, no JAX to import, so that grading costs
little and the storm measures the exchange and the gradebook, not the kernel), and the answers each kind of
student writes, with the points each earns: what a quiet grader gives, and what the storm's must give too."""
from __future__ import annotations

import json
from pathlib import Path

PART = "storm"
NOTEBOOK = "01_storm"
COURSE_ID = "storm"

MANIFEST = f'''[course]
id = "{COURSE_ID}"
title = "The deadline storm"
parts = ["{PART}"]

[[stage]]
title = "Stage 1: the storm"
chapters = ["{PART}/{NOTEBOOK}"]

[chapters."{PART}/{NOTEBOOK}"]
title = "Storm"
carries = [1]

[[track]]
number = 1
part = "i"
title = "Values"
thesis = "A value."
'''

_ANSWER = {"schema_version": 3, "grade": False, "solution": True, "locked": False}
_CHECK = {"schema_version": 3, "grade": True, "solution": False, "locked": True}
EXERCISES = (  # name, solution, visible check, hidden check, points
    ("double", "return 2 * x", "assert double(3) == 6, 'double(3) should be 6'",
     "assert double(-1.5) == -3.0, 'negative floats too'", 2),
    ("square", "return x * x", "assert square(3) == 9, 'square(3) should be 9'",
     "assert square(-2) == 4, 'negative numbers square to positive values'", 2),
    ("halve", "return x / 2", "assert halve(3) == 1.5, 'halve(3) should be 1.5 (true division)'",
     "assert isinstance(halve(4), float), 'a float, even for even integers'", 1),
)

RIGHT = {f"{n}-answer": f"def {n}(x):\n    {sol}" for n, sol, *_ in EXERCISES}
KINDS: dict[str, dict[str, str]] = {
    "right": RIGHT,
    "wrong": {**RIGHT, "square-answer": "def square(x):\n    return 2 * x"},
    "crashing": {**RIGHT, "square-answer": "import os\nos._exit(1)"},
    "looping": {**RIGHT, "halve-answer": "while True:\n    pass"},
    "empty": {},
    # edits its locked check cell to pass whatever double does: the grader restores the cell (nbgrader's
    # OverwriteCells), so the wrong answer earns nothing
    "hostile": {**RIGHT, "double-answer": "def double(x):\n    return x + 2", "double-check": "pass"},
}
POINTS = {"right": 5.0, "wrong": 3.0, "crashing": 2.0, "looping": 4.0, "empty": 0.0, "hostile": 3.0}
"""The points a quiet `jaxpath grade` gives each kind (checked by the storm's own quiet batch)."""


def source_notebook() -> dict:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# 01 · Storm\n\nThree small functions."}]
    for n, sol, visible, hidden, points in EXERCISES:
        cells += [
            {"cell_type": "markdown", "metadata": {}, "source": f"### {n}"},
            {"cell_type": "code", "metadata": {"nbgrader": {**_ANSWER, "grade_id": f"{n}-answer"}},
             "execution_count": None, "outputs": [],
             "source": f"# ✍️ Your answer\ndef {n}(x):\n    ### BEGIN SOLUTION\n    {sol}\n    ### END SOLUTION"},
            {"cell_type": "code", "execution_count": None, "outputs": [],
             "metadata": {"nbgrader": {**_CHECK, "points": points, "grade_id": f"{n}-check"}},
             "source": f"# 🧪 Self-check\n{visible}\n### BEGIN HIDDEN TESTS\n{hidden}\n### END HIDDEN TESTS"},
        ]
    return {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                        "language": "python"}}}


def make_course(root: Path, exchange: Path) -> Path:
    """The storm's course directory at `root`, its exchange at `exchange`."""
    (root / "source" / PART).mkdir(parents=True, exist_ok=True)
    (root / "gradebook").mkdir(exist_ok=True)
    (root / "course.toml").write_text(MANIFEST)
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.Exchange.root = {str(exchange)!r}\n")
    (root / "source" / PART / f"{NOTEBOOK}.ipynb").write_text(json.dumps(source_notebook(), indent=1))
    return root


def answer(path: Path, kind: str) -> None:
    """Fill the released notebook at `path` with `kind`'s answers, as an editor saves them."""
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in KINDS[kind]:
            cell["source"] = KINDS[kind][gid]
    path.write_text(json.dumps(nb, indent=1))
