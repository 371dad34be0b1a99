"""`jaxpath requirements`: every exercise's numbered requirements, kept once in its variants file and shown
to the learner in the statement, and the committed coverage table REQUIREMENTS.md.

The variants file holds the list (`[name.requirements]`: R1 what the answer returns, R2... every constraint
of the statement) and what the statement leaves open (`left_open`). The statement shows it between two
HTML comments, rendered from the file by `jaxpath requirements`; `jaxpath validate` refuses a
statement whose list differs from the file, a requirement no wrong answer breaks, and a wrong answer whose
failure does not name a requirement it breaks (see AUTHORING.md, *Requirements*)."""
from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat

from ..cells import HIDDEN, regions
from ..config import Config
from ..files import write_atomic
from ..manifest import load_manifest, notebook_path, variants_path
from ..problems import Problem
from .chapter import Chapter, Exercise, load_chapter, named_requirements
from .proofs import read_proof

OUTPUT = "REQUIREMENTS.md"
BEGIN = "<!-- requirements: rendered by `jaxpath requirements` -->"
END = "<!-- /requirements -->"
BLOCK = re.compile(r"\n*<!-- requirements\b.*?<!-- /requirements -->\n*", re.DOTALL)


HELPER_ID = "requirements-helper"
"""The grade_id of the locked cell that defines `Requirements` (jaxpath/kernel/requirements.py), placed after
the chapter's first code cell."""
CHECK_LINE = re.compile(r"^check = Requirements\(.*\)[ \t]*$", re.MULTILINE)
SCORE_LINE = "check.score()"


def points_words(points: float) -> str:
    return f"{points:g} point" + ("" if points == 1 else "s")


def constructor(ex: Exercise) -> str:
    """The first line of the exercise's test cell after its mark: its requirements and their points."""
    weights = ", ".join(f'"{r}": {w:g}' for r, w in ex.weights.items())
    return f'check = Requirements("{ex.name}", {{{weights}}})'


def helper_source() -> str:
    from ..kernel import source

    return source("requirements").rstrip("\n")


def render_block(ex: Exercise) -> str:
    """The statement's requirement list as markdown, between its two markers."""
    if ex.weights:
        lines = [BEGIN, "", "**Requirements** (the tests check each one on its own, name it when it fails, and "
                 "give its points when it holds):", ""]
        lines += [f"- **{rid}** ({points_words(ex.weights.get(rid, 0))}) {text}"
                  for rid, text in ex.requirements.items()]
    else:
        lines = [BEGIN, "", "**Requirements** (the tests check each one and name it when it fails):", ""]
        lines += [f"- **{rid}** {text}" for rid, text in ex.requirements.items()]
    if ex.left_open:
        lines += ["", "**Left open** (every choice here passes):", ""]
        lines += [f"- {text}" for text in ex.left_open]
    lines += ["", END]
    return "\n".join(lines)


def _statement_cell(ch: Chapter, ex: Exercise) -> int:
    return ex.statement[-1] if ex.statement else ex.heading


def statement_problems(ch: Chapter, ex: Exercise) -> list[Problem]:
    """The statement must show exactly the list the variants file holds, once."""
    if not ex.requirements:
        return []
    cells = [i for i in ex.statement if BEGIN.split(":")[0] in ch.nb.cells[i].source]
    want = render_block(ex)
    if len(cells) == 1 and want in ch.nb.cells[cells[0]].source and ch.nb.cells[cells[0]].source.count(END) == 1:
        return []
    how = "differs from" if cells else "is missing from the statement; it is"
    return [ch.problem(f"the requirement list {how} [{ex.name}.requirements] in {ch.variants_rel}: run "
                       f"`jaxpath requirements {ch.id}`", _statement_cell(ch, ex), ex.name)]


def render_test(source: str, ex: Exercise) -> str:
    """The test cell with its `check = Requirements(...)` line after the self-check mark and `check.score()`
    as its last line."""
    lines = [ln for ln in source.rstrip().splitlines() if ln.strip() != SCORE_LINE and not CHECK_LINE.match(ln)]
    at = 1 if lines and lines[0].startswith("#") else 0
    return "\n".join(lines[:at] + [constructor(ex)] + lines[at:] + [SCORE_LINE])


