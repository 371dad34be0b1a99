"""A chapter as data: its sections (from heading tags), its exercises (answer, self-check, hidden
tests) and its variants (wrong and alternative answers), plus the static checks that need no kernel."""
from __future__ import annotations

import copy
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader.nbgraderformat import MetadataValidator

# The cell vocabulary lives in cells.py; these names are re-exported for the modules that read chapters.
from ..cells import (  # noqa: F401
    ANSWER_MARK,
    BEGIN_HIDDEN,
    BEGIN_SOLUTION,
    CHECK_MARK,
    EMOJI,
    END_HIDDEN,
    END_SOLUTION,
    EXERCISE_HEADING,
    HEADING,
    INTENDED_ERROR,
    MUST_READ,
    OPTIONAL,
    is_answer,
    is_test,
    nbgrader_meta,
    solution_source,
    stub_source,
    tags,
    visible_source,
)
from ..problems import ChapterError, Problem


@dataclass
class Section:
    title: str
    level: int
    kind: str
    """'main', 'must-read' or 'optional'."""
    cell: int


@dataclass
class Variant:
    kind: str
    """'wrong' or 'alternative'."""
    number: int
    why: str
    code: str
    breaks: tuple[str, ...] = ()
    """The requirements (R-ids) a wrong answer breaks: exactly the ones its checks fail, so it loses exactly
    their points."""
    hint: str = ""
    """For a wrong answer: what a learner whose answer behaves like this one is told (feedback page)."""

    @property
    def label(self) -> str:
        return f"{self.kind} answer {self.number} ({self.why})" if self.why else f"{self.kind} answer {self.number}"


@dataclass
class Exercise:
    name: str
    number: int
    title: str
    heading: int
    """Index of the exercise's heading cell."""
    statement: list[int]
    """Indices of the markdown cells between the heading and the answer (the heading included)."""
    answer: int
    tests: list[int]
    points: float = 0.0
    variants: list[Variant] = field(default_factory=list)
    equivalent: dict[str, str] = field(default_factory=dict)
    """Mutant ids the author recorded as equivalent to the reference (`[[name.equivalent]]`), with why."""
    requirements: dict[str, str] = field(default_factory=dict)
    """The numbered requirements of the statement ({"R1": text, ...}, in order), from the variants file."""
    left_open: list[str] = field(default_factory=list)
    """What the statement deliberately leaves open: the tests accept every reading of it."""
    weights: dict[str, float] = field(default_factory=dict)
    """The points of each requirement ({"R1": 1.0, ...}, `[name.points]`): its test cell's partial credit."""

    def of_kind(self, kind: str) -> list[Variant]:
        return [v for v in self.variants if v.kind == kind]


@dataclass
class Chapter:
    id: str
    path: Path
    rel: str
    """Path relative to the course root, for messages."""
    nb: nbformat.NotebookNode
    sections: list[Section]
    exercises: list[Exercise]
    problems: list[Problem]
    """Static problems found while reading (no kernel needed)."""
    variants_rel: str | None = None

    def problem(self, message: str, cell: int | None = None, exercise: str | None = None,
                what: str | None = None) -> Problem:
        return Problem(self.rel, message, cell, exercise, what)

    def must_read(self) -> list[Section]:
        return [s for s in self.sections if s.kind == MUST_READ]

    def optional(self) -> list[Section]:
        return [s for s in self.sections if s.kind == OPTIONAL]

    @property
    def title(self) -> str:
        for c in self.nb.cells:
            if c.cell_type == "markdown":
                m = HEADING.match(c.source.strip().splitlines()[0]) if c.source.strip() else None
                if m and len(m.group(1)) == 1:
                    return m.group(2)
        return self.id


def read_notebook(path: Path, rel: str) -> nbformat.NotebookNode:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ChapterError(Problem(rel, f"cannot read the file ({e.strerror})")) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ChapterError(Problem(rel, f"not UTF-8 text (byte {e.start})")) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ChapterError(Problem(rel, f"not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}")) from None
    if not isinstance(data, dict) or "cells" not in data:
        raise ChapterError(Problem(rel, "valid JSON but not a notebook (no 'cells')"))
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as e:  # nbformat raises several kinds
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ChapterError(Problem(rel, f"not a valid nbformat 4 notebook: {first}")) from None
    return nb


