"""`jaxpath site`: the course site from the executed chapters."""
from __future__ import annotations

from pathlib import Path

from ..config import Config
from ._console import console, default_jobs


def register(sub, parents) -> None:
    p = sub.add_parser("site", parents=[parents.common],
                       help="the course site (Sphinx + MyST-NB) from the executed chapters, into build/site/")
    p.add_argument("--out", type=Path, default=None, help="the site folder (default: build/site/)")
    p.add_argument("--for-class", action="store_true",
                   help="the site a graded class may see, into build/site-class/: no solutions or self-study edition, "
                        "a launch button only onto [site] class_branch (release/ alone)")
    p.add_argument("-j", "--jobs", type=int, default=default_jobs(), help="Sphinx processes")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..learner.site import build_site

    with console.status("building the course site…") as status:
        r = build_site(config, out=args.out, jobs=args.jobs, for_class=args.for_class,
                       on_step=lambda s: status.update(f"site: {s}…"))
    for w in r.warnings:
        console.print(f"[red]✗[/red] sphinx: {w}", soft_wrap=True)
    for p in r.problems:
        console.print(f"[red]✗[/red] {p}", soft_wrap=True)
    console.print(f"{r.pages} page(s), {len(r.chapters)} chapter(s) in {r.seconds:.1f} s (generate "
                  f"{r.generate_seconds:.1f} s, sphinx {r.sphinx_seconds:.1f} s, checks {r.check_seconds:.1f} s)")
    if not r.ok:
        console.print(f"site build failed: {len(r.warnings)} warning(s), {len(r.problems)} problem(s)")
        return 1
    console.print(f"open {r.index} (no server needed), or with your earned progress: jaxpath serve --work FOLDER")
    return 0
