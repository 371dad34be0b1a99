"""`jaxpath clusters`: the class's answers grouped by behaviour, per exercise; candidate variants for the course."""
from __future__ import annotations

from pathlib import Path

from ..config import Config
from ._console import console, stage_bars

LARGE_CLASS = 50
"""Autograded notebooks from which a progress bar is shown."""


def register(sub, parents) -> None:
    p = sub.add_parser("clusters", parents=[parents.common],
                       help="the class's answers grouped by behaviour, per exercise (HTML); --propose: candidate variants")
    p.add_argument("part")
    p.add_argument("exercise", nargs="?", default=None, help="one exercise (its name); default: every exercise of PART")
    p.add_argument("--propose", action="store_true",
                   help="also write proposals.toml: the unmatched failing clusters and the passing answers written unlike "
                        "the course, as candidate [[name.wrong]] and [[name.alternative]] entries to review")
    p.add_argument("--merge", type=Path, default=None, metavar="FILE",
                   help="file the reviewed entries of a proposals file into the part's variants files (and do nothing else)")
    p.add_argument("--variants", type=Path, default=None, metavar="DIR",
                   help="the folder of the course's variants files (default: the course's variants/)")
    p.add_argument("--output", type=Path, default=None, help="a folder (default: build/clusters/PART/)")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..classroom.clusters import KIND_WORDS, KNOWN, PASSES, UNKNOWN, clusters, merge_proposals, with_variants

    config = with_variants(config, args.variants)
    if args.merge is not None:
        merged = merge_proposals(config, args.merge, args.part)
        for m in merged:
            console.print(f"{m.variants}: {', '.join(m.entries)}")
        if not merged:
            console.print(f"{args.merge} holds no entry: nothing merged")
            return 0
        console.print(f"Now prove them: jaxpath validate {' '.join(m.chapter for m in merged)}")
        return 0
    with stage_bars("reading", LARGE_CLASS) as on_progress:
        r = clusters(config, args.part, args.exercise, propose=args.propose, output=args.output, on_progress=on_progress)
    for s in r.skipped:
        console.print(f"[yellow]skipped:[/yellow] {s}", soft_wrap=True)
    notes = sorted({n for ex in r.exercises for n in ex.notes})
    for n in notes:
        console.print(f"[yellow]note:[/yellow] {n}", soft_wrap=True)
    console.print(f"{r.students} students with graded notebooks, {len(r.exercises)} exercises")
    for ex in r.exercises:
        counts = {kind: sum(c.size for c in ex.of_kind(kind)) for kind in KIND_WORDS}
        unknown = ex.of_kind(UNKNOWN)
        line = (f"  {ex.exercise:<22} {ex.answers:>5} answers in {len(ex.clusters):>3} clusters: {counts[PASSES]} pass "
                f"({sum(u.size for u in ex.unlike)} written unlike the course), {counts[KNOWN]} known wrong answer(s)")
        if unknown:
            line += f", [bold]{counts[UNKNOWN]} in {len(unknown)} cluster(s) not a known mistake[/bold]"
        console.print(line)
    console.print(f"Pages: {r.index}")
    if r.proposals:
        n = sum(ex.proposals for ex in r.exercises)
        console.print(f"{n} candidate variant(s) to review: {r.proposals}")
    return 0