def load_chapter(path: Path, chapter_id: str, root: Path, variants_path: Path | None = None) -> Chapter:
    """Read a source chapter and run every check that needs no kernel."""
    rel = _rel(path, root)
    nb = read_notebook(path, rel)
    ch = Chapter(chapter_id, path, rel, nb, [], [], [])
    _check_cells(ch)
    _find_sections(ch)
    _find_exercises(ch)
    if variants_path is not None:
        ch.variants_rel = _rel(variants_path, root)
        _attach_variants(ch, variants_path)
    return ch


def _rel(path: Path, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return str(path)


def _check_cells(ch: Chapter) -> None:
    validator = MetadataValidator()
    ids: dict[str, int] = {}
    ks = ch.nb.metadata.get("kernelspec", {})
    if ks.get("language", "python") != "python":
        ch.problems.append(ch.problem(f"kernelspec language is {ks.get('language')!r}, not python"))
    for i, cell in enumerate(ch.nb.cells):
        if cell.cell_type == "code":
            if cell.get("outputs"):
                ch.problems.append(ch.problem("has committed outputs: sources are committed without outputs "
                                              "(clear them; the build executes chapters)", i))
            elif cell.get("execution_count") is not None:
                ch.problems.append(ch.problem("has an execution count: clear outputs before committing", i))
        meta = nbgrader_meta(cell)
        if "nbgrader" in cell.get("metadata", {}):
            try:
                validator.validate_cell(copy.deepcopy(cell))
            except Exception as e:  # nbgrader's ValidationError and jsonschema's
                msg = str(e).strip().splitlines()[0]
                ch.problems.append(ch.problem(f"malformed nbgrader metadata: {msg}", i))
                continue
            gid = meta.get("grade_id")
            if gid is not None and (meta.get("grade") or meta.get("solution") or meta.get("locked")):
                if gid in ids:
                    ch.problems.append(ch.problem(f"duplicate grade_id {gid!r} (also cell {ids[gid] + 1})", i))
                else:
                    ids[gid] = i
        src = cell.source
        has_sol = BEGIN_SOLUTION in src
        has_hidden = BEGIN_HIDDEN in src
        if has_sol != (END_SOLUTION in src) or has_hidden != (END_HIDDEN in src):
            ch.problems.append(ch.problem("an unbalanced BEGIN/END SOLUTION or HIDDEN TESTS marker", i))
        if has_sol and not meta.get("solution"):
            ch.problems.append(ch.problem("has a solution region but is not an nbgrader solution cell: the "
                                          "solution would be released", i))
        if has_hidden and not meta.get("grade"):
            ch.problems.append(ch.problem("has hidden tests but is not an nbgrader test cell: they would be "
                                          "released", i))


def _find_sections(ch: Chapter) -> None:
    for i, cell in enumerate(ch.nb.cells):
        t = tags(cell)
        if cell.cell_type != "markdown":
            if MUST_READ in t or OPTIONAL in t:
                ch.problems.append(ch.problem("section tags belong on a markdown heading cell", i))
            continue
        lines = cell.source.strip().splitlines()
        m = HEADING.match(lines[0]) if lines else None
        kind = MUST_READ if MUST_READ in t else OPTIONAL if OPTIONAL in t else "main"
        if MUST_READ in t and OPTIONAL in t:
            ch.problems.append(ch.problem("tagged both must-read and optional", i))
        if not m:
            if kind != "main":
                ch.problems.append(ch.problem(f"tagged {kind} but its first line is not a markdown heading", i))
            continue
        title = m.group(2)
        for k, emoji in EMOJI.items():
            if k == kind and not title.startswith(emoji):
                ch.problems.append(ch.problem(f"tagged {k} but the heading does not start with {emoji}", i))
            if k != kind and title.startswith(emoji):
                ch.problems.append(ch.problem(f"the heading starts with {emoji} but the cell is not tagged {k}", i))
        ch.sections.append(Section(title, len(m.group(1)), kind, i))


def _find_exercises(ch: Chapter) -> None:  # noqa: C901
    cells = ch.nb.cells
    current = None  # (number, title, heading index)
    statement: list[int] = []
    ex: Exercise | None = None
    for i, cell in enumerate(cells):
        first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
        if cell.cell_type == "markdown" and HEADING.match(first):
            em = EXERCISE_HEADING.match(first)
            current = (int(em.group(1)), HEADING.match(first).group(2), i) if em else None
            statement = [i] if em else []
            ex = None
            continue
        if cell.cell_type == "markdown" and current and ex is None:
            statement.append(i)
        if is_answer(cell):
            gid = nbgrader_meta(cell).get("grade_id", "")
            name = gid[:-len("-answer")] if gid.endswith("-answer") else gid
            if not gid.endswith("-answer"):
                ch.problems.append(ch.problem(f"answer cell grade_id {gid!r} should be '<name>-answer'", i))
            if not cell.source.lstrip().startswith(ANSWER_MARK):
                ch.problems.append(ch.problem(f"an answer cell starts with the line {ANSWER_MARK!r}", i, name))
            if BEGIN_SOLUTION not in cell.source:
                ch.problems.append(ch.problem("answer cell without a ### BEGIN SOLUTION region", i, name))
            if current is None:
                ch.problems.append(ch.problem("answer cell outside an exercise: put it under a "
                                              "'### Exercise N: ...' heading", i, name))
                number, title, heading = len(ch.exercises) + 1, name, i
            else:
                number, title, heading = current
            if ex is not None:
                ch.problems.append(ch.problem("a second answer cell in one exercise", i, name))
            ex = Exercise(name, number, title, heading, list(statement), i, [])
            ch.exercises.append(ex)
        elif is_test(cell):
            meta = nbgrader_meta(cell)
            gid = meta.get("grade_id", "")
            if ex is None:
                ch.problems.append(ch.problem(f"test cell {gid!r} has no answer cell before it in its exercise", i))
                continue
            if not gid.startswith(ex.name + "-check"):
                ch.problems.append(ch.problem(f"test cell grade_id {gid!r} should be '{ex.name}-check'", i, ex.name))
            if not cell.source.lstrip().startswith(CHECK_MARK):
                ch.problems.append(ch.problem(f"a test cell starts with the line {CHECK_MARK!r}", i, ex.name))
            ex.tests.append(i)
            ex.points += float(meta.get("points", 0) or 0)
    for e in ch.exercises:
        if not e.tests:
            ch.problems.append(ch.problem("exercise without a 🧪 Self-check test cell", e.answer, e.name))
    names = [e.name for e in ch.exercises]
    for n in set(names):
        if names.count(n) > 1:
            ch.problems.append(ch.problem(f"two exercises are named {n!r}"))


def _attach_variants(ch: Chapter, path: Path) -> None:
    rel = ch.variants_rel
    if not path.exists():
        if ch.exercises:
            ch.problems.append(Problem(rel, "missing: every exercise needs wrong and alternative answers here"))
        return
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        ch.problems.append(Problem(rel, f"not valid TOML: {e}"))
        return
    by_name = {e.name: e for e in ch.exercises}
    for name, entry in data.items():
        if name not in by_name:
            ch.problems.append(Problem(rel, f"variants for exercise {name!r}, which the chapter does not have "
                                            f"(it has {sorted(by_name)})"))
            continue
        ex = by_name[name]
        _attach_requirements(ch, ex, entry)
        for kind in ("wrong", "alternative"):
            for n, v in enumerate(entry.get(kind, []), start=1):
                variant = _variant(ch, name, kind, n, v)
                if variant is not None:
                    ex.variants.append(variant)
        for n, v in enumerate(entry.get("equivalent", []), start=1):
            if not (isinstance(v, dict) and isinstance(v.get("id"), str) and str(v.get("why", "")).strip()):
                ch.problems.append(Problem(rel, f"[[{name}.equivalent]] number {n} needs an `id` (the mutant's, as "
                                                "`jaxpath mutants` prints it) and a one-line `why`"))
                continue
            if v["id"] in by_name[name].equivalent:
                ch.problems.append(Problem(rel, f"[[{name}.equivalent]] records {v['id']!r} twice"))
            by_name[name].equivalent[v["id"]] = str(v["why"]).strip()
        unknown = set(entry) - {"wrong", "alternative", "equivalent", "requirements", "left_open", "points"}
        if unknown:
            ch.problems.append(Problem(rel, f"[{name}] has unknown keys {sorted(unknown)}"))


def _variant(ch: Chapter, name: str, kind: str, n: int, v) -> Variant | None:
    """One `[[name.wrong]]` or `[[name.alternative]]` entry, or None (with a problem) when it is malformed."""
    rel = ch.variants_rel
    if not isinstance(v, dict) or not isinstance(v.get("code"), str):
        ch.problems.append(Problem(rel, f"[[{name}.{kind}]] number {n} needs a `code` string"))
        return None
    breaks = v.get("breaks", ())
    breaks = (breaks,) if isinstance(breaks, str) else tuple(breaks)
    if kind == "alternative" and breaks:
        ch.problems.append(Problem(rel, f"[[{name}.alternative]] number {n} says it breaks "
                                        f"{', '.join(breaks)}: an alternative breaks nothing"))
    unknown_keys = set(v) - {"code", "why", "breaks", "hint"}
    if unknown_keys:
        ch.problems.append(Problem(rel, f"[[{name}.{kind}]] number {n} has unknown keys "
                                        f"{sorted(unknown_keys)}"))
    hint = " ".join(str(v.get("hint", "")).split())
    if kind == "alternative" and hint:
        ch.problems.append(Problem(rel, f"[[{name}.alternative]] number {n} has a hint: only a wrong "
                                        "answer has a mistake to explain"))
    return Variant(kind, n, str(v.get("why", "")), v["code"], breaks, hint)


REQUIREMENT_ID = re.compile(r"^R([1-9][0-9]*)$")
REQUIREMENT_TAG = re.compile(r"\bR([1-9][0-9]*)\b")
"""How a test's failure message names the requirement it checks: `R3: ...` (the id as a word)."""
CHECK_BLOCK = re.compile(r"""\bwith\s+check\(\s*["']R([1-9][0-9]*)["']\s*\)""")
"""How a test cell that scores per requirement opens the block of checks of one: `with check("R3"):`."""


def named_requirements(ex: Exercise, line: str) -> list[str]:
    """The requirements a line of the exercise's tests checks: its `with check("Rn")` blocks when the exercise
    scores per requirement, else the ids its failure messages name."""
    return [f"R{m}" for m in (CHECK_BLOCK if ex.weights else REQUIREMENT_TAG).findall(line)]


def _attach_requirements(ch: Chapter, ex: Exercise, entry: dict) -> None:
    rel = ch.variants_rel
    reqs = entry.get("requirements", {})
    if not isinstance(reqs, dict) or not all(isinstance(v, str) and v.strip() for v in reqs.values()):
        ch.problems.append(Problem(rel, f"[{ex.name}.requirements] is a table of R1 = \"text\", R2 = ..."))
        return
    want = [f"R{n}" for n in range(1, len(reqs) + 1)]
    if list(reqs) != want:
        ch.problems.append(Problem(rel, f"[{ex.name}.requirements] must be numbered R1, R2, ... in order "
                                        f"(found {', '.join(reqs)})"))
    ex.requirements = {k: " ".join(v.split()) for k, v in reqs.items()}
    left = entry.get("left_open", [])
    if not isinstance(left, list) or not all(isinstance(v, str) and v.strip() for v in left):
        ch.problems.append(Problem(rel, f"[{ex.name}] left_open is a list of strings"))
        left = []
    ex.left_open = [" ".join(v.split()) for v in left]
    points = entry.get("points", {})
    if not isinstance(points, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                for v in points.values()):
        ch.problems.append(Problem(rel, f"[{ex.name}.points] is a table of R1 = 1, R2 = 0.5, ..."))
        return
    ex.weights = {k: float(v) for k, v in points.items()}


def check_exercise_counts(ch: Chapter, min_exercises: int, min_wrong: int, min_alternative: int) -> list[Problem]:
    out = []
    if len(ch.exercises) < min_exercises:
        out.append(ch.problem(f"has {len(ch.exercises)} exercise(s); a chapter needs at least {min_exercises}"))
    for e in ch.exercises:
        w, a = len(e.of_kind("wrong")), len(e.of_kind("alternative"))
        if w < min_wrong or a < min_alternative:
            out.append(ch.problem(f"has {w} wrong and {a} alternative answer(s) in {ch.variants_rel}; needs at "
                                  f"least {min_wrong} and {min_alternative}", e.answer, e.name))
    return out
