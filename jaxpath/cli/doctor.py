"""`jaxpath doctor`: what this host gives for isolating student code and the level `jaxpath grade` uses here."""
from __future__ import annotations

import json

from rich.table import Table

from ..config import Config
from ._console import console


def register(sub, parents) -> None:
    p = sub.add_parser("doctor", parents=[parents.common],
                       help="what this host gives for isolating student code, and the level grading uses here")
    p.add_argument("--isolation", default=None, metavar="LEVEL",
                   help="check one level instead of the best (e.g. root+rlimits, rootless+rlimits)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..grade.doctor import doctor

    r = doctor(args.isolation)
    if args.json:
        console.print_json(json.dumps(r.to_dict()))
        return 0 if r.ok else 1
    table = Table(title="what this host gives")
    for col in ("", "check", "detail"):
        table.add_column(col)
    for c in r.checks:
        table.add_row("[green]✓[/green]" if c.ok else "[yellow]✗[/yellow]", c.name, c.detail)
    console.print(table)
    if r.ok:
        console.print(f"isolation level: [bold]{r.level.name}[/bold] ({r.level.describe()})")
    else:
        console.print(f"[red]no isolation[/red]: {r.problem}")
        console.print("`jaxpath grade` refuses here unless given --no-sandbox (student code then runs as you)")
    for hint in r.raise_by:
        console.print(f"to raise it: {hint}")
    return 0 if r.ok else 1
