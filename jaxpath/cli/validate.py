"""`jaxpath validate`: execute chapters and check each exercise against its stub and variants."""
from __future__ import annotations

from rich.table import Table

from ..config import Config
from ._console import console, default_jobs, on_report, summary


def register(sub, parents) -> None:
    p = sub.add_parser("validate", parents=[parents.common],
                       help="execute chapters; check exercises against the stub and the variants")
    p.add_argument("chapters", nargs="*", help="chapter ids (basics/02_jit), names (02_jit) or parts (basics)")
    p.add_argument("-j", "--jobs", type=int, default=default_jobs(), help="chapters validated in parallel")
    p.add_argument("--static", action="store_true", help="only the checks that need no kernel")
    p.add_argument("--times", action="store_true", help="print a table of validation time per chapter")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..authoring.validate import validate

    with console.status("validating chapters…"):
        course_problems, reports = validate(config, args.chapters or None, jobs=args.jobs,
                                            execute=not args.static, on_report=on_report)
    if args.times and reports:
        table = Table(title="Validation time per chapter (one run + stub + every variant)")
        table.add_column("chapter")
        table.add_column("seconds", justify="right")
        table.add_column("< 60 s", justify="center")
        for r in reports:
            table.add_row(r.id, f"{r.seconds:.1f}", "yes" if r.seconds < 60 else "[red]no[/red]")
        table.add_row("total", f"{sum(r.seconds for r in reports):.1f}", "")
        console.print(table)
    return summary(course_problems, reports)
