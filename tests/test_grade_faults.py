"""Faults of the grader's own world: the disk fills up, another process holds the gradebook, Ctrl-C.
Each ends with a clear error, nothing corrupted, and a rerun that finishes the job. These are the long fault
runs (a class graded two or three times each): `make test-all` runs them."""
import errno
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook
from test_grade import (
    BLOCKER,
    LIMITS,
    add_blocking_submission,
    remove_blocking_submission,
    synthetic_class,
    two_chapter_course,
    wait_for_recorded,
)

from jaxpath import Config
from jaxpath import files as jfiles
from jaxpath.grade import GradeError, Limits, grade, sandbox_problem
from jaxpath.grade.record import StatusStore

pytestmark = [pytest.mark.slow, pytest.mark.grade]
BIN = Path(sys.executable).parent
SANDBOX = sandbox_problem() is None
STUDENTS = ["correct", "partly", "stub"]


def _class(tmp_path):
    root = two_chapter_course(tmp_path / "course")
    synthetic_class(root)
    return root, Config.load(root)


def _scores(cfg):
    return {(r.student, r.notebook): (r.status, r.score) for r in StatusStore(cfg.db_url).all("demo")}


@pytest.mark.full
def test_disk_full_while_recording(tmp_path, monkeypatch):
    root, cfg = _class(tmp_path)
    calls = {"n": 0}
    real_fsync = os.fsync

    def fsync(fd):
        calls["n"] += 1
        if calls["n"] > 10:  # the first few files fit (two per notebook), then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(jfiles.os, "fsync", fsync)  # what write_atomic calls
    with pytest.raises(GradeError, match="disk is full") as err:
        grade(cfg, "demo", students=STUDENTS, workers=1, limits=LIMITS, sandbox=SANDBOX)
    assert "run the same command again" in str(err.value)
    monkeypatch.setattr(jfiles.os, "fsync", real_fsync)
    assert not list((root / "autograded").rglob(".*.jaxpath-tmp")), "no half-written file is left"
    for nb_path in (root / "autograded").rglob("*.ipynb"):
        nbformat.read(nb_path, as_version=4)
    before = _scores(cfg)
    assert 0 < len(before) < 6
    report = grade(cfg, "demo", students=STUDENTS, workers=1, limits=LIMITS, sandbox=SANDBOX)
    after = _scores(cfg)
    assert len(after) == 6 and len(report.skipped) == len(before)
    assert after[("correct", "01_demo")] == ("graded", 5) and after[("partly", "02_later")] == ("graded", 3)


def _hold_lock(db: Path, seconds: float) -> subprocess.Popen:
    """Another process takes an exclusive lock on the SQLite gradebook and keeps it for `seconds`."""
    code = ("import sqlite3, sys, time\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('BEGIN EXCLUSIVE')\nprint('locked', flush=True)\ntime.sleep(float(sys.argv[2]))\n"
            "c.execute('COMMIT')\n")
    p = subprocess.Popen([sys.executable, "-c", code, str(db), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "locked"
    return p


@pytest.mark.full
def test_locked_gradebook_waits_then_goes_on(tmp_path):
    root, cfg = _class(tmp_path)
    grade(cfg, "demo", students=["correct"], workers=1, limits=LIMITS, sandbox=SANDBOX)  # the gradebook exists
    holder = _hold_lock(root / "gradebook.db", 8)
    t0 = time.perf_counter()
    report = grade(cfg, "demo", students=STUDENTS, workers=1, limits=LIMITS, sandbox=SANDBOX, lock_timeout=120)
    waited = time.perf_counter() - t0
    holder.wait(timeout=30)
    assert waited >= 5, "grading waited for the lock"
    assert len(report.results) == 4 and len(report.skipped) == 2
    assert _scores(cfg)[("partly", "01_demo")] == ("graded", 3)


@pytest.mark.full
def test_locked_gradebook_gives_a_clear_error_and_loses_nothing(tmp_path):
    root, cfg = _class(tmp_path)
    grade(cfg, "demo", students=["correct"], workers=1, limits=LIMITS, sandbox=SANDBOX)
    holder = _hold_lock(root / "gradebook.db", 60)
    try:
        with pytest.raises(GradeError, match="locked by another process") as err:
            grade(cfg, "demo", students=STUDENTS, workers=1, limits=LIMITS, sandbox=SANDBOX, lock_timeout=2)
        assert "run the same command again" in str(err.value)
    finally:
        holder.kill()
        holder.wait()
    assert sqlite3.connect(root / "gradebook.db").execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    report = grade(cfg, "demo", students=STUDENTS, workers=1, limits=LIMITS, sandbox=SANDBOX)
    assert len(report.results) + len(report.skipped) == 6
    assert _scores(cfg)[("correct", "01_demo")] == ("graded", 5)


@pytest.mark.full
def test_ctrl_c_stops_cleanly_and_a_rerun_resumes(tmp_path):
    root, cfg = _class(tmp_path)
    add_blocking_submission(root)  # the class cannot finish before the signal, on any machine
    args = [BIN / "jaxpath", "grade", "demo", "--workers", "1", "--cell-timeout", "5", "--memory-mb", "1024"]
    if not SANDBOX:
        args.append("--no-sandbox")
    # Ctrl-C in a terminal signals the whole foreground process group: the grader and its Dask workers.
    # (SIGINT reset to its default in the child: a test run started in the background of a non-interactive
    # shell ignores SIGINT, and an ignored signal is inherited, so the grader would never see it.)
    proc = subprocess.Popen(args, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env={**os.environ, "COLUMNS": "200"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    store = wait_for_recorded(root, cfg, 3, proc=proc)
    assert proc.poll() is None, "the grader ended before it was signalled"
    os.killpg(proc.pid, signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out[-2000:]
    assert "interrupted" in out and "run `jaxpath grade demo` again" in out, out[-2000:]
    # Nothing it started lives on: no Dask worker, no sandbox, no kernel (a sandbox's kernel dies with its
    # bwrap, which stays in this session).
    deadline = time.time() + 15
    while time.time() < deadline:
        left = subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True, text=True).stdout.split()
        if not left:
            break
        time.sleep(0.5)
    assert not left, subprocess.run(["ps", "-o", "pid,args", "-p", ",".join(left)], capture_output=True, text=True).stdout
    recorded = len([r for r in store.all("demo") if r.student != BLOCKER])
    assert 3 <= recorded <= 14
    assert not [r for r in store.all("demo") if r.student == BLOCKER]
    remove_blocking_submission(root)
    # the limits the command line ran under (they are part of what a recorded grade was graded under)
    cli_limits = Limits.for_course(cfg, cell_timeout=5, memory_mb=1024)
    report = grade(cfg, "demo", workers=2, limits=cli_limits, sandbox=SANDBOX)
    assert len(report.skipped) >= recorded - 1 and len(report.results) + len(report.skipped) == 14
    with Gradebook(cfg.db_url) as gb:
        assert len([s for s in gb.assignment_submissions("demo") if s.student_id != BLOCKER]) == 7
