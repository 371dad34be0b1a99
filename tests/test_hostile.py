"""The hostile and broken submission corpus (tests/hostile_corpus.py), graded in one batch on a released
chapter of the course: every case gets the right status and a clear reason, tampering never pays, the
course folder does not change, nothing hidden reaches the student; and the faults of the grader's own
world (a full disk, a locked gradebook, Ctrl-C)."""
import atexit
import dataclasses
import hashlib
import html
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import as_user
import grade_as
import hostile_corpus
import nbformat
import pytest

from jaxpath import Config
from jaxpath.authoring.chapter import is_answer, solution_source
from jaxpath.classroom.feedback import feedback
from jaxpath.classroom.sample import submit
from jaxpath.config import nbgrader_config
from jaxpath.grade import Limits, grade, sandbox_problem
from jaxpath.grade.record import Status
from jaxpath.gradebooks import prepare_nbgrader

pytestmark = [pytest.mark.slow, pytest.mark.grade]
ROOT = Path(__file__).resolve().parents[1]
LIMITS = Limits(cell_timeout=30, notebook_timeout=600, memory_mb=2048)
"""A cell limit far above what the slowest test cell needs on a loaded machine: make_regression_data-check takes
4.5 s compiled cold on an idle machine and ran past 15 s at a load average of 40 on 2 cores, and reads its programs
from the compilation cache here (tests/conftest.py) in all but the first tasks. The runaway cases reach it by
construction, and four of them burn a core until it does."""
RUNAWAY_LIMITS = dataclasses.replace(LIMITS, cell_timeout=2)
"""The runaway cases (hostile_corpus.Case.runaway) run to the cell limit by construction: they are graded in a batch
of their own under this shorter one. A cell of theirs that is not the runaway and runs past it on a loaded machine
changes nothing that is checked: the notebook times out all the same, and the runaway cell's reason is the last.
(2 s: each of the five costs about its limit twice, the deaf ones more, and four of them burn a core or more while
they run, at each of the three levels; 10 s took about 40 s more of the run than 5 s. At 2 s a sleeping kernel
was judged deaf at two levels, until `Session.responsive` stopped interrupting it a second time.)"""
SANDBOX = sandbox_problem() is None
ROOTLESS = "rootless+rlimits"
LEVELS = ["host", pytest.param("root+rlimits", marks=pytest.mark.full), pytest.param(ROOTLESS, marks=pytest.mark.full)]
"""The host's best level in `make test`; the two rlimits levels (the same checks, other walls) in `make test-all`."""
"""Each level this machine can produce: the best the host gives (root + cgroup v1 here), the same with the
cgroups withheld, and an ordinary account's grader (bwrap through a user namespace, rlimits alone). Each
level's batch is graded once, on one test worker (TestCorpus, one unit of work per level: tests/conftest.py)."""
CONTAINED = {"reference", "hostile"}
"""The kinds of case an isolation layer can change: at the levels other than the host's best, only these are
graded (broken notebooks are settled by the coordinator before any kernel runs, and tampering is caught inside
the kernel by the integrity checks, the same at every level; the host level grades all of them)."""


def _level_problem(level: str) -> str | None:
    if level == "host":
        return None  # graded without a sandbox where none can be built, as before
    if level == ROOTLESS:
        return as_user.can_run() or _rootless_problem()
    return sandbox_problem(level)


def _rootless_problem() -> str | None:
    with as_user.ordinary_user() as user:
        r = user.run([sys.executable, "-c", "from jaxpath.grade import sandbox_problem as p; print(p('rootless+rlimits') or '')"],
                     cwd=Path(tempfile.gettempdir()))
    return (r.stdout.strip() or None) if r.returncode == 0 else f"cannot run as an ordinary account: {r.stderr[-300:]}"


