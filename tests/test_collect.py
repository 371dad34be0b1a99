"""`jaxpath collect`: an LMS (Canvas) zip into nbgrader's submitted/, with a report of what was not placed."""
import zipfile

import pytest
from course_factory import make_course

from jaxpath.classroom.collect import CollectError, collect
from jaxpath.cli import main


def test_collect_canvas_zip(tmp_path, capsys):
    root = make_course(tmp_path / "c")
    (root / "roster.csv").write_text("student_id,lms_id,name\nada,1001,lovelaceada\nbo,1002,\n")
    z = tmp_path / "subs.zip"
    with zipfile.ZipFile(z, "w") as zf:
        def add(name, data, when):
            zf.writestr(zipfile.ZipInfo(name, date_time=when), data)
        add("lovelaceada_1001_555_01_demo.ipynb", "{old}", (2026, 11, 20, 9, 0, 0))
        add("lovelaceada_LATE_1001_556_01_demo-1.ipynb", "{new}", (2026, 11, 21, 9, 0, 0))  # a resubmission
        add("lovelaceada_1001_555_data.csv", "x,y\n", (2026, 11, 20, 9, 0, 0))
        add("bob_1002_557_01_demo.ipynb", "{bo}", (2026, 11, 20, 8, 0, 0))
        add("stranger_1999_558_01_demo.ipynb", "{}", (2026, 11, 20, 8, 0, 0))
        add("bob_1002_559_homework.ipynb", "{}", (2026, 11, 20, 8, 0, 0))
        add("README.txt", "hi", (2026, 11, 20, 8, 0, 0))
    assert main(["--root", str(root), "collect", str(z), "demo", "--roster", str(root / "roster.csv")]) == 1
    out = capsys.readouterr().out
    sub = root / "submitted"
    assert (sub / "ada/demo/01_demo.ipynb").read_text() == "{new}", "the newest submission wins"
    assert (sub / "ada/demo/data.csv").read_text() == "x,y\n"
    assert (sub / "ada/demo/timestamp.txt").read_text().startswith("2026-11-21 09:00:00")
    assert (sub / "bo/demo/01_demo.ipynb").read_text() == "{bo}"
    assert "placed 3 file(s) for 2 student(s)" in out
    assert "stranger_1999_558_01_demo.ipynb: LMS user 1999 (stranger) is not in the roster" in out
    assert "bob_1002_559_homework.ipynb: homework.ipynb is not a notebook of demo" in out
    assert "README.txt: name is not" in out
    assert "lovelaceada_1001_555_01_demo.ipynb: an older submission of 01_demo.ipynb by ada" in out


ROSTER = "student_id,lms_id,name\nada,1001,Lovelace Ada\nbo,1002,\ncy,1003,Cy Young\n"


def _zip(path, entries):
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data, when in entries:
            zf.writestr(zipfile.ZipInfo(name, date_time=when), data)
    return path


def _run(root, z, capsys):
    rc = main(["--root", str(root), "collect", str(z), "demo", "--roster", str(root / "roster.csv")])
    return rc, capsys.readouterr().out


