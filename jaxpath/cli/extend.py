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
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..extend import extend

    r = extend(config, args.part, args.student, hours=args.hours, days=args.days, db_url=args.db)
    if r.extension is None:
        console.print(f"{r.student}: no extension on {r.part} (removed)")
    else:
        console.print(f"{r.student}: {r.part} extended by {r.extension}" + (f", due {r.due} UTC" if r.due else ""))
    console.print(f"run `jaxpath grade {r.part} --student {r.student}` to apply it to the late penalty")
    return 0