def scratch_course(dest: Path, chapter: str = hostile_corpus.CHAPTER, exercises_only: bool = False) -> Path:
    """A course holding one real chapter of this one, released by nbgrader as an instructor does.

    `exercises_only`: the chapter's text, its first code cell (the imports) and its exercises (statements,
    answers, tests), without the demonstrations in between: a notebook then costs what grading its exercises
    costs (about half the chapter's time for basics/01), for a corpus that grades fifty of them per level."""
    from nbgrader.apps import NbGraderAPI

    part, stem = chapter.split("/")
    dest.mkdir(parents=True)
    for name in ("nbgrader_config.py", "course.toml"):
        shutil.copy(ROOT / name, dest / name)
    (dest / "source" / part).mkdir(parents=True)
    shutil.copy(ROOT / "source" / f"{chapter}.ipynb", dest / "source" / part)
    if exercises_only:
        path = dest / "source" / f"{chapter}.ipynb"
        nb = nbformat.read(path, as_version=4)
        first_code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
        nb.cells = [c for i, c in enumerate(nb.cells)
                    if c.cell_type == "markdown" or i == first_code or c.metadata.get("nbgrader")]
        nbformat.write(nb, path)
    (dest / "gradebook").mkdir()
    prepare_nbgrader()
    result = NbGraderAPI(config=nbgrader_config(dest)).generate_assignment(part, force=True, create=True)
    assert result.get("success"), result.get("error")
    return dest


