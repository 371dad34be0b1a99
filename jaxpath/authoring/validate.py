"""`jaxpath validate`: prove that each chapter runs and that its tests tell right from wrong.

One kernel per chapter runs the chapter top to bottom. At each exercise's answer cell, before the
reference runs, the stub, the wrong answers and the alternatives each run in a throw-away copy of
the kernel's namespace, followed by the exercise's test cells; the chapter is not re-executed per variant.
"""
from __future__ import annotations

import copy
import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import nbformat

from ..cells import grade_id
from ..config import Config
from ..errors import UnknownChapter
from ..execute import Session, stamp_notebook
from ..files import remove_orphaned_temp_dirs, write_atomic
from ..manifest import Manifest, check_layout, load_manifest, notebook_path, variants_path
from ..problems import ChapterError, Problem
from .chapter import (
    INTENDED_ERROR,
    REQUIREMENT_TAG,
    Chapter,
    Exercise,
    check_exercise_counts,
    load_chapter,
    stub_source,
    tags,
    visible_source,
)
from .proofs import proof_state, write_proof
from .requirements import check_requirements, stable

NS = "__jaxpath_ns__"


@dataclass
class ChapterReport:
    id: str
    problems: list[Problem] = field(default_factory=list)
    seconds: float = 0.0
    executed: Path | None = None
    exercises: int = 0
    variants: int = 0
    reused: bool = False
    """True when the chapter's committed proof was current and reused: the chapter ran reference-only."""
    proof: Path | None = None
    """The proof this validation wrote (None when it reused one, or failed)."""

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class TrialResult:
    answer_error: str
    tests: list[tuple[int, bool, str]]
    """(test cell index, passed, error summary) for each test cell."""
    visible: list[tuple[int, bool, str]] = field(default_factory=list)
    scores: list[dict | None] = field(default_factory=list)
    """For each test cell, what its `check.score()` found (`Requirements.last`), None if it did not get there."""


LAST = ("__import__('json').dumps(getattr(globals().get('Requirements'), 'last', None))")
RESET = "if 'Requirements' in globals(): Requirements.last = None"


def last_score(s: Session) -> dict | None:
    """What the last `check.score()` in the kernel found: {"points", "ran", "failed", "score"}, or None."""
    import ast

    ok, text = s.evaluate("", LAST)
    try:
        return json.loads(ast.literal_eval(text)) if ok and text else None
    except (ValueError, SyntaxError):
        return None


def _exec_code(source: str, label: str) -> str:
    return f"exec(compile({source!r}, {label!r}, 'exec'), {NS})"


def _trial(s: Session, ch: Chapter, ex: Exercise, answer: str, label: str, with_visible: bool = False) -> TrialResult:
    """Run one candidate answer and the exercise's tests in a copy of the kernel's namespace."""
    s.run_code(f"{NS} = dict(globals())")
    try:
        out, _ = s.run_code(_exec_code(answer, f"<{ex.name}: {label}>"))
        result = TrialResult("" if out.ok else out.summary, [])
        for t in ex.tests:
            src = ch.nb.cells[t].source
            s.run_code(RESET)
            out, _ = s.run_code(_exec_code(src, f"<{ex.name}: tests, {label}>"))
            result.tests.append((t, out.ok, out.summary))
            result.scores.append(last_score(s) if ex.weights else None)
            if with_visible:
                vis = visible_source(src)
                if vis != src:
                    out, _ = s.run_code(_exec_code(vis, f"<{ex.name}: visible tests, {label}>"))
                result.visible.append((t, out.ok, out.summary))
    finally:
        s.run_code(f"{NS} = None; del {NS}")
    return result


def _found(score: dict | None) -> str:
    if score is None:
        return "the test cell stopped before `check.score()`"
    failed = score.get("failed", {})
    return "; ".join(f"{r} failed: {m!r}" for r, m in failed.items()) or "nothing failed"


