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
    p.add_argument("--check", action="store_true",
                   help="run nothing, write nothing; exit 1 naming each chapter whose committed proof (proofs/) is "
                        "stale or missing, and the inputs that changed")
    p.set_defaults(func=run)


def check(args, config: Config) -> int:
    from ..authoring.proofs import proof_state
    from ..authoring.validate import resolve_chapters
    from ..manifest import load_manifest, notebook_path

    ids = [c for c in resolve_chapters(load_manifest(config), args.chapters or None) if notebook_path(config, c).exists()]
    stale = [s for s in (proof_state(config, c) for c in ids) if not s.current]
    for s in stale:
        console.print(f"{s.chapter}: proof stale: {'; '.join(s.changed)}" if s.changed != ["no proof"]
                      else f"{s.chapter}: no proof", soft_wrap=True)
    if stale:
        console.print(f"run `jaxpath validate {' '.join(s.chapter for s in stale)}` and commit proofs/")
        return 1
    console.print(f"proofs are current ({len(ids)} chapters)")
    return 0


def run(args, config: Config) -> int:
    from ..authoring.validate import validate

    if args.check:
        return check(args, config)
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
