"""`jaxpath mutants`: mutation testing of every reference solution against its tests."""
from __future__ import annotations

import os
import time

from rich.table import Table

from ..config import Config
from ._console import console, default_jobs


def register(sub, parents) -> None:
    p = sub.add_parser("mutants", parents=[parents.common],
                       help="mutation testing: mutants of every reference solution against its tests")
    p.add_argument("chapters", nargs="*", help="chapter ids (basics/02_jit), names (02_jit) or parts (basics)")
    p.add_argument("--jobs", type=int, default=default_jobs(), help="chapters in parallel (default: %(default)s)")
    p.add_argument("--check", action="store_true",
                   help="run nothing: fail unless MUTANTS.md is current for every chapter and meets the bar")
    p.add_argument("--diffs", action="store_true", help="print the diff of every surviving mutant")
    p.add_argument("--times", action="store_true", help="print a table of time per chapter and the wall clock")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:  # noqa: C901
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from ..authoring.mutants import COURSE_MIN, SUMMARY_FILE, check, count_mutants, run_mutants
    from ..authoring.validate import resolve_chapters
    from ..manifest import load_manifest

    if args.check:
        r = check(config)
        for c in r.missing:
            console.print(f"[red]✗[/red] {c}: no mutation results in {SUMMARY_FILE}: run `jaxpath mutants {c}`")
        for c in r.stale:
            console.print(f"[red]✗[/red] {c}: changed since its mutation results were written: "
                          f"run `jaxpath mutants {c}`")
        for b in r.below:
            console.print(f"[red]✗[/red] {b}", soft_wrap=True)
        console.print(f"{SUMMARY_FILE}: course {r.rate:.1f} % of non-equivalent mutants killed"
                      + ("" if r.ok else "; not current or below the bar"))
        return 0 if r.ok else 1
    ids = resolve_chapters(load_manifest(config), args.chapters or None)
    total = sum(count_mutants(config, c) for c in ids)
    progress = Progress(TextColumn("mutants"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        TextColumn("ETA"), TimeRemainingColumn(), console=console)

    def on_chapter(r):
        gen = sum(e.generated for e in r.exercises)
        kill = sum(e.killed for e in r.exercises)
        eq = sum(e.equivalent for e in r.exercises)
        mark = "[green]✓[/green]" if r.ok else "[red]✗[/red]"
        progress.console.print(f"{mark} {r.id:<44} {r.seconds:6.1f} s   {gen} mutants, {kill} killed, {eq} equivalent")
        for p in r.problems:
            progress.console.print(f"    [red]-[/red] {p}", soft_wrap=True)
        for e in r.exercises:
            if e.survived or e.problems:
                progress.console.print(f"    [red]-[/red] `{e.name}`: {e.survived} surviving, {e.rate:.1f} % killed")
                for m in e.mutants:
                    if m.outcome == "survived":
                        progress.console.print(f"      {m.id} (line {m.line}, {m.description})")
                        if args.diffs:
                            progress.console.print(m.diff, markup=False, highlight=False)
                for p in e.problems:
                    progress.console.print(f"      {p}", soft_wrap=True)

    t0 = time.perf_counter()
    with progress:
        task = progress.add_task("mutants", total=total)
        results = run_mutants(config, ids, jobs=args.jobs, on_mutant=lambda: progress.advance(task),
                              on_chapter=on_chapter)
    wall = time.perf_counter() - t0
    if args.times:
        table = Table(title=f"Mutation testing time per chapter ({args.jobs} job(s))")
        for col, just in [("chapter", "left"), ("mutants", "right"), ("timeouts", "right"), ("seconds", "right")]:
            table.add_column(col, justify=just)
        for x in results:
            table.add_row(x.id, str(sum(e.generated for e in x.exercises)),
                          str(sum(e.count("timeout") for e in x.exercises)), f"{x.seconds:.1f}")
        table.add_row("sum over chapters", str(sum(sum(e.generated for e in x.exercises) for x in results)), "",
                      f"{sum(x.seconds for x in results):.1f}")
        table.add_row("wall clock", "", "", f"{wall:.1f}")
        console.print(table)
        console.print(f"mutation testing took {wall / 60:.1f} min wall clock on {os.cpu_count()} core(s) "
                      f"({'within' if wall <= 20 * 60 else '[red]over[/red]'} the 20 min budget for the course)")
    r = check(config)
    console.print(f"{SUMMARY_FILE}: course {r.rate:.1f} % of non-equivalent mutants killed (needs {COURSE_MIN:.0f} %); "
                  f"report with every survivor's diff: {config.build_dir}/mutants/report.md")
    return 0 if all(x.ok for x in results) else 1
