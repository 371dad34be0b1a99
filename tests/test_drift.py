"""`jaxpath drift`: the side environment's requirements, the normaliser, the comparison by severity, the reports,
and a real run of a fixture chapter on two "stacks" (tests/fixtures/drift/: the chapter imports `stack`, and
the side kernel finds another stack.py first on its PYTHONPATH), one finding per severity and none for noise."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from course_factory import make_course

from jaxpath.authoring.chapter import load_chapter
from jaxpath.authoring.drift.compare import compare_chapter
from jaxpath.authoring.drift.env import (
    DriftError,
    SideEnv,
    conflict_message,
    existing_python,
    parse_pins,
    side_requirements,
    write_kernelspec,
)
from jaxpath.authoring.drift.normalize import normalize, profile_cells, serializing_cells, unrepeatable_cells, version_rule
from jaxpath.authoring.drift.report import render_html, render_text, write_reports
from jaxpath.authoring.drift.run import DriftResult, drift
from jaxpath.cli import main
from jaxpath.config import Config
from jaxpath.problems import Problem

FIXTURE = Path(__file__).parent / "fixtures" / "drift"

LOCK = """# a lock
jax==0.12.0.1
jaxlib==0.12.0.1
flax==0.12.12  # a comment
numpy==2.5.5
"""

PIP_CONFLICT = """Collecting jax==0.11.2
INFO: pip is looking at multiple versions of jax to determine which version is compatible with other requirements.
ERROR: Cannot install jax==0.11.2 and jaxlib==0.12.0.1 because these package versions have conflicting dependencies.

The conflict is caused by:
    The user requested jaxlib==0.12.0.1
    jax 0.11.2 depends on jaxlib<=0.11.2 and >=0.11.2

