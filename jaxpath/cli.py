"""jaxpath: validate, release and publish the JAX path course.

A thin command line over the jaxpath Python API; defaults live in the API and in Config."""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from .config import Config
from .errors import JaxpathError
from .problems import ChapterError

console = Console(highlight=False, soft_wrap=True)
if not console.is_terminal:  # logs and CI: wide enough for the summary tables
    console.width = max(console.width, 140)


def _default_jobs() -> int:
    return max(1, min(2, (os.cpu_count() or 1)))


def _on_report(r) -> None:
    mark = "[green]✓[/green]" if r.ok else "[red]✗[/red]"
    console.print(f"{mark} {r.id:<44} {r.seconds:6.1f} s   {r.exercises} exercises, {r.variants} variants")
    for p in r.problems:
        console.print(f"    [red]-[/red] {p}", soft_wrap=True)


def _summary(course_problems, reports) -> int:
    for p in course_problems:
        console.print(f"[red]✗[/red] {p}", soft_wrap=True)
    bad = sum(not r.ok for r in reports)
    console.print(f"{len(reports) - bad}/{len(reports)} chapters valid"
                  + (f"; {len(course_problems)} course problem(s)" if course_problems else ""))
    return 1 if bad or course_problems else 0


def cmd_validate(args, config: Config) -> int:
    from .validate import validate

    with console.status("validating chapters…"):
        course_problems, reports = validate(config, args.chapters or None, jobs=args.jobs,
                                            execute=not args.static, on_report=_on_report)
    if args.times and reports:
        table = Table(title="Validation time per chapter (one run + stub + every variant)")
        table.add_column("chapter")
        table.add_column("seconds", justify="right")
        table.add_column("< 60 s", justify="center")
        for r in reports:
            table.add_row(r.id, f"{r.seconds:.1f}", "yes" if r.seconds < 60 else "[red]no[/red]")
        table.add_row("total", f"{sum(r.seconds for r in reports):.1f}", "")
        console.print(table)
    return _summary(course_problems, reports)


def cmd_mutants(args, config: Config) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from .mutants import COURSE_MIN, SUMMARY_FILE, check, count_mutants, run_mutants
    from .validate import resolve_chapters
    from .manifest import load_manifest

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


def cmd_release(args, config: Config) -> int:
    from .release import release

    with console.status("generating the student release with nbgrader…"):
        r = release(config, check=args.check)
    for p in r.problems:
        console.print(f"[red]✗[/red] {p}", soft_wrap=True)
    if r.problems:
        console.print("release failed; release/ was left as it was")
        return 1
    if args.check:
        for f in r.stale:
            console.print(f"[red]stale:[/red] release/{f}")
        console.print("release/ is up to date" if not r.stale else
                      f"release/ is stale ({len(r.stale)} file(s)): run `jaxpath release`")
        return 1 if r.stale else 0
    console.print(f"released {len(r.files)} file(s) into release/, no solution, hidden test or variant in them")
    return 0


def cmd_appendix(args, config: Config) -> int:
    from .appendix import appendix

    r = appendix(config, args.chapters or None)
    for p in r.problems:
        console.print(f"[red]✗[/red] {p}", soft_wrap=True)
    for w in r.written:
        console.print(f"wrote {w.relative_to(config.root)}")
    return 1 if r.problems else 0


def cmd_path(args, config: Config) -> int:
    from .path import write_learning_path

    out, current = write_learning_path(config, check=args.check)
    if args.check:
        console.print(f"{out.name} is up to date" if current else f"{out.name} is stale: run `jaxpath path`")
        return 0 if current else 1
    console.print(f"wrote {out.name}")
    return 0


def cmd_build(args, config: Config) -> int:
    from .build import build

    with console.status("building…") as status:
        r = build(config, jobs=args.jobs, on_step=lambda s: status.update(f"{s}…"), on_report=_on_report)
    rc = _summary(r.course_problems, r.chapters)
    if rc:
        console.print("build stopped: nothing was released")
        return rc
    for p in (r.release.problems if r.release else []):
        console.print(f"[red]✗[/red] {p}", soft_wrap=True)
    if r.release and r.release.ok:
        console.print(f"release/: {len(r.release.files)} file(s)")
    if r.appendix:
        for p in r.appendix.problems:
            console.print(f"[red]✗[/red] {p}", soft_wrap=True)
        console.print(f"appendix and self-study editions: {len(r.appendix.written)} notebook(s) in build/")
    if r.learning_path:
        console.print(f"learning path: {r.learning_path}")
    return 0 if r.ok else 1


