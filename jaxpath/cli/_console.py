"""What every command prints through: one rich console (the progress bars and the log handler share it), and
the few summary lines several commands print alike."""
from __future__ import annotations

import os
from contextlib import contextmanager

from rich.console import Console

console = Console(highlight=False, soft_wrap=True)
if not console.is_terminal:  # logs and CI: wide enough for the summary tables
    console.width = max(console.width, 140)


def default_jobs() -> int:
    """Chapters (or Sphinx processes) at once: one per core, at most two (each kernel starts its own threads)."""
    return max(1, min(2, (os.cpu_count() or 1)))


def on_report(r) -> None:
    """One line per validated chapter (proved, or reused proof: run reference-only), its problems under it."""
    mark = "[green]✓[/green]" if r.ok else "[red]✗[/red]"
    how = "reused proof" if r.reused else "proved"
    console.print(f"{mark} {r.id:<44} {r.seconds:6.1f} s   {how:<12}  {r.exercises} exercises, {r.variants} variants")
    for p in r.problems:
        console.print(f"    [red]-[/red] {p}", soft_wrap=True)


def summary(course_problems, reports) -> int:
    """The closing line of a validation; the exit status (1 when a chapter or the course has a problem)."""
    for p in course_problems:
        console.print(f"[red]✗[/red] {p}", soft_wrap=True)
    bad = sum(not r.ok for r in reports)
    reused = sum(r.reused for r in reports)
    console.print(f"{len(reports) - bad}/{len(reports)} chapters valid"
                  + (f" ({len(reports) - reused} proved, {reused} reused proof{'s' * (reused != 1)})" if reused else "")
                  + (f"; {len(course_problems)} course problem(s)" if course_problems else ""))
    written = [r.proof for r in reports if r.proof is not None]
    if written:
        where = os.path.commonpath([p.parent for p in written])
        console.print(f"{len(written)} proof(s) written in {os.path.relpath(where)}/: commit them with the chapters")
    return 1 if bad or course_problems else 0


@contextmanager
def stage_bars(first: str, large: int):
    """Progress bars for a class-wide view's stages: yields its `on_progress(stage, done, total)`, which shows a bar
    per stage once the `first` stage counts at least `large` items (a small class gets none), and clears them at the
    end."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=console, transient=True)
    tasks: dict[str, int] = {}

    def on_progress(stage: str, done: int, total: int) -> None:
        if stage == first and done == 1 and total >= large:
            progress.start()
        if not progress.live.is_started:
            return
        if stage not in tasks:
            tasks[stage] = progress.add_task(stage, total=total)
        progress.update(tasks[stage], completed=done, total=total)

    try:
        yield on_progress
    finally:
        if progress.live.is_started:
            progress.stop()
