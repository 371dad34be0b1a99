"""`jaxpath clusters PART [EXERCISE]`: the class's answers grouped by what they do, exercise by exercise, and what
the course does not know yet about them.

An answer's *behaviour* is what its graded test cells said (`Behaviour`): per requirement ✓ or ✗ and the ✗
message, and whether the cell raised (the error's name and first line), ran out of time or was not run. A ✗
message carries the values the checks' inputs gave, visible and hidden: these are the inputs on which
`jaxpath validate` recorded the known wrong answers (`jaxpath.authoring.requirements.Mistake`), so two answers with one
behaviour did the same thing on every input the course probes. Each exercise's answers are grouped by behaviour
into clusters; a failing cluster *is* a known wrong answer when its failures equal the ones validate recorded for
that answer (the same requirements, the same messages).

The all-pass cluster is read once more, by code: its answers are normalised (`normalised`: comments, docstrings
and layout gone, every name the answer binds renamed in order of appearance; the names of libraries kept) and
compared with the reference solution and every `[[name.alternative]]` (difflib's ratio on tokens). An answer
under `LIKE` to all of them is written unlike anything the course knows; such answers are grouped among
themselves the same way and listed.

With `propose`, the failing clusters no known wrong answer matches and the passing groups written unlike the
course become candidate `[[name.wrong]]` and `[[name.alternative]]` entries in a review file for the author
(build/clusters/<part>/proposals.toml, `proposals_text`), which `merge_proposals` (`jaxpath clusters PART --merge
FILE`) files into `variants/` once each entry's `why` is written. Student code goes only into build/clusters/:
into the pages and the review file, and from there into `variants/` (never released) where the author merges it.

Reads: the source notebooks (the exercises, their reference solutions and stubs), the variants files (the
alternatives, the wrong answers' `why`), the chapters' committed proofs in proofs/ (the recorded failures), and
every autograded notebook of the part, `autograded/<student>/<part>/<notebook>.ipynb`. Work is linear in the
class: one pass over the notebooks, a dictionary of behaviours, and per passing answer a comparison with the
course's few known answers (the groups of unlike answers are compared with each other's first answer only).
"""
from __future__ import annotations

import ast
import base64
import difflib
import io
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..authoring.proofs import proof_path
from ..authoring.requirements import Mistake, Outcome, known_mistakes, parse_outcomes, records_every_wrong
from ..cells import grade_id, is_answer, is_test, solution_source, stub_source
from ..config import Config
from ..errors import JaxpathError
from ..files import write_atomic
from .classwide import cell_text, read_json, student_notebooks

LIKE = 0.8
"""The likeness (difflib's ratio of two normalised answers' tokens) from which two answers count as written alike.
In the sample chapters, the course's alternatives that are another idea stand at 0.31 to 0.74 from the reference,
answers that are one idea with other names, comments and layout at 1.0, and a student's own writing of a known
idea at 0.54 to 0.78."""
MAX_BARS = 30
"""Clusters drawn in an exercise's bar chart; the smaller ones are summed into one bar."""
TODO = "TODO"
MARKER = re.compile(r"^# =+ into variants/(?P<chapter>[^\s]+)\.toml =+$", re.MULTILINE)
"""The line that opens a chapter's part of a proposals file: what follows goes into that variants file."""

PASSES, KNOWN, UNKNOWN, STUB, STOPPED = "passes", "known", "unknown", "stub", "stopped"
KIND_WORDS = {PASSES: "passes every check", KNOWN: "a known wrong answer", UNKNOWN: "not a known mistake",
              STUB: "the released stub (not attempted)", STOPPED: "not graded normally (the test did not run or finish)"}
KIND_COLOURS = {PASSES: "#1a7f37", KNOWN: "#3b6ea5", UNKNOWN: "#cf222e", STUB: "#8c959f", STOPPED: "#bf8700"}
STOPPING = ("NotRun", "CellTimeoutError", "DeadKernelError", "NotCounted", "KeyboardInterrupt")
"""Error names of a cell that the grader stopped or did not count (jaxpath.texts; a cell past its time limit is
interrupted: KeyboardInterrupt): its behaviour says nothing about the answer."""
NOT_EXECUTED = "not executed"


