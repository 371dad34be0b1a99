"""The learner's side runs on Python 3.11 too: every code cell of the source chapters, the student release and
the variants (wrong and alternative answers, which validate runs as answer cells) compiles under a real
Python 3.11 interpreter.

The TPU machines and many hosted notebook services run 3.11, and JAX 0.10-0.12 support it; the course's own
stack is 3.12, whose grammar is looser (PEP 701: an f-string may nest its own quote character, which 3.11
refuses as a SyntaxError, so a whole self-check cell would not even start). Compiling with 3.12 and
`feature_version=(3, 11)` does not catch that, so the cells go to a 3.11 process. IPython syntax (`%magic`,
`!shell`) is turned into Python first, by IPython's own transformer, as a notebook would."""
from __future__ import annotations

import json
import shutil
import subprocess
import tomllib
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

ROOT = Path(__file__).resolve().parent.parent
CHECKER = r"""
import json, sys
bad = []
for name, src in json.load(sys.stdin):
    try:
        compile(src, name, "exec")
    except SyntaxError as e:
        line = (src.splitlines() or [""])[(e.lineno or 1) - 1].strip()
        bad.append(f"{name}, line {e.lineno}: {e.msg}: {line[:160]}")
print(sys.version_info[:2], file=sys.stderr)
print(json.dumps(bad))
"""


def python311() -> str | None:
    for cand in ("/usr/bin/python3.11", shutil.which("python3.11")):
        if cand and Path(cand).exists():
            probe = subprocess.run([cand, "-c", "import sys; print(sys.version_info[:2] == (3, 11))"],
                                   capture_output=True, text=True)
            if probe.returncode == 0 and probe.stdout.strip() == "True":
                return cand
    return None


def learner_cells() -> list[tuple[str, str]]:
    """(where, Python source) of every code cell a learner's kernel may run."""
    tm = TransformerManager()
    cells = []
    for folder in ("source", "release"):
        for path in sorted((ROOT / folder).rglob("*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            for i, cell in enumerate(nb.cells):
                if cell.cell_type == "code":
                    cells.append((f"{path.relative_to(ROOT)}: cell {i + 1}", tm.transform_cell(cell.source)))
    for path in sorted((ROOT / "variants").rglob("*.toml")):
        for name, exercise in tomllib.loads(path.read_text()).items():
            if not isinstance(exercise, dict):
                continue
            for kind in ("wrong", "alternative"):
                for j, answer in enumerate(exercise.get(kind, [])):
                    if "code" in answer:
                        cells.append((f"{path.relative_to(ROOT)}: {name}.{kind}[{j}]", tm.transform_cell(answer["code"])))
    return cells


def compile_with(python: str, cells: list[tuple[str, str]]) -> list[str]:
    out = subprocess.run([python, "-c", CHECKER], input=json.dumps(cells), capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_every_learner_cell_compiles_on_python_311():
    python = python311()
    if python is None:
        pytest.skip("no Python 3.11 interpreter here (Debian: apt-get install python3.11); .ci/run installs it")
    cells = learner_cells()
    assert len(cells) > 1000, f"only {len(cells)} cells found: is the course where the test looks?"
    bad = compile_with(python, cells)
    assert not bad, "code cells that Python 3.11 cannot compile:\n" + "\n".join(bad)


def test_the_check_sees_what_311_refuses():
    """The checker is not vacuous: a 3.12-only f-string (the mistake that broke 16 self-checks) is reported,
    and the same line written for 3.11 is not."""
    python = python311()
    if python is None:
        pytest.skip("no Python 3.11 interpreter here")
    only_312 = 'e = ValueError()\nm = f"{(str(e).splitlines() or ["(no message)"])[0]}"\n'
    both = "e = ValueError()\nm = f\"{(str(e).splitlines() or ['(no message)'])[0]}\"\n"
    compile(only_312, "only_312", "exec")  # this interpreter (3.12) accepts it
    assert compile_with(python, [("only_312", only_312), ("both", both)]) == [
        "only_312, line 2: f-string: unmatched '[': m = f\"{(str(e).splitlines() or [\"(no message)\"])[0]}\""]
