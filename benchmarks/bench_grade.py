"""Benchmark: grade one batch with `jaxpath grade` and with stock `nbgrader autograde`, side by side.

Prints the wall time of each, the ratio, each one's time per notebook above the notebook's own execution
time, and checks that both gave identical scores cell by cell. A benchmark, not a test: these machines
are noisy, so compare numbers from one run only.

    .venv/bin/python benchmarks/bench_grade.py [--scenario "1 cold" "8 cold" class cluster] [--workers 2] [--times]

The `cluster` scenario compares jaxpath with itself: one batch graded on the local cluster and, from a fresh
copy, through `--scheduler` on a Dask scheduler with worker processes started on loopback (as on a cluster:
no shared folder, the warmed compilation cache reaches the workers as a scattered pack). It prints the time per
notebook on each path, their ratio, and whether scores and statuses are identical.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
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


SCENARIOS = {
    # name: (students, chapters, kinds of answers in turn)
    "1 cold": (1, SAMPLE_CHAPTERS[:1], ["correct"]),
    "8 cold": (8, SAMPLE_CHAPTERS[:1], ["correct", "stub"]),
    "class": (12, SAMPLE_CHAPTERS, ["correct", "partly_wrong", "stub"]),
}
"""Each scenario starts from a course never graded (no saved reference run, no compilation cache): 1 cold is one
submission; 8 cold, eight submissions of one chapter, half correct and half stubs; class, 12 students x 2 chapters
(the batch the course has measured since the start)."""


def class_copy(config: Config, dest: Path, students: int, chapters, kinds) -> tuple[str, list[Path]]:
    """A fresh sample course at `dest` with the scenario's submissions: (assignment, submitted notebooks)."""
    shutil.rmtree(dest, ignore_errors=True)
    sample = make_sample_class(config, dest, chapters)
    shutil.rmtree(dest / "submitted")
    part = sample.part
    for n in range(students):
        kind = kinds[n % len(kinds)]
        for cid in chapters:
            stem = cid.split("/")[1]
            src = nbformat.read(config.source / f"{cid}.ipynb", as_version=4)
            rel = nbformat.read(dest / "release" / part / f"{stem}.ipynb", as_version=4)
            ok = answers_from_source(src)
            answers = {"correct": ok, "stub": {}, "partly_wrong": {k: v for i, (k, v) in enumerate(ok.items()) if i % 2}}
            submit(dest, f"s{n:02d}_{kind}", part, stem, submission(rel, answers[kind]))
    return part, sorted((dest / "submitted").rglob("*.ipynb"))


def run_scenario(config: Config, name: str, workers: int, times: bool) -> tuple[float, float, bool, int]:
    """(nbgrader seconds, jaxpath seconds, identical scores, notebooks) for one scenario, side by side."""
    dest = config.build / "bench-grade" / name.replace(" ", "-")
    part, notebooks = class_copy(config, dest, *SCENARIOS[name])
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    nb_db = f"sqlite:///{dest / 'nbgrader-bench.db'}"
    subprocess.run([BIN / "nbgrader", "generate_assignment", part, "--force", f"--CourseDirectory.db_url={nb_db}"],
                   cwd=dest, env=env, check=True, capture_output=True)
    t0 = time.perf_counter()
    subprocess.run([BIN / "nbgrader", "autograde", part, "--force", f"--CourseDirectory.db_url={nb_db}",
                    "--CourseDirectory.autograded_directory=autograded-nbgrader"], cwd=dest, env=env, check=True,
                   capture_output=True)
    t_nbgrader = time.perf_counter() - t0
    for d in ("jax-cache", "grading"):  # never graded: no compiled programs, no saved reference run
        shutil.rmtree(dest / "build" / d, ignore_errors=True)
    t0 = time.perf_counter()
    report = grade(Config.load(dest), part, workers=workers, force=True, sandbox=sandbox_problem() is None)
    t_jaxpath = time.perf_counter() - t0
    same = scores(nb_db, part) == scores(Config.load(dest).db_url, part)
    print(f"{name:8} {len(notebooks):3} notebooks   nbgrader {t_nbgrader:6.1f} s   jaxpath {t_jaxpath:6.1f} s   "
          f"{t_nbgrader / t_jaxpath:5.2f}x   identical scores: {same}", flush=True)
    if times:
        from rich.console import Console

        from jaxpath.cli.grade import times_table

        Console(width=100).print(times_table(report))
    return t_nbgrader, t_jaxpath, same, len(notebooks)


