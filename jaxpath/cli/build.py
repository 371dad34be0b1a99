"""`jaxpath build`: validate, release, appendix and path in one go."""
from __future__ import annotations

from ..config import Config
from ._console import console, default_jobs, on_report, summary


def register(sub, parents) -> None:
    p = sub.add_parser("build", parents=[parents.common], help="validate, release, appendix and path")
    p.add_argument("-j", "--jobs", type=int, default=default_jobs())
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..authoring.build import build

    with console.status("building…") as status:
        r = build(config, jobs=args.jobs, on_step=lambda s: status.update(f"{s}…"), on_report=on_report)
    rc = summary(r.course_problems, r.chapters)
    if rc:
        console.print("build stopped: nothing was released")
        return rc
    for p in (r.release.problems if r.release else []):
        console.print(f"[red]✗[/red] {p}", soft_wrap=True)
    if r.release and r.release.ok:
        console.print(f"release/: {len(r.release.files)} file(s)")
    if r.appendix:
        for p in r.appendix.problems:
            console.print(f"[red]✗[/red] {p}", soft_wrap=True)
        console.print(f"appendix and self-study editions: {len(r.appendix.written)} notebook(s) in build/")
    if r.learning_path:
        console.print(f"learning path: {r.learning_path}")
    return 0 if r.ok else 1
