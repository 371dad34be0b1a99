"""`jaxpath grade`: autograde a class, isolated, in parallel, resumable."""
from __future__ import annotations

from rich.table import Table

from ..config import Config
from ._console import console


def register(sub, parents) -> None:
    from ..grade.limits import Limits

    default = Limits()
    p = sub.add_parser("grade", parents=[parents.common, parents.gradebook],
                       help="autograde submissions in parallel, isolated, resumable (Dask workers)")
    p.add_argument("part", help="the assignment (nbgrader assignment id), e.g. basics")
    p.add_argument("--student", nargs="+", help="only these students")
    p.add_argument("--notebook", nargs="+", help="only these notebooks (names without .ipynb)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, default=None,
                       help="notebooks graded at once on this machine (default: one per core); while a reference run "
                            "goes on, a few more may wait beside it, following it (docs/performance.md: fixed costs)")
    where.add_argument("--scheduler", default=None, help="address of an existing Dask scheduler (tcp://host:port)")
    p.add_argument("--force", action="store_true", help="regrade notebooks that did not change")
    p.add_argument("--no-sandbox", action="store_true",
                   help="run student code WITHOUT isolation (only where a sandbox cannot be built)")
    course = "course.toml [grading], else"
    p.add_argument("--cell-timeout", type=int, default=None,
                   help=f"seconds per cell (default: {course} nbgrader's c.Execute.timeout, else {default.cell_timeout})")
    p.add_argument("--notebook-timeout", type=int, default=None,
                   help=f"seconds per notebook (default: {course} {default.notebook_timeout})")
    p.add_argument("--memory-mb", type=int, default=None,
                   help=f"memory per notebook, its files included (default: {course} {default.memory_mb})")
    p.add_argument("--lock-timeout", type=float, default=120.0,
                   help="seconds to wait while another process holds the gradebook locked, then stop with an error")
    p.add_argument("--no-compile-cache", action="store_true",
                   help="do not warm a shared (read-only) JAX compilation cache with the reference solutions")
    p.add_argument("--times", action="store_true",
                   help="print where the seconds went: cluster start, reference run, and per notebook")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from ..grade import GradeError, Limits, SandboxUnavailable, grade
    from ..grade.statuses import GradeStatus

    limits = Limits.for_course(config, cell_timeout=args.cell_timeout, notebook_timeout=args.notebook_timeout,
                               memory_mb=args.memory_mb)
    progress = Progress(TextColumn("grading {task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=console)
    task = None

    def on_start(n, skipped):
        nonlocal task
        if skipped:
            console.print(f"{skipped} notebook(s) unchanged since they were graded: skipped (--force regrades them)")
        task = progress.add_task(args.part, total=n)

    recorded = []

    def on_result(st):
        recorded.append(st)
        progress.advance(task)
        if st.status != GradeStatus.GRADED:
            progress.console.print(f"[yellow]{st.status}[/yellow] {st.student}/{args.part}/{st.notebook}.ipynb: {st.reason}")

    try:
        with progress:
            report = grade(config, args.part, students=args.student, notebooks=args.notebook, workers=args.workers,
                           scheduler=args.scheduler, db_url=args.db, force=args.force, sandbox=not args.no_sandbox,
                           limits=limits, compile_cache=not args.no_compile_cache, on_start=on_start,
                           on_result=on_result, lock_timeout=args.lock_timeout)
    except (SandboxUnavailable, GradeError) as e:
        console.print(f"[red]error:[/red] {e}")
        return 2
    except KeyboardInterrupt:
        # The Dask cluster and every kernel were stopped on the way out (finally blocks); what was recorded
        # stays, each notebook whole, and a rerun skips it.
        console.print(f"[yellow]interrupted[/yellow]: {len(recorded)} notebook(s) were recorded before the "
                      f"interrupt; run `jaxpath grade {args.part}` again to grade the rest (recorded ones are skipped)")
        return 130
    rows = report.results + report.skipped
    table = Table(title=f"{args.part}: {len(report.results)} graded now, {len(report.skipped)} unchanged "
                        f"({report.seconds:.1f} s)")
    for col in ("student", "notebook", "status", "score", "seconds", "reason"):
        table.add_column(col, justify="right" if col in ("score", "seconds") else "left")
    for st in sorted(rows, key=lambda s: (s.student, s.notebook)):
        score = "" if st.score is None else f"{st.score:g}/{st.max_score:g}"
        color = "green" if st.status == GradeStatus.GRADED else "yellow"
        table.add_row(st.student, st.notebook, f"[{color}]{st.status}[/{color}]", score,
                      "" if st.seconds is None else f"{st.seconds:.1f}", st.reason)
    console.print(table)
    counts = report.by_status()
    console.print(", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "nothing to grade")
    if report.cache_hits:
        console.print(f"{report.served_by_cache} of {len(report.cache_hits)} executed notebook(s) read compiled programs "
                      "from the warmed cache" + (f" (a pack of {report.cache_entries} entries sent to the workers)"
                                                 if report.cache_entries else ""))
    if args.times:
        console.print(times_table(report))
    return 0


def times_table(report) -> Table:
    """Where a batch's seconds went: the coordinator's steps (cluster start, the font list and the reference run
    overlap the others), then the mean per executed notebook on the workers."""
    table = Table(title=f"where {report.seconds:.1f} s went")
    table.add_column("step")
    table.add_column("seconds", justify="right")
    for name in ("cluster start", "font list", "prepare", "reference run", "waiting for the reference run", "grading", "record"):
        if name in report.times:
            table.add_row(name, f"{report.times[name]:.1f}")
    runs = report.worker_times
    if runs:
        steps = list(dict.fromkeys(k for t in runs for k in t))
        for name in steps:
            table.add_row(f"  per notebook: {name}", f"{sum(t.get(name, 0.0) for t in runs) / len(runs):.2f}")
    return table
