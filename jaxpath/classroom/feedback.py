"""`jaxpath feedback PART`: an HTML page per student and notebook, from the autograded notebook.

nbgrader's own feedback template and GetGrades preprocessor render it. Before that, every test cell
loses its hidden tests: their source is cut out, and an error raised inside them is shown as
"a hidden test failed" with its message only, never with the traceback that would print their lines.

The folder it writes, `feedback/<student>/<part>/`, is what `nbgrader generate_feedback` would write and
what `nbgrader release_feedback` reads: one `<notebook>.html` per graded notebook, and the other files of
the autograded submission beside them (nbgrader's ignore globs apply), among them `timestamp.txt` and
`submission_secret.txt`. `release_feedback` names each released page after a hash of that secret, which
`fetch_feedback` recomputes from the student's own copy of the secret (kept by `nbgrader submit`).
A submission that did not come through the exchange (an LMS zip, a hand-placed folder) has no secret, and
`release_feedback` would stop with a traceback on it: such a folder gets a fresh random secret (its page
is then released under a name nobody can fetch: hand it out through the LMS), and one without
`timestamp.txt` gets the submission's time from the gradebook. Both are listed in the report's notes.
"""
from __future__ import annotations

import copy
import re
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from ..cells import BEGIN_HIDDEN, END_HIDDEN, HIDDEN, headings, notebook_secrets, regions, visible_source
from ..config import Config
from ..files import write_atomic
from ..texts import HIDDEN_NOTE, REDACTED, SUMMARY_TITLE, exercise_line, hidden_test_failed, status_words

ANSI = re.compile(r"\x1b\[[0-9;]*m")
CELL_FRAME = r"Cell In\[{n}\], line (\d+)"

DEFAULT_ALT = "No description has been provided for this image"
"""The alt text nbconvert's HTML exporter gives an image that has none (`HTMLExporter.from_notebook_node`)."""
LAB_MARKS = ("jp-Cell-inputWrapper", "jp-OutputArea-output")
"""JupyterLab's input and output areas, which nbconvert's HTML exporter makes focusable on a rendered page."""
IMG_TAG = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
ALT = re.compile(r"\salt\s*=", re.IGNORECASE)


class FeedbackExporter(HTMLExporter):
    """nbconvert's HTML exporter, without a pass that changes nothing on a feedback page.

    Once the template has rendered a page, `HTMLExporter` parses all of it again with BeautifulSoup (html.parser,
    pure Python), gives every image without alt text a default one, makes JupyterLab's cells focusable, and writes
    the tree back out. It cost two thirds of a page's time: the 33 pages of a graded `advanced` (each chapter's
    reference, as released and mistaken, about 570 kB each) took 24.6 s, 7.4 s without it. The feedback template
    is classic (no JupyterLab cells), and the alt text of an image output is given here the way the template reads
    it (the output's metadata, `DEFAULT_ALT` where neither the output nor its cell has one), so the page is the
    template's own output. A page on which an image still has no alt text (raw HTML in a cell) or that holds a
    JupyterLab cell goes through nbconvert's own path whole, and comes out exactly as stock nbconvert writes it."""

    def from_notebook_node(self, nb, resources=None, **kw):
        stock_resources = copy.deepcopy(resources)
        # what HTMLExporter.from_notebook_node does before its template renders (nbconvert 7.17, pinned)
        langinfo = nb.metadata.get("language_info", {})
        lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
        highlight_code = self.filters.get("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self))
        resources = self._init_resources(resources)
        self.register_filter("highlight_code", highlight_code)
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata,
                                                                       parent=self, resources=resources))
        html, resources = TemplateExporter.from_notebook_node(self, _with_default_alt(nb), resources, **kw)
        if any(mark in html for mark in LAB_MARKS) or any(not ALT.search(tag) for tag in IMG_TAG.findall(html)):
            return super().from_notebook_node(nb, stock_resources, **kw)
        return html, resources