def test_problems(ch: Chapter, ex: Exercise) -> list[Problem]:
    """A test cell of an exercise with points per requirement creates its `Requirements` as the variants file
    says and ends in `check.score()`; the chapter has the helper cell, as jaxpath/kernel/requirements.py is."""
    if not ex.weights:
        return []
    out = []
    for t in ex.tests:
        if ch.nb.cells[t].source != render_test(ch.nb.cells[t].source, ex):
            out.append(ch.problem(f"the test cell's `check = Requirements(...)` line or its last line "
                                  f"`{SCORE_LINE}` differs from [{ex.name}.points] in {ch.variants_rel}: run "
                                  f"`jaxpath requirements {ch.id}`", t, ex.name))
    cells = [c for c in ch.nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == HELPER_ID]
    if len(cells) != 1 or cells[0].source != helper_source():
        out.append(ch.problem(f"the chapter's `Requirements` helper cell ({HELPER_ID}) is missing or differs from "
                              f"jaxpath/kernel/requirements.py: run `jaxpath requirements {ch.id}`", ex.answer, ex.name))
    return out


WEIGHT_STEP = 0.25
"""Requirement points are multiples of this: their sums are exact in binary floating point, so a cell's
partial credit never exceeds its points by a rounding error (nbgrader refuses a score above the points)."""


def weight_problems(ch: Chapter, ex: Exercise) -> list[Problem]:
    """The points of the requirements: one per requirement, positive multiples of WEIGHT_STEP, summing to the
    points of the exercise's test cell."""
    if not ex.requirements:
        return []
    where = f"[{ex.name}.points] in {ch.variants_rel}"
    if not ex.weights:
        return [ch.problem(f"has no points per requirement: add {where} (R1 = 1, ... summing to the "
                           f"{ex.points:g} points of its test cell)", ex.answer, ex.name)]
    out = []
    if list(ex.weights) != list(ex.requirements):
        out.append(ch.problem(f"{where} lists {', '.join(ex.weights)}; it needs exactly the requirements, in order "
                              f"({', '.join(ex.requirements)})", ex.answer, ex.name))
    bad = [r for r, w in ex.weights.items() if w <= 0 or (w / WEIGHT_STEP) != int(w / WEIGHT_STEP)]
    if bad:
        out.append(ch.problem(f"{where}: the points of {', '.join(bad)} are not positive multiples of "
                              f"{WEIGHT_STEP:g}", ex.answer, ex.name))
    if sum(ex.weights.values()) != ex.points:
        out.append(ch.problem(f"{where} sum to {sum(ex.weights.values()):g}, but the test cell is worth "
                              f"{ex.points:g} points", ex.tests[0] if ex.tests else ex.answer, ex.name))
    return out


