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
    p.add_argument("--roster", type=Path, default=None,
                   help="the roster CSV of `jaxpath collect` (student_id, lms_id, optionally name, sis_user_id, "
                        "sis_login_id, section): Canvas rows carry the LMS's ids")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..classroom.export import export

    r = export(config, args.part, output=args.output, canvas_output=args.canvas_output,
               canvas_column=args.canvas_column, db_url=args.db, roster=args.roster)
    console.print(f"{r.rows} student(s): {r.csv_path} (nbgrader's columns + status), {r.canvas_path} (Canvas import)")
    if r.not_in_roster:
        console.print(f"[yellow]not in the roster, left out of the Canvas file:[/yellow] {', '.join(r.not_in_roster)}")
        return 1
    return 0
