"""`jaxpath progress [FOLDER]`: the 12 track chapters for a work folder, earned by passing self-checks."""
from __future__ import annotations

from pathlib import Path

from ..config import Config
from ._console import console

MARKS = {"earned": "[green]✓ earned[/green]", "in progress": "[yellow]◐ in progress[/yellow]",
         "not started": "[dim]· not started[/dim]"}


def register(sub, parents) -> None:
    p = sub.add_parser("progress", parents=[parents.common],
                       help="the track chapters a work folder has earned (from `jaxpath check`'s records)")
    p.add_argument("folder", nargs="?", type=Path, default=Path("."),
                   help="the work folder, holding one folder per part (default: the current folder)")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..learner.progress import progress

    p = progress(config, args.folder)
    console.print(f"[bold]Progress in {p.work}[/bold]: {p.earned}/{len(p.tracks)} track chapters earned")
    for t in p.tracks:
        line = f"  {t.number:2d} · {t.title:<18s} {MARKS[t.state]:<34s} core {t.core_done}/{t.core_total}"
        if t.next is not None:
            line += f"   next: {p.labels.get(t.next.chapter, t.next.chapter)}, {t.next.title}"
        console.print(line)
    for cid in p.stale:
        console.print(f"  [yellow]note[/yellow] the record of {cid} is from another version of the chapter: "
                      "run `jaxpath check` on it again")
    return 0
