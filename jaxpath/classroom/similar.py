"""`jaxpath similar PART`: pairs of submissions whose answer cells share long stretches of code, per exercise and
over the part, for a person to look at. It flags; it never concludes.

What is compared: the answer cells (`cells.is_answer`, matched by `grade_id`) of every notebook of the part in
`submitted/<student>/<part>/`. Each answer cell is normalised and fingerprinted by copydetect (the winnowing of
MOSS and JPlag, Schleimer, Wilkerson and Aiken 2003): pygments tokenises it, names become `V`, the names of
functions defined `F`, strings `S`, comments and whitespace go; every `noise` characters long stretch (k-gram) of
what is left is hashed, and winnowing keeps at least one hash of every `guarantee` characters long stretch.
What is everyone's starting point is *boilerplate* and never a match: every code cell of the released notebook
(stubs, helpers, the visible tests), and each answer cell's stub and reference solution (from the source
notebook). A stretch that more than `max_shared` submissions share on one exercise is the class's common
idiom, not a pair's, and is left out too (MOSS's `-m`).

How pairs are found without comparing all of them: per exercise, an inverted index from fingerprint to the
submissions that hold it. Only two submissions that share a fingerprint are compared (copydetect's
`compare_files`, which also gives the matching regions). Complexity, for N submissions of E exercises with at
most f fingerprints per answer (f grows with the answer's length, not with N) and m = `max_shared`:
fingerprinting is O(N·E·f) (plus the tokeniser, linear in the code); the index O(N·E·f); a fingerprint is held
by at most m submissions, so each submission meets at most f·(m-1) others per exercise and there are at most
N·E·f·(m-1)/2 comparisons of O(f) each: O(N·E·f²·m), linear in N. All pairs would be O(N²·E·f).

Scores: for one exercise, a side's similarity is the share of its fingerprinted code (what is left after the
boilerplate) that lies in stretches it shares with the other side; over the part, the same shares summed over
every exercise. A pair's score is the mean of its two sides (JPlag's "average similarity"). A pair is flagged
when its score over the part reaches `threshold`, or its score on one exercise does and that exercise's longest
unbroken shared stretch is at least `min_match` normalised characters long (two people who had the same idea
share it statement by statement, in short stretches; a short answer says little either way).

Writes `build/similar/<part>/index.html` (templates/similar.html.j2: each flagged pair side by side, exercise by
exercise, shared stretches highlighted) and `pairs.csv` beside it (every pair compared, flagged or not).
"""
from __future__ import annotations

import csv
import hashlib
import io
import itertools
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..cells import grade_id, is_answer, solution_source, stub_source
from ..config import Config
from ..errors import JaxpathError
from ..files import write_atomic
from .classwide import cell_text, read_json, student_notebooks

THRESHOLD = 0.5
"""A pair's score (the mean of its two sides' shares of code in shared stretches) from which it is flagged."""
MIN_MATCH = 100
"""The length (normalised characters) of one unbroken shared stretch that lets an exercise's own score flag a
pair: one idea written alike shares short stretches, statement by statement (the longest single statements of the
course's known answers are 60 to 75 characters), code passed on shares long ones."""
MAX_SHARED = 10
"""A stretch held by more submissions than this, on one exercise, is common code (MOSS's default -m)."""
NOISE = 25
"""k: the shortest stretch of normalised code that counts (copydetect's noise threshold, its default)."""
GUARANTEE = 30
"""Every shared stretch at least this long is found (copydetect's guarantee threshold; winnowing window 6)."""
CSV_COLUMNS = ("student_a", "student_b", "scope", "notebook", "exercise", "similarity_a", "similarity_b",
               "score", "shared_chars", "longest_stretch", "flagged")
LOOK = "These answers share long stretches of code; please look before drawing conclusions."
ORDINARY = ("Shared code has ordinary causes too: working together where that was allowed, the same documentation "
            "example, a short exercise with one natural answer.")


@dataclass(frozen=True)
class Answer:
    """One answer cell of one submission, fingerprinted."""
    student: str
    notebook: str
    exercise: str                # the answer cell's grade_id
    code: str
    fingerprint: object          # copydetect.CodeFingerprint


