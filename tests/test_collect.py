"""`jaxpath collect`: an LMS (Canvas) zip into nbgrader's submitted/, with a report of what was not placed."""
import zipfile

from jaxpath.cli import main

from course_factory import make_course


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
