"""`jaxpath requirements`: render each exercise's requirement list into its statement; write REQUIREMENTS.md."""
from __future__ import annotations

from ..config import Config
from ._console import console


def register(sub, parents) -> None:
    p = sub.add_parser("requirements", parents=[parents.common],
                       help="render the requirement lists of variants/ into the statements and write REQUIREMENTS.md")
    p.add_argument("chapters", nargs="*", metavar="CHAPTER",
                   help="chapters whose statements to render (default: every chapter; the table always covers all)")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 when a statement or REQUIREMENTS.md is stale")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..authoring.requirements import write_requirements
    from ..authoring.validate import resolve_chapters
    from ..manifest import load_manifest

    ids = resolve_chapters(load_manifest(config), args.chapters) if args.chapters else None
    r = write_requirements(config, check=args.check, chapters=ids)
    if args.check:
        for cid in r.stale_statements:
            console.print(f"{cid}: a statement's requirement list differs from its variants file")
        if not r.table_current:
            console.print(f"{r.table.name} is stale")
        ok = not r.stale_statements and r.table_current
        console.print("requirements are current" if ok else "run `jaxpath requirements` to write them")
        return 0 if ok else 1
    for cid in r.stale_statements:
        console.print(f"rendered the requirement lists of {cid}")
    console.print(f"{r.table.name} {'unchanged' if r.table_current else 'written'}")
    return 0
