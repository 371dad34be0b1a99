"""The sample class (jaxpath.classroom.sample) graded once per test process, for every test that reads a graded class:
tests/test_sample_class.py (scores, pages), tests/test_similar.py (pairs of answers), and the class-wide views
after them. The conftest fixture `graded_sample` builds it."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from jaxpath import Config
from jaxpath.authoring.proofs import proof_path
from jaxpath.classroom.sample import SAMPLE_CHAPTERS, SampleClass, make_sample_class
from jaxpath.grade import Limits, grade, sandbox_problem
from jaxpath.grade.cachepack import reader_env

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


class GradedSample(NamedTuple):
    sample: SampleClass
    config: Config               # the graded course (sample.root)
    ours: dict                   # jaxpath grade's scores: (student, notebook) and (student, notebook, grade cell)
    theirs: dict                 # stock nbgrader autograde's, on an identical copy


def scores(root: Path) -> dict:
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(f"sqlite:///{root / 'gradebook' / 'gradebook.db'}", "jax-path") as gb:
        for sub in gb.assignment_submissions("basics"):
            for nb in sub.notebooks:
                out[(sub.student_id, nb.name)] = nb.score
                for g in nb.grades:
                    out[(sub.student_id, nb.name, g.name)] = g.auto_score
    return out


def graded_sample_class(tmp_path_factory) -> GradedSample:
    """The sample class's students whose scores are known in advance (`SampleClass.expected`; the crash, the loop
    and the broken file are left out), graded by `jaxpath grade` and, on an identical copy, by stock
    `nbgrader autograde`. Skips where the sample chapters have no proof (no known mistakes to name)."""
    config = Config.load(ROOT)
    if not all(proof_path(config, c).exists() for c in SAMPLE_CHAPTERS):
        pytest.skip("the sample chapters have no proof in proofs/ (run `jaxpath validate`): no known mistakes to name")
    base = tmp_path_factory.mktemp("sample")
    sample = make_sample_class(config, base / "class")
    stock = base / "stock"
    shutil.copytree(sample.root, stock)
    for student in set(sample.students) - {student for student, _ in sample.expected}:  # scores not known in advance
        shutil.rmtree(sample.root / "submitted" / student)
        shutil.rmtree(stock / "submitted" / student)
    cfg = Config.load(sample.root)
    grade(cfg, "basics", workers=2, limits=Limits(cell_timeout=120, notebook_timeout=900),
          sandbox=sandbox_problem() is None)
    # Stock nbgrader's kernels read the programs jaxpath's reference run compiled (read only, as a grader who keeps a
    # warmed cache configures JAX): the same executables, so the same points; it halves stock nbgrader's time here
    # (measured 211 -> 106 s for the 11 notebooks, scores identical).
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", **reader_env(str(cfg.compile_cache("basics")))}
    r = subprocess.run([str(BIN / "nbgrader"), "autograde", "basics"], cwd=stock, env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    return GradedSample(sample, cfg, scores(sample.root), scores(stock))
