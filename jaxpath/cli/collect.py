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
    p.add_argument("--zone", default="UTC",
                   help="the time zone of the zip's times, an IANA name such as America/New_York: a zip keeps the "
                        "local time of the LMS server that wrote it, without a zone (default: %(default)s)")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..classroom.collect import CollectError, collect

    try:
        r = collect(Path(args.zip), args.part, Path(args.roster), config.root, source_dir=config.source_dir,
                    release_dir=config.release_dir, zone=args.zone, due=_due(config, args.part))
    except CollectError as e:
        console.print(f"[red]error:[/red] {e}", soft_wrap=True)
        return 2
    students = sorted({s for s, _ in r.placed})
    console.print(f"placed {len(r.placed)} file(s) for {len(students)} student(s) under submitted/*/{args.part}/ "
                  f"(the zip's times read in {r.zone}, time stamps written in UTC)")
    if r.lms_late:
        console.print(f"Canvas marks {len(r.lms_late)} submission(s) late: {', '.join(r.lms_late)}")
    for line in r.disagree:
        console.print(f"[yellow]check --zone[/yellow] {line}", soft_wrap=True)
    for d in r.duplicates:
        console.print(f"[yellow]{len(d.dropped) + 1} files[/yellow] for {d.student}/{args.part}/{d.file}: kept "
                      f"{d.kept} (the newest), not placed {', '.join(d.dropped)}")
    for entry, why in r.unplaced:
        console.print(f"[yellow]not placed[/yellow] {entry}: {why}")
    return 1 if r.unplaced or r.disagree else 0


def _due(config: Config, part: str):
    """The part's due date in the gradebook (UTC, naive), or None (no gradebook, no assignment, no date)."""
    from ..classroom.inbound import due_date

    try:
        return due_date(config.coursedir().db_url, part)
    except Exception:  # no gradebook yet: nothing to compare with
        return None
