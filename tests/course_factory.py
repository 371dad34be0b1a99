"""Build small nbgrader course directories for tests: one good chapter, and ways to break it."""
from __future__ import annotations

import textwrap
from pathlib import Path

import nbformat

ANSWER_META = {"schema_version": 3, "grade": False, "solution": True, "locked": False}
CHECK_META = {"schema_version": 3, "grade": True, "solution": False, "locked": True, "points": 2}


def md(src, tags=()):
    c = nbformat.v4.new_markdown_cell(textwrap.dedent(src).strip())
    if tags:
        c.metadata["tags"] = list(tags)
    return c


def code(src, tags=(), nbgrader=None):
    c = nbformat.v4.new_code_cell(textwrap.dedent(src).strip())
    if tags:
        c.metadata["tags"] = list(tags)
    if nbgrader:
        c.metadata["nbgrader"] = dict(nbgrader)
    return c


def exercise(n, name, body, solution, visible, hidden, points=2):
    return [
        md(f"### Exercise {n}: {name}\n\n{body}"),
        code(f"# ✍️ Your answer\ndef {name}(x):\n    ### BEGIN SOLUTION\n{textwrap.indent(solution, '    ')}\n"
             "    ### END SOLUTION", nbgrader={**ANSWER_META, "grade_id": f"{name}-answer"}),
        code(f"# 🧪 Self-check\n{visible}\n### BEGIN HIDDEN TESTS\n{hidden}\n### END HIDDEN TESTS",
             nbgrader={**CHECK_META, "points": points, "grade_id": f"{name}-check"}),
    ]


def good_cells():
    return [
        md("# 01 · Demo\n\n> A value, not a buffer."),
        code("import math\nSECRET_PUBLIC = 1"),
        md("## Main text"),
        code("print(math.sqrt(4.0))"),
        md("## 🟢 Must-read: errors are shown", tags=["must-read"]),
        code("1 / 0", tags=["raises-exception"]),
        md("## ⚪ Optional: more", tags=["optional"]),
        code("print('optional')"),
        md("## Exercises"),
        *exercise(1, "double", "Return twice x.", "return 2 * x",
                  "assert double(3) == 6, 'double(3) should be 6'",
                  "assert double(-1.5) == -3.0, 'negative floats too'"),
        *exercise(2, "square", "Return x squared.", "return x * x",
                  "assert square(3) == 9, 'square(3) should be 9'",
                  "assert square(-2) == 4, 'negative numbers square to positive values'"),
        *exercise(3, "halve", "Return x / 2 as a float.", "return x / 2",
                  "assert halve(3) == 1.5, 'halve(3) should be 1.5 (true division)'",
                  "assert isinstance(halve(4), float), 'a float, even for even integers'", points=1),
    ]


VARIANTS = '''
[double]
[[double.wrong]]
why = "adds two"
code = """
def double(x):
    return x + 2
"""
[[double.wrong]]
why = "squares"
code = """
def double(x):
    return x ** 2
"""
[[double.alternative]]
why = "adds x to itself"
code = """
def double(x):
    return x + x
"""

[square]
[[square.wrong]]
why = "doubles"
code = """
def square(x):
    return 2 * x
"""
[[square.wrong]]
why = "absolute value times three"
code = """
def square(x):
    return 3 * abs(x)
"""
[[square.alternative]]
why = "power"
code = """
def square(x):
    return x ** 2
"""

[halve]
[[halve.wrong]]
why = "floor division"
code = """
def halve(x):
    return x // 2
"""
[[halve.wrong]]
why = "multiplies"
code = """
def halve(x):
    return x * 2
"""
[[halve.alternative]]
why = "multiply by one half"
code = """
def halve(x):
    return x * 0.5
"""
'''

MANIFEST = '''
[course]
id = "demo"
title = "Demo course"
parts = ["demo"]

[[stage]]
title = "Stage 1: Demo"
chapters = ["demo/01_demo", "demo/02_later"]

[chapters."demo/01_demo"]
title = "Demo"
carries = [1]

[chapters."demo/02_later"]
title = "Later"
planned = true

[[track]]
number = 1
part = "i"
title = "Arrays"
thesis = "A value."
'''


def make_course(root: Path, cells=None, variants: str | None = VARIANTS) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "course.toml").write_text(MANIFEST)
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\nc.CourseDirectory.course_id = 'demo'\n")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = good_cells() if cells is None else cells
    write_chapter(root, nb)
    if variants is not None:
        (root / "variants" / "demo").mkdir(parents=True, exist_ok=True)
        (root / "variants" / "demo" / "01_demo.toml").write_text(variants)
    return root


def write_chapter(root: Path, nb, cid="demo/01_demo"):
    path = root / "source" / f"{cid}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path
