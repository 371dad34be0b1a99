"""`jaxpath report`: the class report (HTML, with plots)."""
from __future__ import annotations

from pathlib import Path

from ..config import Config
from ._console import console


def register(sub, parents) -> None:
    p = sub.add_parser("report", parents=[parents.common, parents.gradebook], help="HTML report with plots on how the class did")
    p.add_argument("part")
    p.add_argument("--output", type=Path, default=None, help="default: build/reports/PART.html")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..classroom.report import report

    r = report(config, args.part, output=args.output, db_url=args.db)
    console.print(f"report on {r.students} student(s), {r.notebooks} notebook(s): {r.path}")
    return 0
