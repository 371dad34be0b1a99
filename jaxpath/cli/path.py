"""`jaxpath path`: LEARNING_PATH.md from the manifest and the section tags."""
from __future__ import annotations

from ..config import Config
from ._console import console


def register(sub, parents) -> None:
    p = sub.add_parser("path", parents=[parents.common], help="generate LEARNING_PATH.md from the manifest and the section tags")
    p.add_argument("--check", action="store_true", help="only report whether LEARNING_PATH.md is current")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..authoring.path import write_learning_path

    out, current = write_learning_path(config, check=args.check)
    if args.check:
        console.print(f"{out.name} is up to date" if current else f"{out.name} is stale: run `jaxpath path`")
        return 0 if current else 1
    console.print(f"wrote {out.name}")
    return 0
