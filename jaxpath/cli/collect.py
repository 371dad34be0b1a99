"""`jaxpath collect`: an LMS zip of submissions into submitted/, mapped by a roster."""
from __future__ import annotations

from pathlib import Path

from ..config import Config
from ._console import console


def register(sub, parents) -> None:
    p = sub.add_parser("collect", parents=[parents.common],
                       help="put an LMS zip of submissions into submitted/, mapped by a roster")
    p.add_argument("zip")
    p.add_argument("part")
    p.add_argument("--roster", required=True, help="CSV with columns student_id, lms_id (and optionally name)")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..collect import CollectError, collect

    try:
        r = collect(Path(args.zip), args.part, Path(args.roster), config.root, source_dir=config.source_dir,
                    release_dir=config.release_dir)
    except CollectError as e:
        console.print(f"[red]error:[/red] {e}", soft_wrap=True)
        return 2
    students = sorted({s for s, _ in r.placed})
    console.print(f"placed {len(r.placed)} file(s) for {len(students)} student(s) under submitted/*/{args.part}/")
    for d in r.duplicates:
        console.print(f"[yellow]{len(d.dropped) + 1} files[/yellow] for {d.student}/{args.part}/{d.file}: kept "
                      f"{d.kept} (the newest), not placed {', '.join(d.dropped)}")
    for entry, why in r.unplaced:
        console.print(f"[yellow]not placed[/yellow] {entry}: {why}")
    return 1 if r.unplaced else 0
