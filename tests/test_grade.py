"""`jaxpath grade` end to end on a synthetic class: scores, statuses, isolation, resumption, nbgrader parity."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from class_factory import answers_from_source, submission, submit
from course_factory import make_course
from dask_loopback import loopback_cluster
from nbgrader.api import Gradebook

from jaxpath import Config
from jaxpath.grade import Limits, grade, sandbox_problem
from jaxpath.grade.record import StatusStore

pytestmark = [pytest.mark.slow, pytest.mark.grade]
needs_sandbox = pytest.mark.skipif(sandbox_problem() is not None, reason=f"no sandbox here: {sandbox_problem()}")
LIMITS = Limits(cell_timeout=5, notebook_timeout=90, memory_mb=1024, pids=256)
BIN = Path(sys.executable).parent


def two_chapter_course(root: Path) -> Path:
    make_course(root)
    shutil.copy(root / "source/demo/01_demo.ipynb", root / "source/demo/02_later.ipynb")
    shutil.copy(root / "variants/demo/01_demo.toml", root / "variants/demo/02_later.toml")
    text = (root / "course.toml").read_text().replace("planned = true\n", "")
    (root / "course.toml").write_text(text)
    return root


def generate_assignment(root: Path) -> None:
    """The release, made the way an instructor makes it (stock nbgrader's command)."""
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    subprocess.run([BIN / "nbgrader", "generate_assignment", "demo", "--force"], cwd=root, env=env, check=True,
                   capture_output=True)


def synthetic_class(root: Path) -> dict:
    """Six students across two chapters. Returns the expected score per student and chapter."""
    src = nbformat.read(root / "source/demo/01_demo.ipynb", as_version=4)
    # The students start from what nbgrader releases: generate it the way an instructor does.
    generate_assignment(root)
    rel = nbformat.read(root / "release/demo/01_demo.ipynb", as_version=4)
    ok = answers_from_source(src)
    wrong_square = {**ok, "square-answer": "def square(x):\n    return 2 * x"}
    crash = {**ok, "square-answer": "import os\nos._exit(1)"}
    loop = {**ok, "halve-answer": "while True:\n    pass"}
    # passes the visible self-check of `double`, fails its hidden test
    sneaky = {**ok, "double-answer": "def double(x):\n    return 6 if x == 3 else 0"}
    for chapter in ("01_demo", "02_later"):
        submit(root, "correct", "demo", chapter, submission(rel, ok))
        submit(root, "partly", "demo", chapter, submission(rel, wrong_square))
        submit(root, "stub", "demo", chapter, rel)
        submit(root, "crashing", "demo", chapter, submission(rel, crash))
        submit(root, "looping", "demo", chapter, submission(rel, loop))
        submit(root, "sneaky", "demo", chapter, submission(rel, sneaky))
    submit(root, "malformed", "demo", "01_demo", raw=b'{"cells": [ {"cell_type": "code"')
    submit(root, "malformed", "demo", "02_later", submission(rel, ok))
    return {"correct": (5, 5), "partly": (3, 3), "stub": (0, 0), "crashing": (2, 2), "looping": (4, 4),
            "malformed": (0, 5), "sneaky": (3, 3)}


def stock_autograde(root: Path, part: str, db_url: str, students=(None,)) -> None:
    """Stock `nbgrader autograde` of `part` into a gradebook of its own (db_url) and autograded-nbgrader/,
    beside whatever jaxpath graded in the same course: the side-by-side comparison the parity tests make."""
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    subprocess.run([BIN / "nbgrader", "generate_assignment", part, "--force", f"--CourseDirectory.db_url={db_url}"],
                   cwd=root, env=env, check=True, capture_output=True)
    for student in students:
        subprocess.run([BIN / "nbgrader", "autograde", part, "--force", *(["--student", student] if student else []),
                        f"--CourseDirectory.db_url={db_url}", "--CourseDirectory.autograded_directory=autograded-nbgrader"],
                       cwd=root, env=env, check=True, capture_output=True)


def cell_scores(db_url: str, student: str, notebook: str) -> dict:
    with Gradebook(db_url) as gb:
        nb = gb.find_submission_notebook(notebook, "demo", student)
        return {g.name: g.score for g in nb.grades}


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    root = two_chapter_course(tmp_path_factory.mktemp("graded") / "course")
    expected = synthetic_class(root)
    cfg = Config.load(root)
    report = grade(cfg, "demo", workers=2, limits=LIMITS, sandbox=sandbox_problem() is None)
    return root, cfg, expected, report


class TestGradedClass:
    """Everything checked on one graded synthetic class: one unit of work for `make test`'s scheduler
    (tests/conftest.py), so the class is graded once."""

    @pytest.mark.full
    def test_same_scores_as_nbgrader_autograde(self, graded_class):
        """Stock nbgrader live on the same class (`make test-all`): `make test` holds jaxpath to nbgrader's
        stored results on nbgrader's own cases (tests/test_parity.py) and to the expected scores here."""
        root, cfg, expected, _ = graded_class
        other_db = f"sqlite:///{root / 'nbgrader-own.db'}"
        stock_autograde(root, "demo", other_db, ("correct", "partly", "stub", "sneaky"))
        for student in ("correct", "partly", "stub", "sneaky"):
            for chapter in ("01_demo", "02_later"):
                assert cell_scores(other_db, student, chapter) == cell_scores(cfg.db_url, student, chapter), (student, chapter)

    def test_feedback_never_shows_hidden_tests(self, graded_class):
        from jaxpath.classroom.feedback import feedback

        root, cfg, _, _ = graded_class
        r = feedback(cfg, "demo")
        assert len(r.written) == 13  # every autograded notebook (the malformed one has none)
        hidden_source = ["double(-1.5)", "negative floats too'", "square(-2)", "isinstance(halve(4), float)"]
        for page in r.written:
            text = page.read_text()
            for h in hidden_source:
                assert h not in text, (page, h)
            assert "BEGIN HIDDEN TESTS" not in text
        sneaky = (root / "feedback/sneaky/demo/01_demo.html").read_text()
        assert "A hidden test failed. AssertionError: negative floats too" in sneaky
        assert "double(3) should be 6" in sneaky  # the visible self-check is there
        partly = (root / "feedback/partly/demo/01_demo.html").read_text()
        assert "square(3) should be 9" in partly  # a visible failure keeps its message

    def test_feedback_pages_open_with_the_results_in_plain_words(self, graded_class):
        """The summary at the top of each page: points, the grading status in words, one row per graded cell."""
        import html as html_lib

        from jaxpath.classroom.feedback import feedback

        root, cfg, expected, _ = graded_class
        feedback(cfg, "demo")

        def summary(student: str) -> str:
            page = (root / f"feedback/{student}/demo/01_demo.html").read_text()
            text = re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", " ", page)))
            start = text.index("Your results")
            return text[start:text.index("what the tests said", start) + 2000]

        correct = summary("correct")
        assert "5 / 5 points. Every cell ran" in correct
        assert correct.count("every check passed") == 3 and "✗" not in correct.split("Exercise 3")[0]
        partly = summary("partly")
        assert "3 / 5 points" in partly
        assert re.search(r"square-check 0 / 2 ✗ AssertionError: square\(3\) should be 9", partly), partly[:800]
        sneaky = summary("sneaky")  # a hidden test's message, never its source
        assert re.search(r"double-check 0 / 2 ✗ AssertionError: negative floats too", sneaky), sneaky[:800]
        assert "double(-1.5)" not in sneaky
        looping = summary("looping")
        assert re.search(r"Grading stopped early: cell \d+ ran past its 5 s limit", looping), looping[:600]
        # its answer cell timed out: the kernel answered the interrupt (the test cell then ran and failed), or on a
        # loaded machine not within the grader's wait (the kernel was stopped, the cell not run)
        assert ("halve-check 0 / 1 ✗ NameError: name 'halve' is not defined" in looping
                or re.search(r"halve-check 0 / 1 ✗ NotRun: not run: cell \d+ never finished", looping)), looping[:900]
        crashing = summary("crashing")
        assert "Grading stopped early: the kernel died in cell 14" in crashing
        assert re.search(r"halve-check 0 / 1 ✗ NotRun: not run: the kernel died in cell 14", crashing), crashing[:900]

    @pytest.mark.browser
    def test_a_feedback_page_in_chromium_shows_the_results_first(self, graded_class, chromium, tmp_path, request):
        """What a student sees: the results table in the first screen of the page, one row per graded cell, the
        failing row's message readable; a screenshot kept in build/screenshots/ for a person to look at."""
        from site_factory import save_screenshot

        from jaxpath.classroom.feedback import feedback

        root, cfg, _, _ = graded_class
        feedback(cfg, "demo", students=["partly"])
        pg = chromium.new_page(viewport={"width": 1280, "height": 900})
        try:
            errors = []
            pg.on("pageerror", lambda e: errors.append(str(e)))
            pg.goto((root / "feedback/partly/demo/01_demo.html").as_uri())
            table = pg.locator("table.jp-results")
            box = table.bounding_box()
            assert box and box["height"] > 60 and box["y"] + box["height"] < 900, box  # on the first screen
            rows = [r.inner_text() for r in table.locator("tr").all()]
            assert len(rows) == 4, rows  # the header and the three graded cells
            assert "square(3) should be 9" in rows[2] and "✗" in rows[2], rows
            assert "✓" in rows[1] and "every check passed" in rows[1], rows
            shot = save_screenshot(pg, tmp_path, request, "feedback-partly-01")
            assert shot.stat().st_size > 10_000 and not errors, errors
        finally:
            pg.close()

    def test_export_and_report(self, graded_class):
        import csv

        from jaxpath.classroom.export import NBGRADER_COLUMNS, export
        from jaxpath.classroom.report import report

        root, cfg, expected, _ = graded_class
        r = export(cfg, "demo")
        rows = {row["student_id"]: row for row in csv.DictReader(r.csv_path.open())}
        assert list(next(csv.reader(r.csv_path.open()))) == NBGRADER_COLUMNS + ["extension_hours", "status", "isolation"]
        assert {row["extension_hours"] for row in rows.values()} == {""}  # nobody in this class was granted one
        assert float(rows["correct"]["score"]) == 10.0 and rows["correct"]["status"] == "graded"
        level = graded_class[3].isolation
        assert level and rows["correct"]["isolation"] == level  # how the grade was obtained
        assert "01_demo: crashed (the kernel died in cell 14)" in rows["crashing"]["status"]
        assert "01_demo: invalid notebook" in rows["malformed"]["status"]
        canvas = list(csv.reader(r.canvas_path.open()))
        assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "demo"]
        assert canvas[1][0].strip() == "Points Possible" and float(canvas[1][5]) == 10.0
        assert ["correct", "", "correct", "correct", "", "10.0"] in canvas
        page = report(cfg, "demo").path.read_text()
        assert page.count("<img") == 4 and "data:image/png;base64," in page
        assert "AssertionError: square(3) should be 9" in page  # the most common failures
        assert "crashing" in page and "the kernel died in cell 14" in page
        assert "negative floats too" in page  # a hidden test's message (never its source) is shown
        assert f"at {level}" in page  # the isolation level the grades were obtained at

    def test_synthetic_class(self, graded_class):
        root, cfg, expected, report = graded_class
        by = {(s.student, s.notebook): s for s in report.results}
        assert len(by) == 14
        for student, (s1, s2) in expected.items():
            assert by[(student, "01_demo")].score == s1, by[(student, "01_demo")]
            assert by[(student, "02_later")].score == s2
        assert by[("crashing", "01_demo")].status == "crashed"
        assert "kernel died in cell 14" in by[("crashing", "01_demo")].reason
        assert by[("looping", "01_demo")].status == "timed out"
        assert by[("malformed", "01_demo")].status == "invalid notebook"
        assert by[("malformed", "02_later")].status == "graded"
        assert by[("stub", "01_demo")].status == "graded" and by[("stub", "01_demo")].score == 0
        # per cell: the crash keeps the points graded before it and fails the rest
        db = cfg.db_url
        assert cell_scores(db, "crashing", "01_demo") == {"double-check": 2, "square-check": 0, "halve-check": 0}
        assert cell_scores(db, "looping", "01_demo") == {"double-check": 2, "square-check": 2, "halve-check": 0}
        assert cell_scores(db, "partly", "02_later") == {"double-check": 2, "square-check": 0, "halve-check": 1}
        # the autograded notebook says why cells after a crash did not run
        nb = nbformat.read(root / "autograded/crashing/demo/01_demo.ipynb", as_version=4)
        assert any(o.get("ename") == "NotRun" for c in nb.cells if c.cell_type == "code" for o in c.outputs)
        # a rerun grades nothing new
        again = grade(cfg, "demo", workers=1, limits=LIMITS, sandbox=sandbox_problem() is None)
        assert again.results == [] and len(again.skipped) == 14
        # a changed submission is regraded, alone
        src = nbformat.read(root / "source/demo/01_demo.ipynb", as_version=4)
        rel = nbformat.read(root / "release/demo/01_demo.ipynb", as_version=4)
        submit(root, "stub", "demo", "01_demo", submission(rel, answers_from_source(src)))
        third = grade(cfg, "demo", workers=1, limits=LIMITS, sandbox=sandbox_problem() is None)
        assert [(s.student, s.notebook, s.score) for s in third.results] == [("stub", "01_demo", 5)]


