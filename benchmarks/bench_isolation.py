"""Grading time at each isolation level this machine gives, on the same batch, side by side in one run.

    sudo .venv/bin/python benchmarks/bench_isolation.py [--students 6]

A scratch course holding basics/01_introduction, `--students` submissions of the reference solutions, graded
at root+cgroup-v1, root+rlimits and rootless+rlimits (the last by an ordinary account made for the run,
see tests/as_user.py); prints seconds per level and each level's ratio to root+cgroup-v1, and checks that
the scores are identical. Needs root (to make the account)."""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import as_user  # noqa: E402
import grade_as  # noqa: E402
import hostile_corpus  # noqa: E402
import nbformat  # noqa: E402
from test_hostile import scratch_course  # noqa: E402

from jaxpath import Config  # noqa: E402
from jaxpath.authoring.chapter import is_answer, solution_source  # noqa: E402
from jaxpath.classroom.sample import submit  # noqa: E402
from jaxpath.grade import Limits, grade  # noqa: E402

LIMITS = Limits(cell_timeout=60, notebook_timeout=600, memory_mb=2048)


def course(dest: Path, students: int) -> Path:
    root = scratch_course(dest)
    src = nbformat.read(root / "source" / f"{hostile_corpus.CHAPTER}.ipynb", as_version=4)
    rel = nbformat.read(root / "release" / f"{hostile_corpus.CHAPTER}.ipynb", as_version=4)
    answers = {c.metadata.nbgrader["grade_id"]: solution_source(c.source) for c in src.cells if is_answer(c)}
    nb = hostile_corpus._fill(rel, answers)
    for i in range(students):
        submit(root, f"s{i:02d}", hostile_corpus.PART, hostile_corpus.STEM, nb)
    return root


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=6)
    args = ap.parse_args()
    if as_user.can_run():
        print(f"cannot run: {as_user.can_run()}")
        return 2
    base = Path(tempfile.mkdtemp(prefix="jaxpath-bench-iso-"))
    os.chmod(base, 0o755)
    times, scores = {}, {}
    try:
        for level in ("root+cgroup-v1", "root+rlimits"):
            root = course(base / level, args.students)
            grade(Config.load(root), hostile_corpus.PART, workers=2, limits=LIMITS, isolation=level)  # warm: cache
            t0 = time.perf_counter()
            report = grade(Config.load(root), hostile_corpus.PART, workers=2, limits=LIMITS, isolation=level, force=True)
            times[level] = time.perf_counter() - t0
            scores[level] = sorted((s.student, s.score) for s in report.results)
        level = "rootless+rlimits"
        root = course(base / level, args.students)
        with as_user.ordinary_user() as user:
            user.give(root)
            for _ in range(2):  # the first run warms the compilation cache, as above; the second is timed
                r, data = grade_as.run_as(user, root, hostile_corpus.PART, level, LIMITS)
                assert data is not None, r.stderr[-2000:]
        times[level] = data["seconds"]
        scores[level] = sorted((s["student"], s["score"]) for s in data["results"])
    finally:
        shutil.rmtree(base, ignore_errors=True)
    ref = times["root+cgroup-v1"]
    print(f"{args.students} notebooks of {hostile_corpus.CHAPTER}, 2 workers, compilation cache warmed:")
    for level, t in times.items():
        print(f"  {level:18s} {t:7.1f} s   ratio to root+cgroup-v1: {t / ref:.2f}")
    same = len({tuple(v) for v in scores.values()}) == 1
    print("scores identical at every level:", same)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
