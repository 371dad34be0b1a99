"""The storm's report: its numbers as text and JSON, and a plot of the minute (an SVG written here: each
submission as a bar from the moment it started to the moment `nbgrader submit` returned, late ones in another
colour, the due date, and the instructor's collect rounds beneath, with how many each took in)."""
from __future__ import annotations

import json
from pathlib import Path
from xml.sax.saxutils import escape


def text(numbers: dict, students: int, graders: int, faults: bool) -> str:
    lines = [f"the deadline storm: {students} students, {graders} graders"
             + (", faults: the collector killed mid-copy, a grader killed mid-batch, PostgreSQL killed and restarted"
                if faults else ", no faults")]
    width = max(len(k) for k in numbers)
    lines += [f"  {k:<{width}}  {v}" for k, v in numbers.items()]
    return "\n".join(lines) + "\n"


def svg(events: dict, due_at: float | None, width: int = 900) -> str:
    submits = sorted(events.get("submits", []))
    collects = events.get("collects", [])
    end = max([b for _, b, _ in submits] + [b for _, b, _ in collects] + [1.0])
    row, top, left = max(3, min(10, 360 // max(len(submits), 1))), 30, 50
    height = top + row * len(submits) + 90
    x = lambda t: left + (width - left - 20) * max(t, 0.0) / end  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
           'font-size="11">',
           f'<text x="{left}" y="16">submissions (bar: nbgrader submit from start to return; orange: after the due '
           f'date) and collect rounds, seconds since the minute began</text>']
    for i, (a, b, late) in enumerate(submits):
        colour = "#e67e22" if late else "#2e86c1"
        out.append(f'<rect x="{x(a):.1f}" y="{top + i * row}" width="{max(x(b) - x(a), 1):.1f}" height="{row - 1}" '
                   f'fill="{colour}"/>')
    y = top + row * len(submits) + 10
    for a, b, n in collects:
        out.append(f'<rect x="{x(a):.1f}" y="{y}" width="{max(x(b) - x(a), 1):.1f}" height="14" fill="#27ae60" '
                   f'opacity="0.6"><title>collected {n}</title></rect>')
        if n:
            out.append(f'<text x="{x(a):.1f}" y="{y + 28}">{n}</text>')
    out.append(f'<text x="4" y="{y + 11}">collect</text>')
    if due_at is not None:
        out.append(f'<line x1="{x(due_at):.1f}" x2="{x(due_at):.1f}" y1="{top - 4}" y2="{y + 16}" stroke="red"/>'
                   f'<text x="{x(due_at) + 3:.1f}" y="{top - 6}" fill="red">due</text>')
    axis = y + 50
    out.append(f'<line x1="{left}" x2="{width - 20}" y1="{axis}" y2="{axis}" stroke="black"/>')
    step = max(1, round(end / 10))
    t = 0
    while t <= end:
        out.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{axis}" y2="{axis + 4}" stroke="black"/>'
                   f'<text x="{x(t) - 4:.1f}" y="{axis + 16}">{escape(str(t))}</text>')
        t += step
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write(out: Path, numbers: dict, events: dict, due_at: float | None, students: int, graders: int,
          faults: bool) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "report.txt", out / "report.json", out / "storm.svg"]
    files[0].write_text(text(numbers, students, graders, faults))
    files[1].write_text(json.dumps({"students": students, "graders": graders, "faults": faults, **numbers}, indent=1))
    files[2].write_text(svg(events, due_at))
    return files
