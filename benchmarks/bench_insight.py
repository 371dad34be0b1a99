"""Benchmark: the class-wide views (`jaxpath similar`, `jaxpath clusters`) on synthetic classes of 100, 300 and 1000
students.

Each class is `jaxpath.classroom.sample.synthetic_class`: every answer of the sample chapters one the course knows (the
reference, an alternative or a wrong answer of the variants file), renamed for its student, with lines of the
student's own after each statement, and one planted near-copy pair per 100 students. For each command and size
it prints the seconds (the best of `--rounds` runs, the class made once per size), what the command found, and
how the time grows: the exponent e in time ~ students^e between consecutive sizes (1: linear; all pairs
compared would tend to 2). A benchmark, not a test: compare numbers from one run only.

    .venv/bin/python benchmarks/bench_insight.py [--sizes 100 300 1000] [--commands similar clusters] [--rounds 3]

`clusters` reads autograded notebooks: `graded_class` writes them for the class without a kernel (the known answers
with the requirement lines each gets, a planted shared mistake and planted answers written unlike the course).

A command is one function `(Config, SyntheticClass) -> Measure` in COMMANDS: a new class-wide view adds its own.
"""
from __future__ import annotations

import argparse
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from jaxpath import Config
from jaxpath.classroom.sample import SAMPLE_CHAPTERS, SyntheticClass, synthetic_class

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Scenario:
    """One synthetic class."""
    students: int
    chapters: tuple[str, ...] = SAMPLE_CHAPTERS
    seed: int = 0


SCENARIOS = {n: Scenario(n) for n in (100, 300, 1000)}


@dataclass
class Measure:
    """One run of one command on one class: its seconds, and what it found (one line)."""
    seconds: float
    found: str
    ok: bool = True              # what it found is what the class was made to hold


def run_similar(config: Config, course: SyntheticClass) -> Measure:
    """`jaxpath similar` (the API, as the command calls it): the planted pairs must all be flagged."""
    from jaxpath.classroom.similar import similar

    t0 = time.perf_counter()
    r = similar(config, course.part, output=course.root / "build" / "bench-similar")
    seconds = time.perf_counter() - t0
    n = len(course.students)
    every = n * (n - 1) // 2
    flagged = {(p.a, p.b) for p in r.flagged}
    planted = set(course.near_copies)
    return Measure(seconds, f"{r.answers} answers; {len(r.pairs)} pairs of students compared of {every}, "
                            f"{r.compared} pairs of answers of {every * r.answers // n}; {len(flagged)} flagged, "
                            f"{len(planted & flagged)} of the {len(planted)} planted", planted <= flagged)


PLANTED = "planted: index 5 of a 5-row table gave its last row instead of fill"
"""The ✗ message of the shared mistake planted in a graded synthetic class (no wrong answer of the course has it)."""


@dataclass
class GradedPlan:
    """What a graded synthetic class was made to hold, for checking what `jaxpath clusters` finds."""
    wrong: dict[tuple[str, str], int]     # (exercise, student) -> the known wrong answer's number it answered with
    shared: set[str]                      # the students of the planted shared mistake (SHARED_MISTAKE's exercise)
    novel: set[str]                       # the students who wrote near_copy_a's passing answers (unlike the course)
    novel_exercises: set[str]


_GRADED: dict[Path, GradedPlan] = {}


