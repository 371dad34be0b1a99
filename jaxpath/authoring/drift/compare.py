"""The pinned build against the side run, cell by cell, each difference graded by severity:

1. a cell that raised and did not before, or no longer raises where it is tagged `raises-exception`
   (and a kernel that died);
2. an exercise whose reference fails, whose stub passes, a wrong answer that now passes, an alternative that
   now fails (the side run's validation problems that the pinned build did not have);
3. a changed deterministic output (values, shapes, dtypes, jaxprs, error messages), after `normalize`;
4. a warning that appeared, vanished or changed (a changed passage that names a warning)."""
from __future__ import annotations

import base64
import difflib
import hashlib
import re
from dataclasses import dataclass

from ...problems import Problem
from ..chapter import INTENDED_ERROR, Chapter, is_answer, is_test, tags
from .normalize import WARNING, normalize, profile_cells, serializing_cells, unrepeatable_cells

SEVERITY = {1: "cells that start or stop raising", 2: "exercises that no longer tell right from wrong",
            3: "changed outputs", 4: "new, vanished or changed warnings"}
STAMP_TAG = "jaxpath-stamp"
VERSION_CLAIM = re.compile(
    r"\b(?:jax|jaxlib|flax|optax|orbax(?:-checkpoint)?|numpy|python)\s+v?\d+\.\d+[\w.]*|\bv\d+\.\d+\b|"
    r"\b(?:since|as of) (?:version |v)?\d+\.\d+|\b(?:until|before|after|from|in) (?:jax |version |v)\d+\.\d+|"
    r"\b(?:measured|verified|checked) (?:in|on) \d+\.\d+|\bthe pinned (?:jax|stack|version)\b|\bdeprecat\w*|"
    r"\bremoved\b|\b(?:is|are) gone\b|\bnow (?:raises|warns|returns|fails)\b", re.I)


@dataclass
class Finding:
    severity: int
    chapter: str
    cell: int
    """0-based index of the cell in the source chapter (printed 1-based, as Jupyter's cell list shows it)."""
    kind: str
    """A short name of what changed: 'starts raising', 'wrong answer passes', 'output changed', ..."""
    message: str
    section: str = ""
    paragraph: str = ""
    """The prose paragraph above the cell."""
    diff: str = ""
    """A unified diff, pinned (-) to side (+), of the normalised outputs."""
    exercise: str = ""
    claim: str = ""
    """A sentence of the prose around the cell that states a version-specific fact, when there is one."""

    @property
    def where(self) -> str:
        out = f"{self.chapter}, cell {self.cell + 1}"
        if self.exercise:
            out += f" (exercise `{self.exercise}`)"
        return out


def strip_stamp(nb) -> list:
    """The notebook's cells without the stamp cell that execution puts first."""
    return [c for c in nb.cells if STAMP_TAG not in tags(c)]


def output_text(cell, versions=None, timing: bool = False, recording: bool = False,
                sizes: bool = False) -> tuple[str, bool, str]:
    """(the cell's outputs as normalised text, whether it raised, the error as 'Name: first line')."""
    parts, raised, error = [], False, ""
    for out in cell.get("outputs", []):
        kind = out.get("output_type")
        if kind == "stream":
            text = out.get("text", "")
            parts.append(text if out.get("name") != "stderr" else "".join(f"[stderr] {l}\n" for l in text.splitlines()))
        elif kind in ("execute_result", "display_data"):
            data = out.get("data", {})
            if "text/plain" in data:
                parts.append(str(data["text/plain"]) + "\n")
            for mime in sorted(data):
                if mime.startswith("image/"):
                    raw = data[mime]
                    if timing:  # a plot of measured times differs on every run
                        parts.append(f"[{mime}]\n")
                        continue
                    size = len(base64.b64decode(raw)) if isinstance(raw, str) and mime != "image/svg+xml" else len(raw)
                    parts.append(f"[{mime}, {size} bytes, sha256 {hashlib.sha256(str(raw).encode()).hexdigest()[:12]}]\n")
        elif kind == "error":
            raised = True
            first = (out.get("evalue") or "").strip()
            error = f"{out.get('ename', '')}: {first.splitlines()[0] if first else ''}".strip(": ")
            parts.append(f"{out.get('ename', '')}: {first}\n")
    return normalize("".join(parts), versions, timing, recording, sizes), raised, normalize(error, versions)