def check_requirements(ch: Chapter, required: bool = True, points: bool = False) -> list[Problem]:
    """Static checks of every exercise's requirement list: each wrong answer names the requirement(s) it
    breaks, each requirement is broken by at least one wrong answer and named by a check in the tests, and
    the statement shows the list as the variants file states it (`jaxpath requirements`)."""
    out = []
    for e in ch.exercises:
        if not e.requirements:
            if required:
                out.append(ch.problem(f"has no requirement list: add [{e.name}.requirements] to {ch.variants_rel} "
                                      "(R1 what it returns, R2... every constraint of the statement)",
                                      e.answer, e.name))
            continue
        tests_src = "\n".join(ch.nb.cells[t].source for t in e.tests)
        named = set(named_requirements(e, tests_src))
        for v in e.of_kind("wrong"):
            if not v.breaks:
                out.append(ch.problem(f"{v.label} says no requirement it breaks: add `breaks = \"Rn\"` in "
                                      f"{ch.variants_rel}", e.answer, e.name))
            for r in v.breaks:
                if r not in e.requirements:
                    out.append(ch.problem(f"{v.label} breaks {r!r}, which is not one of the exercise's requirements "
                                          f"({', '.join(e.requirements)})", e.answer, e.name))
        broken = {r for v in e.of_kind("wrong") for r in v.breaks}
        alone = {v.breaks[0] for v in e.of_kind("wrong") if len(v.breaks) == 1}
        if e.weights:
            for r in e.requirements:
                if r in broken and r not in alone:
                    out.append(ch.problem(f"{r} is broken only together with another requirement: add a wrong "
                                          f"answer to {ch.variants_rel} that breaks {r} alone, so that its points "
                                          "are proven to be its own", e.answer, e.name))
        for r in e.requirements:
            if r not in broken:
                out.append(ch.problem(f"{r} ({e.requirements[r]}) is broken by no wrong answer in {ch.variants_rel}: "
                                      "add one that breaks only it, so its check is proven", e.answer, e.name))
            if r not in named:
                how = f'`with check("{r}"):`' if e.weights else f"'{r}: ...' in its message"
                out.append(ch.problem(f"{r} is named by no check in the exercise's tests: a check of it says {how}",
                                      e.tests[0] if e.tests else e.answer, e.name))
        out += statement_problems(ch, e)
        out += weight_problems(ch, e) if (e.weights or points) else []
        out += test_problems(ch, e)
    return out


def _helper_cell() -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(helper_source())
    cell.id = HELPER_ID
    cell.metadata = {"nbgrader": {"grade": False, "grade_id": HELPER_ID, "locked": True, "schema_version": 3,
                                  "solution": False},
                     "jupyter": {"source_hidden": True}, "tags": ["hide-input"]}
    return cell


def render_helper(ch: Chapter) -> bool:
    """Put the helper cell after the chapter's first code cell, or bring its source up to date. True if changed."""
    at = [i for i, c in enumerate(ch.nb.cells) if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == HELPER_ID]
    if at:
        cell = ch.nb.cells[at[0]]
        if cell.source == helper_source():
            return False
        cell.source = helper_source()
        return True
    first = next((i for i, c in enumerate(ch.nb.cells) if c.cell_type == "code"), -1)
    ch.nb.cells.insert(first + 1, _helper_cell())
    return True


def render_statements(ch: Chapter) -> bool:
    """Write each exercise's requirement list into its statement (replacing the old one), and, for exercises
    with points per requirement, their test cells' first and last lines and the helper cell. True if changed."""
    changed = False
    for ex in ch.exercises:
        for t in ex.tests if ex.weights else ():
            src = ch.nb.cells[t].source
            if render_test(src, ex) != src:
                ch.nb.cells[t].source = render_test(src, ex)
                changed = True
    for ex in ch.exercises:
        for i in ex.statement:
            cell = ch.nb.cells[i]
            if BLOCK.search(cell.source) and i != _statement_cell(ch, ex):
                cell.source = BLOCK.sub("\n\n", cell.source).strip()
                changed = True
        if not ex.requirements:
            continue
        cell = ch.nb.cells[_statement_cell(ch, ex)]
        body = BLOCK.sub("\n\n", cell.source).rstrip()
        new = f"{body}\n\n{render_block(ex)}"
        if new != cell.source:
            cell.source = new
            changed = True
    if any(ex.weights for ex in ch.exercises):
        changed = render_helper(ch) or changed  # last: inserting the cell moves the indices used above
    return changed


@dataclass
class Row:
    chapter: str
    exercise: str
    rid: str
    text: str
    checked: str
    """Where the tests name it: 'visible', 'hidden' or 'visible + hidden'."""
    broken_by: list[int]
    """The wrong answers (numbers in the variants file) that break it."""
    points: float | None = None
    """Its points (`[name.points]`), None for an exercise scored all or nothing."""