def tree_hash(root: Path, skip=("autograded", "gradebook", "build", "feedback")) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if rel.parts[0] in skip or not p.is_file():
            continue
        out[str(rel)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def hidden_lines(source_nb, released_nb) -> set[str]:
    """Lines of hidden tests that appear nowhere in the released notebook (what a student must never see)."""
    lines, inside = set(), False
    for c in source_nb.cells:
        for line in c.source.split("\n"):
            if "BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "END HIDDEN TESTS" in line:
                inside = False
            elif inside and len(line.strip()) >= 12:
                lines.add(line.strip())
    return lines - {line.strip() for c in released_nb.cells for line in c.source.split("\n")}


def _batches(cases) -> list[tuple[list[str], Limits]]:
    """The corpus as graded: the runaway cases in a batch of their own under a shorter cell limit."""
    runaway = sorted({c.student for c in cases if c.runaway})
    rest = sorted({c.student for c in cases} - set(runaway))
    return [(rest, LIMITS), (runaway, RUNAWAY_LIMITS)]


def _grade_as_user(root: Path, cases) -> tuple[list[Status], float]:
    """Grade the corpus at the rootless level, the whole grader running as an ordinary account."""
    results, seconds = [], 0.0
    with as_user.ordinary_user() as user:
        user.give(root)
        for students, limits in _batches(cases):
            r, data = grade_as.run_as(user, root, hostile_corpus.PART, ROOTLESS, limits,
                                      env={"JAXPATH_TEST_SECRET": "hunter2"}, students=students)
            assert r.returncode == 0, r.stderr[-3000:]
            assert "isolation: rootless+rlimits" in r.stderr, r.stderr[-2000:]  # said at the start of the batch
            assert data["isolation"] == ROOTLESS
            results += [Status(**row) for row in data["results"]]
            seconds += data["seconds"]
    return results, seconds


_GRADED: dict[str, tuple] = {}
"""Each level's graded batch, once per test process: pytest may tear a parametrized module fixture down and
set it up again when the tests of two levels interleave on one worker, and a batch costs minutes."""


@pytest.fixture(scope="module", params=LEVELS)
def corpus(request, tmp_path_factory):
    level = request.param
    if level not in _GRADED:
        _GRADED[level] = _grade_corpus(level, tmp_path_factory)
    return _GRADED[level]


def _grade_corpus(level: str, tmp_path_factory):
    why = _level_problem(level)
    if why:
        pytest.skip(f"level {level} cannot be built here: {why}")
    if level == ROOTLESS:  # a folder the ordinary account can reach (pytest's own temporary root is 0700)
        base = Path(tempfile.mkdtemp(prefix="jaxpath-hostile-"))
        os.chmod(base, 0o755)
        atexit.register(shutil.rmtree, base, True)
        root = scratch_course(base / "course", exercises_only=True)
    else:
        root = scratch_course(tmp_path_factory.mktemp("hostile") / "course", exercises_only=True)
    src = nbformat.read(root / "source" / f"{hostile_corpus.CHAPTER}.ipynb", as_version=4)
    rel = nbformat.read(root / "release" / f"{hostile_corpus.CHAPTER}.ipynb", as_version=4)
    correct = {c.metadata.nbgrader["grade_id"]: solution_source(c.source) for c in src.cells if is_answer(c)}
    listener = socket.create_server(("127.0.0.1", 0))  # the host's loopback, which no notebook may reach
    port = listener.getsockname()[1]
    cases = hostile_corpus.build(rel, correct, str(root), port)
    if level != "host":
        cases = [c for c in cases if c.kind in CONTAINED]
    elif not SANDBOX:  # no walls can be built here: the cases that attack the host (write into /usr and /etc,
        cases = [c for c in cases if c.kind != "hostile"]  # fill the disk, fork) are not run on it
    for case in cases:
        path = submit(root, case.student, hostile_corpus.PART, case.name, case.notebook, raw=case.raw,
                      timestamp=case.timestamp)
        for rel_name, data in case.files.items():
            target = path.parent / rel_name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        if case.student == "b_two_submissions":
            shutil.copy(path, path.parent / f"{hostile_corpus.STEM}-2.ipynb")
    before = tree_hash(root)
    if level == ROOTLESS:
        results, seconds = _grade_as_user(root, cases)
    else:
        os.environ["JAXPATH_TEST_SECRET"] = "hunter2"
        results = []
        try:
            t0 = time.perf_counter()
            for students, limits in _batches(cases):
                report = grade(Config.load(root), hostile_corpus.PART, students=students, workers=2, limits=limits,
                               sandbox=SANDBOX, isolation=None if level == "host" else level)
                results += report.results
            seconds = time.perf_counter() - t0
        finally:
            os.environ.pop("JAXPATH_TEST_SECRET", None)
        level = report.isolation
    after = tree_hash(root)
    listener.close()
    left_running = subprocess.run(["pgrep", "-f", f"sleep {hostile_corpus.background_sleep(port)}"],
                                  capture_output=True, text=True).stdout.split()
    fb = feedback(Config.load(root), hostile_corpus.PART)
    statuses = {(s.student, s.notebook): s for s in results}
    print(f"\ncorpus at {level}: {len(cases)} cases, {len(results)} notebooks graded in {seconds:.1f} s")
    for (student, nb), st in sorted(statuses.items()):
        print(f"  {student:24s} {nb:28s} {st.status:17s} {st.score}/{st.max_score} {st.seconds or 0:6.1f} s  {st.isolation}  "
              f"{st.reason[:150]}")
    for st in statuses.values():  # every notebook that ran says the level it ran at
        assert st.isolation in (level, "", None), st
    assert any(st.isolation == level for st in statuses.values())
    return root, (src, rel), cases, statuses, before, after, left_running, fb, level


def _score(statuses, student):
    st = statuses[(student, hostile_corpus.STEM)]
    return st.score or 0.0


class TestCorpus:
    """Everything checked on one graded corpus, per level: one unit of work per level for `make test`'s
    scheduler (tests/conftest.py), so each level's batch is graded once."""

    def test_the_batch_completes_with_a_status_and_reason_for_every_case(self, corpus):
        root, src, cases, statuses, *_ = corpus
        for case in cases:
            st = statuses.get((case.student, case.name if case.name == hostile_corpus.STEM else hostile_corpus.STEM))
            assert st is not None, f"{case.student}: no status recorded"
            where = f"{case.student} ({case.what}) at {corpus[-1]}: {st.status}, {st.score}, {st.reason!r}"
            expect = case.at(corpus[-1])
            assert st.status in expect.statuses, where
            if st.status != "graded":
                assert st.reason.strip(), f"{where}: a status other than graded needs a reason"
            for word in expect.reason:
                assert word.lower() in st.reason.lower(), f"{where}: the reason should mention {word!r}"
            for name, (allowed, words) in case.others.items():
                other = statuses[(case.student, name)]
                assert other.status in allowed, (case.student, name, other)
                for word in words:
                    assert word in other.reason, (case.student, name, other.reason)

    def test_scores_are_bounded(self, corpus):
        root, src, cases, statuses, *_ = corpus
        correct, wrong = _score(statuses, "ref_correct"), _score(statuses, "ref_wrong")
        assert correct == statuses[("ref_correct", hostile_corpus.STEM)].max_score > wrong > 0
        for case in cases:
            got = _score(statuses, case.student)
            where = f"{case.student} ({case.what}): {got} (correct {correct}, wrong {wrong})"
            rule = case.score
            assert {"==correct": got == correct, "<=wrong": got <= wrong, "==wrong": got == wrong, "==0": got == 0,
                    "<correct": got < correct, "<=correct": got <= correct}[rule], where

    def test_tampering_never_pays_and_is_flagged(self, corpus):
        root, src, cases, statuses, *_ = corpus
        wrong = _score(statuses, "ref_wrong")
        tampering = [c for c in cases if c.kind == "tampering"]
        if not tampering:
            pytest.skip("tampering is caught inside the kernel, the same at every level: graded at the host level (CONTAINED)")
        assert len(tampering) >= 9
        for case in tampering:
            st = statuses[(case.student, hostile_corpus.STEM)]
            assert (st.score or 0) <= wrong, f"{case.student} ({case.what}) scored {st.score} > {wrong}"
        unflagged = [c.student for c in tampering if statuses[(c.student, hostile_corpus.STEM)].status != "tampered"]
        assert not unflagged, f"not flagged for review: {unflagged}"
        # Without the grader's defence these attacks pass tests nbgrader would count: each shows a test whose
        # pass was not counted or whose hidden error was caught. (The lying isinstance breaks JAX itself, so
        # every test fails on its own; it is flagged all the same.)
        caught = set()
        for case in tampering:
            nb = nbformat.read(root / f"autograded/{case.student}/{hostile_corpus.PART}/{hostile_corpus.STEM}.ipynb",
                               as_version=4)
            names = {o.get("ename") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])}
            if names & {"NotCounted", "HiddenError"}:
                caught.add(case.student)
        assert {c.student for c in tampering} - caught <= {"t_patch_builtins"}, caught

    def test_nothing_outside_the_sandbox_changes(self, corpus):
        root, src, cases, statuses, before, after, left_running, fb, level = corpus
        assert before == after, "the course folder (source, release, submitted, config) changed during grading"
        for p in (root / "PWNED", Path("/usr/PWNED"), Path("/etc/PWNED")):
            assert not p.exists(), p
        assert not left_running, f"processes a notebook started outlived it: {left_running}"
        if SANDBOX:
            nb = nbformat.read(root / f"autograded/h_reach_out/{hostile_corpus.PART}/{hostile_corpus.STEM}.ipynb", as_version=4)
            probe = next(c for c in nb.cells if "found = []" in c.source)
            errors = [o for o in probe.get("outputs", []) if o.get("output_type") == "error"]
            assert not errors, [e.get("evalue") for e in errors]

    def test_nothing_hidden_reaches_the_student(self, corpus):
        root, src, cases, statuses, before, after, left_running, fb, level = corpus
        secret = hidden_lines(*src)
        assert len(secret) > 20
        pages = list((root / "feedback").rglob("*.html"))
        assert len(pages) >= len({c.student for c in cases}) - 8
        for page in pages:
            text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))
            leaked = [line for line in secret if line in text]
            assert not leaked, f"{page}: {leaked[:3]}"
        leak = root / f"feedback/h_leak_hidden_tests/{hostile_corpus.PART}/{hostile_corpus.STEM}.html"
        assert "LEAK&gt;" in leak.read_text() or "LEAK>" in leak.read_text(), "the leaking output itself is shown, redacted"
        # Reference solutions: a student who did not write them never sees them (the stub's page, for one).
        # (a line the released notebook itself shows, in its statement say, is no secret)
        shown = "\n".join(c.source for c in src[1].cells)
        solutions = {line.strip() for c in src[0].cells if is_answer(c) for line in solution_source(c.source).split("\n")
                     if len(line.strip()) >= 12 and line.strip() not in shown}
        assert solutions
        stub_page = root / f"feedback/ref_stub/{hostile_corpus.PART}/{hostile_corpus.STEM}.html"
        text = html.unescape(re.sub(r"<[^>]+>", "", stub_page.read_text(encoding="utf-8")))
        assert not [line for line in solutions if line in text]
        # Statuses and reasons go to graders, but they are checked too.
        for st in statuses.values():
            assert not any(line in st.reason for line in secret), st

