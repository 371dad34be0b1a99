"""jaxpath: validate, release, publish and grade the JAX path course.

A thin command line over the jaxpath Python API; defaults live in the API and in Config.

Each command is a module of this package with `register(sub, parents)` (its parser, whose `func` default is
the module's `run(args, config) -> int`); `main` finds them all, so a new command is a new module."""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from dataclasses import dataclass

from ..config import Config
from ..errors import JaxpathError
from ._console import console

# The order of `jaxpath --help`: the authoring flow, then the learner's, then the grader's; a command not
# listed here comes after these, alphabetically.
ORDER = ("validate", "requirements", "mutants", "release", "appendix", "path", "build", "site", "check", "progress", "serve",
         "collect", "grade", "extend", "feedback", "export", "lti", "report", "similar", "clusters", "hub", "sample", "doctor",
         "drift", "platform")


@dataclass(frozen=True)
class Parents:
    """The parent parsers a command may take its shared options from."""
    common: argparse.ArgumentParser      # -v/--verbose: every command
    gradebook: argparse.ArgumentParser   # --db: the commands that read or write the gradebook


def commands() -> list[str]:
    """The command modules of this package, in help order."""
    found = {m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")}
    return [c for c in ORDER if c in found] + sorted(found - set(ORDER))


def _setup_logging(verbose: int) -> None:
    """One handler for jaxpath's loggers, on the console the progress bars use, so a warning is printed
    above a live bar instead of through it."""
    import logging

    from rich.logging import RichHandler

    log = logging.getLogger("jaxpath")
    for h in list(log.handlers):
        log.removeHandler(h)
    handler = RichHandler(console=console, show_time=False, show_path=verbose > 1, markup=False)
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING)
    log.propagate = False


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="jaxpath", description=__doc__.split("\n\n")[0],
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--root", default=None, help="the course directory (default: the current directory)")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="count", default=0,
                        help="say more: -v what each step does, -vv everything (debug)")
    gradebook = argparse.ArgumentParser(add_help=False)
    gradebook.add_argument("--db", default=None, help="gradebook URL (default: the course's, from nbgrader_config.py)")
    sub = top.add_subparsers(dest="command", required=True)
    parents = Parents(common, gradebook)
    for name in commands():
        importlib.import_module(f"{__name__}.{name}").register(sub, parents)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    _setup_logging(args.verbose)
    try:
        config = Config.load(args.root)
        return args.func(args, config)
    except JaxpathError as e:
        console.print(f"[red]error:[/red] {e.args[0] if e.args else e}", soft_wrap=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
