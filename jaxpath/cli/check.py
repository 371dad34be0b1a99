"""`jaxpath check`: the learner's self-check of a notebook, as nbgrader's Validate runs it; the verdicts are
recorded in the learner's work folder, where `jaxpath progress` and `jaxpath serve` find them."""
from __future__ import annotations

from pathlib import Path

from rich.markup import escape

from ..config import Config
from ..problems import ChapterError
from ._console import console


def register(sub, parents) -> None:
    p = sub.add_parser("check", parents=[parents.common],
                       help="run a notebook like nbgrader's Validate; exit 1 unless every self-check passes")
    p.add_argument("notebooks", nargs="+", help="<work folder>/<part>/<chapter>.ipynb")
    p.add_argument("--timeout", type=int, default=120, help="seconds per cell")
    p.add_argument("--no-record", action="store_true",
                   help="do not record the verdicts in <work folder>/.jaxpath/progress.json")
    p.set_defaults(func=run)


def run(args, config: Config) -> int:
    from ..learner.check import check

    rc = 0
    for path in args.notebooks:
        # the course's own release/ is the published student version, not anyone's work folder
        record = not args.no_record and not Path(path).resolve().is_relative_to(config.release.resolve())
        try:
            r = check(Path(path), timeout=args.timeout, record=record)
        except ChapterError as e:
            console.print(f"[red]✗[/red] {escape(str(e))}")
            rc = 1
            continue
        console.print(f"[bold]{escape(str(path))}[/bold] ({r.seconds:.1f} s)")
        for res in r.results:
            mark = "[green]✓ passes[/green]" if res.passed else "[red]✗ fails[/red]"
            # what the notebook says is text, never markup: "table[idx]" stays "table[idx]"
            console.print(f"  {mark}  {escape(res.title or res.grade_id)}  "
                          f"[dim]({escape(res.grade_id)}, {res.points:g} pt)[/dim]")
            colour = {"✓": "green", "✗": "red"}
            for o in res.requirements:
                tail = f": {escape(o.message)}" if o.message else ""
                console.print(f"           [{colour.get(o.mark, 'dim')}]{o.mark}[/] {o.rid} "
                              f"[dim]({o.points:g} pt)[/dim]{tail}")
            if not res.passed and not any(o.mark == "✗" for o in res.requirements):
                console.print(f"           {escape(res.message)}")
        for err in r.errors:
            console.print(f"  [yellow]note[/yellow] {escape(str(err))}")
        passed = sum(x.passed for x in r.results)
        console.print(f"  {passed}/{len(r.results)} self-checks pass")
        if r.recorded:
            console.print(f"  [dim]recorded in {r.recorded} (see `jaxpath progress {r.recorded.parent.parent}`)[/dim]")
        rc |= 0 if r.ok else 1
    return rc