def test_a_batch_runs_the_reference_of_the_notebooks_it_grades_only(tmp_path):
    """A notebook nobody submitted costs the batch nothing (no reference run): the late batch that brings it runs
    its reference then, and the first notebook's saved one is reused."""
    root = two_chapter_course(tmp_path / "course")
    generate_assignment(root)
    src = nbformat.read(root / "source/demo/01_demo.ipynb", as_version=4)
    rel = nbformat.read(root / "release/demo/01_demo.ipynb", as_version=4)
    submit(root, "early", "demo", "01_demo", submission(rel, answers_from_source(src)))
    cfg = Config.load(root)
    store = cfg.build / "grading" / "demo"

    def saved() -> set[str]:
        return {p.name.rsplit("-", 1)[0] for p in store.glob("*.json")}

    first = grade(cfg, "demo", workers=1, limits=LIMITS, sandbox=sandbox_problem() is None)
    assert {(s.notebook, s.status) for s in first.results} == {("01_demo", "graded"), ("02_later", "missing")}
    assert saved() == {"01_demo"}
    submit(root, "late", "demo", "02_later", submission(rel, answers_from_source(src)))
    second = grade(cfg, "demo", workers=1, limits=LIMITS, sandbox=sandbox_problem() is None)
    assert {(s.student, s.notebook, s.status) for s in second.results} == {
        ("late", "01_demo", "missing"), ("late", "02_later", "graded")}
    assert saved() == {"01_demo", "02_later"}
    assert all(s.score == 5 for s in second.results if s.status == "graded")


