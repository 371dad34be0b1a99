"""`jaxpath extend`: grant a student an extension on a part (nbgrader's per-submission extension)."""
from __future__ import annotations

from ..config import Config
from ._console import console


def register(sub, parents) -> None:
    p = sub.add_parser("extend", parents=[parents.common, parents.gradebook],
                       help="grant a student more time on a part; the next `jaxpath grade` recomputes the late penalty")
    p.add_argument("part")
    p.add_argument("student")
    p.add_argument("--hours", type=float, default=0)
    p.add_argument("--days", type=float, default=0)
    p.add_argument("--until", metavar="WHEN",
                   help='the student\'s own due date, with its zone: "2026-12-10 17:00 Europe/Berlin" or ISO 8601 '
                        "with an offset")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..classroom.extend import extend
    from ..manifest import parse_due

    until = parse_due(args.until, "--until") if args.until else None
    r = extend(config, args.part, args.student, hours=args.hours, days=args.days, until=until, db_url=args.db)
    if r.extension is None:
        console.print(f"{r.student}: no extension on {r.part} (removed)")
    else:
        console.print(f"{r.student}: {r.part} extended by {r.extension}" + (f", due {r.due} UTC" if r.due else ""))
    console.print(f"run `jaxpath grade {r.part} --student {r.student}` to apply it to the late penalty")
    return 0
