"""`jaxpath appendix`: the reference-solutions appendix and the self-study edition."""
from __future__ import annotations

from ..config import Config
from ._console import console


def register(sub, parents) -> None:
    p = sub.add_parser("appendix", parents=[parents.common],
                       help="reference-solutions appendix and self-study edition of validated chapters")
    p.add_argument("chapters", nargs="*")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..authoring.appendix import appendix

    r = appendix(config, args.chapters or None)
    for p in r.problems:
        console.print(f"[red]✗[/red] {p}", soft_wrap=True)
    for w in r.written:
        console.print(f"wrote {w.relative_to(config.root)}")
    return 1 if r.problems else 0