BLOCKER = "zz_blocking"


def add_blocking_submission(root: Path) -> None:
    """A submission that takes ten minutes (150 cells of 4 s, each under the tests' 5 s cell limit), graded
    after the others of its notebook: a batch that includes it cannot finish before a test has signalled the
    grader, however fast the machine. The student sorts after every other, and the grader submits each
    notebook's jobs in student order."""
    rel = nbformat.read(root / "release/demo/01_demo.ipynb", as_version=4)
    rel.cells[1:1] = [nbformat.v4.new_code_cell("import time\ntime.sleep(4)") for _ in range(150)]
    for chapter in ("01_demo", "02_later"):  # both: a missing notebook would be recorded at once
        submit(root, BLOCKER, "demo", chapter, rel)


def remove_blocking_submission(root: Path) -> None:
    shutil.rmtree(root / "submitted" / BLOCKER)


def wait_for_recorded(root: Path, cfg: Config, n: int, timeout: float = 900, proc=None) -> StatusStore:
    """Wait until a grader running in another process (`proc`) has recorded `n` notebooks of demo. The
    limit only ends a wait that would never end (the grader died): it returns as soon as they are there."""
    store, deadline = None, time.time() + timeout
    while time.time() < deadline and (proc is None or proc.poll() is None):
        if (root / "gradebook.db").exists():
            store = store or StatusStore(cfg.db_url)
            if len(store.all("demo")) >= n:
                break
        time.sleep(0.2)
    return store


