"""What every command prints through: one rich console (the progress bars and the log handler share it), and
the few summary lines several commands print alike."""
from __future__ import annotations

import os

from rich.console import Console

console = Console(highlight=False, soft_wrap=True)
if not console.is_terminal:  # logs and CI: wide enough for the summary tables
    console.width = max(console.width, 140)


def default_jobs() -> int:
    """Chapters (or Sphinx processes) at once: one per core, at most two (each kernel starts its own threads)."""
    return max(1, min(2, (os.cpu_count() or 1)))


def on_report(r) -> None:
    """One line per validated chapter, its problems under it."""
    mark = "[green]✓[/green]" if r.ok else "[red]✗[/red]"
    console.print(f"{mark} {r.id:<44} {r.seconds:6.1f} s   {r.exercises} exercises, {r.variants} variants")
    for p in r.problems:
        console.print(f"    [red]-[/red] {p}", soft_wrap=True)


def summary(course_problems, reports) -> int:
    """The closing line of a validation; the exit status (1 when a chapter or the course has a problem)."""
    for p in course_problems:
        console.print(f"[red]✗[/red] {p}", soft_wrap=True)
    bad = sum(not r.ok for r in reports)
    console.print(f"{len(reports) - bad}/{len(reports)} chapters valid"
                  + (f"; {len(course_problems)} course problem(s)" if course_problems else ""))
    return 1 if bad or course_problems else 0
