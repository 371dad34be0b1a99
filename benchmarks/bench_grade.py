"""Benchmark: grade one batch with `jaxpath grade` and with stock `nbgrader autograde`, side by side.

Both are timed as a person runs them, as commands (`jaxpath grade PART --force`, `nbgrader autograde PART
--force`), each process's start included. Prints the wall time of each, round by round (nbgrader then jaxpath,
then jaxpath then nbgrader: `--rounds`, 2 by default), the ratio of their means, and checks that both gave
identical scores cell by cell. A benchmark, not a test: these machines are noisy, so compare numbers from one run only.

    .venv/bin/python benchmarks/bench_grade.py [--scenario "1 cold" "8 cold" class "8 x 1 of 7" subsets "1 late"
                                                "1 late warm" cluster] [--workers 2] [--times]
                                               [--rounds 2] [--rootless]

With `--rootless` (as root, where tests/as_user.py can make an ordinary account), each scenario's batch is also
graded from a fresh copy by that account at the `rootless+rlimits` level, the whole grader running without root,
beside the same nbgrader run: the ratio at each level, and identical scores at every level.

The `cluster` scenario compares jaxpath with itself: one batch graded on the local cluster and, from a fresh
copy, through `--scheduler` on a Dask scheduler with worker processes started on loopback (as on a cluster:
no shared folder, the warmed compilation cache reaches the workers as a scattered pack): a cold batch on each
path, then regrades interleaved between the paths (ROUNDS each). It prints the time per notebook on each path
(the median of the regrades), their ratio, and whether scores and statuses are identical on every batch.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import nbformat
from nbgrader.api import Gradebook

from jaxpath import Config
from jaxpath.classroom.sample import SAMPLE_CHAPTERS, answers_from_source, make_sample_class, submission, submit
from jaxpath.execute import Session, kernel_env
from jaxpath.grade import grade, sandbox_problem
from jaxpath.grade.isolation import host_level

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # helpers the tests share
from dask_loopback import loopback_cluster  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
ROOTLESS = "rootless+rlimits"


def scores(db_url: str, part: str, students=()) -> dict:
    """Every cell's score in the gradebook (of those students only, when given)."""
    out = {}
    with Gradebook(db_url) as gb:
        for sub in gb.assignment_submissions(part):
            if students and sub.student_id not in students:
                continue
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


BASICS = tuple(f"basics/{p.stem}" for p in sorted((ROOT / "source" / "basics").glob("*.ipynb")))


@dataclass(frozen=True)
class Scenario:
    students: int
    chapters: tuple[str, ...]
    """The chapters the course holds (one part)."""
    kinds: tuple[str, ...]
    """The kinds of answers, student by student in turn."""
    submits: Callable[[int], tuple[str, ...]] | None = None
    """Student n -> the chapters they handed in (None: every chapter of the course)."""
    earlier: int = 0
    """The first `earlier` students were graded by an earlier batch (jaxpath's untimed, before each of its timed
    ones): the timed batches, stock's and jaxpath's, grade the other students only."""


SCENARIOS = {
    "1 cold": Scenario(1, SAMPLE_CHAPTERS[:1], ("correct",)),
    "8 cold": Scenario(8, SAMPLE_CHAPTERS[:1], ("correct", "stub")),
    "class": Scenario(12, SAMPLE_CHAPTERS, ("correct", "partly_wrong", "stub")),
    "8 x 1 of 7": Scenario(8, BASICS, ("correct", "stub"), lambda n: BASICS[:1]),
    "subsets": Scenario(7, BASICS, ("correct", "partly_wrong", "stub"), lambda n: (BASICS[n], BASICS[(n + 1) % 7])),
    "1 late": Scenario(1, BASICS, ("correct",), lambda n: BASICS[2:3]),
    "1 late warm": Scenario(2, BASICS, ("correct",), lambda n: BASICS[2:3], earlier=1),
}
"""Each scenario starts from a course never graded (no saved reference run, no compilation cache): 1 cold is one
submission; 8 cold, eight submissions of one chapter, half correct and half stubs; class, 12 students x 2 chapters
(the batch the course has measured since the start). The last three hold the whole basics part (7 notebooks), of
which few were handed in: 8 students who each handed in chapter 01 only (an early-term batch); 7 students who each
handed in two chapters, a different pair each (every notebook, 14 submissions); one late submission of chapter 03
into a part whose other notebooks were never graded. 1 late warm is the same late submission after another
student's chapter 03 was graded (by jaxpath: its reference run saved, the cache warm; the rest of the part never
graded)."""


