"""`jaxpath sample`: grade a small synthetic class in a scratch copy of the course."""
from __future__ import annotations

from ..config import Config
from ._console import console


def register(sub, parents) -> None:
    from ..classroom.sample import SAMPLE_CHAPTERS

    p = sub.add_parser("sample", parents=[parents.common],
                       help="grade a small synthetic class in a scratch copy of the course")
    p.add_argument("--chapters", nargs="+", default=list(SAMPLE_CHAPTERS), help="default: %(default)s")
    p.add_argument("--cell-timeout", type=int, default=20)
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..classroom.feedback import feedback
    from ..classroom.report import report
    from ..classroom.sample import make_sample_class
    from ..grade import sandbox_problem
    from . import main

    dest = config.build / "sample-class"
    sample = make_sample_class(config, dest, tuple(args.chapters))
    console.print(f"[bold]A sample class[/bold]: {len(sample.students)} synthetic students on {', '.join(args.chapters)}, "
                  f"graded in a scratch copy of the course ({dest.relative_to(config.root)})")
    no_sandbox = bool(sandbox_problem())
    if no_sandbox:
        console.print(f"[yellow]no sandbox here ({sandbox_problem()}): grading the sample class without isolation[/yellow]")
    sub_args = ["--root", str(dest), "grade", sample.part, "--cell-timeout", str(args.cell_timeout)]
    rc = main(sub_args + (["--no-sandbox"] if no_sandbox else []))
    if rc:
        return rc
    r = report(Config.load(dest), sample.part)
    console.print(f"class report: {r.path}")
    pages = feedback(Config.load(dest), sample.part)
    for problem in pages.problems:
        console.print(f"[yellow]{problem}[/yellow]")
    if pages.written:
        console.print(f"feedback pages: {len(pages.written)} in {pages.written[0].parents[2]}, e.g. {pages.written[0]}")
    return 1 if pages.problems else 0