# ---- normalising and comparing code ------------------------------------------------------------------------
class _Rename(ast.NodeTransformer):
    def __init__(self, bound: set[str]):
        self.bound, self.new = bound, {}

    def _name(self, name: str) -> str:
        return self.new.setdefault(name, f"_{len(self.new)}") if name in self.bound else name

    def visit_Name(self, node):
        node.id = self._name(node.id)
        return node

    def visit_arg(self, node):
        node.arg, node.annotation = self._name(node.arg), None
        return node

    def visit_FunctionDef(self, node):
        node.name, node.returns = self._name(node.name), None
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef


def _bound(tree) -> set[str]:
    """The names the code binds itself (assigned, parameters, functions it defines): the ones a student chooses."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
    return out


def _drop_docstrings(tree) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                node.body = node.body[1:] or [ast.Pass()]


def normalised(code: str) -> str:
    """The answer as compared: comments, docstrings, annotations and layout gone (`ast.unparse`), every name it binds
    renamed `_0`, `_1`, ... in order of appearance; the names it reads from elsewhere (`jnp`, `jax.lax.scan`) kept.
    Code that does not parse is compared as it is, without its comment lines and blank lines."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return "\n".join(line.rstrip() for line in code.splitlines() if line.strip() and not line.lstrip().startswith("#"))
    _drop_docstrings(tree)
    _Rename(_bound(tree)).visit(tree)
    return ast.unparse(tree)


def without_comments(code: str) -> str:
    """The code with its comments and docstrings removed (`ast.unparse`), as a proposal quotes a student's answer:
    a comment may name its author. Code that does not parse is returned without its comment lines."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return "\n".join(line for line in code.splitlines() if not line.lstrip().startswith("#")).strip() + "\n"
    _drop_docstrings(tree)
    return ast.unparse(tree) + "\n"


_TOKEN = re.compile(r"\w+|[^\w\s]+")


def likeness(a: str, b: str) -> float:
    """How alike two normalised answers are written: difflib's ratio of their token sequences (1.0: the same)."""
    if a == b:
        return 1.0
    return difflib.SequenceMatcher(None, _TOKEN.findall(a), _TOKEN.findall(b), autojunk=False).ratio()


# ---- what a graded test cell said ----------------------------------------------------------------------------


def _stdout(cell) -> str:
    """What a cell printed (nbformat's `cell_outcomes` reads the same from a notebook read by nbformat; here the
    notebook is plain JSON, whose texts may be lists of lines)."""
    out = []
    for o in cell.get("outputs") or []:
        if o.get("output_type") == "stream" and o.get("name") == "stdout":
            t = o.get("text", "")
            out.append(t if isinstance(t, str) else "".join(t))
    return "".join(out)


def cell_error(cell) -> str:
    """How a graded cell ended, as one line: "" when it ran to its end, `<error name>: <first line>` when it raised
    (the grader's own errors included: NotRun, CellTimeoutError, NotCounted), NOT_EXECUTED when it has no output and
    no execution count."""
    outputs = cell.get("outputs") or []
    for o in outputs:
        if o.get("output_type") == "error":
            evalue = (str(o.get("evalue", "")).strip().splitlines() or [""])[0]
            return f"{o.get('ename', 'Error')}: {evalue}".rstrip(": ")[:300]
    if not outputs and cell.get("execution_count") is None:
        return NOT_EXECUTED
    return ""


@dataclass(frozen=True)
class Behaviour:
    """What an answer's graded test cells said: the cluster key."""
    outcomes: tuple[tuple[str, str, str], ...]
    """(requirement id, ✓/✗/·, the ✗ or · message; "" for a ✓), every test cell's lines in order."""
    errors: tuple[str, ...]
    """Per test cell, how it ended (`cell_error`)."""
    answer: str = ""
    """The name of the error the answer cell raised ("" when it raised none): a SyntaxError, a time-out."""

    @classmethod
    def of(cls, tests, answers=()) -> "Behaviour":
        outcomes = tuple((o.rid, o.mark, "" if o.passed else o.message) for c in tests for o in parse_outcomes(_stdout(c)))
        raised = next((e for e in map(cell_error, answers) if e and e != NOT_EXECUTED), "")
        return cls(outcomes, tuple(cell_error(c) for c in tests), raised.split(":")[0])

    @property
    def passed(self) -> bool:
        return bool(self.errors) and not any(self.errors) and all(mark == "✓" for _, mark, _ in self.outcomes)

    @property
    def stopped(self) -> bool:
        """The grader stopped or did not count the answer or a test cell (or a test never ran): its behaviour says
        nothing about the answer."""
        return self.answer in STOPPING or any(e == NOT_EXECUTED or e.split(":")[0] in STOPPING for e in self.errors)

    @property
    def failed(self) -> dict[str, str]:
        """Requirement id -> its ✗ message."""
        return {rid: message for rid, mark, message in self.outcomes if mark == "✗"}

    def as_outcomes(self) -> list[Outcome]:
        return [Outcome(rid, mark, 0.0, message) for rid, mark, message in self.outcomes]

    def breaks(self) -> list[str]:
        """The requirements this behaviour breaks: its ✗ lines, else those an error of an all-or-nothing test cell
        names ("R2: ...")."""
        if self.failed:
            return list(self.failed)
        from ..authoring.chapter import REQUIREMENT_TAG

        return sorted({f"R{m}" for e in self.errors for m in REQUIREMENT_TAG.findall(e)}, key=lambda r: int(r[1:]))