ROUNDS_SIDE_BY_SIDE = 2
"""Rounds of each side-by-side scenario (nbgrader then jaxpath, then jaxpath then nbgrader): this machine's speed
drifts by a third within minutes, and one round in one order puts the whole drift into the ratio."""


def class_copy(config: Config, dest: Path, scenario: Scenario) -> tuple[str, list[Path]]:
    """A fresh sample course at `dest` with the scenario's submissions: (assignment, submitted notebooks)."""
    shutil.rmtree(dest, ignore_errors=True)
    sample = make_sample_class(config, dest, scenario.chapters)
    shutil.rmtree(dest / "submitted")
    part = sample.part
    for n in range(scenario.students):
        kind = scenario.kinds[n % len(scenario.kinds)]
        for cid in scenario.submits(n) if scenario.submits else scenario.chapters:
            stem = cid.split("/")[1]
            src = nbformat.read(config.source / f"{cid}.ipynb", as_version=4)
            rel = nbformat.read(dest / "release" / part / f"{stem}.ipynb", as_version=4)
            ok = answers_from_source(src)
            answers = {"correct": ok, "stub": {}, "partly_wrong": {k: v for i, (k, v) in enumerate(ok.items()) if i % 2}}
            submit(dest, f"s{n:02d}_{kind}", part, stem, submission(rel, answers[kind]))
    return part, sorted((dest / "submitted").rglob("*.ipynb"))


def print_times(report) -> None:
    """Where jaxpath's seconds went in one batch: the table `jaxpath grade --times` prints."""
    from rich.console import Console

    from jaxpath.cli.grade import times_table

    Console(width=100).print(times_table(report))