def _with_default_alt(nb):
    """A copy of `nb` in which every PNG and JPEG output without alt text (in the output's metadata or its cell's,
    where the classic template reads it) has DEFAULT_ALT."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.get("metadata", {}).get("alt"):
            continue
        for out in cell.get("outputs", []):
            md = out.setdefault("metadata", {})
            for mime in ("image/png", "image/jpeg"):
                if mime in out.get("data", {}):
                    if not isinstance(md.get(mime), dict):
                        md[mime] = {}
                    if not (md[mime].get("alt") or md.get("alt")):
                        md[mime]["alt"] = DEFAULT_ALT
    return nb


@dataclass
class FeedbackReport:
    written: list[Path] = field(default_factory=list)
    """The HTML pages written."""
    copied: list[Path] = field(default_factory=list)
    """The other files of the autograded submissions, copied beside the pages."""
    notes: list[str] = field(default_factory=list)
    """Folders that needed a file nbgrader's release_feedback reads (a secret, a timestamp) made for them."""
    problems: list[str] = field(default_factory=list)


def _hidden_lines(source: str) -> tuple[set[int], set[str]]:
    """1-based line numbers inside hidden-test regions, and their stripped text (the markers' too)."""
    numbers, texts = set(), {BEGIN_HIDDEN, END_HIDDEN}
    for n, line, region in regions(source):
        if region == HIDDEN:
            numbers.add(n)
            if line.strip():
                texts.add(line.strip())
    return numbers, texts


def hide_hidden_tests(cell) -> None:
    """Remove hidden tests from a test cell, its source and its outputs."""
    if BEGIN_HIDDEN not in cell.source:
        return
    numbers, texts = _hidden_lines(cell.source)
    outputs = []
    for out in cell.get("outputs", []):
        if out.get("output_type") != "error":
            outputs.append(out)
            continue
        tb = [ANSI.sub("", t) for t in out.get("traceback", [])]
        # the frames of this cell (IPython names them after its execution count)
        frame = re.compile(CELL_FRAME.format(n=cell.get("execution_count") or r"\d+"))
        lines = [int(m.group(1)) for t in tb for m in frame.finditer(t)]
        in_hidden = any(n in numbers for n in lines)
        if in_hidden or not lines:
            msg = f"{out.get('ename', 'Error')}: {out.get('evalue', '')}".rstrip(": ")
            out = nbformat.v4.new_output("error", ename=out.get("ename", "Error"), evalue=out.get("evalue", ""),
                                         traceback=[hidden_test_failed(msg) if in_hidden else msg])
        else:
            # IPython prints context lines around the failing one: drop any that are hidden tests
            kept = ["\n".join(l for l in t.split("\n") if not any(h in ANSI.sub("", l) for h in texts))
                    for t in out.get("traceback", [])]
            out = nbformat.v4.new_output("error", ename=out.get("ename", ""), evalue=out.get("evalue", ""),
                                         traceback=kept)
        outputs.append(out)
    cell.outputs = outputs
    visible = visible_source(cell.source).rstrip("\n")
    cell.source = visible + "\n" + HIDDEN_NOTE


def _redact_text(text: str, secret: set[str]) -> str:
    if not any(s in text for s in secret):
        return text
    return "\n".join(REDACTED if any(s in line for s in secret) else line for line in text.split("\n"))


def redact_outputs(cell, secret: set[str]) -> None:
    """Whatever a cell printed, displayed or raised: lines that quote a hidden test are removed. (A student's
    code can read the tests that ran before it, from IPython's history or its caller's frame, and print them.)"""
    if not secret:
        return
    for out in cell.get("outputs", []):
        if "text" in out:
            out["text"] = _redact_text(out["text"], secret)
        for mime, value in list(out.get("data", {}).items()):
            if isinstance(value, str) and mime.startswith(("text/", "application/javascript", "image/svg")):
                out["data"][mime] = _redact_text(value, secret)
            elif isinstance(value, (dict, list)):
                import json

                if any(s in json.dumps(value) for s in secret):
                    out["data"][mime] = REDACTED
        if out.get("output_type") == "error":
            out["evalue"] = _redact_text(out.get("evalue", ""), secret)
            out["traceback"] = [_redact_text(ANSI.sub("", t), secret) for t in out.get("traceback", [])]


