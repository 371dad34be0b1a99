"""`jaxpath drift`: the course on another JAX stack, compared cell by cell with the pinned build."""
from __future__ import annotations

import shlex

from ..config import Config
from ._console import console, default_jobs

MARK = {1: "[red]1[/red]", 2: "[red]2[/red]", 3: "[yellow]3[/yellow]", 4: "[blue]4[/blue]"}


def register(sub, parents) -> None:
    p = sub.add_parser("drift", parents=[parents.common],
                       help="execute the course on another JAX stack and report every output and claim that changed")
    p.add_argument("chapters", nargs="*", help="chapter ids (basics/02_jit), names (02_jit) or parts (default: all)")
    side = p.add_mutually_exclusive_group(required=True)
    side.add_argument("--with", dest="pins", metavar="PINS",
                      help="pins that replace the lock's, e.g. 'jax==0.11.2 jaxlib==0.11.2' (the side environment is "
                           "built once, cached under ~/.cache/jaxpath/drift/)")
    side.add_argument("--python", metavar="PATH", help="an existing environment's python (it needs ipykernel)")
    p.add_argument("-j", "--jobs", type=int, default=default_jobs(), help="chapters executed in parallel")
    p.add_argument("--out", default=None, help="folder of the reports (default: reports/drift)")
    p.add_argument("--compare-only", action="store_true",
                   help="execute nothing: compare the side runs the last drift left in build/drift/ again")
    p.set_defaults(func=run)


def _command(args) -> str:
    words = ["jaxpath", "drift", *args.chapters]
    words += ["--with", args.pins] if args.pins else ["--python", args.python]
    return " ".join(shlex.quote(w) for w in words)


def run(args, config: Config) -> int:
    from ..authoring.drift.env import existing_python, parse_pins, side_env
    from ..authoring.drift.report import write_reports
    from ..authoring.drift.run import drift

    if args.pins:
        env = side_env(config.root / "requirements.txt", parse_pins(args.pins), log=console.print)
    else:
        env = existing_python(args.python)
    console.print(f"side stack: {env.label} ({env.python})")

    def on_chapter(c) -> None:
        counts = " ".join(f"{MARK[s]}:{c.count(s)}" for s in (1, 2, 3, 4) if c.count(s))
        mark = "[red]✗[/red]" if any(f.severity <= 2 for f in c.findings) else "[green]✓[/green]"
        console.print(f"{mark} {c.id:<44} {c.seconds:6.1f} s   {counts or 'no change'}")

    with console.status(f"executing chapters on {env.label}…"):
        result = drift(config, env, args.chapters or None, jobs=args.jobs, on_chapter=on_chapter,
                       compare_only=args.compare_only)
    out = config.root / (args.out or "reports/drift")
    html, txt = write_reports(result, out, _command(args))
    console.print(f"{len(result.chapters)} chapters in {result.seconds:.0f} s: "
                  + ", ".join(f"{result.count(s)} of severity {s}" for s in (1, 2, 3, 4)))
    console.print(f"reports: {html.relative_to(config.root) if html.is_relative_to(config.root) else html}, "
                  f"{txt.relative_to(config.root) if txt.is_relative_to(config.root) else txt}")
    return 1 if result.broken else 0
