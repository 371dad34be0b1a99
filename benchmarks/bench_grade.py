"""Benchmark: grade one batch with `jaxpath grade` and with stock `nbgrader autograde`, side by side.

Prints the wall time of each, the ratio, each one's time per notebook above the notebook's own execution
time, and checks that both gave identical scores cell by cell. A benchmark, not a test: these machines
are noisy, so compare numbers from one run only.

    .venv/bin/python benchmarks/bench_grade.py [--students 12] [--workers 2]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook

from jaxpath import Config
from jaxpath.execute import Session, kernel_env
from jaxpath.grade import grade, sandbox_problem
from jaxpath.sample import SAMPLE_CHAPTERS, answers_from_source, make_sample_class, submission, submit

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def scores(db_url: str, part: str) -> dict:
    out = {}
    with Gradebook(db_url) as gb:
        for sub in gb.assignment_submissions(part):
            for nb in sub.notebooks:
                for g in nb.grades:
                    out[(sub.student_id, nb.name, g.name)] = g.score
    return out


def own_time(path: Path) -> float:
    """Seconds to execute the notebook itself: kernel start to last cell, cold caches, no grader."""
    nb = nbformat.read(path, as_version=4)
    t0 = time.perf_counter()
    with Session(nb, path.parent, timeout=120, env=kernel_env()) as s:
        for i, c in enumerate(nb.cells):
            if c.cell_type == "code":
                s.run(i)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--students", type=int, default=12)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    config = Config.load(ROOT)
    dest = config.build / "bench-grade"
    sample = make_sample_class(config, dest)
    shutil.rmtree(dest / "submitted")
    part = sample.part
    kinds = ["correct", "partly_wrong", "stub"]
    for n in range(args.students):
        kind = kinds[n % len(kinds)]
        for cid in SAMPLE_CHAPTERS:
            stem = cid.split("/")[1]
            src = nbformat.read(config.source / f"{cid}.ipynb", as_version=4)
            rel = nbformat.read(dest / "release" / part / f"{stem}.ipynb", as_version=4)
            ok = answers_from_source(src)
            answers = {"correct": ok, "stub": {}, "partly_wrong": {k: v for i, (k, v) in enumerate(ok.items()) if i % 2}}
            submit(dest, f"s{n:02d}_{kind}", part, stem, submission(rel, answers[kind]))
    notebooks = sorted((dest / "submitted").rglob("*.ipynb"))
    print(f"batch: {args.students} students x {len(SAMPLE_CHAPTERS)} chapters = {len(notebooks)} notebooks; "
          f"{os.cpu_count()} cores; workers={args.workers}", flush=True)

    own_time(notebooks[0])  # once, untimed: the OS file cache holds the stack afterwards, as in both graders
    own = [own_time(p) for p in notebooks[: 2 * len(SAMPLE_CHAPTERS)]]
    own_mean = statistics.mean(own)
    print(f"own execution time of one notebook (plain nbclient, no grader, no compilation cache): "
          f"{', '.join(f'{t:.1f}' for t in own)} s, mean {own_mean:.1f} s", flush=True)

    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    nb_db = f"sqlite:///{dest / 'nbgrader-bench.db'}"
    subprocess.run([BIN / "nbgrader", "generate_assignment", part, "--force", f"--CourseDirectory.db_url={nb_db}"],
                   cwd=dest, env=env, check=True, capture_output=True)
    t0 = time.perf_counter()
    subprocess.run([BIN / "nbgrader", "autograde", part, "--force", f"--CourseDirectory.db_url={nb_db}",
                    "--CourseDirectory.autograded_directory=autograded-nbgrader"], cwd=dest, env=env, check=True,
                   capture_output=True)
    t_nbgrader = time.perf_counter() - t0
    print(f"nbgrader autograde: {t_nbgrader:.1f} s", flush=True)

    shutil.rmtree(config.build / "bench-grade" / "build" / "jax-cache", ignore_errors=True)
    t0 = time.perf_counter()
    report = grade(Config.load(dest), part, workers=args.workers, force=True, sandbox=sandbox_problem() is None)
    t_jaxpath = time.perf_counter() - t0
    print(f"jaxpath grade ({args.workers} workers, sandbox={sandbox_problem() is None}, compile cache warmed "
          f"in the run): {t_jaxpath:.1f} s", flush=True)

    a, b = scores(nb_db, part), scores(Config.load(dest).db_url, part)
    same = a == b
    n = len(notebooks)
    print()
    print(f"{'':34}{'nbgrader':>12}{'jaxpath':>12}")
    print(f"{'wall time (s)':34}{t_nbgrader:12.1f}{t_jaxpath:12.1f}")
    print(f"{'wall time per notebook (s)':34}{t_nbgrader / n:12.2f}{t_jaxpath / n:12.2f}")
    print(f"{'core-seconds per notebook':34}{t_nbgrader / n:12.2f}{t_jaxpath * args.workers / n:12.2f}")
    print(f"{'  above own execution time (s)':34}{t_nbgrader / n - own_mean:12.2f}"
          f"{t_jaxpath * args.workers / n - own_mean:12.2f}")
    print("(nbgrader runs one notebook at a time; jaxpath's core-seconds count every worker for the whole run, "
          "cluster start and cache warm-up included)")
    print(f"speed-up: {t_nbgrader / t_jaxpath:.2f}x   identical scores cell by cell: {same} ({len(a)} cells)")
    if not same:
        diff = {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}
        print("differences:", diff)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