def test_collect_nested_folders(tmp_path, capsys):
    """A re-zipped Canvas folder, Moodle's per-student folders, and folders named after roster students."""
    root = make_course(tmp_path / "c")
    (root / "roster.csv").write_text(ROSTER)
    t = (2026, 11, 20, 9, 0, 0)
    z = _zip(tmp_path / "nested.zip", [
        ("downloads/week 3/lovelaceada_1001_555_01_demo.ipynb", "{ada}", t),
        ("Bo Berg_1002_assignsubmission_file_/01_demo.ipynb", "{bo}", t),
        ("Bo Berg_1002_assignsubmission_file_/data/points.csv", "1,2\n", t),
        ("class/Cy Young/demo/01_demo.ipynb", "{cy}", t),
        ("class/somebody/01_demo.ipynb", "{?}", t),
        ("Dee Dunn_1004_assignsubmission_file_/01_demo.ipynb", "{dee}", t),
        ("__MACOSX/class/._01_demo.ipynb", "junk", t),
    ])
    rc, out = _run(root, z, capsys)
    sub = root / "submitted"
    assert (sub / "ada/demo/01_demo.ipynb").read_text() == "{ada}"
    assert (sub / "bo/demo/01_demo.ipynb").read_text() == "{bo}"
    assert (sub / "bo/demo/points.csv").read_text() == "1,2\n"
    assert (sub / "cy/demo/01_demo.ipynb").read_text() == "{cy}", "a folder named like the roster's name column"
    assert sorted(p.name for p in sub.iterdir()) == ["ada", "bo", "cy"]
    assert rc == 1, "unplaced files make the exit status 1"
    assert "placed 4 file(s) for 3 student(s)" in out
    assert "class/somebody/01_demo.ipynb: neither its name" in out
    assert "Dee Dunn_1004_assignsubmission_file_/01_demo.ipynb: LMS user 1004 (Dee Dunn) is not in the roster" in out
    assert "__MACOSX" not in out


def test_collect_unknown_students_and_duplicates_are_reported(tmp_path, capsys):
    root = make_course(tmp_path / "c")
    (root / "roster.csv").write_text(ROSTER)
    z = _zip(tmp_path / "subs.zip", [
        ("lovelaceada_1001_600_01_demo-2.ipynb", "{newest}", (2026, 11, 22, 9, 0, 0)),
        ("lovelaceada_1001_555_01_demo.ipynb", "{oldest}", (2026, 11, 20, 9, 0, 0)),
        ("lovelaceada_LATE_1001_556_01_demo-1.ipynb", "{middle}", (2026, 11, 21, 9, 0, 0)),
        ("bob_1002_557_01_demo.ipynb", "{bo}", (2026, 11, 20, 8, 0, 0)),
        ("zed_1999_558_01_demo.ipynb", "{zed}", (2026, 11, 20, 8, 0, 0)),
    ])
    rc, out = _run(root, z, capsys)
    assert rc == 1
    sub = root / "submitted"
    assert (sub / "ada/demo/01_demo.ipynb").read_text() == "{newest}"
    assert (sub / "ada/demo/timestamp.txt").read_text() == "2026-11-22 09:00:00.000000 UTC"
    assert not (sub / "zed").exists() and not (sub / "1999").exists(), "an unknown student gets no folder"
    assert "zed_1999_558_01_demo.ipynb: LMS user 1999 (zed) is not in the roster" in out
    # every file of the duplicate set is named: the kept one and both dropped ones
    assert ("3 files for ada/demo/01_demo.ipynb: kept lovelaceada_1001_600_01_demo-2.ipynb (the newest), not placed "
            "lovelaceada_1001_555_01_demo.ipynb, lovelaceada_LATE_1001_556_01_demo-1.ipynb") in out
    assert ("not placed lovelaceada_LATE_1001_556_01_demo-1.ipynb: an older submission of 01_demo.ipynb by ada "
            "(2026-11-21 09:00); kept lovelaceada_1001_600_01_demo-2.ipynb (2026-11-22 09:00)") in out
    assert "placed 2 file(s) for 2 student(s)" in out


def _corrupt_member(path):
    """A valid zip whose second member's compressed bytes are damaged (CRC or inflate error on reading)."""
    _zip(path, [("bob_1002_557_01_demo.ipynb", "{bo}" * 200, (2026, 11, 20, 8, 0, 0)),
                ("lovelaceada_1001_555_01_demo.ipynb", "{ada}" * 200, (2026, 11, 20, 9, 0, 0))])
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("lovelaceada_1001_555_01_demo.ipynb")
    raw = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for i in range(start + 2, start + 12):
        raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))
    return path