@contextlib.contextmanager
def loopback_cluster(workers: int, cwd: Path):
    """A Dask scheduler and one `dask worker` with `workers` single-threaded processes, on loopback."""
    from distributed import Client

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
    procs = [subprocess.Popen([BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], **quiet)]
    try:
        procs.append(subprocess.Popen([BIN / "dask", "worker", address, "--nworkers", str(workers), "--nthreads", "1",
                                       "--no-dashboard"], **quiet))
        with Client(address, timeout="60s") as client:
            client.wait_for_workers(workers, timeout=120)
        yield address
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=60)


CLUSTER = (6, SAMPLE_CHAPTERS[:1], ["correct", "partly_wrong", "stub"])
"""The cluster scenario's batch: six submissions of one chapter, graded once per path from a course never graded."""


def run_cluster(config: Config, workers: int, times: bool) -> bool:
    """One batch on the local cluster and through `--scheduler`, each from a fresh copy, then the same batch
    regraded (`--force`: the reference run saved, the cache warm from the first task): per-notebook times."""
    per_nb, outcome = {}, {}
    for path in ("local", "scheduler"):
        dest = config.build / "bench-grade" / f"cluster-{path}"
        part, notebooks = class_copy(config, dest, *CLUSTER)
        for d in ("jax-cache", "grading"):
            shutil.rmtree(dest / "build" / d, ignore_errors=True)
        with contextlib.ExitStack() as stack:
            address = stack.enter_context(loopback_cluster(workers, dest)) if path == "scheduler" else None
            for batch in ("cold", "regrade"):
                report = grade(Config.load(dest), part, workers=workers, scheduler=address, force=True,
                               sandbox=sandbox_problem() is None)
                ran = [s for s in report.results if s.seconds]
                per_nb[path, batch] = sum(s.seconds for s in ran) / len(ran)
                outcome[path, batch] = {(s.student, s.notebook): (str(s.status), s.score) for s in report.results}
                print(f"cluster  {len(notebooks):3} notebooks   {path:9}  {batch:7}  batch {report.seconds:6.1f} s   "
                      f"{per_nb[path, batch]:5.2f} s per notebook   compiled programs read from the cache by "
                      f"{report.served_by_cache} of {len(ran)} notebooks", flush=True)
                if times:
                    from rich.console import Console

                    from jaxpath.cli.grade import times_table

                    Console(width=100).print(times_table(report))
    same = len({frozenset(v.items()) for v in outcome.values()}) == 1
    for batch in ("cold", "regrade"):
        print(f"cluster  {batch:7}  --scheduler / local per notebook: "
              f"{per_nb['scheduler', batch] / per_nb['local', batch]:.2f}", flush=True)
    print(f"cluster  identical scores and statuses on both paths, both batches: {same}", flush=True)
    return same


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--scenario", nargs="+", choices=[*SCENARIOS, "cluster"], default=[*SCENARIOS, "cluster"])
    ap.add_argument("--times", action="store_true", help="print where jaxpath's seconds went in each scenario")
    args = ap.parse_args()
    os.environ.pop("JAXPATH_COMPILE_CACHE", None)  # every scenario starts with the course's own, empty cache
    config = Config.load(ROOT)
    print(f"{os.cpu_count()} cores; workers={args.workers}; sandbox={sandbox_problem() is None}", flush=True)
    nb0 = config.source / f"{SAMPLE_CHAPTERS[0]}.ipynb"
    own_time(nb0)  # once, untimed: the OS file cache holds the stack afterwards, as in both graders
    own = [own_time(nb0) for _ in range(2)]
    print(f"own execution time of {SAMPLE_CHAPTERS[0]} (plain nbclient, no grader, no compilation cache): "
          f"{', '.join(f'{t:.1f}' for t in own)} s", flush=True)
    ok = True
    for name in args.scenario:
        if name == "cluster":
            ok &= run_cluster(config, args.workers, args.times)
            continue
        _, _, same, _ = run_scenario(config, name, args.workers, args.times)
        ok &= same
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