def _points_problems(ch: Chapter, ex: Exercise, r: TrialResult, label: str, breaks: set[str]) -> list[Problem]:
    """An answer must lose exactly the points of the requirements it breaks (the stub: all of them; the
    reference and an alternative: none), every requirement's checks having run."""
    want_score = sum(w for rid, w in ex.weights.items() if rid not in breaks)
    out = []
    for t, score in zip(ex.tests, r.scores):
        score = score if score and score.get("exercise") == ex.name else None
        failed = set((score or {}).get("failed", {}))
        ran = set((score or {}).get("ran", []))
        if score is not None and failed == breaks and ran == set(ex.weights) and score.get("score") == want_score:
            continue
        got = "no score" if score is None else f"{score.get('score'):g} of {ex.points:g} points"
        lost = f"lose exactly {', '.join(sorted(breaks))}" if breaks else "lose nothing"
        unchecked = sorted(set(ex.weights) - ran)
        extra = f"; no check ran for {', '.join(unchecked)}" if score is not None and unchecked else ""
        out.append(ch.problem(f"{label} should {lost} ({want_score:g} of {ex.points:g} points) but gets {got}: "
                              f"{_found(score)}{extra} ({ch.variants_rel})", t, ex.name))
    return out


def _check_variants(s: Session, ch: Chapter, ex: Exercise, mistakes: list | None = None) -> list[Problem]:  # noqa: C901
    problems = []
    answer_src = ch.nb.cells[ex.answer].source
    stub = stub_source(answer_src)
    r = _trial(s, ch, ex, stub, "stub", with_visible=True)
    for (t, passed, _), (_, vis_passed, _) in zip(r.tests, r.visible):
        gid = grade_id(ch.nb.cells[t])
        if passed:
            problems.append(ch.problem("this test cell passes on the stub nbgrader releases: it cannot tell an "
                                       "untouched exercise from a solved one", t, ex.name, f"self-check {gid}"))
        elif vis_passed:
            problems.append(ch.problem("the visible self-check passes on the stub: a learner would see success "
                                       "without writing anything", t, ex.name, f"self-check {gid}"))
    if ex.weights:
        problems += _points_problems(ch, ex, r, "the stub", set(ex.weights))
    caught: set[str] = set()
    for v in ex.variants:
        if s.dead:
            break
        r = _trial(s, ch, ex, v.code, v.label)
        where = f"{ch.variants_rel}, {v.label}"
        if ex.weights:
            problems += _points_problems(ch, ex, r, v.label, set(v.breaks))
            if v.kind == "wrong":
                caught |= {rid for sc in r.scores if sc for rid in sc.get("failed", {})} & set(v.breaks)
                if mistakes is not None and r.scores and r.scores[0]:
                    failed = {rid: stable(m) for rid, m in r.scores[0]["failed"].items()}
                    mistakes.append({"exercise": ex.name, "number": v.number, "failed": failed,
                                     "hint": v.hint, "why": v.why})
        if v.kind == "wrong" and all(p for _, p, _ in r.tests):
            problems.append(ch.problem(f"{v.label} passes every test of the exercise ({ch.variants_rel}): the tests "
                                       "must catch it", ex.answer, ex.name))
        elif v.kind == "wrong" and ex.requirements and v.breaks and not ex.weights:
            failures = [err for _, passed, err in r.tests if not passed]
            named = {f"R{m}" for err in failures for m in REQUIREMENT_TAG.findall(err)}
            if named & set(v.breaks):
                caught |= named & set(v.breaks)
            else:
                problems.append(ch.problem(
                    f"{v.label} breaks {' or '.join(v.breaks)}, but no check naming it caught the answer: it failed "
                    f"with {failures[0]!r} ({ch.variants_rel}). The check of {v.breaks[0]} must fail on it with a "
                    f"message that starts '{v.breaks[0]}: '", ex.tests[0], ex.name))
        if v.kind == "alternative":
            if r.answer_error:
                problems.append(ch.problem(f"{v.label} raises when defined: {r.answer_error} ({ch.variants_rel})",
                                           ex.answer, ex.name))
            for t, passed, err in r.tests:
                if not passed:
                    gid = grade_id(ch.nb.cells[t])
                    problems.append(ch.problem(f"{v.label} is correct but fails this test: {err} ({where})",
                                               t, ex.name, f"self-check {gid}"))
    if ex.requirements and not s.dead:
        for rid, text in ex.requirements.items():
            broken_by = [v for v in ex.of_kind("wrong") if rid in v.breaks]
            if broken_by and rid not in caught:
                problems.append(ch.problem(f"{rid} ({text}): none of the wrong answers that break it "
                                           f"({', '.join(f'#{v.number}' for v in broken_by)}) was caught by a check "
                                           f"naming {rid}", ex.answer, ex.name))
    return problems