@dataclass
class ExerciseMatch:
    """What two submissions share on one exercise."""
    notebook: str
    exercise: str
    similarity: tuple[float, float]
    shared_chars: int            # normalised characters in shared stretches (the first side's)
    longest: int                 # the longest unbroken one (normalised characters)
    code: tuple[str, str]
    regions: tuple[list[tuple[int, int]], list[tuple[int, int]]]
    """(start, end) character ranges of each side's code that lie in shared stretches."""

    @property
    def score(self) -> float:
        return sum(self.similarity) / 2

    def segments(self, side: int) -> list[tuple[str, bool]]:
        """The side's code cut into (text, in a shared stretch) pieces, for the page to highlight."""
        code, out, at = self.code[side], [], 0
        for start, end in sorted(self.regions[side]):
            start, end = max(start, at), min(end, len(code))
            if start >= end:
                continue
            if start > at:
                out.append((code[at:start], False))
            out.append((code[start:end], True))
            at = end
        if at < len(code):
            out.append((code[at:], False))
        return out


@dataclass
class SimilarPair:
    a: str
    b: str
    similarity: tuple[float, float]
    """Over the part: each side's share of its own fingerprinted code in stretches shared with the other."""
    exercises: list[ExerciseMatch]
    flagged: bool = False

    @property
    def score(self) -> float:
        return sum(self.similarity) / 2


@dataclass
class SimilarReport:
    part: str
    threshold: float
    students: int
    answers: int                 # answer cells fingerprinted
    compared: int                # pairs of answers (one exercise, two students) compared: they share a fingerprint
    pairs: list[SimilarPair]     # every pair of students compared, the flagged ones first, highest score first
    skipped: list[str] = field(default_factory=list)
    """Submissions that could not be read, each naming its file and why."""
    html: Path | None = None
    csv: Path | None = None

    @property
    def flagged(self) -> list[SimilarPair]:
        return [p for p in self.pairs if p.flagged]


# ---- normalising and fingerprinting (copydetect) -----------------------------------------------------------
def _stable_hash(kgram: str) -> int:
    return int.from_bytes(hashlib.blake2b(kgram.encode(), digest_size=8).digest(), "little", signed=True)


def _copydetect():
    """copydetect, with k-gram hashes that are the same in every run. It hashes k-grams with Python's `hash`,
    which is salted per process (PYTHONHASHSEED): winnowing then kept other fingerprints on every run, and a
    report's scores moved in their second decimal from one run to the next. A module global `hash` in
    copydetect.utils shadows the builtin for its `hashed_kgrams`, the one place it hashes (0.5 µs a k-gram)."""
    import copydetect
    import copydetect.utils

    copydetect.utils.hash = _stable_hash
    return copydetect


def fingerprint(code: str, *, boilerplate=None, window: int | None = None):
    """copydetect's fingerprint of Python code: tokenised and normalised (names, comments, whitespace), then
    winnowed; hashes in `boilerplate` removed. `window` 1 keeps every k-gram (for boilerplate)."""
    win = GUARANTEE - NOISE + 1 if window is None else window
    return _copydetect().CodeFingerprint("answer.py", NOISE, win, boilerplate=boilerplate, fp=io.StringIO(code),
                                         language="python")


def normalised(code: str) -> str:
    """The code as the fingerprints see it (copydetect's filter): what two answers must share to match."""
    return fingerprint(code).filtered_code


def boilerplate_hashes(codes) -> object:
    """Every k-gram hash of the given pieces of code (a sorted numpy array): what is never a match."""
    import numpy as np

    found = [np.fromiter(fingerprint(c, window=1).hashes, dtype=np.int64) for c in codes if c.strip()]
    return np.unique(np.concatenate(found)) if found else np.array([], dtype=np.int64)


def _drop(fp, hashes: set) -> None:
    """Removes `hashes` from a fingerprint (common code), as copydetect removes boilerplate."""
    from copydetect.utils import get_token_coverage

    gone = fp.hashes & hashes
    if gone:
        fp.hashes = fp.hashes - gone
        for h in gone:
            fp.hash_idx.pop(h, None)
        fp.token_coverage = get_token_coverage(fp.hash_idx, fp.k, len(fp.filtered_code))


# ---- reading the course and the class ----------------------------------------------------------------------