def _paragraph(cells: list, index: int) -> str:
    """The last prose paragraph of the nearest markdown cell above `index` (headings skipped)."""
    for j in range(index - 1, -1, -1):
        if cells[j].cell_type == "markdown":
            paras = [p.strip() for p in re.split(r"\n\s*\n", cells[j].source) if p.strip()]
            paras = [p for p in paras if not p.startswith("#")] or paras
            if paras:
                text = " ".join(paras[-1].split())
                return text if len(text) <= 600 else text[:597] + "…"
    return ""


def _section(ch: Chapter, index: int) -> str:
    above = [s for s in ch.sections if s.cell < index]
    return above[-1].title if above else ch.title


def _claim(cells: list, index: int, section: str = "") -> str:
    """A sentence of the prose around the cell (the markdown just above and just below it, or its section's
    heading) that states a version-specific fact: a version number, 'deprecated', 'removed', 'since 0.8', 'the
    pinned JAX', '(measured in 0.12)'..."""
    texts = [cells[j].source for j in (index - 1, index + 1) if 0 <= j < len(cells) and cells[j].cell_type == "markdown"]
    texts.append(section)
    for text in texts:
        for sentence in re.split(r"(?<=[.!?])\s+|\n\s*\n", text):
            if VERSION_CLAIM.search(sentence):
                s = " ".join(sentence.split())
                return s if len(s) <= 400 else s[:397] + "…"
    return ""


VARIABLE = re.compile(r"<(?:cell|tmp|site-packages|stdlib|path|id|pid)>|0x…|ipykernel_<pid>")


def _cut_alike(x: str, y: str) -> bool:
    """Two lines that a chapter cut to a fixed width after something of variable length (a temp path, a pid):
    one is the other with a few characters more or less at the end."""
    short, long = sorted((x, y), key=len)
    return bool(VARIABLE.search(short)) and len(long) - len(short) <= 8 and long.startswith(short) and len(short) >= 40


def _hunks(old: str, new: str) -> list[tuple[bool, list[str]]]:
    """Unified-diff hunks of two outputs, each with whether it is about a warning."""
    a, b = old.splitlines(), new.splitlines()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:
            for x, y in zip(range(i1, i2), range(j1, j2)):
                if _cut_alike(a[x], b[y]):
                    b[y] = a[x]
    out = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(1):
        lines = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [" " + l for l in a[i1:i2]]
            else:
                lines += ["-" + l for l in a[i1:i2]] + ["+" + l for l in b[j1:j2]]
        changed = [l[1:] for l in lines if l[:1] in "+-"]
        out.append((any(WARNING.search(l) for l in changed), lines))
    return out


PROBLEM_KINDS = [  # (severity, kind, what a validation problem's message says)
    (1, "kernel died", "the kernel died"),
    (2, "stub passes", "passes on the stub"),
    (2, "wrong answer passes", "passes every test of the exercise"),
    (2, "alternative fails", "is correct but fails this test"),
    (2, "alternative fails", "raises when defined"),
    (2, "reference fails", "fails on the reference solution"),
    (2, "reference fails", "the reference solution raises"),
    (1, "no longer raises", f"tagged {INTENDED_ERROR} but raised nothing"),
    (1, "starts raising", "raised "),
]


def problem_kind(p: Problem) -> tuple[int, str]:
    for severity, kind, words in PROBLEM_KINDS:
        if words in p.message:
            return severity, kind
    return (2 if p.exercise else 1), "validation problem"


