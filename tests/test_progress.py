"""Earned progress: `jaxpath check` records verdicts in the work folder, `jaxpath progress` reads them, for a
solved, a partly solved and an untouched copy of the release (basics/01 run in a real kernel)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from site_factory import solve

from jaxpath import Config
from jaxpath.cli import main
from jaxpath.learner.progress import EARNED, IN_PROGRESS, NOT_STARTED, RECORDS, Course, chapter_hash, load_records

ROOT = Path(__file__).resolve().parent.parent
CHAPTER = "basics/01_introduction"


def release_copy(tmp: Path, name: str) -> Path:
    work = tmp / name
    shutil.copytree(ROOT / "release", work)
    return work


@pytest.fixture(scope="module")
def course() -> Course:
    return Course.load(Config.load(ROOT))


def _track(p, n):
    return next(t for t in p.tracks if t.number == n)


def test_untouched_folder_has_nothing_earned(tmp_path, course, capsys):
    work = release_copy(tmp_path, "untouched")
    p = course.progress(work)
    assert p.earned == 0 and len(p.tracks) == 12
    assert all(t.state == NOT_STARTED for t in p.tracks)
    one = _track(p, 1)
    assert one.next is not None and (one.next.chapter, one.next.number) == (CHAPTER, 1)
    assert main(["--root", str(ROOT), "progress", str(work)]) == 0
    out = capsys.readouterr().out
    assert "0/12 track chapters earned" in out and out.count("not started") == 12
    assert "next: Basics 01, Exercise 1:" in out


@pytest.mark.slow
def test_check_records_and_progress_reads_solved_and_partly_solved_folders(tmp_path, course, capsys):
    solved = release_copy(tmp_path, "solved")
    partly = release_copy(tmp_path, "partly")
    nb_solved = solve(solved, CHAPTER, 2)
    nb_partly = solve(partly, CHAPTER, 1)
    assert main(["--root", str(ROOT), "check", str(nb_solved)]) == 1  # exercises 3 and 4 are still stubs
    out = capsys.readouterr().out
    assert "recorded in" in out and "2/4 self-checks pass" in out
    assert main(["--root", str(ROOT), "check", str(nb_partly)]) == 1
    assert "1/4 self-checks pass" in capsys.readouterr().out

    records = load_records(solved)
    assert set(records) == {CHAPTER}
    released = nbformat.read(ROOT / "release" / f"{CHAPTER}.ipynb", as_version=4)
    assert records[CHAPTER]["hash"] == chapter_hash(released) == course.hashes[CHAPTER]
    assert sorted(records[CHAPTER]["exercises"].values()) == [False, False, True, True]

    p = course.progress(solved)
    assert _track(p, 1).state == EARNED and _track(p, 1).next is None
    assert _track(p, 8).state == IN_PROGRESS, "randomness is also carried by advanced/10, not yet done"
    assert _track(p, 8).next.chapter == "advanced/10_random_sharding"
    assert p.earned == 1 and sum(t.state == NOT_STARTED for t in p.tracks) == 10

    q = course.progress(partly)
    assert _track(q, 1).state == IN_PROGRESS and _track(q, 1).core_done == 1
    assert _track(q, 1).next.number == 2
    assert q.earned == 0

    assert main(["--root", str(ROOT), "progress", str(solved)]) == 0
    out = capsys.readouterr().out
    assert "1/12 track chapters earned" in out and "earned" in out.split("\n")[1]

    # a record from another version of the chapter counts for nothing until checked again
    data = json.loads((solved / RECORDS).read_text())
    data["chapters"][CHAPTER]["hash"] = "0" * 16
    (solved / RECORDS).write_text(json.dumps(data))
    r = course.progress(solved)
    assert r.stale == [CHAPTER] and _track(r, 1).state == NOT_STARTED
    assert main(["--root", str(ROOT), "progress", str(solved)]) == 0
    assert "from another version of the chapter" in capsys.readouterr().out


def test_a_broken_record_file_is_a_clear_error(tmp_path, course):
    work = release_copy(tmp_path, "broken")
    (work / RECORDS).parent.mkdir()
    (work / RECORDS).write_text("{")
    from jaxpath.learner.progress import ProgressError

    with pytest.raises(ProgressError, match="progress.json: not valid JSON"):
        course.progress(work)