def run_scenario(config: Config, name: str, workers: int, times: bool, rootless: bool = False,
                 rounds: int = ROUNDS_SIDE_BY_SIDE) -> bool:
    """One scenario, side by side: stock nbgrader and jaxpath at the best level the host gives, `rounds` times
    in the order nbgrader, jaxpath, then jaxpath, nbgrader, ... (so a machine that drifts slower or faster
    through the run favours neither), each jaxpath run from a course never graded; the ratio of the means.
    With `rootless`, then jaxpath run by an ordinary account. True when every jaxpath run gave nbgrader's
    scores cell by cell."""
    dest = config.build / "bench-grade" / name.replace(" ", "-")
    scenario = SCENARIOS[name]
    part, notebooks = class_copy(config, dest, scenario)
    students = sorted({p.parent.parent.name for p in notebooks})  # submitted/<student>/<part>/<notebook>.ipynb
    earlier, timed = students[:scenario.earlier], students[scenario.earlier:]
    only = timed if earlier else []  # the students a timed batch grades (all, unless some were graded earlier)
    if len(only) > 1:
        raise SystemExit(f"{name}: stock nbgrader is given one student id per run; this scenario times {len(only)}")
    if earlier:
        notebooks = [p for p in notebooks if p.parent.parent.name in timed]
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    nb_db = f"sqlite:///{dest / 'nbgrader-bench.db'}"
    subprocess.run([BIN / "nbgrader", "generate_assignment", part, "--force", f"--CourseDirectory.db_url={nb_db}"],
                   cwd=dest, env=env, check=True, capture_output=True)

    def nbgrader() -> tuple[float, dict]:
        t0 = time.perf_counter()
        subprocess.run([BIN / "nbgrader", "autograde", part, "--force", f"--CourseDirectory.db_url={nb_db}",
                        "--CourseDirectory.autograded_directory=autograded-nbgrader",
                        *([f"--CourseDirectory.student_id={only[0]}"] if only else [])], cwd=dest, env=env,
                       check=True, capture_output=True)
        return time.perf_counter() - t0, scores(nb_db, part, only)

    def jaxpath():
        for d in ("jax-cache", "grading"):  # never graded: no compiled programs, no saved reference run
            shutil.rmtree(dest / "build" / d, ignore_errors=True)
        # As a person runs it, and as stock nbgrader is run: the command, its process start included.
        cmd = [BIN / "jaxpath", "grade", part, "--force", "--times", "--workers", str(workers)]
        if sandbox_problem() is not None:
            cmd.append("--no-sandbox")
        if earlier:  # graded before, untimed: their notebooks' reference runs saved, the cache warm
            subprocess.run([*cmd, "--student", *earlier], cwd=dest, env=env, check=True, capture_output=True)
            cmd += ["--student", *timed]
        t0 = time.perf_counter()
        out = subprocess.run(cmd, cwd=dest, env=env, check=True, capture_output=True, text=True)
        return time.perf_counter() - t0, out.stdout, scores(Config.load(dest).db_url, part, only)

    t_nb, t_jp, same, expected = [], [], True, None
    for r in range(rounds):
        if r % 2 == 0:
            (t_n, got_nb), (t_j, printed, got) = nbgrader(), jaxpath()
        else:
            (t_j, printed, got), (t_n, got_nb) = jaxpath(), nbgrader()
        same &= (expected is None or got_nb == expected) and got == got_nb
        expected = got_nb
        t_nb.append(t_n)
        t_jp.append(t_j)
        print(f"{name:10} {len(notebooks):3} notebooks   round {r + 1}: nbgrader {t_n:6.1f} s   jaxpath {t_j:6.1f} s   "
              f"{t_n / t_j:5.2f}x   identical scores: {got == got_nb}", flush=True)
        if times:
            print(printed[printed.rfind("where "):].rstrip() if "where " in printed else printed, flush=True)
    t_nbgrader, t_jaxpath = sum(t_nb) / rounds, sum(t_jp) / rounds
    level = host_level().name if sandbox_problem() is None else "no sandbox"
    print(f"{name:10} {len(notebooks):3} notebooks   nbgrader {t_nbgrader:6.1f} s   jaxpath {t_jaxpath:6.1f} s   "
          f"{t_nbgrader / t_jaxpath:5.2f}x   (means of {rounds} rounds)   at {level}   identical scores: {same}",
          flush=True)
    if rootless:
        t_user, got, user_level = grade_rootless(config, name, workers)
        ok = got == expected
        print(f"{name:10} {len(notebooks):3} notebooks   nbgrader {t_nbgrader:6.1f} s   jaxpath {t_user:6.1f} s   "
              f"{t_nbgrader / t_user:5.2f}x   at {user_level} (an ordinary account)   identical scores: {ok}   "
              f"{ROOTLESS} / {level}: {t_user / t_jaxpath:.2f}", flush=True)
        same &= ok
    return same


def grade_rootless(config: Config, name: str, workers: int) -> tuple[float, dict, str]:
    """(seconds, scores, level): the scenario's batch graded from a fresh copy of the course, never graded, by an
    ordinary account made for the run (tests/as_user.py), at the rootless level: the whole grader without root."""
    import tempfile

    import as_user
    import grade_as

    why = as_user.can_run()
    if why:
        raise SystemExit(f"--rootless: {why}")
    base = Path(tempfile.mkdtemp(prefix="jaxpath-bench-rootless-"))
    os.chmod(base, 0o755)  # the account must reach its course
    try:
        dest = base / "course"
        part, _ = class_copy(config, dest, SCENARIOS[name])
        with as_user.ordinary_user() as user:
            user.give(dest)
            t0 = time.perf_counter()  # its process start included, as for the other two
            r, data = grade_as.run_as(user, dest, part, ROOTLESS, workers=workers)
            seconds = time.perf_counter() - t0
            if data is None:
                raise SystemExit(f"grading as an ordinary account failed:\n{r.stderr[-3000:]}")
        return seconds, scores(Config.load(dest).db_url, part), data["isolation"]
    finally:
        shutil.rmtree(base, ignore_errors=True)