def _course_side(config: Config, part: str) -> dict[str, tuple[list[str], object]]:
    """notebook -> (the released answer cells' grade_ids, the boilerplate hashes of that notebook)."""
    release = config.release / part
    notebooks = sorted(release.glob("*.ipynb"))
    if not notebooks:
        raise JaxpathError(f"no released notebooks in {release}: run `jaxpath release` (or name another part)")
    out = {}
    for rel_path in notebooks:
        src_path = config.source / part / rel_path.name
        try:
            rel, src = read_json(rel_path), read_json(src_path)
        except (OSError, ValueError) as e:
            raise JaxpathError(f"{e.filename if isinstance(e, OSError) else rel_path}: cannot be read: {e}") from None
        answers = [grade_id(c) for c in rel["cells"] if is_answer(c)]
        given = [cell_text(c) for c in rel["cells"] if c.get("cell_type") == "code"]
        for c in src["cells"]:
            if is_answer(c):
                given += [stub_source(cell_text(c)), solution_source(cell_text(c))]
        missing = set(answers) - {grade_id(c) for c in src["cells"] if is_answer(c)}
        if missing:
            raise JaxpathError(f"{src_path}: no answer cell {', '.join(sorted(missing))} (the release has it): "
                               "is release/ current? (`jaxpath release --check`)")
        out[rel_path.stem] = (answers, boilerplate_hashes(given))
    return out




# ---- comparing -----------------------------------------------------------------------------------------
def _candidates(answers: list[Answer], max_shared: int) -> set[tuple[int, int]]:
    """Pairs of indices into `answers` (one exercise) that share a fingerprint held by at most `max_shared` of
    them; fingerprints held by more are dropped from every answer first (common code)."""
    holders: dict[int, list[int]] = defaultdict(list)
    for i, ans in enumerate(answers):
        for h in ans.fingerprint.hashes:
            holders[h].append(i)
    common = {h for h, who in holders.items() if len(who) > max_shared}
    if common:
        for ans in answers:
            _drop(ans.fingerprint, common)
    pairs: set[tuple[int, int]] = set()
    for h, who in holders.items():
        if h not in common and len(who) > 1:
            pairs.update(itertools.combinations(who, 2))
    return pairs


def _match(a: Answer, b: Answer) -> ExerciseMatch | None:
    from copydetect.utils import find_fingerprint_overlap, get_copied_slices

    shared, (sim_a, sim_b), (slices_a, slices_b) = _copydetect().compare_files(a.fingerprint, b.fingerprint)
    if not shared:
        return None
    fa, fb = a.fingerprint, b.fingerprint
    stretches = get_copied_slices(find_fingerprint_overlap(fa.hashes, fb.hashes, fa.hash_idx, fb.hash_idx)[0], fa.k)
    longest = int(max(stretches[1] - stretches[0]))

    return ExerciseMatch(a.notebook, a.exercise, (float(sim_a), float(sim_b)), int(shared), longest, (a.code, b.code),
                         (_regions(a.code, slices_a), _regions(b.code, slices_b)))


def _regions(code: str, slices) -> list[tuple[int, int]]:
    """copydetect's slices of the raw code as (start, end) ranges, widened to whole words: it maps positions in
    the normalised code back to the raw code approximately, and a highlight that ends inside a name (`retur`)
    reads as a different claim than one that ends at it."""
    def inside_word(i: int) -> bool:
        return 0 < i < len(code) and (code[i - 1].isalnum() or code[i - 1] == "_") and (code[i].isalnum() or code[i] == "_")

    out = []
    for start, end in (zip(slices[0], slices[1]) if len(slices) else ()):
        start, end = max(0, int(start)), min(len(code), int(end))
        while inside_word(start):
            start -= 1
        while inside_word(end):
            end += 1
        out.append((start, end))
    return out


Progress = Callable[[str, int, int], None]
"""on_progress(stage, done, total): "fingerprinting" per submission read, "comparing" per pair compared."""