@pytest.mark.full
def test_sigkill_mid_batch_then_rerun_completes(tmp_path):
    root = two_chapter_course(tmp_path / "course")
    synthetic_class(root)
    add_blocking_submission(root)  # the batch cannot end before the kill
    cfg = Config.load(root)
    args = [BIN / "jaxpath", "grade", "demo", "--workers", "1", "--cell-timeout", "5", "--memory-mb", "1024"]
    if sandbox_problem() is not None:
        args.append("--no-sandbox")
    proc = subprocess.Popen(args, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    store = wait_for_recorded(root, cfg, 3, proc=proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    recorded = len([r for r in store.all("demo") if r.student != BLOCKER])
    assert 3 <= recorded <= 14
    assert not [r for r in store.all("demo") if r.student == BLOCKER]
    for nb_path in (root / "autograded").rglob("*.ipynb"):
        nbformat.read(nb_path, as_version=4)  # every notebook in place is whole
    remove_blocking_submission(root)
    # the limits the command line ran under (they are part of what a recorded grade was graded under)
    cli_limits = Limits.for_course(cfg, cell_timeout=5, memory_mb=1024)
    report = grade(cfg, "demo", workers=2, limits=cli_limits, sandbox=sandbox_problem() is None)
    assert len(report.skipped) >= 3 and len(report.results) + len(report.skipped) == 14
    # a kill may leave a temporary file of the notebook in flight, never a half notebook; the rerun replaces it
    assert not list((root / "autograded").rglob(".*.jaxpath-tmp"))
    # and the folders the killed grader's kernels and sandboxes had (it ran no cleanup): the rerun removed them
    left = [p for base in (tempfile.gettempdir(), "/dev/shm") for p in Path(base).glob(f"jaxpath-*-{proc.pid}-*")]
    assert not left, left
    rows = store.all("demo")
    assert len(rows) == 14 and len({(r.student, r.notebook) for r in rows}) == 14
    with Gradebook(cfg.db_url) as gb:
        # (the blocking student may have been entered before the kill, as nbgrader enters a submission it starts)
        assert sorted(s.student_id for s in gb.assignment_submissions("demo") if s.student_id != BLOCKER) == sorted(
            ["correct", "partly", "stub", "crashing", "looping", "malformed", "sneaky"])


def test_grading_through_a_dask_scheduler(tmp_path):
    root = two_chapter_course(tmp_path / "course")
    for stem in ("01_demo", "02_later"):  # a compiled program, for the warmed cache to hold
        path = root / "source" / "demo" / f"{stem}.ipynb"
        nb = nbformat.read(path, as_version=4)
        nb.cells.insert(1, nbformat.v4.new_code_cell("import jax, jax.numpy as jnp\n"
                                                     "print(jax.jit(lambda v: v * 2 + 1)(jnp.arange(3.0)))"))
        nbformat.write(nb, path)
    expected = synthetic_class(root)
    with loopback_cluster(2, tmp_path) as address:
        want = {(st, ch): expected[st][i] for st in ("correct", "partly") for i, ch in enumerate(("01_demo", "02_later"))}
        report = grade(Config.load(root), "demo", scheduler=address, students=["correct", "partly"],
                       limits=LIMITS, sandbox=sandbox_problem() is None)
        assert {(s.student, s.notebook): s.score for s in report.results} == want
        # A regrade finds the reference run saved: every task then carries the packed cache, which each worker
        # unpacks once, and every notebook reads its compiled program from it (the same scores).
        again = grade(Config.load(root), "demo", scheduler=address, students=["correct", "partly"],
                      limits=LIMITS, sandbox=sandbox_problem() is None, force=True)
        assert {(s.student, s.notebook): s.score for s in again.results} == want
        assert again.cache_entries and len(again.cache_hits) == 4 and again.served_by_cache == 4, again.cache_hits


def test_an_answer_the_reference_did_not_compile_reads_the_cache_and_writes_nothing(tmp_path):
    """Another correct answer compiles programs the warmed cache does not hold. Its kernel reads the cache and
    writes nothing: a write to the read-only mount would put a UserWarning on the test cell's stderr, which
    nbgrader scores as a failed test. Both batches: the first reads the cache as the reference run fills it,
    the regrade starts warm."""
    root = make_course(tmp_path / "course")
    path = root / "source/demo/01_demo.ipynb"
    nb = nbformat.read(path, as_version=4)
    check = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "double-check")
    check.source = check.source.replace("# 🧪 Self-check\n", "# 🧪 Self-check\nimport jax, jax.numpy as jnp\n"
                                        "assert float(jax.jit(double)(jnp.float32(3.0))) == 6.0\n")
    nbformat.write(nb, path)
    generate_assignment(root)
    src = nbformat.read(path, as_version=4)
    rel = nbformat.read(root / "release/demo/01_demo.ipynb", as_version=4)
    ok = answers_from_source(src)
    submit(root, "reference", "demo", "01_demo", submission(rel, ok))
    submit(root, "other", "demo", "01_demo", submission(rel, {**ok, "double-answer": "def double(x):\n    return x + x"}))
    cfg = Config.load(root)
    for force in (False, True):
        report = grade(cfg, "demo", workers=2, limits=Limits(cell_timeout=60, notebook_timeout=300, memory_mb=2048),
                       sandbox=sandbox_problem() is None, force=force)
        assert {(s.student, s.status, s.score) for s in report.results} == {("reference", "graded", 5),
                                                                             ("other", "graded", 5)}, report.results
        if force:  # the regrade starts warm: the reference answer's programs come from the cache
            assert report.served_by_cache >= 1, report.cache_hits
        for student in ("reference", "other"):
            graded = nbformat.read(root / "autograded" / student / "demo/01_demo.ipynb", as_version=4)
            stderr = [o.get("text", "") for c in graded.cells if c.cell_type == "code" for o in c.outputs
                      if o.get("name") == "stderr"]
            assert not stderr, (student, stderr[:3])


ATTACKS = {
    "read_source": "import os\nprint('SOURCE', os.path.exists('{root}/source/demo/01_demo.ipynb'))",
    "read_gradebook": "import os\nprint('GRADEBOOK', os.path.exists('{root}/gradebook/gradebook.db'))",
    "read_other_student": "import os\nprint('OTHER', os.path.exists('{root}/submitted/correct'))",
    "network": ("import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n    print('NET open')\n"
                "except OSError as e:\n    print('NET blocked', type(e).__name__)"),
    "write_outside": ("try:\n    open('{root}/PWNED', 'w').write('x')\n    print('WRITE ok')\nexcept OSError as e:\n"
                      "    print('WRITE blocked', type(e).__name__)"),
    "env_secret": "import os\nprint('SECRET', os.environ.get('JAXPATH_TEST_SECRET'))",
    "background": "import subprocess\nsubprocess.Popen(['sleep', '600'], start_new_session=True)\nprint('BG started')",
}


@needs_sandbox
@pytest.mark.full
def test_sandbox_contains_a_hostile_class(tmp_path, monkeypatch):
    """The sandbox on a small course of its own (the demo chapters, two workers). `make test` checks the same
    walls on the hostile corpus (tests/test_hostile.py: the probe, the fork bomb, memory, the disk, a process
    left running, the host's loopback), so this one runs in `make test-all`."""
    root = two_chapter_course(tmp_path / "course")
    synthetic_class(root)
    rel = nbformat.read(root / "release/demo/01_demo.ipynb", as_version=4)
    src = nbformat.read(root / "source/demo/01_demo.ipynb", as_version=4)
    ok = answers_from_source(src)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    monkeypatch.setenv("JAXPATH_TEST_SECRET", "hunter2")
    for name, code in ATTACKS.items():
        nb = submission(rel, ok)
        nb.cells.insert(2, nbformat.v4.new_code_cell(code.format(root=root, port=port)))
        submit(root, f"x_{name}", "demo", "01_demo", nb)
    forkbomb = submission(rel, {**ok, "double-answer": "import os\nwhile True:\n    os.fork()"})
    submit(root, "x_forkbomb", "demo", "01_demo", forkbomb)
    hog = submission(rel, {**ok, "double-answer": "x = []\nwhile True:\n    x.append(bytearray(50 * 2**20))"})
    submit(root, "x_memory", "demo", "01_demo", hog)
    fill = "with open('big', 'wb') as f:\n    while True:\n        f.write(b'0' * 2**20)"
    disk = submission(rel, {**ok, "double-answer": fill})
    submit(root, "x_disk", "demo", "01_demo", disk)
    students = [f"x_{n}" for n in ATTACKS] + ["x_forkbomb", "x_memory", "x_disk", "correct"]
    report = grade(Config.load(root), "demo", students=students, notebooks=["01_demo"], workers=2, limits=LIMITS)
    by = {s.student: s for s in report.results}
    assert len(by) == len(students), "the batch completes"
    assert by["correct"].score == 5
    outputs = {}
    for name in ATTACKS:
        nb = nbformat.read(root / f"autograded/x_{name}/demo/01_demo.ipynb", as_version=4)
        outputs[name] = "".join(o.get("text", "") for o in nb.cells[2].outputs)
        assert by[f"x_{name}"].score == 5, (name, by[f"x_{name}"])
    assert "SOURCE False" in outputs["read_source"]
    assert "GRADEBOOK False" in outputs["read_gradebook"]
    assert "OTHER False" in outputs["read_other_student"]
    assert "NET blocked" in outputs["network"]
    assert "WRITE blocked" in outputs["write_outside"] and not (root / "PWNED").exists()
    assert "SECRET None" in outputs["env_secret"]
    assert "BG started" in outputs["background"]
    leftover = subprocess.run(["pgrep", "-f", "sleep 600"], capture_output=True, text=True).stdout.split()
    assert leftover == [], "processes a notebook starts die with it"
    for name in ("forkbomb", "memory", "disk"):
        st = by[f"x_{name}"]
        assert st.status in ("crashed", "timed out", "graded"), st
        assert st.score < 5, st  # the attack lost its own points, nothing else
    listener.close()


def test_two_graders_share_one_postgres_gradebook(tmp_path, postgres_url):
    root = two_chapter_course(tmp_path / "course")
    expected = synthetic_class(root)
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    # The instructor puts the assignment into the shared gradebook once, as with any nbgrader course.
    gen = subprocess.run([BIN / "nbgrader", "generate_assignment", "demo", "--force",
                          f"--CourseDirectory.db_url={postgres_url}"], cwd=root, env=env, capture_output=True, text=True)
    assert gen.returncode == 0, gen.stdout[-3000:] + gen.stderr[-3000:]
    extra = [] if sandbox_problem() is None else ["--no-sandbox"]
    common = ["grade", "demo", "--db", postgres_url, "--workers", "1", "--cell-timeout", "5", "--memory-mb", "1024"]
    a = subprocess.Popen([BIN / "jaxpath", *common, "--student", "correct", "partly", "stub", *extra], cwd=root,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    b = subprocess.Popen([BIN / "jaxpath", *common, "--student", "sneaky", "crashing", *extra], cwd=root,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out_a, out_b = a.communicate(timeout=600), b.communicate(timeout=600)
    assert a.returncode == 0, out_a[0][-2000:]
    assert b.returncode == 0, out_b[0][-2000:]
    rows = StatusStore(postgres_url).all("demo")
    got = {(r.student, r.notebook): r.score for r in rows}
    for student in ("correct", "partly", "stub", "sneaky", "crashing"):
        assert got[(student, "01_demo")] == expected[student][0]
        assert got[(student, "02_later")] == expected[student][1]
    assert len(rows) == 10
    with Gradebook(postgres_url) as gb:
        assert sorted(s.student_id for s in gb.assignment_submissions("demo")) == sorted(
            ["correct", "partly", "stub", "sneaky", "crashing"])
        assert gb.find_submission("demo", "correct").score == 10


def test_graders_opening_one_fresh_postgres_gradebook_at_once_all_find_its_tables(postgres_url):
    """Two graders started together on a new shared gradebook both created jaxpath's tables, and one failed on
    PostgreSQL's catalog (pg_type's unique index), ending its batch before it graded anything. Eight stores
    opened at the same instant (a barrier) must all come up, with one set of tables."""
    import threading
    import uuid

    import sqlalchemy as sa

    name = f"fresh_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sa.text(f"CREATE DATABASE {name}"))
    url = postgres_url.rsplit("/", 1)[0] + "/" + name
    barrier, errors = threading.Barrier(8), []

    def open_store():
        barrier.wait()
        try:
            StatusStore(url).dispose()
        except Exception as e:  # noqa: BLE001 - any failure is the test's finding
            errors.append(e)

    threads = [threading.Thread(target=open_store) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    engine = sa.create_engine(url)
    try:
        assert {"jaxpath_grading", "jaxpath_released_points"} <= set(sa.inspect(engine).get_table_names())
        assert "isolation" in {c["name"] for c in sa.inspect(engine).get_columns("jaxpath_grading")}
    finally:
        engine.dispose()
        with admin.connect() as c:
            c.execute(sa.text(f"DROP DATABASE {name}"))
        admin.dispose()


def test_grades_nbgraders_own_example_course_like_nbgrader(tmp_path):
    """Any nbgrader course works: the user-guide course that ships inside nbgrader (ps1, two students)."""
    import nbgrader

    guide = Path(nbgrader.__file__).parent / "docs" / "source" / "user_guide"
    root = tmp_path / "example"
    for d in ("source", "submitted"):
        shutil.copytree(guide / d, root / d)
    (root / "nbgrader_config.py").write_text("c = get_config()\nc.CourseDirectory.course_id = 'example'\n")
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    subprocess.run([BIN / "nbgrader", "generate_assignment", "ps1", "--force"], cwd=root, env=env, check=True,
                   capture_output=True)
    own_db = f"sqlite:///{root / 'nbgrader-own.db'}"
    stock_autograde(root, "ps1", own_db)
    cfg = Config.load(root)
    report = grade(cfg, "ps1", workers=2, sandbox=sandbox_problem() is None, compile_cache=False)
    by = {(s.student, s.notebook): s for s in report.results}
    assert sorted((k, s.status) for k, s in by.items()) == [
        (("bitdiddle", "problem1"), "tampered"), (("bitdiddle", "problem2"), "graded"),
        (("hacker", "problem1"), "graded"), (("hacker", "problem2"), "graded")]
    # bitdiddle commented out two test cells: graded with them restored, and said so
    assert "correct_squares: source edited" in by[("bitdiddle", "problem1")].reason

    def auto(db):
        with Gradebook(db) as gb:
            return {(s.student_id, nb.name, g.name): (g.auto_score, g.needs_manual_grade)
                    for s in gb.assignment_submissions("ps1") for nb in s.notebooks for g in nb.grades}

    ours, theirs = auto(cfg.db_url), auto(own_db)
    assert ours == theirs and len(ours) > 10
    assert (root / "autograded/hacker/ps1/jupyter.png").exists(), "the submission's other files come along"


def test_nbgrader_execution_is_set_as_nbgrader_sets_it(tmp_path):
    """nbgrader's autograde sets NBGRADER_EXECUTION=autograde while the submission runs; a notebook that
    branches on it must grade the same under jaxpath."""
    from course_factory import good_cells

    cells = good_cells()
    i = next(i for i, c in enumerate(cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "double-check")
    cells[i].source = cells[i].source.replace(
        "### BEGIN HIDDEN TESTS\n",
        "### BEGIN HIDDEN TESTS\nimport os\nassert os.environ.get('NBGRADER_EXECUTION') == 'autograde'\n")
    root = make_course(tmp_path / "course", cells)
    generate_assignment(root)
    rel = nbformat.read(root / "release/demo/01_demo.ipynb", as_version=4)
    src = nbformat.read(root / "source/demo/01_demo.ipynb", as_version=4)
    submit(root, "correct", "demo", "01_demo", submission(rel, answers_from_source(src)))
    cfg = Config.load(root)
    grade(cfg, "demo", workers=1, limits=LIMITS, sandbox=sandbox_problem() is None)
    other_db = f"sqlite:///{root / 'nbgrader-own.db'}"
    stock_autograde(root, "demo", other_db)
    ours, theirs = cell_scores(cfg.db_url, "correct", "01_demo"), cell_scores(other_db, "correct", "01_demo")
    assert ours == theirs and ours["double-check"] == 2, (ours, theirs)


def test_files_a_notebook_writes_come_back_without_following_links(tmp_path):
    """What comes back from a worker's folder: new and changed plain files, within the size limit; a link is
    named, never read (it could point anywhere the worker can read); removed files are listed."""
    from jaxpath.grade.sandbox import written_files

    (tmp_path / "sub").mkdir()
    (tmp_path / "new.txt").write_text("made by the notebook")
    (tmp_path / "sub" / "data.csv").write_text("changed")
    (tmp_path / "same.txt").write_text("as sent")
    (tmp_path / "big.bin").write_bytes(b"x" * 2048)
    (tmp_path / "link").symlink_to("/etc/passwd")
    sent = {"same.txt": b"as sent", "sub/data.csv": b"as sent", "gone.txt": b"deleted by the notebook"}
    w = written_files(tmp_path, sent, max_bytes=1024)
    assert w.files == {"new.txt": b"made by the notebook", "sub/data.csv": b"changed"}
    assert w.removed == ["gone.txt"]
    assert any(x.startswith("link (not a plain file)") for x in w.left_out)
    assert any(x.startswith("big.bin (past") for x in w.left_out)


@pytest.mark.skipif(os.geteuid() != 0, reason="starting processes as another uid needs root")
def test_a_uid_is_cleared_of_leftover_processes_before_it_is_reused():
    """A fork bomb's leftovers under a slot's uid would starve the next kernel there (RLIMIT_NPROC counts per
    uid): clear_uid kills them and waits until none is left."""
    from jaxpath.grade.sandbox import UID_BASE, UID_SLOTS, clear_uid, uid_processes

    uid = UID_BASE + UID_SLOTS + 7  # outside the grader's own slots: no test grading at the same time uses it
    # /bin/sh, not this Python: it may live where another uid cannot execute it (pyenv under /root)
    spawner = "for i in 1 2 3 4 5; do sleep 1000 & done; sleep 1000"
    procs = [subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "/bin/sh", "-c",
                               spawner]) for _ in range(3)]
    try:
        deadline = time.time() + 60
        while len(uid_processes(uid)) < 18 and time.time() < deadline:  # 3 shells, each with 5 + 1 sleeps
            time.sleep(0.05)
        assert len(uid_processes(uid)) >= 18
        import threading

        for p in procs:  # this test is the shells' parent: reap them as they die, as bwrap's init does in a sandbox
            threading.Thread(target=p.wait, daemon=True).start()
        assert clear_uid(uid)
        assert uid_processes(uid) == []
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_the_local_cluster_listens_on_loopback_only():
    """Dask's defaults put the scheduler's HTTP server on 0.0.0.0:8787 and the workers on every interface: a
    grader's machine must not offer either to its network while it grades (nor fight another cluster for 8787).
    The workers are threads of this process, one per worker asked for (dispatch.connect says why), and Dask's
    profiler does not sample them."""
    import psutil

    from jaxpath.grade.dispatch import connect, disconnect

    me = psutil.Process()
    before = {c.pid for c in me.children(recursive=True)}  # the session's chromium, when a browser test ran here
    client, cluster = connect(2)
    try:
        assert sorted(client.nthreads().values()) == [1, 1]
        assert set(client.run(os.getpid).values()) == {me.pid}
        assert not [c for c in me.children(recursive=True) if c.pid not in before]  # no worker process
        assert set(client.run(lambda dask_worker: "profile" in dask_worker.periodic_callbacks).values()) == {False}
        listening = [c.laddr for c in psutil.net_connections("inet")
                     if c.status == psutil.CONN_LISTEN and c.pid == me.pid]
        assert listening  # the scheduler's HTTP server at least
        assert all(a.ip in ("127.0.0.1", "::1") for a in listening), listening
        assert all(a.port != 8787 for a in listening), listening
    finally:
        disconnect(client, cluster)


def test_a_task_beside_its_reference_run_follows_it_cell_by_cell():
    """A task sent while its notebook's reference run goes on runs its n-th code cell only once the reference
    has run its own (follow.Progress): it reads that cell's programs from the cache instead of compiling
    them a second time beside the reference. The order is read from the clock every process shares (CLOCK_MONOTONIC),
    each cell printing when it ran and the progress noting when it let each cell go."""
    from jaxpath.grade import follow
    from jaxpath.grade.tasks import IntegritySpec, Task
    from jaxpath.grade.worker import run_task

    class Spy(follow.Progress):
        def __init__(self):
            super().__init__()
            self.calls: list[tuple[int, float]] = []

        def wait(self, cells: int) -> float:
            self.calls.append((cells, time.monotonic()))
            return 0.0

    spy = Spy()
    key = follow.register(spy, "01_demo")
    try:
        clock = "import time\nprint(time.monotonic())"
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(clock), nbformat.v4.new_markdown_cell("text"),
                                             nbformat.v4.new_code_cell(clock), nbformat.v4.new_code_cell(clock)])
        sandboxed = sandbox_problem() is None
        task = Task("demo/s/01_demo", nbformat.writes(nb), limits=LIMITS, sandbox=sandboxed,
                    integrity=IntegritySpec(deferred=True), follow=key)
        result = run_task(task)
        out = nbformat.reads(result.notebook, as_version=4)
        code = [c for c in out.cells if c.cell_type == "code"]
        ran = [float(c.outputs[0]["text"]) for c in code[:3]]
        assert [n for n, _ in spy.calls] == [1, 2, 3]  # before each code cell, the count it waits for
        for k, (_, let_go) in enumerate(spy.calls):
            assert let_go <= ran[k], f"code cell {k + 1} ran before the reference let it"
            if k:
                assert ran[k - 1] <= let_go, f"code cell {k + 1} was let go before cell {k} had run"
        assert "following the reference run" in result.times
        spy.over = True  # a reference that is over: nothing is waited for
        spy.calls.clear()
        run_task(Task("demo/s/01_demo", nbformat.writes(nb), limits=LIMITS, sandbox=sandboxed,
                      integrity=IntegritySpec(deferred=True), follow=key))
        assert spy.calls == []
    finally:
        follow.withdraw(key)
    assert follow.following(key) is None