def coverage(ch: Chapter) -> list[Row]:
    rows = []
    for ex in ch.exercises:
        where: dict[str, set[str]] = {}
        for t in ex.tests:
            for _, line, region in regions(ch.nb.cells[t].source):
                for rid in named_requirements(ex, line):
                    where.setdefault(rid, set()).add("hidden" if region == HIDDEN else "visible")
        for rid, text in ex.requirements.items():
            seen = where.get(rid, set())
            checked = " + ".join(k for k in ("visible", "hidden") if k in seen) or "nowhere"
            broken = [v.number for v in ex.of_kind("wrong") if rid in v.breaks]
            rows.append(Row(ch.id, ex.name, rid, text, checked, broken, ex.weights.get(rid)))
    return rows


def _chapters(config: Config, ids: list[str] | None = None) -> list[Chapter]:
    manifest = load_manifest(config)
    out = []
    for entry in manifest.written():
        if ids and entry.id not in ids:
            continue
        path = notebook_path(config, entry.id)
        if path.exists():
            out.append(load_chapter(path, entry.id, config.root, variants_path(config, entry.id)))
    return out


def render_table(chapters: list[Chapter]) -> str:
    rows = [r for ch in chapters for r in coverage(ch)]
    exercises = [(ch.id, e) for ch in chapters for e in ch.exercises]
    listed = [e for _, e in exercises if e.requirements]
    uncovered = [r for r in rows if not r.broken_by or r.checked == "nowhere"]
    out = [f"requirements: {len(rows)} in {len(listed)} of {len(exercises)} exercises, "
           f"{len(rows) - len(uncovered)} broken by a wrong answer and named by a check", "",
           "Every exercise states its requirements as a numbered list in its statement (kept in `variants/`, "
           "rendered by `jaxpath requirements`), each worth the points shown: its test cell gives partial credit "
           "per requirement. Each wrong answer in `variants/` names the requirements it breaks; `jaxpath "
           "validate` proves that the answer loses exactly their points, that the reference and every "
           "alternative score full, that the stub scores 0 and that no requirement goes unbroken. "
           "Generated by `jaxpath requirements`; do not edit by hand (`jaxpath requirements --check` "
           "fails when it is stale).", "",
           "| chapter | exercise | requirement | points | checked in | broken by wrong answer |",
           "|---|---|---|---:|---|---|"]
    for r in rows:
        text = r.text.replace("|", "\\|")
        broken = ", ".join(f"#{n}" for n in r.broken_by) or "**none**"
        pts = "all or nothing" if r.points is None else f"{r.points:g}"
        out.append(f"| {r.chapter} | `{r.exercise}` | **{r.rid}** {text} | {pts} | {r.checked} | {broken} |")
    missing = [f"{cid} `{e.name}`" for cid, e in exercises if not e.requirements]
    if missing:
        out += ["", f"Without a requirement list ({len(missing)}): " + ", ".join(missing) + "."]
    return "\n".join(out) + "\n"


@dataclass
class RequirementsResult:
    stale_statements: list[str]
    """Chapters whose statements differ from their variants files (written, or only found with --check)."""
    table: Path
    table_current: bool


def write_requirements(config: Config, *, check: bool = False, chapters: list[str] | None = None) -> RequirementsResult:
    """Render the requirement lists into the statements of `chapters` (default: all) and write REQUIREMENTS.md
    from every chapter. With `check`, write nothing and say what is stale."""
    stale = []
    for ch in _chapters(config, chapters):
        if render_statements(ch):
            stale.append(ch.id)
            if not check:
                write_atomic(ch.path, nbformat.writes(ch.nb) + "\n")
    table = config.root / OUTPUT
    text = render_table(_chapters(config))
    current = table.exists() and table.read_text(encoding="utf-8") == text
    if not check and not current:
        write_atomic(table, text)
    return RequirementsResult(stale, table, current)


# -- what a test cell that scores per requirement printed, and the known mistakes it may match ----------------

LINE = re.compile(r"^\s*(?P<mark>[✓✗·]) (?P<rid>R[1-9][0-9]*) \((?P<got>[0-9.?]+)/(?P<points>[0-9.]+)\)(?:: (?P<message>.*))?$")
"""One line of `check.score()` (jaxpath/kernel/requirements.py, `Requirements.lines`)."""