def graded_class(course: SyntheticClass, seed: int = 1) -> GradedPlan:
    """Autograded notebooks for the synthetic class's students, written without a kernel (once per class): each
    answer drawn from the course's known answers of its exercise (the reference, an alternative or a wrong answer),
    renamed for the student, its test cell showing the requirement lines that answer gets (a wrong answer: its
    `breaks` fail with a message of its own, which the chapter's proof, written here too, records for it). Planted,
    two per 100 students each: the sample's shared mistake (lookup_or_fill, R1 failing with PLANTED: no known wrong
    answer) and near_copy_a's passing answers of the other exercises (written unlike the course). The class's own
    submitted answers (`similar`'s input) are not read."""
    import json
    import random
    import tomllib

    from jaxpath.authoring.proofs import proof_path
    from jaxpath.authoring.requirements import Outcome, outcome_text
    from jaxpath.cells import grade_id, solution_source
    from jaxpath.classroom.sample import SHARED_MISTAKE, WRITTEN, rename

    if course.root in _GRADED:
        return _GRADED[course.root]
    rng = random.Random(seed)
    config, target = Config.load(ROOT), Config.load(course.root)
    pairs = max(1, len(course.students) // 100)
    shared, novel = set(course.students[-2 * pairs:]), set(course.students[-4 * pairs:-2 * pairs])
    plan = GradedPlan({}, shared, novel, set())
    for cid in SAMPLE_CHAPTERS:
        stem = cid.split("/")[1]
        (target.variants / course.part).mkdir(parents=True, exist_ok=True)
        shutil.copy(config.variants / f"{cid}.toml", target.variants / f"{cid}.toml")
        variants = tomllib.loads((config.variants / f"{cid}.toml").read_text(encoding="utf-8"))
        text = (config.source / f"{cid}.ipynb").read_text(encoding="utf-8")
        source = json.loads(text)
        pool: dict[str, list[tuple[str, dict, int | None]]] = {}
        mistakes = []
        for cell in source["cells"]:
            gid = grade_id(cell) or ""
            if not gid.endswith("-answer"):
                continue
            name = gid.removesuffix("-answer")
            entry = variants[name]
            pool[name] = [(solution_source("".join(cell["source"])), {}, None)]
            pool[name] += [(a["code"], {}, None) for a in entry.get("alternative", [])]
            for k, w in enumerate(entry.get("wrong", []), start=1):
                breaks = [w["breaks"]] if isinstance(w["breaks"], str) else list(w["breaks"])
                failed = {rid: f"{rid} failed as wrong answer #{k} of {name} does (synthetic)" for rid in breaks}
                pool[name].append((w["code"], failed, k))
                mistakes.append({"exercise": name, "number": k, "failed": failed, "hint": w.get("hint", ""),
                                 "why": w.get("why", "")})
        proof = proof_path(target, cid)
        proof.parent.mkdir(parents=True, exist_ok=True)
        proof.write_text(json.dumps({"key": "synthetic", "every_wrong": True, "mistakes": mistakes}), encoding="utf-8")
        for student in course.students:
            nb = json.loads(text)
            for cell in nb["cells"]:
                gid = grade_id(cell) or ""
                name = gid.removesuffix("-answer").removesuffix("-check")
                if cell.get("cell_type") != "code" or name not in pool:
                    continue
                if gid.endswith("-answer"):
                    mine = WRITTEN["near_copy_a"].get(cid, {}).get(gid)
                    if cid == SHARED_MISTAKE.chapter and name == SHARED_MISTAKE.exercise and student in shared:
                        code = WRITTEN[rng.choice(SHARED_MISTAKE.students)][cid][gid]
                        failed, number = {"R1": PLANTED}, None
                    elif student in novel and mine and name != SHARED_MISTAKE.exercise:
                        code, failed, number = mine, {}, None
                        plan.novel_exercises.add(name)
                    else:
                        code, failed, number = rng.choice(pool[name])
                    if number is not None:
                        plan.wrong[(name, student)] = number
                    cell["source"] = rename(code, student, {name})
                    cell["outputs"], cell["execution_count"] = [], 1
                else:
                    outcomes = [Outcome(rid, "✗" if rid in failed else "✓", pts, failed.get(rid, ""))
                                for rid, pts in variants[name]["points"].items()]
                    cell["outputs"] = [
                        {"output_type": "stream", "name": "stdout", "text": outcome_text(name, outcomes)},
                        {"output_type": "execute_result", "execution_count": 2, "metadata": {},
                         "data": {"text/plain": f"{sum(o.points for o in outcomes if o.passed):g}"}}]
                    cell["execution_count"] = 2
            d = course.root / "autograded" / student / course.part
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{stem}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    _GRADED[course.root] = plan
    return plan


def run_clusters(config: Config, course: SyntheticClass) -> Measure:
    """`jaxpath clusters --propose` (the API, as the command calls it) on the graded synthetic class (made first, not
    timed): the planted shared mistake must be the one cluster that is no known mistake, every wrong answer drawn from
    the course its known one, and near_copy_a's answers the passing ones written unlike the course."""
    from jaxpath.classroom.clusters import KNOWN, UNKNOWN, clusters

    plan = graded_class(course)
    t0 = time.perf_counter()
    r = clusters(Config.load(course.root), course.part, propose=True, output=course.root / "build" / "bench-clusters")
    seconds = time.perf_counter() - t0
    unknown = [(ex.exercise, set(c.students)) for ex in r.exercises for c in ex.of_kind(UNKNOWN)]
    unlike = {ex.exercise: [set(u.students) for u in ex.unlike] for ex in r.exercises if ex.unlike}
    known = {(ex.exercise, s): {m.number for m in c.known} for ex in r.exercises for c in ex.of_kind(KNOWN)
             for s in c.students}
    ok = (unknown == [("lookup_or_fill", plan.shared)] and unlike == {e: [plan.novel] for e in plan.novel_exercises}
          and all(n in known.get(key, ()) for key, n in plan.wrong.items()))
    answers = sum(ex.answers for ex in r.exercises)
    return Measure(seconds, f"{answers} answers in {sum(len(ex.clusters) for ex in r.exercises)} clusters; "
                            f"{sum(len(ex.of_kind(KNOWN)) for ex in r.exercises)} known mistakes, "
                            f"{len(unknown)} not known ({sum(len(s) for _, s in unknown)} students; planted "
                            f"{len(plan.shared)}), {sum(len(g) for g in unlike.values())} groups written unlike the "
                            f"course (planted {len(plan.novel_exercises)})", ok)


COMMANDS: dict[str, Callable[[Config, SyntheticClass], Measure]] = {"similar": run_similar, "clusters": run_clusters}


def measure(command: str, course: SyntheticClass, rounds: int) -> Measure:
    """The best of `rounds` runs (this machine's speed drifts; the fastest run is the least disturbed)."""
    runs = [COMMANDS[command](Config.load(course.root), course) for _ in range(rounds)]
    best = min(runs, key=lambda m: m.seconds)
    best.ok = all(m.ok for m in runs)
    return best


def growth(times: dict[int, float]) -> list[str]:
    """The exponent between consecutive sizes: log(t2 / t1) / log(n2 / n1)."""
    sizes = sorted(times)
    return [f"{a} -> {b}: x{times[b] / times[a]:.2f} time for x{b / a:.2f} students, exponent "
            f"{math.log(times[b] / times[a]) / math.log(b / a):.2f}" for a, b in zip(sizes, sizes[1:])]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=sorted(SCENARIOS))
    ap.add_argument("--commands", nargs="+", choices=sorted(COMMANDS), default=sorted(COMMANDS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the synthetic classes in build/bench-insight/")
    args = ap.parse_args()
    config = Config.load(ROOT)
    times: dict[str, dict[int, float]] = {c: {} for c in args.commands}
    ok = True
    for n in args.sizes:
        scenario = SCENARIOS.get(n, Scenario(n))
        dest = config.build / "bench-insight" / f"{n}"
        t0 = time.perf_counter()
        course = synthetic_class(config, dest, scenario.students, chapters=scenario.chapters, seed=scenario.seed)
        print(f"{n} students x {len(scenario.chapters)} chapters: class made in {time.perf_counter() - t0:.1f} s",
              flush=True)
        for command in args.commands:
            m = measure(command, course, args.rounds)
            times[command][n] = m.seconds
            ok &= m.ok
            print(f"  {command:<10} {m.seconds:8.2f} s   {m.found}{'' if m.ok else '   (NOT what was planted)'}",
                  flush=True)
        if not args.keep:
            shutil.rmtree(dest, ignore_errors=True)
    for command, by_size in times.items():
        if len(by_size) > 1:
            print(f"{command}, growth: " + "; ".join(growth(by_size)))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