def cmd_site(args, config: Config) -> int:
    from .site import build_site

    with console.status("building the course site…") as status:
        r = build_site(config, out=args.out, jobs=args.jobs, on_step=lambda s: status.update(f"site: {s}…"))
    for w in r.warnings:
        console.print(f"[red]✗[/red] sphinx: {w}", soft_wrap=True)
    for p in r.problems:
        console.print(f"[red]✗[/red] {p}", soft_wrap=True)
    console.print(f"{r.pages} page(s), {len(r.chapters)} chapter(s) in {r.seconds:.1f} s (generate "
                  f"{r.generate_seconds:.1f} s, sphinx {r.sphinx_seconds:.1f} s, checks {r.check_seconds:.1f} s)")
    if not r.ok:
        console.print(f"site build failed: {len(r.warnings)} warning(s), {len(r.problems)} problem(s)")
        return 1
    console.print(f"open {r.index} (no server needed), or: python -m http.server -d {r.out}")
    return 0


def cmd_grade(args, config: Config) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from .grade import GradeError, Limits, SandboxUnavailable, grade

    limits = Limits(cell_timeout=args.cell_timeout, notebook_timeout=args.notebook_timeout, memory_mb=args.memory_mb)
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
        if st.status != "graded":
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
        color = "green" if st.status == "graded" else "yellow"
        table.add_row(st.student, st.notebook, f"[{color}]{st.status}[/{color}]", score,
                      "" if st.seconds is None else f"{st.seconds:.1f}", st.reason)
    console.print(table)
    counts = report.by_status()
    console.print(", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "nothing to grade")
    return 0


def cmd_feedback(args, config: Config) -> int:
    from .feedback import feedback

    r = feedback(config, args.part, students=args.student, db_url=args.db)
    console.print(f"wrote {len(r.written)} feedback page(s) under feedback/*/{args.part}/ (hidden tests removed), "
                  f"ready for `nbgrader release_feedback {args.part}`")
    for note in r.notes:
        console.print(f"[yellow]note[/yellow] {note}", soft_wrap=True)
    for p in r.problems:
        console.print(f"[red]✗[/red] {p}", soft_wrap=True)
    return 1 if r.problems else 0


def cmd_export(args, config: Config) -> int:
    from .export import export

    r = export(config, args.part, output=args.output, canvas_output=args.canvas_output,
               canvas_column=args.canvas_column, db_url=args.db)
    console.print(f"{r.rows} student(s): {r.csv_path} (nbgrader's columns + status), {r.canvas_path} (Canvas import)")
    return 0


def cmd_report(args, config: Config) -> int:
    from .report import report

    r = report(config, args.part, output=args.output, db_url=args.db)
    console.print(f"report on {r.students} student(s), {r.notebooks} notebook(s): {r.path}")
    return 0


def cmd_sample(args, config: Config) -> int:
    from .grade import sandbox_problem
    from .report import report
    from .sample import make_sample_class

    dest = config.build / "sample-class"
    console.print(f"[bold]A sample class[/bold]: six synthetic students on {', '.join(args.chapters)}, graded in a "
                  f"scratch copy of the course ({dest.relative_to(config.root)})")
    sample = make_sample_class(config, dest, tuple(args.chapters))
    no_sandbox = bool(sandbox_problem())
    if no_sandbox:
        console.print(f"[yellow]no sandbox here ({sandbox_problem()}): grading the sample class without isolation[/yellow]")
    sub_args = ["--root", str(dest), "grade", sample.part, "--cell-timeout", str(args.cell_timeout)]
    rc = main(sub_args + (["--no-sandbox"] if no_sandbox else []))
    if rc:
        return rc
    r = report(Config.load(dest), sample.part)
    console.print(f"class report: {r.path}")
    return 0


def cmd_check(args, config: Config) -> int:
    from .check import check

    rc = 0
    for path in args.notebooks:
        try:
            r = check(Path(path), timeout=args.timeout)
        except ChapterError as e:
            console.print(f"[red]✗[/red] {e}")
            rc = 1
            continue
        console.print(f"[bold]{path}[/bold] ({r.seconds:.1f} s)")
        for res in r.results:
            mark = "[green]✓ passes[/green]" if res.passed else "[red]✗ fails[/red]"
            console.print(f"  {mark}  {res.title or res.grade_id}  [dim]({res.grade_id}, {res.points:g} pt)[/dim]")
            if not res.passed:
                console.print(f"           {res.message}")
        for err in r.errors:
            console.print(f"  [yellow]note[/yellow] {err}")
        passed = sum(x.passed for x in r.results)
        console.print(f"  {passed}/{len(r.results)} self-checks pass")
        rc |= 0 if r.ok else 1
    return rc


def cmd_collect(args, config: Config) -> int:
    from .collect import CollectError, collect

    try:
        r = collect(Path(args.zip), args.part, Path(args.roster), config.root, source_dir=config.source_dir,
                    release_dir=config.release_dir)
    except CollectError as e:
        console.print(f"[red]error:[/red] {e}", soft_wrap=True)
        return 2
    students = sorted({s for s, _ in r.placed})
    console.print(f"placed {len(r.placed)} file(s) for {len(students)} student(s) under submitted/*/{args.part}/")
    for d in r.duplicates:
        console.print(f"[yellow]{len(d.dropped) + 1} files[/yellow] for {d.student}/{args.part}/{d.file}: kept "
                      f"{d.kept} (the newest), not placed {', '.join(d.dropped)}")
    for entry, why in r.unplaced:
        console.print(f"[yellow]not placed[/yellow] {entry}: {why}")
    return 1 if r.unplaced else 0


def _setup_logging(verbose: int) -> None:
    """One handler for jaxpath's loggers, on the console the progress bars use, so a warning is printed
    above a live bar instead of through it."""
    import logging

    from rich.logging import RichHandler

    log = logging.getLogger("jaxpath")
    for h in list(log.handlers):
        log.removeHandler(h)
    handler = RichHandler(console=console, show_time=False, show_path=verbose > 1, markup=False)
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING)
    log.propagate = False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jaxpath", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=None, help="the course directory (default: the current directory)")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="count", default=0,
                        help="say more: -v what each step does, -vv everything (debug)")
    gradebook = argparse.ArgumentParser(add_help=False)
    gradebook.add_argument("--db", default=None, help="gradebook URL (default: the course's, from nbgrader_config.py)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("validate", parents=[common], help="execute chapters; check exercises against the stub and the variants")
    p.add_argument("chapters", nargs="*", help="chapter ids (basics/02_jit), names (02_jit) or parts (basics)")
    p.add_argument("-j", "--jobs", type=int, default=_default_jobs(), help="chapters validated in parallel")
    p.add_argument("--static", action="store_true", help="only the checks that need no kernel")
    p.add_argument("--times", action="store_true", help="print a table of validation time per chapter")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("mutants", parents=[common],
                       help="mutation testing: mutants of every reference solution against its tests")
    p.add_argument("chapters", nargs="*", help="chapter ids (basics/02_jit), names (02_jit) or parts (basics)")
    p.add_argument("--jobs", type=int, default=_default_jobs(), help="chapters in parallel (default: %(default)s)")
    p.add_argument("--check", action="store_true",
                   help="run nothing: fail unless MUTANTS.md is current for every chapter and meets the bar")
    p.add_argument("--diffs", action="store_true", help="print the diff of every surviving mutant")
    p.add_argument("--times", action="store_true", help="print a table of time per chapter and the wall clock")
    p.set_defaults(func=cmd_mutants)

    p = sub.add_parser("release", parents=[common],
                       help="nbgrader generate_assignment for every part into release/, checked for leaks")
    p.add_argument("--check", action="store_true", help="only report whether release/ is current")
    p.set_defaults(func=cmd_release)

    p = sub.add_parser("appendix", parents=[common],
                       help="reference-solutions appendix and self-study edition of validated chapters")
    p.add_argument("chapters", nargs="*")
    p.set_defaults(func=cmd_appendix)

    p = sub.add_parser("path", parents=[common], help="generate LEARNING_PATH.md from the manifest and the section tags")
    p.add_argument("--check", action="store_true", help="only report whether LEARNING_PATH.md is current")
    p.set_defaults(func=cmd_path)

    p = sub.add_parser("build", parents=[common], help="validate, release, appendix and path")
    p.add_argument("-j", "--jobs", type=int, default=_default_jobs())
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("site", parents=[common],
                       help="the course site (Sphinx + MyST-NB) from the executed chapters, into build/site/")
    p.add_argument("--out", type=Path, default=None, help="the site folder (default: build/site/)")
    p.add_argument("-j", "--jobs", type=int, default=_default_jobs(), help="Sphinx processes")
    p.set_defaults(func=cmd_site)

    p = sub.add_parser("grade", parents=[common, gradebook],
                       help="autograde submissions in parallel, isolated, resumable (Dask workers)")
    p.add_argument("part", help="the assignment (nbgrader assignment id), e.g. basics")
    p.add_argument("--student", nargs="+", help="only these students")
    p.add_argument("--notebook", nargs="+", help="only these notebooks (names without .ipynb)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, default=None, help="local Dask workers (default: one per core)")
    where.add_argument("--scheduler", default=None, help="address of an existing Dask scheduler (tcp://host:port)")
    p.add_argument("--force", action="store_true", help="regrade notebooks that did not change")
    p.add_argument("--no-sandbox", action="store_true",
                   help="run student code WITHOUT isolation (only where a sandbox cannot be built)")
    p.add_argument("--cell-timeout", type=int, default=120, help="seconds per cell")
    p.add_argument("--notebook-timeout", type=int, default=900, help="seconds per notebook")
    p.add_argument("--memory-mb", type=int, default=3072, help="memory per notebook, its files included")
    p.add_argument("--lock-timeout", type=float, default=120.0,
                   help="seconds to wait while another process holds the gradebook locked, then stop with an error")
    p.add_argument("--no-compile-cache", action="store_true",
                   help="do not warm a shared (read-only) JAX compilation cache with the reference solutions")
    p.set_defaults(func=cmd_grade)

    p = sub.add_parser("feedback", parents=[common, gradebook], help="HTML feedback per student, hidden tests never shown")
    p.add_argument("part")
    p.add_argument("--student", nargs="+")
    p.set_defaults(func=cmd_feedback)

    p = sub.add_parser("export", parents=[common, gradebook],
                       help="grades CSV (nbgrader's columns + status) and a Canvas gradebook CSV")
    p.add_argument("part")
    p.add_argument("--output", type=Path, default=None, help="default: grades-PART.csv")
    p.add_argument("--canvas-output", type=Path, default=None, help="default: grades-PART-canvas.csv")
    p.add_argument("--canvas-column", default=None, help='Canvas assignment column, e.g. "Basics (12345)"')
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("report", parents=[common, gradebook], help="HTML report with plots on how the class did")
    p.add_argument("part")
    p.add_argument("--output", type=Path, default=None, help="default: build/reports/PART.html")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("sample", parents=[common], help="grade a small synthetic class in a scratch copy of the course")
    p.add_argument("--chapters", nargs="+", default=["basics/01_introduction", "basics/02_jit"])
    p.add_argument("--cell-timeout", type=int, default=20)
    p.set_defaults(func=cmd_sample)

    p = sub.add_parser("check", parents=[common],
                       help="run a notebook like nbgrader's Validate; exit 1 unless every self-check passes")
    p.add_argument("notebooks", nargs="+")
    p.add_argument("--timeout", type=int, default=120, help="seconds per cell")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("collect", parents=[common], help="put an LMS zip of submissions into submitted/, mapped by a roster")
    p.add_argument("zip")
    p.add_argument("part")
    p.add_argument("--roster", required=True, help="CSV with columns student_id, lms_id (and optionally name)")
    p.set_defaults(func=cmd_collect)

    args = parser.parse_args(argv)
    _setup_logging(args.verbose)
    try:
        config = Config.load(args.root)
        return args.func(args, config)
    except JaxpathError as e:
        console.print(f"[red]error:[/red] {e.args[0] if e.args else e}", soft_wrap=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