CLUSTER = Scenario(6, SAMPLE_CHAPTERS[:1], ("correct", "partly_wrong", "stub"))
"""The cluster scenario's batch: six submissions of one chapter, graded once per path from a course never graded."""
ROUNDS = 3
"""Regrades per path in the cluster scenario, interleaved (local, scheduler, then scheduler, local, ...): on a
shared machine one batch's time per notebook swings by a third from run to run, so the paths are compared by
their medians, each round taken in the same minutes for both."""


def run_cluster(config: Config, workers: int, times: bool) -> bool:
    """One batch on the local cluster and through `--scheduler`, each from a fresh copy (cold), then the same
    batch regraded ROUNDS times per path, interleaved (`--force`: the reference run saved, the cache warm):
    time per notebook per path, the medians' ratio, and identical scores and statuses on every run."""
    import statistics

    per_nb: dict[tuple[str, str], list[float]] = {}
    outcome, dests = {}, {}
    with contextlib.ExitStack() as stack:
        for path in ("local", "scheduler"):
            dests[path] = dest = config.build / "bench-grade" / f"cluster-{path}"
            part, notebooks = class_copy(config, dest, CLUSTER)
            for d in ("jax-cache", "grading"):
                shutil.rmtree(dest / "build" / d, ignore_errors=True)
        address = stack.enter_context(loopback_cluster(workers, dests["scheduler"]))
        plan = [("local", "cold"), ("scheduler", "cold")]
        for r in range(ROUNDS):
            pair = [("local", "regrade"), ("scheduler", "regrade")]
            plan += pair if r % 2 == 0 else pair[::-1]
        for path, batch in plan:
            report = grade(Config.load(dests[path]), part, workers=workers, force=True,
                           scheduler=address if path == "scheduler" else None, sandbox=sandbox_problem() is None)
            ran = [s for s in report.results if s.seconds]
            mean = sum(s.seconds for s in ran) / len(ran)
            per_nb.setdefault((path, batch), []).append(mean)
            outcome[path, batch, len(per_nb[path, batch])] = {(s.student, s.notebook): (str(s.status), s.score)
                                                              for s in report.results}
            print(f"cluster  {len(notebooks):3} notebooks   {path:9}  {batch:7}  batch {report.seconds:6.1f} s   "
                  f"{mean:5.2f} s per notebook   compiled programs read from the cache by "
                  f"{report.served_by_cache} of {len(ran)} notebooks", flush=True)
            if times:
                print_times(report)
    same = len({frozenset(v.items()) for v in outcome.values()}) == 1
    for batch in ("cold", "regrade"):
        local, remote = (statistics.median(per_nb[p, batch]) for p in ("local", "scheduler"))
        n = len(per_nb["local", batch])
        print(f"cluster  {batch:7}  per notebook{' (median of %d)' % n if n > 1 else ''}: local {local:.2f} s, "
              f"--scheduler {remote:.2f} s, --scheduler / local {remote / local:.2f}", flush=True)
    print(f"cluster  identical scores and statuses on both paths, every batch: {same}", flush=True)
    return same


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--scenario", nargs="+", choices=[*SCENARIOS, "cluster"], default=[*SCENARIOS, "cluster"])
    ap.add_argument("--times", action="store_true", help="print where jaxpath's seconds went in each scenario")
    ap.add_argument("--rounds", type=int, default=ROUNDS_SIDE_BY_SIDE,
                    help="rounds of each side-by-side scenario, the order alternating (default %(default)s)")
    ap.add_argument("--rootless", action="store_true",
                    help="also grade each scenario as an ordinary account, at the rootless level (needs root)")
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
        ok &= run_scenario(config, name, args.workers, args.times, args.rootless, rounds=max(1, args.rounds))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