# ---- the clusters ------------------------------------------------------------------------------------------
@dataclass
class Answer:
    student: str
    code: str
    normalised: str


@dataclass
class Known:
    """One answer the course knows for an exercise: the reference solution or an alternative."""
    label: str                   # "the reference solution", "alternative #2"
    why: str
    normalised: str


def _representative(answers: list[Answer]) -> Answer:
    """The answer written as most of them wrote it (the most common normalised code; of those, the first student's)."""
    counts = Counter(a.normalised for a in answers)
    best = max(counts.values())
    return min((a for a in answers if counts[a.normalised] == best), key=lambda a: a.student)


class _Answers:
    """A group of answers of one exercise (`answers`): its size, its students, its representative answer."""
    answers: list[Answer]

    @property
    def size(self) -> int:
        return len(self.answers)

    @property
    def students(self) -> list[str]:
        return sorted(a.student for a in self.answers)

    @property
    def representative(self) -> Answer:
        return _representative(self.answers)


@dataclass
class Cluster(_Answers):
    """The answers of one exercise with one behaviour."""
    number: int                  # C1, C2, ... by size within the exercise
    behaviour: Behaviour
    answers: list[Answer]
    kind: str                    # PASSES, KNOWN, UNKNOWN, STUB or STOPPED
    known: list[Mistake] = field(default_factory=list)
    """The known wrong answers that failed exactly like this when validate ran them."""
    code_like: str = ""
    """For a failing cluster that no recorded failure matches: the known wrong answer its representative is written
    like, if any ("wrong answer #3 (why)")."""

    @property
    def words(self) -> str:
        return KIND_WORDS[self.kind]


@dataclass
class Unlike(_Answers):
    """Passing answers written alike among themselves and unlike the reference solution and every known
    alternative."""
    answers: list[Answer]
    closest: str                 # the known answer it is most like
    likeness: float              # and how much


@dataclass
class ExerciseClusters:
    chapter: str                 # "basics/01_introduction"
    notebook: str
    exercise: str
    requirements: dict[str, str]
    clusters: list[Cluster]
    unlike: list[Unlike]
    """The all-pass cluster's answers written unlike the course, grouped (largest first)."""
    notes: list[str] = field(default_factory=list)
    """What limits the reading (no variants file, a proof that records only the wrong answers with a hint)."""
    page: Path | None = None

    @property
    def answers(self) -> int:
        return sum(c.size for c in self.clusters)

    def of_kind(self, kind: str) -> list[Cluster]:
        return [c for c in self.clusters if c.kind == kind]

    @property
    def proposals(self) -> int:
        return len(self.of_kind(UNKNOWN)) + len(self.unlike)


@dataclass
class ClustersReport:
    part: str
    students: int
    exercises: list[ExerciseClusters]
    skipped: list[str] = field(default_factory=list)
    """Notebooks or cells that could not be read, each naming its file (and cell) and why."""
    index: Path | None = None
    proposals: Path | None = None


# ---- the course's side ---------------------------------------------------------------------------------
@dataclass
class _Exercise:
    chapter: str
    notebook: str
    name: str
    tests: list[str]             # the grade_ids of its test cells
    requirements: dict[str, str]
    known: list[Known]           # the reference first, then the alternatives
    stub: str                    # normalised
    wrong: dict[int, str]        # number -> why
    wrong_code: dict[int, str]   # number -> normalised code
    mistakes: list[Mistake]
    notes: list[str]




