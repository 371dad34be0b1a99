"""`jaxpath export`: the grades as CSV (nbgrader's columns) and as a Canvas import."""
from __future__ import annotations

from pathlib import Path

from ..config import Config
from ._console import console


def register(sub, parents) -> None:
    p = sub.add_parser("export", parents=[parents.common, parents.gradebook],
                       help="grades CSV (nbgrader's columns + status) and a Canvas gradebook CSV")
    p.add_argument("part")
    p.add_argument("--output", type=Path, default=None, help="default: build/grades/grades-PART.csv (git-ignored)")
    p.add_argument("--canvas-output", type=Path, default=None, help="default: build/grades/grades-PART-canvas.csv")
    p.add_argument("--canvas-column", default=None, help='Canvas assignment column, e.g. "Basics (12345)"')
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..export import export

    r = export(config, args.part, output=args.output, canvas_output=args.canvas_output,
               canvas_column=args.canvas_column, db_url=args.db)
    console.print(f"{r.rows} student(s): {r.csv_path} (nbgrader's columns + status), {r.canvas_path} (Canvas import)")
    return 0
