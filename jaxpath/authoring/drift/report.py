"""The drift report: an HTML page (templates/drift.html.j2, every finding with its place, prose and diff) and a
short text summary, both named after the side stack (reports/drift/jax-0.11.2.{html,txt})."""
from __future__ import annotations

from pathlib import Path

from ...files import write_atomic
from .compare import SEVERITY
from .run import DriftResult


def stack_text(stamp: dict) -> str:
    keys = ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "numpy")
    return ", ".join(f"{k} {stamp[k]}" for k in keys if k in stamp) + (f", Python {stamp['python']}"
                                                                         if "python" in stamp else "")


def _wall(result: DriftResult) -> str:
    if result.executed_seconds is None:
        return "compared again without executing (each chapter's side run time below)"
    return f"executed in {result.executed_seconds:.0f} s wall ({result.jobs} chapters in parallel)"


def _stamps(result: DriftResult) -> tuple[str, str]:
    pinned = next((c.pinned_stamp for c in result.chapters if c.pinned_stamp), {})
    side = next((c.side_stamp for c in result.chapters if c.side_stamp), {}) or result.env.versions
    return stack_text(pinned), stack_text(side)


def render_html(result: DriftResult, command: str) -> str:
    from ...templates import template

    pinned, side = _stamps(result)
    return template("drift.html.j2").render(
        side_label=result.env.label, side_stack=side, pinned_stack=pinned, chapters=result.chapters,
        wall=_wall(result), compare_seconds=result.compare_seconds, broken=result.broken,
        command=command, severities=list(SEVERITY.items()), totals={s: result.count(s) for s in SEVERITY})


def _cut(line: str, other: str, width: int = 150) -> str:
    """A long diff line cut to `width` around where it first differs from its counterpart."""
    if len(line) <= width:
        return line
    same = next((i for i, (a, b) in enumerate(zip(line[1:], other[1:])) if a != b), min(len(line), len(other)) - 1)
    start = max(0, same - width // 3)
    text = line[1:][start:start + width - 2]
    return line[0] + ("…" if start else "") + text + ("…" if start + width - 2 < len(line) - 1 else "")


def _shown(diff: str, lines: int = 4) -> list[str]:
    """The first changed lines of a diff, each cut around its change."""
    changed = [l for l in diff.splitlines() if l[:1] in "+-"][:lines]
    minus, plus = [l for l in changed if l[0] == "-"], [l for l in changed if l[0] == "+"]
    out = []
    for l in changed:
        mine, theirs = (minus, plus) if l[0] == "-" else (plus, minus)
        k = mine.index(l)
        out.append(_cut(l, theirs[k] if k < len(theirs) else ""))
    return out


def render_text(result: DriftResult, command: str) -> str:
    """The summary: counts per severity and chapter, then one line per finding (each diff's first lines)."""
    pinned, side = _stamps(result)
    out = [f"Upgrade drift: {side}", f"  against the pinned build: {pinned}",
           f"  {len(result.chapters)} chapters, {_wall(result)}, comparison {result.compare_seconds:.2f} s",
           f"  regenerate: {command}", ""]
    out.append("  ".join(f"{s}: {result.count(s)} {name}" for s, name in SEVERITY.items()))
    out.append("")
    width = max([len(c.id) for c in result.chapters] + [8])
    out.append(f"{'chapter':<{width}}  " + "  ".join(f"{s:>3}" for s in SEVERITY) + "  side run")
    for c in result.chapters:
        out.append(f"{c.id:<{width}}  " + "  ".join(f"{c.count(s) or '':>3}" for s in SEVERITY)
                   + f"  {c.seconds:5.0f} s" + ("" if c.baseline == "build/executed" else f"  (pinned {c.baseline})"))
    for s, name in SEVERITY.items():
        fs = [f for f in result.findings if f.severity == s]
        if not fs:
            continue
        out += ["", f"{s}. {name.capitalize()} ({len(fs)})"]
        for f in fs:
            out.append(f"- {f.where} · {f.section}: {f.kind}" + (f": {f.message}" if s <= 2 or not f.diff else ""))
            out += [f"    {line}" for line in _shown(f.diff)]
            if f.claim:
                claim = f"    the prose states a version-specific fact: {f.claim}"
                out.append(claim if len(claim) <= 220 else claim[:219] + "…")
    if not result.findings:
        out += ["", "No finding: the course reads and grades the same on this stack."]
    return "\n".join(out) + "\n"


def write_reports(result: DriftResult, out_dir: Path, command: str) -> tuple[Path, Path]:
    """reports/drift/<label>.html and .txt, written atomically."""
    html, txt = Path(out_dir) / f"{result.env.label}.html", Path(out_dir) / f"{result.env.label}.txt"
    write_atomic(html, render_html(result, command))
    write_atomic(txt, render_text(result, command))
    return html, txt