@dataclass
class Outcome:
    rid: str
    mark: str
    """'✓' held, '✗' failed, '·' not checked here (hidden tests only, in a learner's run)."""
    points: float
    message: str = ""

    @property
    def passed(self) -> bool:
        return self.mark == "✓"


def parse_outcomes(text: str) -> list[Outcome]:
    """The requirement lines a test cell printed, in order (none for a cell scored all or nothing)."""
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            out.append(Outcome(m["rid"], m["mark"], float(m["points"]), m["message"] or ""))
    return out


def outcome_text(exercise: str, outcomes: list[Outcome]) -> str:
    """What `check.score()` prints for these outcomes (jaxpath/kernel/requirements.py): the inverse of
    `parse_outcomes`, for synthetic graded notebooks (tests, benchmarks)."""
    lines = [f"{exercise}:"]
    for o in outcomes:
        got = f"{o.points:g}" if o.passed else "0" if o.mark == "✗" else "?"
        lines.append(f"  {o.mark} {o.rid} ({got}/{o.points:g})" + (f": {o.message}" if o.message else ""))
    return "\n".join(lines) + "\n"


def cell_outcomes(cell) -> list[Outcome]:
    """The requirement lines of an executed test cell's stdout."""
    text = "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")
    return parse_outcomes(text)


_UNSTABLE = [
    (re.compile(r"\b0x[0-9a-fA-F]{6,}\b"), "0x…"),  # an object's address: `<function <lambda> at 0x7f…>`
    (re.compile("(?:" + "|".join(sorted({re.escape(tempfile.gettempdir().rstrip("/")), "/tmp", "/var/tmp"}))
                + r")/[^\s'\"]*?(?=[.,:;)]*(?:[\s'\"]|$))"), "<tmpdir>"),  # a temporary file's random name
]


def stable(message: str) -> str:
    """A check's ✗ message without what differs from one run of the same answer to the next (objects' addresses,
    temporary paths): how a proof records it, and how a learner's message is compared with it."""
    for pattern, replacement in _UNSTABLE:
        message = pattern.sub(replacement, message)
    return message


@dataclass
class Mistake:
    """A known wrong answer of an exercise, as its test cell judged it when `jaxpath validate` ran it."""
    exercise: str
    number: int
    failed: dict[str, str]
    """Requirement id -> the ✗ message as the checks printed it for this answer (`stable`: without addresses and
    temporary paths)."""
    hint: str
    """What the feedback page tells a learner whose answer fails like this ("" for a wrong answer without one)."""
    why: str = ""
    """The wrong answer's `why` in the variants file ("" in a proof written before it was recorded)."""

    def matches(self, outcomes: list[Outcome]) -> bool:
        """The same requirements failed with the same messages: the checks' inputs (visible and hidden) saw the
        same behaviour."""
        got = {o.rid: stable(o.message) for o in outcomes if o.mark == "✗"}
        return bool(got) and got == {rid: stable(m) for rid, m in self.failed.items()}


def known_mistakes(config: Config, chapter_id: str, *, every: bool = False) -> dict[str, list[Mistake]]:
    """exercise name -> its wrong answers that have a hint (`every`: all its wrong answers), with the failures
    validate recorded for them (in the chapter's committed proof, proofs/<chapter>.json, written by a successful
    `jaxpath validate`); {} when the chapter has no proof. A proof written before validate recorded every wrong answer holds only
    those with a hint (`records_every_wrong` tells)."""
    out: dict[str, list[Mistake]] = {}
    for m in read_proof(config, chapter_id).get("mistakes", []):
        if every or m.get("hint"):
            out.setdefault(m["exercise"], []).append(Mistake(m["exercise"], m["number"], m["failed"], m.get("hint", ""),
                                                             m.get("why", "")))
    return out


def records_every_wrong(config: Config, chapter_id: str) -> bool:
    """Whether the chapter's proof records every wrong answer's failures (not only those with a hint)."""
    return bool(read_proof(config, chapter_id).get("every_wrong"))