def hide_secrets(nb, released=None) -> set[str]:
    """Every code cell of an autograded notebook as a student may see it: hidden tests cut out of test cells, and
    every line that quotes one (in what a cell printed or raised, or in the student's own cells) removed. A hidden
    line that is part of a line of the `released` notebook (`atol=1e-5)` inside a visible assert) is shown to
    every student anyway: it is not a secret. Returns the secret lines."""
    secret = set(notebook_secrets(nb).hidden)  # its hidden tests, nothing the student saw
    if released is not None:
        shown = [line for c in released.cells for line in c.get("source", "").split("\n")]
        secret = {s for s in secret if not any(s in line for line in shown)}
    for cell in nb.cells:
        if cell.cell_type == "code":
            hide_hidden_tests(cell)
            redact_outputs(cell, secret)
    return secret


class HideHiddenTests(Preprocessor):
    """`hide_secrets` as an nbconvert preprocessor, for nbgrader's own GenerateFeedback: this course's
    nbgrader_config.py puts it into `c.GenerateFeedback.preprocessors`, so that formgrader's "Generate Feedback"
    button and `nbgrader generate_feedback` write pages without hidden tests too (after GetGrades, which reads
    the cells' grade ids). Student cells that quote a hidden test lose those lines here, where `jaxpath
    feedback` instead leaves the page for a person to review."""

    enabled = Bool(True, help="on by default (nbconvert's preprocessors are off unless enabled)").tag(config=True)

    def preprocess(self, nb, resources):
        secret = hide_secrets(nb)
        for cell in nb.cells:
            if cell.cell_type == "code" and any(x in cell.source for x in secret):
                cell.source = _redact_text(cell.source, secret)
        return nb, resources


def _first_failure(cell) -> str:
    """The first error a graded cell showed, on one line (after hide_hidden_tests: a hidden test's message, not
    its source)."""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            evalue = (str(out.get("evalue", "")).strip().splitlines() or [""])[0]
            return f"{out.get('ename', 'Error')}: {evalue}".rstrip(": ")[:300]
    return ""


def _inline(text: str):
    """A requirement's markdown text as safe HTML: escaped, `code` spans kept."""
    from markupsafe import Markup, escape

    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", str(escape(text))))


@dataclass
class ChapterFacts:
    """What the course knows of a graded notebook's exercises, for its feedback page: each requirement's text,
    and the known mistakes (wrong answers with a hint) as validate saw them fail."""
    requirements: dict[str, dict[str, str]] = field(default_factory=dict)
    """exercise name -> {requirement id: its text}."""
    mistakes: dict[str, list] = field(default_factory=dict)
    """exercise name -> [jaxpath.authoring.requirements.Mistake]."""
    hints: int = 0
    """How many wrong answers of the chapter have a hint (those `mistakes` should hold once validated)."""

    @classmethod
    def load(cls, config: Config, chapter_id: str) -> "ChapterFacts":
        from ..authoring.chapter import load_chapter
        from ..authoring.requirements import known_mistakes
        from ..manifest import notebook_path, variants_path
        from ..problems import ChapterError

        try:
            ch = load_chapter(notebook_path(config, chapter_id), chapter_id, config.root,
                              variants_path(config, chapter_id))
        except (ChapterError, OSError, ValueError):
            return cls()
        return cls({e.name: e.requirements for e in ch.exercises}, known_mistakes(config, chapter_id),
                   sum(1 for e in ch.exercises for v in e.of_kind("wrong") if v.hint))


def _exercise_name(grade_id: str) -> str:
    return grade_id.removesuffix("-check")


