"""A thin command line over the jaxpath API. Defaults live in the API and in Config."""
from __future__ import annotations

import argparse
import sys

from rich.console import Console

from .config import Config
from .manifest import ManifestError

console = Console(stderr=False, highlight=False)


def _print_reports(course_problems, reports) -> int:
    bad = 0
    for p in course_problems:
        console.print(f"[red]✗[/red] {p}")
        bad += 1
    for r in reports:
        if not r.ok:
            bad += 1
    return 1 if bad else 0


def cmd_validate(args, config: Config) -> int:
    from .validate import validate

    def on_report(r):
        mark = "[green]✓[/green]" if r.ok else "[red]✗[/red]"
        console.print(f"{mark} {r.id}  {r.seconds:5.1f} s  {r.exercises} exercises, {r.variants} variants")
        for p in r.problems:
            console.print(f"    [red]-[/red] {p}", soft_wrap=True)

    with console.status("validating chapters…"):
        course_problems, reports = validate(config, args.chapters or None, jobs=args.jobs,
                                            execute=not args.static, on_report=on_report)
    rc = _print_reports(course_problems, reports)
    n_bad = sum(not r.ok for r in reports)
    console.print(f"{len(reports) - n_bad}/{len(reports)} chapters valid"
                  + (f", {len(course_problems)} course problem(s)" if course_problems else ""))
    return rc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="jaxpath", description=__doc__)
    parser.add_argument("--root", default=None, help="the course directory (default: the current directory)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("validate", help="execute chapters and check their exercises against stub and variants")
    p.add_argument("chapters", nargs="*", help="chapter ids (basics/02_jit), names (02_jit) or parts (basics)")
    p.add_argument("-j", "--jobs", type=int, default=1, help="chapters validated in parallel")
    p.add_argument("--static", action="store_true", help="only the checks that need no kernel")
    p.set_defaults(func=cmd_validate)

    args = parser.parse_args(argv)
    try:
        config = Config.load(args.root)
        return args.func(args, config)
    except (ManifestError, KeyError) as e:
        console.print(f"[red]error:[/red] {e.args[0] if e.args else e}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
