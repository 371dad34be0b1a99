"""`jaxpath similar`: pairs of submissions whose answers share long stretches of code, for a person to look at."""
from __future__ import annotations

from pathlib import Path

from ..config import Config
from ._console import console, stage_bars

LARGE_CLASS = 50
"""Submitted notebooks from which a progress bar is shown."""


def register(sub, parents) -> None:
    from ..classroom import similar as api

    p = sub.add_parser("similar", parents=[parents.common],
                       help="pairs of submissions whose answers share long stretches of code (HTML and CSV)")
    p.add_argument("part")
    p.add_argument("--threshold", type=float, default=api.THRESHOLD,
                   help="a pair's score (0 to 1) from which it is listed (default: %(default)s)")
    p.add_argument("--min-match", type=int, default=api.MIN_MATCH,
                   help="normalised characters one exercise must share before its own score lists a pair "
                        "(default: %(default)s)")
    p.add_argument("--max-shared", type=int, default=api.MAX_SHARED,
                   help="a stretch more students than this share on one exercise is common code (default: %(default)s)")
    p.add_argument("--output", type=Path, default=None, help="a folder (default: build/similar/PART/)")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..classroom.similar import similar

    with stage_bars("fingerprinting", LARGE_CLASS) as on_progress:
        r = similar(config, args.part, threshold=args.threshold, min_match=args.min_match, max_shared=args.max_shared,
                    output=args.output, on_progress=on_progress)
    for s in r.skipped:
        console.print(f"[yellow]skipped:[/yellow] {s}", soft_wrap=True)
    console.print(f"{r.students} students, {r.answers} answer cells; {len(r.pairs)} pair(s) of students share a stretch "
                  f"({r.compared} pairs of answers compared); {len(r.flagged)} reach the threshold {r.threshold:g}")
    for p in r.flagged:
        console.print(f"  {p.a} and {p.b}: score {p.score:.2f} ({len(p.exercises)} exercises with shared stretches)")
    console.print(f"These pairs are for a person to look at, not a finding. Report: {r.html}\nCSV: {r.csv}")
    return 0
