"""What `make` prints at its end: how long each step took (the build's chapters: proved or reused proof) and what to
open next. Reads build/.make-times (a line "<step> <seconds>" per step `make` ran, written by scripts/step.sh and the
install recipe; removed here) and build/build.json (written by `jaxpath build`). Needs nothing but Python."""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
TIMES = BUILD / ".make-times"
STEPS = ("install", "build", "site", "docs", "sample")
SAMPLE = BUILD / "sample-class"
FEEDBACK = ("partly_wrong", "basics", "01_introduction.html")  # a page that names known mistakes


def duration(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def times() -> dict[str, float]:
    out: dict[str, float] = {}
    for line in (TIMES.read_text(encoding="utf-8").splitlines() if TIMES.exists() else []):
        name, _, seconds = line.partition(" ")
        out[name] = out.get(name, 0) + float(seconds or 0)
    return out


def chapters() -> str:
    """The build's chapters in a few words: how many proofs it reused, which chapters it proved and how long each took."""
    try:
        rows = json.loads((BUILD / "build.json").read_text(encoding="utf-8"))["chapters"]
    except (OSError, ValueError, KeyError):
        return ""
    reused = [r for r in rows if r["proof"] == "reused"]
    proved = [r for r in rows if r["proof"] == "proved"]
    text = f"{len(rows)} chapters: {len(reused)} reused proof{'s' * (len(reused) != 1)} (run reference-only"
    text += f", {duration(sum(r['seconds'] for r in reused))} of kernel time)" if reused else ")"
    if proved:
        text += f", {len(proved)} proved (" + ", ".join(f"{r['chapter']} {duration(r['seconds'])}" for r in proved) + ")"
        text += ": commit their proofs/" if all(r["ok"] for r in proved) else ""
    return text


def main() -> int:
    spent = times()
    TIMES.unlink(missing_ok=True)
    lines = [f"make: done in {duration(sum(spent.values()))}"]
    for step in STEPS:
        note = {"install": "(up to date)" if step not in spent else "", "build": chapters()}.get(step, "")
        took = duration(spent[step]) if step in spent else "-"
        lines.append(f"  {step:<8} {took:>12}   {note}".rstrip())
    feedback = SAMPLE / "feedback" / Path(*FEEDBACK)
    if not feedback.exists():
        feedback = next(iter(sorted(SAMPLE.glob("feedback/*/*/*.html"))), feedback)
    lines.append("Open next:")
    for what, path in [("the course site", BUILD / "site" / "index.html"),
                       ("a student's feedback page", feedback),
                       ("the sample class's report", SAMPLE / "build" / "reports" / "basics.html"),
                       ("this project's manual", BUILD / "docs" / "index.html")]:
        if path.exists():
            lines.append(f"  {what:<27} {path.relative_to(ROOT)}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