To fix this you could try to:
1. loosen the range of package versions you've specified

ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/
"""


# ---- the side environment's requirements --------------------------------------------------------------------

def test_pins_replace_the_locks_lines_and_add_the_rest():
    reqs = side_requirements(LOCK, parse_pins("jax==0.11.2, jaxlib==0.11.2 optax==0.2.7"))
    assert reqs.splitlines() == ["jax==0.11.2", "jaxlib==0.11.2", "flax==0.12.12", "numpy==2.5.5", "optax==0.2.7"]
    assert side_requirements(LOCK, parse_pins("JAX==0.11.2")).lower().splitlines() == [  # names compare canonically
        "jax==0.11.2", "jaxlib==0.12.0.1", "flax==0.12.12", "numpy==2.5.5"]


def test_a_pin_without_a_version_or_not_a_requirement_is_refused():
    with pytest.raises(DriftError, match="names no version"):
        parse_pins("jax")
    with pytest.raises(DriftError, match="not a requirement"):
        parse_pins("jax==0.11.2 ==3")


def test_a_resolver_conflict_is_told_in_pips_own_words():
    msg = conflict_message(PIP_CONFLICT, parse_pins("jax==0.11.2"))
    assert "jax==0.11.2 cannot be installed" in msg
    assert "Cannot install jax==0.11.2 and jaxlib==0.12.0.1" in msg
    assert "jax 0.11.2 depends on jaxlib<=0.11.2 and >=0.11.2" in msg
    assert "loosen" not in msg and "ResolutionImpossible" not in msg
    assert "--with" in msg


def test_the_cli_refuses_a_bad_pin_before_building_anything(tmp_path, capsys):
    root = make_course(tmp_path / "course")
    assert main(["--root", str(root), "drift", "--with", "jax"]) == 2
    assert "names no version" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--root", str(root), "drift"])  # neither --with nor --python


def test_an_existing_python_gets_a_kernelspec_and_one_without_ipykernel_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXPATH_DRIFT_CACHE", str(tmp_path / "cache"))
    env = existing_python(sys.executable)
    assert env.label.startswith("jax-") and env.versions["ipykernel"]
    spec = json.loads((env.kernel_dirs / "kernels" / env.kernel_name / "kernel.json").read_text())
    assert spec["argv"][:3] == [str(Path(sys.executable).absolute()), "-m", "ipykernel_launcher"]
    assert str(tmp_path / "cache") in str(env.folder)  # the cache, outside the course
    with pytest.raises(DriftError, match="no such file"):
        existing_python(tmp_path / "nope" / "python")
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    with pytest.raises(DriftError, match="ipykernel is not installed there"):
        existing_python(bare / "bin" / "python")


# ---- the normaliser -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("a, b", [
    ("<object object at 0x7f3a2b1c0d10>", "<object object at 0x7f11aa00ff20>"),
    ("f32[4] from /tmp/ipykernel_28603/75021138.py:6:8 (f)", "f32[4] from /tmp/ipykernel_1201/75021138.py:6:8 (f)"),
    ("first call 79.93 ms", "first call 102.1 ms"),
    ("the result was ready at 9.311 ms (89x later)", "the result was ready at 12.5 ms (101x later)"),
    ("saved to /tmp/tmpab12cd/ckpt", "saved to /tmp/tmpzz99yy/ckpt"),
    ('  File "/work/main/.venv/lib/python3.12/site-packages/jax/_src/api.py", line 9, in f',
     '  File "/root/.cache/jaxpath/drift/ab12/venv/lib/python3.12/site-packages/jax/_src/api.py", line 9, in f'),
    ("id=140234567890123", "id=140299999999999"),
    ("from 'jax.experimental' (/work/main/.venv/lib ...", "from 'jax.experimental' (/root/.cache/jaxpath ..."),
    ("wrote /home/ada/course/ckpt/step_3", "wrote /srv/course/ckpt/step_3"),
    ("<list 139843831947840> is referred to by leak_box", "<list 139873352497024> is referred to by leak_box"),
    ("one jit: 0.52 ms ( 8.1x faster than eager)", "one jit: 0.041 ms (12.5x faster than eager)"),
    ("   10       39.6 ms     29.4 ms", "   10      139.6 ms      9.4 ms"),
    ("on 2026-12-01T10:10:45+00:00", "on 2026-12-02T08:00:01+00:00"),
    ("jax 0.12.0.1 | numpy 2.5.5", "jax 0.11.2 | numpy 2.5.5"),
    ("[stderr] Traceback (most recent call last):\n[stderr]   File \"api.py\", line 99, in f\n[stderr] ValueError: x",
     "[stderr] Traceback (most recent call last):\n[stderr]   File \"api.py\", line 93, in f\n[stderr] ValueError: x"),
    ("callback failed\nTraceback (most recent call last):\n  File \"a.py\", line 9, in f\n    x()\nValueError: boom",
     "callback failed\nTraceback (most recent call last):\n  File \"b.py\", line 12, in g\n    y()\nValueError: boom"),
])
def test_what_is_not_content_normalises_away(a, b):
    versions = version_rule(["0.12.0.1", "0.11.2", "2.5.5"])
    assert normalize(a, versions) == normalize(b, versions)


@pytest.mark.parametrize("a, b", [
    ("[1. 2. 3.]", "[1. 2. 4.]"),
    ("float32[3]", "float32[3,1]"),
    ("{ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }", "{ lambda ; a:f32[]. let b:f32[] = cos a in (b,) }"),
    ("grad alone: 8x", "grad alone: 64x"),  # a ratio outside a timing cell is content
    ("[CpuDevice(id=0)]", "[CpuDevice(id=1)]"),  # a small id is content
    ("int64 max: 9223372036854775807", "int64 max: 9223372036854775806"),  # a big number is not an address
    ("TypeError: bad", "ValueError: bad"),
    ("x / 2 = 1.5", "x / 2 = 2.5"),  # a division is not a path
    ("wrote ckpt/step_3", "wrote ckpt/step_4"),  # a relative path is the chapter's own
])
def test_content_survives_the_normaliser(a, b):
    assert normalize(a) != normalize(b)


def test_in_a_cell_that_measures_time_every_measured_number_is_noise():
    a = "min 1.485 | median 2.157 (ms)\nnaive / honest: 34x\nflops x8, time x7.8\njacfwd 3.1 ms, jacfwd is 2.0x faster\ntraces: 1"
    b = "min 2.034 | median 2.9 (ms)\nnaive / honest: 13x\nflops x8, time x12.6\njacfwd 3.3 ms, jacrev is 1.1x faster\ntraces: 1"
    assert normalize(a, timing=True) == normalize(b, timing=True)
    assert normalize(a.replace("traces: 1", "traces: 2"), timing=True) != normalize(b, timing=True)  # counts stay
    sources = ["def bench(f):\n    t = time.perf_counter()\n    f()", "def twice(f):\n    return bench(f)", "twice(g)",
               "print(1.5)", "print(np.random.normal(size=3))", "rng = np.random.default_rng(0)"]
    assert unrepeatable_cells(sources) == {0, 1, 2, 4}
    assert unrepeatable_cells(sources + ["np.random.seed(0)"]) == {0, 1, 2}  # a seeded generator repeats


def test_the_size_of_a_serialized_program_counts_to_its_order_of_magnitude():
    a = "baked in: 264,880 bytes | as input: 2,832 bytes | 2996 bytes written | 512 bytes | float32[8,256] | 7,540 vs 2,996"
    b = "baked in: 265,164 bytes | as input: 3,116 bytes | 3280 bytes written | 512 bytes | float32[8,256] | 8,108 vs 3,280"
    assert normalize(a, sizes=True) == normalize(b, sizes=True)
    assert normalize(a, sizes=True) != normalize(a.replace("264,880", "2,880"), sizes=True)  # constants not baked in
    assert normalize(a) != normalize(b)  # elsewhere a byte count is content
    assert serializing_cells(["exp = export.export(jax.jit(f))(x)\nlen(exp.serialize())", "x.nbytes"]) == {0}


def test_a_profile_is_a_recording_whose_warnings_alone_are_content():
    a = "plugins/profile/2026_12_01_10_17_27/vm.xplane.pb 60,493 bytes\nlines ['python', 'tf_XLAEigen']"
    b = "plugins/profile/2026_12_01_10_42_12/vm.xplane.pb 62,785 bytes\nlines ['', 'python', 'tf_XLAEigen']"
    assert normalize(a, recording=True) == normalize(b, recording=True)
    assert normalize(a, recording=True) != normalize(a + "\nDeprecationWarning: ProfileData.x", recording=True)
    cells = ["with jax.profiler.trace(d):\n    f()", "print(1)", "jax.profiler.save_device_memory_profile(p)"]
    assert profile_cells(cells) == {0, 2}


def test_a_line_cut_to_a_fixed_width_after_a_temp_path_is_the_same_line(tmp_path):
    _, _, ch = _fixture_chapter(tmp_path)
    value = _index(ch, "stack.value")
    cut = "ValueError : function <lambda> at /tmp/ipykernel_{}/1654909357.py:15 traced for jit returned a mut"
    pinned = _executed(ch.nb.cells, {value: [_stream(cut.format(24581)[:90] + "\n")]})
    side = _executed(ch.nb.cells, {value: [_stream(cut.format(5287)[:90] + "\n")]})
    assert compare_chapter(ch, pinned, side, []) == []
    side = _executed(ch.nb.cells, {value: [_stream(cut.format(5287)[:90].replace("jit", "pmap") + "\n")]})
    assert [f.kind for f in compare_chapter(ch, pinned, side, [])] == ["output changed"]


# ---- the comparison on two hand-made executed notebooks ------------------------------------------------------

def _executed(cells, outputs: dict[int, list]):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.from_dict(dict(c)) for c in cells]
    for i, outs in outputs.items():
        nb.cells[i].outputs = [nbformat.from_dict(o) for o in outs]
    return nb


def _stream(text, name="stdout"):
    return {"output_type": "stream", "name": name, "text": text}


def _error(ename, evalue):
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": []}


def _fixture_chapter(tmp_path):
    root = make_course(tmp_path / "course", cells=nbformat.read(FIXTURE / "01_demo.ipynb", 4).cells,
                       variants=(FIXTURE / "01_demo.toml").read_text())
    cfg = Config.load(root)
    ch = load_chapter(root / "source/demo/01_demo.ipynb", "demo/01_demo", root, root / "variants/demo/01_demo.toml")
    return root, cfg, ch


def _index(ch, text):
    return next(i for i, c in enumerate(ch.nb.cells) if c.cell_type == "code" and text in c.source)


def test_compare_grades_each_difference_by_severity_and_names_its_place(tmp_path):
    _, _, ch = _fixture_chapter(tmp_path)
    value, noise, old, strict, legacy = (_index(ch, s) for s in ("stack.value", "perf_counter", "old_api", "strict",
                                                                  "legacy"))
    answer = ch.exercises[0].answer
    pinned = _executed(ch.nb.cells, {
        value: [_stream("value: 3\n")],
        noise: [_stream("<object object at 0x7f3a2b1c0d10> 0x7f3a2b1c0d10 id=140234567890123\n"
                        "scratch: /tmp/tmpab12cd\ntook 0.123 ms, 124.0x the floor\n")],
        old: [_stream("still here\n")], strict: [_error("ValueError", "strict wants x >= 0")],
        legacy: [_stream("legacy result\n")]})
    side = _executed(ch.nb.cells, {
        value: [_stream("value: 4\n")],
        noise: [_stream("<object object at 0x7f0000aa0000> 0x7f0000aa0000 id=139999999999999\n"
                        "scratch: /tmp/tmpzz99yy\ntook 0.456 ms, 457.0x the floor\n")],
        old: [_error("AttributeError", "module 'stack' has no attribute 'old_api'")], strict: [],
        legacy: [_stream("/tmp/x/stack.py:14: UserWarning: stack.legacy is deprecated\n  return f()\n", "stderr"),
                 _stream("legacy result\n")]})
    wrong = Problem(ch.rel, "wrong answer 1 (calls the stack's twice) passes every test of the exercise (v.toml): the "
                    "tests must catch it", answer, "double")
    found = compare_chapter(ch, pinned, side, [wrong])
    by = {(f.severity, f.kind, f.cell) for f in found}
    assert by == {(1, "starts raising", old), (1, "no longer raises", strict), (2, "wrong answer passes", answer),
                  (3, "output changed", value), (4, "new warning", legacy)}
    assert [f.severity for f in found] == sorted(f.severity for f in found)
    f3 = next(f for f in found if f.severity == 3)
    assert f3.section == "Values" and f3.paragraph == "Since jax 0.9 the value below is 3."
    assert "-value: 3" in f3.diff and "+value: 4" in f3.diff
    assert f3.claim == "Since jax 0.9 the value below is 3."  # a version-specific fact, shown as such
    assert next(f for f in found if f.severity == 1 and f.cell == old).section == "Errors"
    # the same problem on the pinned run is not a finding of the side one
    assert not [f for f in compare_chapter(ch, pinned, side, [wrong], [wrong]) if f.severity == 2]
    # the same notebook against itself: nothing
    assert compare_chapter(ch, pinned, pinned, []) == []


def test_after_a_kernel_death_the_cells_below_are_one_finding(tmp_path):
    _, _, ch = _fixture_chapter(tmp_path)
    value, old = _index(ch, "stack.value"), _index(ch, "old_api")
    pinned = _executed(ch.nb.cells, {value: [_stream("value: 3\n")], old: [_stream("still here\n")]})
    side = _executed(ch.nb.cells, {})
    found = compare_chapter(ch, pinned, side, [Problem(ch.rel, "the kernel died running this cell", value)])
    assert [(f.severity, f.kind) for f in found] == [(1, "kernel died")]


# ---- a real run: the fixture chapter executed on two stacks --------------------------------------------------

@pytest.mark.slow
def test_drift_runs_the_chapter_on_the_side_stack_and_reports_each_severity(tmp_path, monkeypatch):
    root, cfg, ch = _fixture_chapter(tmp_path)
    pinned_stack, side_stack = tmp_path / "pinned", tmp_path / "side"
    shutil.copytree(FIXTURE / "stack_pinned", pinned_stack)
    shutil.copytree(FIXTURE / "stack_side", side_stack)
    monkeypatch.setenv("PYTHONPATH", str(pinned_stack))  # the course's kernel (the pinned run) finds the pinned one
    env = SideEnv(Path(sys.executable), tmp_path / "env", "fixture", {"jax": "side"}, env={"PYTHONPATH": str(side_stack)})
    write_kernelspec(env)
    result = drift(cfg, env, jobs=1)
    [c] = result.chapters
    assert c.baseline == "executed now"  # no build/executed: the pinned run was made too
    answer = ch.exercises[0].answer
    got = {(f.severity, f.kind, f.cell) for f in c.findings}
    assert got == {(1, "starts raising", _index(ch, "old_api")), (1, "no longer raises", _index(ch, "strict")),
                   (2, "wrong answer passes", answer), (3, "output changed", _index(ch, "stack.value")),
                   (4, "new warning", _index(ch, "legacy"))}, got
    assert result.broken
    # every output really differed in the noise cell (an address, a temp path, an id, a time), and none was reported
    side_nb = nbformat.read(root / "build/drift/jax-side/demo/01_demo.ipynb", 4)
    pinned_nb = nbformat.read(root / "build/drift/pinned/demo/01_demo.ipynb", 4)
    noise = _index(ch, "perf_counter") + 1  # + the stamp cell
    assert side_nb.cells[noise].outputs[0].text != pinned_nb.cells[noise].outputs[0].text
    assert side_nb.metadata["jaxpath"]["executed"]["python"]  # stamped like a validated chapter

    html, txt = write_reports(result, root / "reports/drift", "jaxpath drift --python X")
    text = txt.read_text()
    assert "1: 2 cells that start or stop raising" in text and "wrong answer passes" in text
    assert "version-specific fact: Since jax 0.9 the value below is 3." in text
    page = html.read_text()
    assert "Severity 1–2 findings" in page and "stack.legacy is deprecated" in page and "<script" not in page

    again = drift(cfg, env, jobs=2, compare_only=True)  # the comparison alone, on the runs left in build/drift/
    assert {(f.severity, f.kind, f.cell) for f in again.findings} == got
    assert (again.executed_seconds, again.jobs) == (result.seconds, 1)  # the execution's own wall time, reported


def test_reports_of_a_clean_run_say_so(tmp_path):
    env = SideEnv(Path(sys.executable), tmp_path, "k", {"jax": "0.12.0"})
    result = DriftResult(env, [], 1.0)
    assert "No finding" in render_text(result, "jaxpath drift --with 'jax==0.12.0'")
    assert "No severity 1–2 finding" in render_html(result, "cmd")


def test_the_summary_cuts_a_long_changed_line_around_its_change():
    from jaxpath.authoring.drift.report import _shown

    head = "x" * 300
    shown = _shown(f"-{head} 101/errors.html tail\n+{head} errors.html tail")
    assert all(len(line) <= 152 for line in shown)
    assert "101/errors.html" in shown[0] and "errors.html" in shown[1] and shown[0].startswith("-…")
