"""The course's cell vocabulary, in one place: tags and nbgrader metadata (what a cell is), the solution and
hidden-test markers (what part of a cell a student sees), markdown headings (outside code fences), and the
secret lines (what a student must never see, in a release, on the site or in feedback).

Every module that asks "is this an answer cell?", "which lines are hidden?" or "what heading is this?"
asks here; nbgrader's own preprocessors do the releasing (stub and visible sources)."""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import nbformat
from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

# ---- tags and marks ------------------------------------------------------------------------------------
MUST_READ, OPTIONAL, INTENDED_ERROR = "must-read", "optional", "raises-exception"
EMOJI = {MUST_READ: "🟢", OPTIONAL: "⚪"}
ANSWER_MARK, CHECK_MARK = "# ✍️ Your answer", "# 🧪 Self-check"

# ---- nbgrader's region markers -------------------------------------------------------------------------
BEGIN_SOLUTION, END_SOLUTION = "BEGIN SOLUTION", "END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
MARKERS = (BEGIN_SOLUTION, END_SOLUTION, BEGIN_HIDDEN, END_HIDDEN)
SOLUTION, HIDDEN, MARKER = "solution", "hidden", "marker"

# ---- headings ------------------------------------------------------------------------------------------
HEADING = re.compile(r"^(#{1,6})\s+(.*\S)\s*$")
EXERCISE_HEADING = re.compile(r"^#{2,4}\s+Exercise\s+(\d+)\s*[:.—-]", re.IGNORECASE)
FENCE = re.compile(r"^\s*(```|~~~)")

MIN_SECRET_LEN = 8
"""Secret lines shorter than this (a bare `)`, `else:`, `return x`) are not secrets: they are everywhere."""


def tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def grade_id(cell) -> str | None:
    return nbgrader_meta(cell).get("grade_id")


def is_answer(cell) -> bool:
    m = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and bool(m.get("solution")) and not m.get("grade")


def is_test(cell) -> bool:
    m = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and bool(m.get("grade")) and not m.get("solution")


# ---- what a student sees of a cell ---------------------------------------------------------------------
def stub_source(source: str) -> str:
    """The answer cell as nbgrader releases it (nbgrader's own ClearSolutions)."""
    cell = nbformat.v4.new_code_cell(source)
    ClearSolutions()._replace_solution_region(cell, "python")
    return cell.source


def visible_source(source: str) -> str:
    """The test cell as nbgrader releases it: hidden tests removed (nbgrader's own ClearHiddenTests)."""
    cell = nbformat.v4.new_code_cell(source)
    ClearHiddenTests()._remove_hidden_test_region(cell)
    return cell.source


def regions(source: str) -> Iterator[tuple[int, str, str | None]]:
    """(1-based line number, line, region) for every line of a cell: region is SOLUTION or HIDDEN inside
    nbgrader's markers, MARKER for a marker line itself, None for what a student sees."""
    region = None
    for n, line in enumerate(source.split("\n"), start=1):
        if BEGIN_SOLUTION in line or BEGIN_HIDDEN in line:
            region = SOLUTION if BEGIN_SOLUTION in line else HIDDEN
            yield n, line, MARKER
        elif END_SOLUTION in line or END_HIDDEN in line:
            region = None
            yield n, line, MARKER
        else:
            yield n, line, region


def solution_source(source: str) -> str:
    """The reference answer without the solution markers, for the appendix."""
    return "\n".join(line for line in source.split("\n") if BEGIN_SOLUTION not in line and END_SOLUTION not in line)


def solution_ranges(source: str) -> list[tuple[int, int]]:
    """The 1-based line ranges strictly inside each solution region (empty regions left out)."""
    out, begin = [], None
    for n, line, _ in regions(source):
        if BEGIN_SOLUTION in line:
            begin = n
        elif END_SOLUTION in line and begin is not None:
            if n - 1 >= begin + 1:
                out.append((begin + 1, n - 1))
            begin = None
    return out


# ---- headings ------------------------------------------------------------------------------------------
def headings(source: str) -> list[tuple[int, int, str]]:
    """(line index, level, text) of every markdown heading of a cell, outside fenced code."""
    out, fenced = [], False
    for i, line in enumerate(source.split("\n")):
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if m:
            out.append((i, len(m.group(1)), m.group(2)))
    return out


def first_heading(source: str) -> tuple[int, str] | None:
    """(level, text) when a cell's first non-blank line is a heading."""
    lines = source.strip().split("\n")
    m = HEADING.match(lines[0]) if lines and lines[0] else None
    return (len(m.group(1)), m.group(2)) if m else None


# ---- what a student must never see ---------------------------------------------------------------------
@dataclass
class Secrets:
    """Lines a student must never see, each with where it comes from. A line is secret when it is long
    enough to mean something (MIN_SECRET_LEN) and appears nowhere in what students are shown."""
    solution: dict[str, str] = field(default_factory=dict)
    """Lines of solution regions (and of variant answers)."""
    hidden: dict[str, str] = field(default_factory=dict)
    """Lines of hidden-test regions that are not also solution lines."""

    @property
    def all(self) -> dict[str, str]:
        return {**self.solution, **self.hidden}

    def __bool__(self) -> bool:
        return bool(self.solution or self.hidden)


def find_secrets(cells: Iterable[tuple[str, str]], extra: Iterable[tuple[str, str]] = ()) -> Secrets:
    """The secrets of `cells`, given as (origin, source) pairs (origin like "source/basics/01.ipynb, cell 4"),
    plus `extra` (origin, line) pairs that are secret wherever they come from (variant answers)."""
    public: set[str] = set()
    solution: dict[str, str] = {}
    hidden: dict[str, str] = {}
    for origin, source in cells:
        for _, line, region in regions(source):
            s = line.strip()
            if region is None:
                public.add(s)
            elif region == SOLUTION:
                solution.setdefault(s, origin)
            elif region == HIDDEN:
                hidden.setdefault(s, f"{origin} (hidden test)")
    for origin, line in extra:
        solution.setdefault(line.strip(), origin)

    def keep(s: str) -> bool:
        return len(s) >= MIN_SECRET_LEN and s not in public

    return Secrets({s: o for s, o in solution.items() if keep(s)},
                   {s: o for s, o in hidden.items() if keep(s) and s not in solution})


def notebook_secrets(nb, origin: str = "") -> Secrets:
    """The secrets of one notebook's cells."""
    return find_secrets((f"{origin}cell {i + 1}", c.get("source", "")) for i, c in enumerate(nb.cells))
