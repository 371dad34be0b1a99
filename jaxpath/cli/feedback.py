"""`jaxpath feedback`: HTML feedback per student, hidden tests never shown."""
from __future__ import annotations

from ..config import Config
from ._console import console


def register(sub, parents) -> None:
    p = sub.add_parser("feedback", parents=[parents.common, parents.gradebook],
                       help="HTML feedback per student, hidden tests never shown")
    p.add_argument("part")
    p.add_argument("--student", nargs="+")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..classroom.feedback import feedback

    r = feedback(config, args.part, students=args.student, db_url=args.db)
    console.print(f"wrote {len(r.written)} feedback page(s) under feedback/*/{args.part}/ (hidden tests removed), "
                  f"ready for `nbgrader release_feedback {args.part}`")
    for note in r.notes:
        console.print(f"[yellow]note[/yellow] {note}", soft_wrap=True)
    for p in r.problems:
        console.print(f"[red]✗[/red] {p}", soft_wrap=True)
    return 1 if r.problems else 0