def run_chapter(ch: Chapter, config: Config, executed_out: Path | None = None,
                mistakes: list | None = None, prove: bool = True) -> tuple[list[Problem], nbformat.NotebookNode]:
    """Execute a chapter with its variants; return the problems and the executed notebook. `mistakes` collects
    how the tests judged each wrong answer of an exercise scored per requirement (jaxpath.authoring.requirements.Mistake;
    its hint is "" where it has none). Without `prove`, reference-only: the stub, wrong and alternative answers are
    not run (the reference's checks and the intended errors are)."""
    problems: list[Problem] = []
    nb = copy.deepcopy(ch.nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    ch_exec = copy.copy(ch)
    ch_exec.nb = nb
    answers = {e.answer: e for e in ch.exercises}
    tests = {t: e for e in ch.exercises for t in e.tests}
    with Session(nb, ch.path.parent, timeout=config.cell_timeout, startup_timeout=config.startup_timeout,
                 kernel_name=config.kernel_name) as s:
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            if i in answers and prove:
                problems += _check_variants(s, ch_exec, answers[i], mistakes)
                if s.dead:
                    problems.append(ch.problem("the kernel died while checking the stub or a variant", i, answers[i].name))
                    break
            out = s.run(i)
            if i in tests and tests[i].weights and not s.dead:
                ref = TrialResult("", [(i, out.ok, out.summary)], scores=[last_score(s)])
                problems += _points_problems(ch, tests[i], ref, "the reference solution", set())
            intended = INTENDED_ERROR in tags(cell)
            if intended and out.ok:
                problems.append(ch.problem(f"tagged {INTENDED_ERROR} but raised nothing: the text promises an error "
                                           "this code does not produce", i))
            elif out.dead:
                problems.append(ch.problem("the kernel died running this cell", i))
                break
            elif not out.ok and not intended:
                if i in tests:
                    e = tests[i]
                    gid = grade_id(cell)
                    problems.append(ch.problem(f"the test fails on the reference solution: {out.summary}", i, e.name,
                                               f"self-check {gid}"))
                elif i in answers:
                    problems.append(ch.problem(f"the reference solution raises: {out.summary}", i, answers[i].name,
                                               "answer"))
                else:
                    problems.append(ch.problem(f"raised {out.summary} (tag the cell {INTENDED_ERROR} if the error is "
                                               "the point)", i))
        stamp = {} if s.dead else s.stamp()
    stamp_notebook(nb, stamp)
    if executed_out is not None:
        write_atomic(executed_out, nbformat.writes(nb))
    return problems, nb


def validate_one(config: Config, chapter_id: str, execute: bool = True, reuse: bool = False) -> ChapterReport:
    """Validate one chapter and, when it holds, write its proof (proofs/<chapter>.json). With `reuse`, a chapter whose
    committed proof matches its key (jaxpath.authoring.proofs: same notebook, variants, manifest entry, lock, Python
    and checking code) is run reference-only: executed once, every static check and every check of the reference
    (full marks, every intended error raising), but no stub, wrong or alternative answer; its proof is kept."""
    t0 = time.perf_counter()
    report = ChapterReport(chapter_id)
    state = proof_state(config, chapter_id) if execute else None
    prove = not (reuse and state is not None and state.current)
    try:
        ch = load_chapter(notebook_path(config, chapter_id), chapter_id, config.root,
                          variants_path(config, chapter_id))
    except ChapterError as e:
        report.problems.append(e.problem)
        return report
    report.exercises = len(ch.exercises)
    report.variants = sum(len(e.variants) for e in ch.exercises)
    report.problems += ch.problems
    report.problems += check_exercise_counts(ch, config.min_exercises, config.min_wrong, config.min_alternative)
    report.problems += check_requirements(ch, config.require_requirements, config.require_points)
    entry = load_manifest(config).chapters.get(chapter_id)
    titles = {sec.title for sec in ch.sections}
    for heading in (entry.sections if entry else {}):
        if heading not in titles:
            report.problems.append(ch.problem(f"{config.manifest_file} maps the section {heading!r} to the track, "
                                              "but the chapter has no heading with that text"))
    if execute:
        report.reused = not prove
        out = config.executed / f"{chapter_id}.ipynb"
        if out.exists():
            out.unlink()  # never leave an executed copy of a previous version next to a failed run
        mistakes: list = []
        problems, _ = run_chapter(ch, config, out, mistakes, prove=prove)
        report.problems += problems
        if problems:
            out.unlink(missing_ok=True)
        else:
            report.executed = out
        if prove and not report.problems:  # a failed validation writes nothing: the proof there stays stale
            report.proof = write_proof(config, chapter_id, {
                "chapter": chapter_id, "key": state.key, "inputs": state.inputs,
                "exercises": report.exercises, "variants": report.variants, "mistakes": mistakes,
                "every_wrong": True})
    report.seconds = time.perf_counter() - t0
    return report


def _validate_in_worker(config: Config, chapter_id: str, execute: bool, reuse: bool) -> ChapterReport:
    return validate_one(config, chapter_id, execute, reuse)


def resolve_chapters(manifest: Manifest, names: Iterable[str] | None) -> list[str]:
    """Chapter ids from names given on the command line: 'basics/02_jit', '02_jit', 'basics' or a path."""
    written = [c.id for c in manifest.written()]
    if not names:
        return written
    out = []
    for name in names:
        n = str(name).removeprefix("source/").removesuffix(".ipynb").strip("/")
        hits = [c for c in written if c == n or c.split("/")[1] == n or c.split("/")[0] == n]
        if not hits:
            planned = [c.id for c in manifest.chapters.values() if c.planned and (c.id == n or c.stem == n)]
            if planned:
                raise UnknownChapter(f"{planned[0]} is marked planned in the manifest: it has no notebook yet")
            raise UnknownChapter(f"no chapter {name!r} in the manifest (chapters: {', '.join(written)})")
        out += [h for h in hits if h not in out]
    return out


def validate(config: Config, chapters: Iterable[str] | None = None, *, jobs: int = 1, execute: bool = True,
             reuse: bool = False, on_report: Callable[[ChapterReport], None] | None = None
             ) -> tuple[list[Problem], list[ChapterReport]]:
    """Validate chapters (default: every written chapter). Returns course-level problems and per-chapter reports.
    With `reuse` (`jaxpath build`), a chapter whose committed proof is current runs reference-only (`validate_one`)."""
    remove_orphaned_temp_dirs()  # the kernels' folders of a validation that was killed (no cleanup code ran there)
    manifest = load_manifest(config)
    course_problems = check_layout(config, manifest)
    ids = resolve_chapters(manifest, chapters)
    ids = [c for c in ids if notebook_path(config, c).exists()]
    reports: list[ChapterReport] = []
    if reuse and execute:  # the chapters to prove first: the long runs start while the reused ones fill the gaps
        ids = sorted(ids, key=lambda c: proof_state(config, c).current)
    if jobs <= 1 or len(ids) <= 1:
        for cid in ids:
            r = validate_one(config, cid, execute, reuse)
            reports.append(r)
            if on_report:
                on_report(r)
    else:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(_validate_in_worker, config, cid, execute, reuse): cid for cid in ids}
            for f in as_completed(futures):
                r = f.result()
                reports.append(r)
                if on_report:
                    on_report(r)
    order = {c: i for i, c in enumerate(resolve_chapters(manifest, chapters))}
    reports.sort(key=lambda r: order[r.id])
    return course_problems, reports