def similar(config: Config, part: str, *, threshold: float = THRESHOLD, min_match: int = MIN_MATCH,
            max_shared: int = MAX_SHARED, output: Path | None = None,
            on_progress: Progress | None = None) -> SimilarReport:
    """Finds the pairs of the part's submissions whose answers share long stretches of code beyond the course's
    own (see the module's docstring); writes the report (`output`, a folder: index.html and pairs.csv; default
    build/similar/<part>/)."""
    course = _course_side(config, part)
    students, files = student_notebooks(config.root / "submitted", part, course)
    step = on_progress or (lambda stage, done, total: None)
    by_exercise: dict[tuple[str, str], list[Answer]] = defaultdict(list)
    skipped: list[str] = []
    for n, (student, notebook, path) in enumerate(files, start=1):
        step("fingerprinting", n, len(files))
        try:
            nb = read_json(path)
        except (OSError, UnicodeDecodeError, ValueError) as e:
            skipped.append(f"{path.relative_to(config.root)}: not a readable notebook ({type(e).__name__}: {e})")
            continue
        wanted, boilerplate = course[notebook]
        codes: dict[str, list[str]] = defaultdict(list)  # an answer cell pasted twice: all its code counts
        cells: dict[str, int] = {}
        for i, cell in enumerate(nb["cells"]):
            if isinstance(cell, dict) and is_answer(cell) and grade_id(cell) in wanted:
                codes[grade_id(cell)].append(cell_text(cell))
                cells.setdefault(grade_id(cell), i + 1)
        for gid, pieces in codes.items():
            code = "\n".join(pieces)
            try:
                fp = fingerprint(code, boilerplate=boilerplate)
            except Exception as e:  # pygments takes any text: a failure here is copydetect's, named with its cell
                skipped.append(f"{path.relative_to(config.root)}, cell {cells[gid]} ({gid}): not fingerprinted "
                               f"({type(e).__name__}: {e})")
                continue
            by_exercise[(notebook, gid)].append(Answer(student, notebook, gid, code, fp))
    work = {key: _candidates(answers, max_shared) for key, answers in by_exercise.items()}
    total, done = sum(len(p) for p in work.values()), 0
    matches: dict[tuple[str, str], list[ExerciseMatch]] = defaultdict(list)
    for key, pairs in work.items():
        answers = by_exercise[key]
        for i, j in sorted(pairs):
            done += 1
            step("comparing", done, total)
            a, b = sorted((answers[i], answers[j]), key=lambda x: x.student)
            m = _match(a, b)
            if m is not None:
                matches[(a.student, b.student)].append(m)
    # a side's similarity over the part: its shared code over all its fingerprinted code (after boilerplate)
    coverage = {(ans.student, key): float(ans.fingerprint.token_coverage)
                for key, answers in by_exercise.items() for ans in answers}
    covered: dict[str, float] = defaultdict(float)
    for (student, _), c in coverage.items():
        covered[student] += c
    pairs = []
    for (a, b), ms in matches.items():
        sim = tuple(min(1.0, sum(m.similarity[side] * coverage[(who, (m.notebook, m.exercise))] for m in ms)
                        / covered[who]) if covered[who] else 0.0 for side, who in enumerate((a, b)))
        ms.sort(key=lambda m: (m.notebook, m.exercise))
        flagged = sum(sim) / 2 >= threshold or any(m.score >= threshold and m.longest >= min_match for m in ms)
        pairs.append(SimilarPair(a, b, sim, ms, flagged))
    pairs.sort(key=lambda p: (not p.flagged, -p.score, p.a, p.b))
    report = SimilarReport(part, threshold, len(students), sum(len(v) for v in by_exercise.values()),
                           sum(len(p) for p in work.values()), pairs, skipped)
    out = Path(output) if output else config.build / "similar" / part
    report.html, report.csv = out / "index.html", out / "pairs.csv"
    write_atomic(report.csv, _csv(report))
    write_atomic(report.html, _page(report, min_match, max_shared))
    return report


def _csv(report: SimilarReport) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for p in report.pairs:
        w.writerow([p.a, p.b, "part", "", "", f"{p.similarity[0]:.3f}", f"{p.similarity[1]:.3f}", f"{p.score:.3f}",
                    sum(m.shared_chars for m in p.exercises), max(m.longest for m in p.exercises),
                    "yes" if p.flagged else "no"])
        for m in p.exercises:
            w.writerow([p.a, p.b, "exercise", m.notebook, m.exercise, f"{m.similarity[0]:.3f}",
                        f"{m.similarity[1]:.3f}", f"{m.score:.3f}", m.shared_chars, m.longest, ""])
    return buf.getvalue()


def _page(report: SimilarReport, min_match: int, max_shared: int) -> str:
    from ..templates import template

    return template("similar.html.j2").render(r=report, look=LOOK, ordinary=ORDINARY, min_match=min_match, max_shared=max_shared,
                                              noise=NOISE, guarantee=GUARANTEE)