def summary_cell(nb, score: float | None, max_score: float | None, status=None, facts: ChapterFacts | None = None):
    """A markdown cell for the top of the page (templates/summary.html.j2): the notebook's points and grading
    status in plain words, then one row per graded cell (its exercise, its points, ✓/◐/✗/… and the first failure
    it showed); for a cell that scores per requirement, each requirement with ✓/✗ and its message, and the
    explanation of a known mistake the answer behaves like. Read after GetGrades (each graded cell's score and
    points) and hide_secrets (no hidden-test source left to quote)."""
    from markupsafe import Markup

    from ..authoring.requirements import cell_outcomes
    from ..cells import nbgrader_meta
    from ..templates import template

    facts = facts or ChapterFacts()
    rows, exercise = [], ""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for _, _, text in headings(cell.source):
                exercise = text
            continue
        meta = nbgrader_meta(cell)
        if not meta.get("grade"):
            continue
        points = float(meta.get("points", 0) or 0)
        got = meta.get("score")
        gid = meta.get("grade_id", "")
        name = _exercise_name(gid)
        outcomes = cell_outcomes(cell) if cell.cell_type == "code" else []
        failure = _first_failure(cell)  # an error output: the cell's own, or the grader's (not counted, not run)
        mark, words = exercise_line(None if got is None else float(got), points, failure)
        texts = facts.requirements.get(name, {})
        reqs = [{"rid": o.rid, "mark": o.mark, "points": f"{o.points:g}",
                 "got": f"{o.points:g}" if o.passed else "0", "text": _inline(texts.get(o.rid, "")),
                 "message": o.message} for o in outcomes]
        hint = next((m.hint for m in facts.mistakes.get(name, []) if m.matches(outcomes)), "")
        rows.append({"exercise": exercise or gid, "grade_id": gid, "shown": "" if got is None else f"{float(got):g}",
                     "points": f"{points:g}", "mark": mark, "words": words, "requirements": reqs,
                     "hint": _inline(hint) if hint else ""})
    body = template("summary.html.j2").render(
        title=SUMMARY_TITLE, rows=rows,
        total="" if score is None else f"{score:g} / {max_score:g} points.",
        state="" if status is None else status_words(str(status.status), status.reason or ""),
        colours={"✓": "#1a7f37", "◐": "#9a6700", "✗": "#cf222e"},
        th=Markup('style="text-align:left;padding:4px 14px 4px 0;border-bottom:2px solid #999"'),
        td=Markup('style="padding:4px 14px 4px 0;border-bottom:1px solid #ddd;vertical-align:top"'))
    cell = nbformat.v4.new_markdown_cell(body)
    cell.metadata["jaxpath"] = {"summary": True}
    return cell


def _released(config: Config, part: str, name: str):
    """The notebook as the course released it (release/<part>/<name>.ipynb), or None."""
    try:
        return nbformat.read(config.release / part / f"{name}.ipynb", as_version=4)
    except (OSError, ValueError):
        return None


def page_leaks(page: str, secret: set[str]) -> list[str]:
    """Secret lines that still appear in a rendered page's text (tags removed, entities decoded)."""
    import html as html_lib

    text = html_lib.unescape(re.sub(r"<[^>]+>", "", page))
    return sorted(s for s in secret if s in text)


def page_config():
    """The exporter's configuration: nbgrader's own feedback template, as `nbgrader generate_feedback` uses it."""
    import nbgrader
    from traitlets.config import Config as TConfig

    templates = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"
    css = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "static" / "node_modules" / \
        "bootstrap" / "dist" / "css"
    html_cfg = TConfig()
    html_cfg.HTMLExporter.template_name = "feedback"
    html_cfg.HTMLExporter.extra_template_basedirs = [str(templates)]
    html_cfg.HTMLExporter.extra_template_paths = [str(css)]
    return html_cfg