def _course_side(config: Config, part: str) -> list[_Exercise]:
    """Every exercise of the part's source notebooks, with what the course knows of it."""
    from ..authoring.chapter import load_chapter
    from ..manifest import variants_path
    from ..problems import ChapterError

    notebooks = sorted((config.source / part).glob("*.ipynb"))
    if not notebooks:
        raise JaxpathError(f"no source notebooks in {config.source / part}: is {part!r} a part of this course?")
    out = []
    for path in notebooks:
        chapter = f"{part}/{path.stem}"
        variants = variants_path(config, chapter)
        try:
            ch = load_chapter(path, chapter, config.root, variants)
        except ChapterError as e:
            raise JaxpathError(f"{path}: cannot be read: {e.problem}") from None
        notes = []
        if not variants.exists():
            notes.append(f"no variants file {variants}: the alternatives and the wrong answers' words are unknown "
                         "here (`--variants DIR` names the course's folder)")
        recorded = known_mistakes(config, chapter, every=True)
        if not proof_path(config, chapter).exists():
            notes.append(f"{chapter} has no proof here ({proof_path(config, chapter)} is missing): no failing "
                         "cluster can be matched to a known wrong answer (run `jaxpath validate`)")
        elif not records_every_wrong(config, chapter):
            notes.append(f"{proof_path(config, chapter)} records only the wrong answers with a hint (an older "
                         f"`jaxpath validate`): validate {chapter} again to match every known wrong answer")
        for ex in ch.exercises:
            cell = ch.nb.cells[ex.answer]
            known = [Known("the reference solution", "", normalised(solution_source(cell.source)))]
            known += [Known(f"alternative #{v.number}", v.why, normalised(v.code)) for v in ex.of_kind("alternative")]
            out.append(_Exercise(chapter, path.stem, ex.name, [grade_id(ch.nb.cells[t]) for t in ex.tests],
                                 dict(ex.requirements), known, normalised(stub_source(cell.source)),
                                 {v.number: v.why for v in ex.of_kind("wrong")},
                                 {v.number: normalised(v.code) for v in ex.of_kind("wrong")},
                                 recorded.get(ex.name, []), notes))
    return out


# ---- grouping ----------------------------------------------------------------------------------------------
def _closest(norm: str, known: list[Known]) -> tuple[Known, float]:
    scored = [(k, likeness(norm, k.normalised)) for k in known]
    return max(scored, key=lambda kv: kv[1])