@pytest.mark.parametrize("kind", ["not a zip", "truncated", "corrupt member", "missing"])
def test_collect_corrupt_zip_writes_nothing(tmp_path, capsys, kind):
    root = make_course(tmp_path / "c")
    (root / "roster.csv").write_text(ROSTER)
    z = tmp_path / "subs.zip"
    if kind == "not a zip":
        z.write_text("<html>Canvas says: session expired</html>")
    elif kind == "truncated":
        _zip(z, [("bob_1002_557_01_demo.ipynb", "{bo}" * 500, (2026, 11, 20, 8, 0, 0))])
        z.write_bytes(z.read_bytes()[:-40])
    elif kind == "corrupt member":
        _corrupt_member(z)
    rc, out = _run(root, z, capsys)
    assert rc == 2
    assert out.startswith("error: ") and str(z) in out, out
    if kind == "corrupt member":
        assert "member lovelaceada_1001_555_01_demo.ipynb is corrupt" in out
    if kind != "missing":
        assert "nothing was placed" in out
    assert not (root / "submitted").exists(), "nothing is written, not even the files read before the bad one"
    with pytest.raises(CollectError):
        collect(z, "demo", root / "roster.csv", root)


def test_collect_roster_without_student_id(tmp_path):
    root = make_course(tmp_path / "c")
    (root / "roster.csv").write_text("id,email\n1,a@b\n")
    z = _zip(tmp_path / "subs.zip", [("bob_1002_557_01_demo.ipynb", "{}", (2026, 11, 20, 8, 0, 0))])
    with pytest.raises(CollectError, match=r"roster.csv: the roster needs a `student_id` column"):
        collect(z, "demo", root / "roster.csv", root)
    assert not (root / "submitted").exists()


def test_collect_reads_the_zips_times_in_the_stated_zone_and_keeps_canvass_late_marker(tmp_path, capsys):
    """A zip keeps local time without a zone: read in --zone, written in UTC; Canvas's `_LATE` is reported, and
    one that disagrees with the time against the due date says to check the zone."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = make_course(tmp_path / "c")
    (root / "roster.csv").write_text(ROSTER)
    bin_ = Path(sys.executable).parent
    subprocess.run([bin_ / "nbgrader", "db", "assignment", "add", "demo", "--duedate", "2026-05-01 12:00:00 UTC"],
                   cwd=root, check=True, capture_output=True, env={**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}"})
    z = _zip(tmp_path / "subs.zip", [
        ("lovelaceada_1001_555_01_demo.ipynb", "{ada}", (2026, 5, 1, 9, 0, 0)),        # 13:00 UTC: late
        ("bob_LATE_1002_556_01_demo.ipynb", "{bo}", (2026, 5, 1, 8, 30, 0)),           # 12:30 UTC: late
        ("cyyoung_LATE_1003_557_01_demo.ipynb", "{cy}", (2026, 5, 1, 7, 0, 0)),        # 11:00 UTC: on time
    ])
    rc = main(["--root", str(root), "collect", str(z), "demo", "--roster", str(root / "roster.csv"),
               "--zone", "America/New_York"])
    out = " ".join(capsys.readouterr().out.split())
    sub = root / "submitted"
    assert (sub / "ada/demo/timestamp.txt").read_text() == "2026-05-01 13:00:00.000000 UTC"  # EDT is UTC-4
    assert (sub / "bo/demo/timestamp.txt").read_text() == "2026-05-01 12:30:00.000000 UTC"
    assert "times read in America/New_York, time stamps written in UTC" in out
    assert "Canvas marks 2 submission(s) late: bo, cy" in out
    assert "check --zone ada: Canvas marks the submission on time, but its time 2026-05-01 13:00 UTC" in out
    assert "check --zone cy: Canvas marks the submission late, but its time 2026-05-01 11:00 UTC" in out
    assert "bo:" not in out.split("late: bo, cy")[1]  # marker and time agree: nothing to check
    assert rc == 1
    # the same zip read as UTC: every time four hours earlier
    r = collect(z, "demo", root / "roster.csv", root, zone="UTC")
    assert (sub / "ada/demo/timestamp.txt").read_text() == "2026-05-01 09:00:00.000000 UTC" and r.zone == "UTC"
    with pytest.raises(CollectError, match="unknown time zone 'Mars/Olympus'"):
        collect(z, "demo", root / "roster.csv", root, zone="Mars/Olympus")