def feedback(config: Config, part: str, students: list[str] | None = None, db_url: str | None = None) -> FeedbackReport:
    from nbgrader.preprocessors import GetGrades

    nbcfg = config.nbgrader(db_url)
    coursedir = config.coursedir(db_url)
    root = Path(coursedir.root)
    exporter = FeedbackExporter(config=page_config())
    from ..grade.record import StatusStore

    report = FeedbackReport()
    facts: dict[str, ChapterFacts] = {}
    store = StatusStore.existing(coursedir.db_url)  # None: graded by stock nbgrader, no statuses to say
    auto = root / coursedir.autograded_directory
    for nb_path in sorted(auto.glob(f"*/{part}/*.ipynb")):
        student = nb_path.parent.parent.name
        if students and student not in students:
            continue
        nb = nbformat.read(nb_path, as_version=4)
        resources = {"nbgrader": {"notebook": nb_path.stem, "assignment": part, "student": student,
                                  "db_url": coursedir.db_url, "course_id": coursedir.course_id},
                     "metadata": {"name": nb_path.stem, "path": str(nb_path.parent)}}
        nb, resources = GetGrades(config=nbcfg).preprocess(nb, resources)
        secret = hide_secrets(nb, _released(config, part, nb_path.stem))
        status = store.get(part, student, nb_path.stem) if store is not None else None
        if f"{part}/{nb_path.stem}" not in facts:
            facts[f"{part}/{nb_path.stem}"] = known = ChapterFacts.load(config, f"{part}/{nb_path.stem}")
            if known.hints and not known.mistakes:
                report.notes.append(f"{part}/{nb_path.stem}: its wrong answers have hints, but no record of how they "
                                    "fail (run `jaxpath validate` here): the pages name no known mistake")
        nb.cells.insert(0, summary_cell(nb, resources["nbgrader"].get("score"), resources["nbgrader"].get("max_score"),
                                        status, facts[f"{part}/{nb_path.stem}"]))
        html, _ = exporter.from_notebook_node(nb, resources=resources)
        out = root / coursedir.feedback_directory / student / part / f"{nb_path.stem}.html"
        leaks = page_leaks(html, secret)
        if leaks:  # the student's own cells quote hidden tests: a person decides what to hand back
            report.problems.append(f"{nb_path}: not written, the page would show {len(leaks)} hidden-test line(s), "
                                   f"e.g. {leaks[0][:80]!r} (in the student's own cells): review it by hand")
            out.unlink(missing_ok=True)
            continue
        write_atomic(out, html.encode("utf-8"))
        report.written.append(out)
    if store is not None:
        store.dispose()
    for folder in sorted({p.parent for p in report.written}):
        _release_files(coursedir, auto / folder.parent.name / part, folder, part, report)
    return report


def _release_files(coursedir, src: Path, dest: Path, part: str, report: FeedbackReport) -> None:
    """Beside the pages: the autograded submission's other files, as `nbgrader generate_feedback` copies them
    (its ignore globs, notebooks left out), so that `nbgrader release_feedback` finds what it reads."""
    from nbgrader.utils import find_all_files

    for f in sorted(find_all_files(str(src), list(coursedir.ignore) + ["*.ipynb"])):
        target = dest / Path(f).relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
        report.copied.append(target)
    student = dest.parent.name
    where = f"{coursedir.feedback_directory}/{student}/{part}"
    if not (dest / "submission_secret.txt").exists():
        write_atomic(dest / "submission_secret.txt", secrets.token_hex(64).encode())
        report.notes.append(f"{where}: the submission did not come through the exchange (no submission_secret.txt); "
                            "a fresh secret lets `nbgrader release_feedback` run, but the student cannot fetch "
                            "this page: hand it out another way")
    if not (dest / "timestamp.txt").exists():
        stamp = _gradebook_timestamp(coursedir, part, student)
        write_atomic(dest / "timestamp.txt", stamp.encode())
        report.notes.append(f"{where}: no timestamp.txt in the autograded submission; wrote "
                            f"{stamp or 'an empty one'} (from the gradebook)")


def _gradebook_timestamp(coursedir, part: str, student: str) -> str:
    from nbgrader.api import Gradebook, MissingEntry

    try:
        with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
            ts = gb.find_submission(part, student).timestamp
    except MissingEntry:
        return ""
    return ts.strftime("%Y-%m-%d %H:%M:%S.%f UTC") if ts else ""
