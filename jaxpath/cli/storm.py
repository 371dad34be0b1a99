"""`jaxpath storm`: the deadline minute of a whole class, on this machine, with real accounts (docs/storm.md)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..config import Config
from ._console import console


def register(sub, parents) -> None:
    p = sub.add_parser("storm", parents=[parents.common],
                       help="a class submitting in the same minute through the exchange, graders racing, faults; "
                            "the counts checked and reported (as root: it makes and removes accounts)")
    p.add_argument("--students", type=int, default=60, help="the class's size (default: %(default)s)")
    p.add_argument("--graders", type=int, default=2, help="graders at once on the gradebook (default: %(default)s)")
    p.add_argument("--faults", action="store_true",
                   help="kill the collector mid-copy, a grader mid-batch and PostgreSQL, then rerun")
    p.add_argument("--out", default=None, help="where the report goes (default: build/storm/ in the course)")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..classroom.storm import run_storm
    from ..classroom.storm.people import IN_VIEW, view_command
    from ..classroom.storm.run import StormError

    if os.geteuid() != 0:
        console.print("[red]error:[/red] the storm makes accounts and runs as each of them: run it as root (sudo)")
        return 2
    stand_in = Path(tempfile.mkdtemp(prefix="jaxpath-storm-view-"))
    try:
        wrapped = view_command([str(Path(sys.executable).parent / "jaxpath"), *sys.argv[1:]], stand_in)
        if wrapped is not None:  # the same command, in a namespace where every account can run this Python
            return subprocess.run(wrapped, env={**os.environ, IN_VIEW: "1"}).returncode
    finally:
        shutil.rmtree(stand_in, ignore_errors=True)
    out = Path(args.out) if args.out else config.root / "build" / "storm"
    try:
        numbers = run_storm(args.students, args.graders, faults=args.faults, out=out,
                            log=lambda m: console.print(m, soft_wrap=True))
    except StormError as e:
        console.print(f"[red]error:[/red] {e}", soft_wrap=True)
        return 2
    console.print((out / "report.txt").read_text(), end="")
    console.print(f"report: {out / 'report.txt'}, {out / 'report.json'}, plot: {out / 'storm.svg'}")
    return 0 if numbers else 1