def _unlike(answers: list[Answer], known: list[Known]) -> list[Unlike]:
    """The passing answers written unlike every known answer, grouped by likeness to each group's first answer."""
    verdict: dict[str, tuple[Known, float]] = {}
    for a in answers:
        if a.normalised not in verdict:
            verdict[a.normalised] = _closest(a.normalised, known)
    by_code: dict[str, list[Answer]] = defaultdict(list)
    for a in answers:
        if verdict[a.normalised][1] < LIKE:
            by_code[a.normalised].append(a)
    groups: list[tuple[str, list[Answer]]] = []
    for norm, same in sorted(by_code.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        home = next((g for g in groups if likeness(norm, g[0]) >= LIKE), None)
        if home is None:
            groups.append((norm, list(same)))
        else:
            home[1].extend(same)
    out = []
    for norm, members in groups:
        k, score = verdict[norm]
        out.append(Unlike(sorted(members, key=lambda a: a.student), k.label, score))
    return sorted(out, key=lambda u: (-u.size, u.students))


def _kind(behaviour: Behaviour, answers: list[Answer], ex: _Exercise, known: list[Mistake]) -> str:
    if behaviour.stopped:
        return STOPPED
    if behaviour.passed:
        return PASSES
    if known:
        return KNOWN
    if _representative(answers).normalised == ex.stub:
        return STUB
    return UNKNOWN


def _code_like(norm: str, ex: _Exercise) -> str:
    if not ex.wrong_code:
        return ""
    number, score = max(((n, likeness(norm, c)) for n, c in ex.wrong_code.items()), key=lambda kv: kv[1])
    if score < LIKE:
        return ""
    why = ex.wrong.get(number, "")
    return f"wrong answer #{number}" + (f" ({why})" if why else "")


def _cluster(ex: _Exercise, by_behaviour: dict[Behaviour, list[Answer]]) -> tuple[list[Cluster], list[Unlike]]:
    clusters = []
    for behaviour, answers in by_behaviour.items():
        known = [m for m in ex.mistakes if m.matches(behaviour.as_outcomes())] if not behaviour.stopped else []
        for m in known:
            m.why = m.why or ex.wrong.get(m.number, "")
        kind = _kind(behaviour, answers, ex, known)
        like = _code_like(_representative(answers).normalised, ex) if kind == UNKNOWN else ""
        clusters.append(Cluster(0, behaviour, sorted(answers, key=lambda a: a.student), kind, known, like))
    order = list(KIND_WORDS)
    clusters.sort(key=lambda c: (-c.size, order.index(c.kind), c.students))
    for n, c in enumerate(clusters, start=1):
        c.number = n
    passing = [a for c in clusters if c.kind == PASSES for a in c.answers]
    return clusters, _unlike(passing, ex.known)


# ---- reading the class ---------------------------------------------------------------------------------
Progress = Callable[[str, int, int], None]
"""on_progress(stage, done, total): "reading" per autograded notebook, "pages" per exercise page written."""


def clusters(config: Config, part: str, exercise: str | None = None, *, propose: bool = False,
             output: Path | None = None, on_progress: Progress | None = None) -> ClustersReport:
    """Groups every autograded answer of the part (or of `exercise`, a name) by behaviour; writes a page per exercise
    and an index (`output`, a folder; default build/clusters/<part>/), and with `propose` the review file
    proposals.toml beside them (see the module's docstring)."""
    course = _course_side(config, part)
    if exercise is not None:
        course = [ex for ex in course if ex.name == exercise]
        if not course:
            names = ", ".join(sorted({ex.name for ex in _course_side(config, part)}))
            raise JaxpathError(f"{part} has no exercise {exercise!r}; its exercises: {names}")
    step = on_progress or (lambda stage, done, total: None)
    coursedir = config.coursedir()
    autograded = Path(coursedir.root) / coursedir.autograded_directory
    students, files = student_notebooks(autograded, part, {ex.notebook for ex in course})
    by_notebook: dict[str, list[_Exercise]] = defaultdict(list)
    for ex in course:
        by_notebook[ex.notebook].append(ex)
    behaviours: dict[tuple[str, str], dict[Behaviour, list[Answer]]] = defaultdict(lambda: defaultdict(list))
    skipped: list[str] = []
    for n, (student, notebook, path) in enumerate(files, start=1):
        step("reading", n, len(files))
        rel = path.relative_to(config.root) if path.is_relative_to(config.root) else path
        try:
            nb = read_json(path)
        except (OSError, UnicodeDecodeError, ValueError) as e:
            skipped.append(f"{rel}: not a readable notebook ({type(e).__name__}: {e})")
            continue
        cells: dict[str, list[tuple[int, dict]]] = defaultdict(list)
        for i, cell in enumerate(nb["cells"], start=1):
            if isinstance(cell, dict) and (is_answer(cell) or is_test(cell)):
                cells[grade_id(cell) or ""].append((i, cell))
        for ex in by_notebook[notebook]:
            tests = [c for gid in ex.tests for _, c in cells.get(gid, [])]
            if not tests:
                skipped.append(f"{rel}: no test cell {', '.join(ex.tests)} ({ex.name} left out for {student})")
                continue
            answer = cells.get(f"{ex.name}-answer", [])
            if len(answer) > 1:
                skipped.append(f"{rel}, cells {', '.join(str(i) for i, _ in answer)} ({ex.name}-answer): the answer "
                               "cell is there more than once; its copies are read as one answer")
            code = "\n".join(cell_text(c) for _, c in answer)
            behaviour = Behaviour.of(tests, [c for _, c in answer])
            behaviours[(notebook, ex.name)][behaviour].append(Answer(student, code, normalised(code)))
    result = []
    for ex in course:
        found, unlike = _cluster(ex, behaviours.get((ex.notebook, ex.name), {}))
        result.append(ExerciseClusters(ex.chapter, ex.notebook, ex.name, ex.requirements, found, unlike, ex.notes))
    report = ClustersReport(part, len(students), result, skipped)
    out = Path(output) if output else config.build / "clusters" / part
    if propose:
        report.proposals = out / "proposals.toml"
        shown = report.proposals.relative_to(config.root) if report.proposals.is_relative_to(config.root) else report.proposals
        write_atomic(report.proposals, proposals_text(report, str(shown)))
    _write_pages(report, out, step)
    return report


# ---- the pages -----------------------------------------------------------------------------------------
def page_names(exercises: list[ExerciseClusters]) -> dict[tuple[str, str], str]:
    """(notebook, exercise) -> its page's file name: `<exercise>.html`, or `<notebook>.<exercise>.html` where two
    notebooks of the part have an exercise of that name."""
    counts = Counter(e.exercise for e in exercises)
    return {(e.notebook, e.exercise): f"{e.exercise}.html" if counts[e.exercise] == 1 else f"{e.notebook}.{e.exercise}.html"
            for e in exercises}


def _chart(ex: ExerciseClusters) -> str:
    """A bar chart of the cluster sizes (PNG as a data URL), coloured by kind."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    shown = ex.clusters[:MAX_BARS]
    rest = ex.clusters[MAX_BARS:]
    labels = [f"C{c.number}" for c in shown] + ([f"{len(rest)} more"] if rest else [])
    sizes = [c.size for c in shown] + ([sum(c.size for c in rest)] if rest else [])
    colours = [KIND_COLOURS[c.kind] for c in shown] + (["#d0d7de"] if rest else [])
    fig, ax = plt.subplots(figsize=(7, 0.32 * len(labels) + 1.2))
    ax.barh(labels, sizes, color=colours)
    ax.invert_yaxis()
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_xlabel("answers")
    ax.set_title(f"{ex.exercise}: answers per behaviour")
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color=KIND_COLOURS[k], label=KIND_WORDS[k]) for k in KIND_WORDS if any(c.kind == k for c in shown)],
              loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _highlight(code: str):
    from markupsafe import Markup
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return Markup(highlight(code or "# (no answer cell)", PythonLexer(), HtmlFormatter(cssclass="highlight")))


def _inline(text: str):
    """A requirement's markdown text as safe HTML: escaped, `code` spans kept."""
    from markupsafe import Markup, escape

    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", str(escape(text))))


def _write_pages(report: ClustersReport, out: Path, step: Progress) -> None:
    from pygments.formatters import HtmlFormatter

    from ..templates import template

    css = HtmlFormatter(cssclass="highlight").get_style_defs(".highlight")
    names = page_names(report.exercises)
    page = template("clusters.html.j2")
    for n, ex in enumerate(report.exercises, start=1):
        step("pages", n, len(report.exercises))
        ex.page = out / names[(ex.notebook, ex.exercise)]
        write_atomic(ex.page, page.render(part=report.part, ex=ex, chart=_chart(ex) if ex.clusters else "", css=css,
                                          highlight=_highlight, inline=_inline, colours=KIND_COLOURS, like=LIKE))
    report.index = out / "index.html"
    write_atomic(report.index, template("clusters-index.html.j2").render(r=report, like=LIKE,
                                                                         names=names, UNKNOWN=UNKNOWN, KNOWN=KNOWN))


# ---- proposals -------------------------------------------------------------------------------------------
PROPOSALS_HEAD = """\
# Candidate variants from the class's answers (`jaxpath clusters {part} --propose`): instructor-side, never released.
#
# Each entry below is an answer of the class whose behaviour the course does not know yet: a [[name.wrong]] for a
# failing cluster that no known wrong answer matches, a [[name.alternative]] for passing answers written unlike the
# reference solution and every known alternative. Its `code` is the cluster's most common answer, with the
# student's comments removed; no student is named.
#
# To merge: delete the entries you do not want; write each kept entry's `why` (and, for a wrong answer, its `hint`:
# uncomment the line; the feedback page shows it to every student whose answer fails like this); then run
#     jaxpath clusters {part} --merge {path}
# which puts each entry after its exercise's last one in the variants file named by the `# === into ... ===` line
# above it (refusing an entry whose `why` or `hint` still says TODO), or copy the entries there by hand. Then
# `jaxpath validate CHAPTER` proves each one: a wrong answer must lose exactly the points of its `breaks`, an
# alternative must score full.
"""


def _toml_string(text: str) -> str:
    """A TOML string holding `text` exactly: a multi-line literal string where it can be one, else a basic string."""
    if "'''" not in text and "\r" not in text:
        return "'''\n" + text + ("" if text.endswith("\n") else "\n") + "'''"
    return json.dumps(text, ensure_ascii=False)


def _comment(text: str) -> str:
    """`text` as TOML comment lines of at most 120 characters."""
    import textwrap

    return "\n".join(textwrap.wrap(text, 118, initial_indent="# ", subsequent_indent="# ", break_long_words=False,
                                   break_on_hyphens=False))


def _wrong_entry(ex: ExerciseClusters, c: Cluster) -> str:
    breaks = c.behaviour.breaks()
    messages = c.behaviour.failed or {"": e for e in c.behaviour.errors if e}
    caught = "; ".join(f"{rid} fails: {msg}" if rid else msg for rid, msg in messages.items())
    lines = [_comment(f"---- {ex.exercise}, cluster C{c.number}: {c.size} answer(s) of {len(set(c.students))} "
                      "student(s), failing in a way no known wrong answer does"),
             _comment(f"The tests already catch it: {caught}"),
             _comment("Recording it lets the feedback page explain this mistake (with a hint) and keeps it caught when "
                      "the tests change.")]
    if c.code_like:
        lines.append(_comment(f"Its code is written like {c.code_like}, which fails otherwise: is it a variant of "
                              "that one?"))
    rid_list = ", ".join(json.dumps(r) for r in breaks)
    lines += [f"[[{ex.exercise}.wrong]]",
              f'why = "{TODO}: the misconception, in one line"',
              f"breaks = [{rid_list}]" if breaks else f"breaks = []  # {TODO}: no requirement named; which does it break?",
              f'# hint = "{TODO}: what a student whose answer fails like this should be told"',
              f"code = {_toml_string(without_comments(c.representative.code))}"]
    return "\n".join(lines)


def _alternative_entry(ex: ExerciseClusters, u: Unlike) -> str:
    return "\n".join([
        _comment(f"---- {ex.exercise}: {u.size} passing answer(s) of {len(set(u.students))} student(s) written unlike "
                 f"the reference and every known alternative (closest: {u.closest}, likeness {u.likeness:.2f} < "
                 f"{LIKE:g})"),
        _comment("It passes every check. If it is in fact wrong, no test catches it: add a check that does, and record "
                 "it as a [[name.wrong]] instead."),
        f"[[{ex.exercise}.alternative]]",
        f'why = "{TODO}: the idea, in one line"',
        f"code = {_toml_string(without_comments(u.representative.code))}"])


def proposals_text(report: ClustersReport, path: str | None = None) -> str:
    """The review file (at `path`, as its merge command names it; default build/clusters/<part>/proposals.toml): per
    chapter, after its `# === into variants/<chapter>.toml ===` line, a candidate entry per unmatched failing cluster
    and per group of passing answers written unlike the course."""
    where = path or f"build/clusters/{report.part}/proposals.toml"
    out = [PROPOSALS_HEAD.format(part=report.part, path=where)]
    for chapter in dict.fromkeys(e.chapter for e in report.exercises):
        entries = []
        for ex in (e for e in report.exercises if e.chapter == chapter):
            entries += [_wrong_entry(ex, c) for c in ex.of_kind(UNKNOWN)]
            entries += [_alternative_entry(ex, u) for u in ex.unlike]
        if entries:
            out.append(f"# ================ into variants/{chapter}.toml ================\n")
            out += [e + "\n" for e in entries]
    if len(out) == 1:
        out.append("# Nothing to propose: every failing cluster is a known wrong answer, and every passing answer is "
                   "written like a known one.\n")
    return "\n".join(out)


# ---- merging reviewed proposals into variants/ ------------------------------------------------------------
@dataclass
class Merged:
    chapter: str
    variants: Path
    entries: list[str]           # "lookup_or_fill: wrong answer #8"


_ENTRY = re.compile(r"^\[\[(?P<name>[A-Za-z_][\w]*)\.(?P<kind>wrong|alternative)\]\]\s*$", re.MULTILINE)
_HEADER = re.compile(r"^\[\[?(?P<name>[A-Za-z_][\w]*)[.\]]", re.MULTILINE)


def _entries(section: str) -> list[tuple[str, str, str]]:
    """(exercise, kind, the entry's TOML without comment lines) of a chapter's part of a proposals file."""
    starts = list(_ENTRY.finditer(section))
    out = []
    for m, nxt in zip(starts, starts[1:] + [None]):
        body = section[m.start():nxt.start() if nxt else len(section)]
        keep = "\n".join(line for line in body.splitlines() if not line.lstrip().startswith("#"))
        out.append((m["name"], m["kind"], keep.strip() + "\n"))
    return out


def _insert(text: str, name: str, entry: str) -> str:
    """`text` (a variants file) with `entry` after the last table of exercise `name` (before the next table of
    another exercise), or at the end."""
    headers = list(_HEADER.finditer(text))
    last = max((i for i, h in enumerate(headers) if h["name"] == name), default=None)
    if last is None or last + 1 == len(headers):
        return text.rstrip("\n") + "\n\n" + entry
    at = headers[last + 1].start()
    # comment lines just above the next table belong to it
    before = text[:at].rstrip("\n").split("\n")
    while before and before[-1].lstrip().startswith("#"):
        before.pop()
    cut = len("\n".join(before))
    return text[:cut].rstrip("\n") + "\n\n" + entry + "\n" + text[cut:].lstrip("\n")


def merge_proposals(config: Config, path: Path, part: str) -> list[Merged]:
    """Files the entries of a reviewed proposals file into the part's variants files (each after its exercise's last
    entry). Refuses, changing nothing, an entry whose `why` or `hint` still says TODO, one for an exercise its
    chapter does not have, or a result that is not valid TOML; names the entry (its exercise and place in the file)."""
    import tomllib

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise JaxpathError(f"{path}: cannot be read ({e.strerror})") from None
    marks = list(MARKER.finditer(text))
    if not marks:
        raise JaxpathError(f"{path}: no `# === into variants/<chapter>.toml ===` line: nothing to merge")
    new: dict[str, tuple[Path, str, list[str]]] = {}
    for m, nxt in zip(marks, marks[1:] + [None]):
        chapter = m["chapter"]
        if not chapter.startswith(f"{part}/"):
            raise JaxpathError(f"{path}: {chapter} is not a chapter of {part}")
        variants = config.variants / f"{chapter}.toml"
        current = new[chapter][1] if chapter in new else _read_variants(variants)
        known = set(tomllib.loads(current))
        merged = new[chapter][2] if chapter in new else []
        section = text[m.end():nxt.start() if nxt else len(text)]
        for name, kind, entry in _entries(section):
            where = f"{path}, [[{name}.{kind}]] for {chapter}"
            try:
                fields = tomllib.loads(entry)[name][kind][0]
            except (tomllib.TOMLDecodeError, KeyError, IndexError) as e:
                raise JaxpathError(f"{where}: not a valid entry ({e})") from None
            todo = [k for k in ("why", "hint") if TODO in str(fields.get(k, ""))]
            if todo or not str(fields.get("why", "")).strip():
                raise JaxpathError(f"{where}: write its {' and '.join(todo) or 'why'} first (it still says {TODO})"
                                   if todo else f"{where}: it needs a `why`")
            if name not in known:
                raise JaxpathError(f"{where}: {variants} has no exercise {name!r}")
            number = len(tomllib.loads(current)[name].get(kind, [])) + 1
            placed = _insert(current, name, entry)
            try:
                got = tomllib.loads(placed)[name].get(kind, [])
            except tomllib.TOMLDecodeError:
                got = []
            # a line of code that looks like a table header could mislead _insert: then the entry goes last
            current = placed if len(got) >= number and got[number - 1] == fields else \
                current.rstrip("\n") + "\n\n" + entry
            merged.append(f"{name}: {'wrong answer' if kind == 'wrong' else 'alternative'} #{number}")
        try:
            tomllib.loads(current)
        except tomllib.TOMLDecodeError as e:
            raise JaxpathError(f"{path}: merged into {variants}, the file would not be valid TOML ({e})") from None
        new[chapter] = (variants, current, merged)
    for variants, current, _ in new.values():
        write_atomic(variants, current)
    return [Merged(chapter, variants, merged) for chapter, (variants, _, merged) in new.items() if merged]


def _read_variants(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise JaxpathError(f"{path}: cannot be read ({e.strerror})") from None


def with_variants(config: Config, folder: Path | None) -> Config:
    """The configuration reading its variants files from `folder` (None: the course's own)."""
    return config if folder is None else replace(config, variants_dir=str(Path(folder).resolve()))
