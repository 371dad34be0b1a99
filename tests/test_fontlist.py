"""matplotlib's font list for the sandboxed kernels (jaxpath/grade/fontlist.py): made once per host in a real
sandbox, read by every sandboxed kernel without building its own, out of any notebook's reach, and never used
once the fonts a sandbox sees have changed."""
from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from jaxpath import Config
from jaxpath.grade import fontlist, grade, sandbox_problem
from jaxpath.grade.isolation import host_level
from jaxpath.grade.limits import Limits
from jaxpath.grade.sandbox import Sandbox

pytestmark = [pytest.mark.grade, pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))]

# What a sandboxed kernel's matplotlib does on import: the log says whether it read a font list or built one.
# Then it tries to change the list for the next notebook, by writing to it and by removing it.
PROBE = r"""
import json, logging, os
messages = []
class Keep(logging.Handler):
    def emit(self, record):
        messages.append(record.getMessage())
log = logging.getLogger("matplotlib.font_manager")
log.addHandler(Keep())
log.setLevel(logging.DEBUG)
import matplotlib
import matplotlib.font_manager as fm
path = os.path.join(matplotlib.get_cachedir(), f"fontlist-v{fm.FontManager.__version__}.json")
changed = []
for how, attempt in (("written", lambda: open(path, "a").write("{}")), ("removed", lambda: os.remove(path)),
                     ("replaced", lambda: os.replace(os.devnull, path))):
    try:
        attempt()
        changed.append(how)
    except OSError:
        pass
print(json.dumps({"messages": messages, "fonts": len(fm.fontManager.ttflist), "changed": changed,
                  "dejavu": os.path.basename(fm.findfont("DejaVu Sans"))}))
"""


def in_sandbox(font_list: str | None, before=lambda: None) -> dict:
    with Sandbox({}, Limits(), level=host_level(), font_list=font_list) as sb:
        before()
        run = subprocess.run(sb.command([sys.executable, "-c", PROBE]), capture_output=True, timeout=120, check=True)
    return json.loads(run.stdout.decode().strip().splitlines()[-1])


def test_sandboxed_kernels_read_the_hosts_font_list_and_none_can_change_it(tmp_path):
    path = fontlist.font_list(host_level(), store=tmp_path)
    assert path is not None and Path(path).parent.parent == tmp_path
    before = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    fonts = len(json.loads(Path(path).read_text())["ttflist"])

    without = in_sandbox(None)  # as before: each kernel finds the fonts and builds its own list
    assert "generated new fontManager" in without["messages"], without

    for _ in range(2):  # the second sandbox finds the list as the first left it
        got = in_sandbox(path)
        assert "generated new fontManager" not in got["messages"], got
        assert any(m.startswith("Using fontManager instance from") for m in got["messages"]), got
        assert got["fonts"] == fonts == without["fonts"] and got["dejavu"] == "DejaVuSans.ttf"
        assert got["changed"] == [], got
    assert hashlib.sha256(Path(path).read_bytes()).hexdigest() == before
    assert fontlist.font_list(host_level(), store=tmp_path) == path  # made once


def test_a_list_gone_mid_batch_leaves_the_kernel_to_build_its_own(tmp_path):
    """A cache folder cleared while a batch runs: the sandbox still starts, and its kernel builds a list."""
    path = fontlist.font_list(host_level(), store=tmp_path)
    got = in_sandbox(path, before=lambda: os.remove(path))
    assert "generated new fontManager" in got["messages"] and got["dejavu"] == "DejaVuSans.ttf", got


def test_a_change_in_the_fonts_a_sandbox_sees_makes_a_new_list(tmp_path, monkeypatch):
    fonts = tmp_path / "fonts"
    (fonts / "truetype").mkdir(parents=True)
    monkeypatch.setattr(fontlist, "FONT_DIRS", (str(fonts),))
    level = host_level()
    first = fontlist.key(level)
    assert fontlist.key(level) == first
    (fonts / "truetype" / "added.ttf").write_bytes(b"")  # a font installed: its folder's time changes
    assert fontlist.key(level) != first
    assert fontlist.key(level) != fontlist.key(type(level).parse("root+rlimits") if level.name != "root+rlimits"
                                               else type(level).parse("root+cgroup-v1"))


def test_a_list_that_cannot_be_made_leaves_the_kernels_to_make_their_own(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(fontlist, "kernel_source", lambda name: "import sys; print('half'); sys.exit(3)")
    with caplog.at_level(logging.WARNING, logger="jaxpath.grade"):
        assert fontlist.font_list(host_level(), store=tmp_path) is None
    assert "could not be made (exit status 3" in caplog.text
    monkeypatch.setattr(fontlist, "kernel_source", lambda name: "print('fontlist-v1.json'); print('{not json')")
    assert fontlist.font_list(host_level(), store=tmp_path) is None
    assert not list(tmp_path.rglob("fontlist-v*.json"))  # nothing kept that a kernel could read


@pytest.mark.slow
def test_a_graded_notebook_reads_the_font_list(tmp_path, monkeypatch):
    """Through `jaxpath grade`: the batch makes the list (here in a store of the test's own) and every
    sandboxed kernel reads it; a figure the notebook draws comes back as its image."""
    from course_factory import good_cells, make_course

    from jaxpath.classroom.sample import answers_from_source, submission, submit

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cells = good_cells()
    cells.append(nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"))
    cells.append(nbformat.v4.new_code_cell(PROBE))
    root = make_course(tmp_path / "course", cells)
    bin_ = Path(sys.executable).parent
    subprocess.run([bin_ / "nbgrader", "generate_assignment", "demo", "--force"], cwd=root, check=True,
                   capture_output=True, env={**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}"})
    rel = nbformat.read(root / "release/demo/01_demo.ipynb", as_version=4)
    src = nbformat.read(root / "source/demo/01_demo.ipynb", as_version=4)
    for student in ("a", "b"):
        submit(root, student, "demo", "01_demo", submission(rel, answers_from_source(src)))
    grade(Config.load(root), "demo", workers=2, limits=Limits(cell_timeout=30, notebook_timeout=120))
    assert list((tmp_path / "cache" / "jaxpath" / "fontlist").glob("*/fontlist-v*.json"))
    for student in ("a", "b"):
        nb = nbformat.read(root / f"autograded/{student}/demo/01_demo.ipynb", as_version=4)
        got = json.loads(nb.cells[-1].outputs[-1]["text"].strip().splitlines()[-1])
        assert "generated new fontManager" not in got["messages"] and got["changed"] == [], got
        # the student's figure is an image output, as under nbgrader's kernels, so the feedback page shows it
        assert [o.output_type for o in nb.cells[-2].outputs] == ["display_data"], nb.cells[-2].outputs
        assert "image/png" in nb.cells[-2].outputs[0]["data"]
