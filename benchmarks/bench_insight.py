"""Benchmark: the class-wide views (`jaxpath similar`, ...) on synthetic classes of 100, 300 and 1000 students.

Each class is `jaxpath.sample.synthetic_class`: every answer of the sample chapters one the course knows (the
reference, an alternative or a wrong answer of the variants file), renamed for its student, with lines of the
student's own after each statement, and one planted near-copy pair per 100 students. For each command and size
it prints the seconds (the best of `--rounds` runs, the class made once per size), what the command found, and
how the time grows: the exponent e in time ~ students^e between consecutive sizes (1: linear; all pairs
compared would tend to 2). A benchmark, not a test: compare numbers from one run only.

    .venv/bin/python benchmarks/bench_insight.py [--sizes 100 300 1000] [--commands similar] [--rounds 3]

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
from jaxpath.sample import SAMPLE_CHAPTERS, SyntheticClass, synthetic_class

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
    from jaxpath.similar import similar

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


COMMANDS: dict[str, Callable[[Config, SyntheticClass], Measure]] = {"similar": run_similar}


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