def problem_key(p: Problem) -> tuple:
    """What makes two runs' problems the same: the cell, the exercise, the kind, and the variant."""
    variant = re.match(r"((?:wrong|alternative) answer \d+)", p.message)
    return p.cell, p.exercise, problem_kind(p)[1], variant.group(1) if variant else ""


def compare_chapter(ch: Chapter, pinned, side, side_problems: list[Problem],
                    pinned_problems: list[Problem] = (), versions=None) -> list[Finding]:
    """Every difference between the pinned executed notebook and the side one, as findings, most severe first.
    `ch` is the source chapter both were executed from (its sections and prose name the places)."""
    cells = ch.nb.cells
    a, b = strip_stamp(pinned), strip_stamp(side)
    findings: list[Finding] = []

    def add(severity, i, kind, message, diff="", exercise=""):
        section = _section(ch, i)
        findings.append(Finding(severity, ch.id, i, kind, message, section, _paragraph(cells, i), diff,
                                exercise, _claim(cells, i, section)))

    known = {problem_key(p) for p in pinned_problems}
    flagged: set[int] = set()
    for p in side_problems:
        if problem_key(p) in known:
            continue
        severity, kind = problem_kind(p)
        i = p.cell if p.cell is not None else 0
        flagged.add(i)
        add(severity, i, kind, p.message, exercise=p.exercise or "")
    exercise_cells = {i for i, c in enumerate(cells) if is_answer(c) or is_test(c)}
    # after a kernel died, the cells below it never ran: that is one finding, not one per cell
    dead = [p.cell for p in side_problems if problem_kind(p)[1] == "kernel died" and p.cell is not None]
    last = min(dead) if dead else len(cells)
    sources = [c.source if c.cell_type == "code" else "" for c in cells]
    timed, profiled, serialized = unrepeatable_cells(sources), profile_cells(sources), serializing_cells(sources)
    for i, cell in enumerate(cells):
        if cell.cell_type != "code" or i >= len(a) or i >= len(b) or i >= last:
            continue
        timing = i in timed or any("<time>" in output_text(c, versions)[0] for c in (a[i], b[i]))
        modes = (timing, i in profiled, i in serialized)
        old, old_raised, old_err = output_text(a[i], versions, *modes)
        new, new_raised, new_err = output_text(b[i], versions, *modes)
        hunks = _hunks(old, new) if old != new else []
        content = "\n".join([l for warn, h in hunks if not warn for l in h + ["…"]][:-1])
        warning = "\n".join([l for warn, h in hunks if warn for l in h + ["…"]][:-1])
        if i in flagged or old_raised != new_raised:
            # a cell that starts or stops raising (or an exercise the side run flagged): one finding, with the
            # changed output as its diff, not a second one of severity 3
            if i not in flagged and i not in exercise_cells:
                if new_raised:
                    add(1, i, "starts raising", f"raises {new_err} on the side stack; it did not on the pinned one")
                elif INTENDED_ERROR in tags(cell):
                    add(1, i, "no longer raises", f"tagged {INTENDED_ERROR}, raised {old_err} on the pinned stack "
                                                  "and nothing on the side one: the text promises an error that is gone")
                else:
                    add(1, i, "stops raising", f"raised {old_err} on the pinned stack and nothing on the side one")
            first = next((f for f in findings if f.cell == i and not f.diff), None)
            if first is not None:
                first.diff = content
            content = ""
        ex = next((e.name for e in ch.exercises if i == e.answer or i in e.tests), "")
        if content:
            what = "error message changed" if old_raised and new_raised and old_err != new_err else "output changed"
            add(3, i, what, f"{what} (pinned -, side +)", content, ex)
        if warning:
            gained = any(l.startswith("+") and WARNING.search(l) for l in warning.splitlines())
            lost = any(l.startswith("-") and WARNING.search(l) for l in warning.splitlines())
            what = "warning changed" if gained and lost else "new warning" if gained else "warning vanished"
            add(4, i, what, f"{what} (pinned -, side +)", warning, ex)
    findings.sort(key=lambda f: (f.severity, f.cell))
    return findings
