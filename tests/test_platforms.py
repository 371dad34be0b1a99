"""`jaxpath platform`: the plan, the runner that travels to the accelerator's host, the judgement of its run
against a CPU control, the recorded outputs it stamps into chapters, and the committed report's freshness."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from course_factory import code, good_cells, make_course

from jaxpath import Config
from jaxpath.authoring import platforms

ROOT = Path(__file__).resolve().parent.parent
STAMPED_CELL = (f"{platforms.RECORDED_START}\nTPU_RECORDED = \"\"\"(not yet recorded on a TPU)\"\"\"\n"
                f"{platforms.RECORDED_END}\nprint('measured', 6 * 7)")


def _course(tmp_path) -> Config:
    cells = good_cells()
    cells.insert(4, code(STAMPED_CELL, tags=[platforms.STAMP_TAG]))
    return Config.load(make_course(tmp_path / "course", cells=cells))


def _run(config: Config, out: Path) -> dict:
    plan = platforms.write_plan(config, ["demo/01_demo"], config.build / "platforms" / "plan.json")
    proc = subprocess.run([sys.executable, str(platforms.RUNNER), str(plan), str(out)], capture_output=True,
                          text=True, cwd=config.root)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def test_the_runner_runs_a_chapter_and_its_proof_as_validate_does(tmp_path):
    config = _course(tmp_path)
    run = _run(config, tmp_path / "run.json")
    (chapter,) = run["chapters"]
    assert "crash" not in chapter, chapter.get("traceback")
    by_index = {c["index"]: c for c in chapter["cells"]}
    assert [c["ok"] for c in chapter["cells"]].count(False) == 1  # the `1 / 0` cell tagged raises-exception
    stamped = [c for c in chapter["cells"] if c["stamped"]]
    assert [c["stamped"] for c in stamped] == ["measured 42\n"]
    # per exercise: the stub, two wrong answers, one alternative (see course_factory.VARIANTS)
    assert len(chapter["trials"]) == 3 * 4
    alt = [t for t in chapter["trials"] if t["kind"] == "alternative"]
    assert all(r["ok"] for t in alt for r in t["tests"])
    wrong = [t for t in chapter["trials"] if t["kind"] == "wrong"]
    assert all(not all(r["ok"] for r in t["tests"]) for t in wrong)
    plan = json.loads((config.build / "platforms" / "plan.json").read_text())
    findings = platforms.judge(plan["chapters"][0], chapter)
    assert findings.all() == [], "a run on the course's own stack finds what validate finds: nothing"
    assert by_index  # the run kept every code cell


def test_the_report_splits_the_platforms_from_the_stack(tmp_path):
    config = _course(tmp_path)
    control = _run(config, tmp_path / "control.json")
    accel = copy.deepcopy(control)
    ch = accel["chapters"][0]
    ch["platform"] = {"device_kind": "TPU v5 lite", "backend": "tpu", "jax": "0.10.2", "python": "3.11.7"}
    code_cell = next(c for c in ch["cells"] if c["ok"] and c["index"] == 3)
    code_cell.update(ok=False, error="ValueError: only on the chip")
    printing = next(c for c in ch["cells"] if c["ok"] and c["printed"] == "measured 42\n")
    printing["printed"] = "measured 41.99\n"                      # the chip printed another number
    alt = next(t for t in ch["trials"] if t["kind"] == "alternative" and t["exercise"] == "double")
    alt["tests"][0].update(ok=False, error="AssertionError: precision")
    wrong = next(t for t in ch["trials"] if t["kind"] == "wrong" and t["exercise"] == "square")
    for r in wrong["tests"]:
        r.update(ok=True, error="")
    # one failure on both platforms: the stack's, not the chip's
    for run in (accel, control):
        ref = next(c for c in run["chapters"][0]["cells"] if c["index"] == 8)
        ref.update(ok=False, error="NameError: both")
    (tmp_path / "accel.json").write_text(json.dumps(accel))
    (tmp_path / "control.json").write_text(json.dumps(control))
    plan = json.loads((config.build / "platforms" / "plan.json").read_text())
    report = platforms.build_report(config, plan, tmp_path / "accel.json", tmp_path / "control.json")
    assert report["chip"] == "tpu-v5e"
    entry = report["chapters"]["demo/01_demo"]
    assert entry["platform_cells"] == ["cell 4: ValueError: only on the chip"]
    assert entry["stack_cells"] == ["cell 9: NameError: both"]
    assert [x.split(":")[0] for x in entry["platform_alternatives"]] == ["double alternative answer 1 (adds x to itself)"]
    assert len(entry["platform_wrong_passing"]) == 1 and entry["platform_wrong_passing"][0].startswith("square wrong answer")
    assert entry["platform_references"] == [] and entry["platform_stub"] == []
    t = platforms.totals(report)
    assert (t["platform_cells"], t["platform_alternatives"], t["platform_wrong_passing"], t["stack_cells"]) == (1, 1, 1, 1)
    js, md = platforms.write_report(config, report)
    text = md.read_text()
    assert "| cells that raise | 1 |" in text and "ValueError: only on the chip" in text and "NameError: both" in text
    (printed,) = entry["printed_differently"]
    assert printed == f"cell {printing['index']}, line 1: accelerator 'measured 41.99', CPU 'measured 42'"
    assert printed in text and t["printed_differently"] == 1


def test_stamp_writes_the_recorded_output_and_check_sees_changes(tmp_path):
    config = _course(tmp_path)
    run = _run(config, tmp_path / "run.json")
    run["chapters"][0]["platform"] = {"device_kind": "TPU v5 lite", "jax": "0.10.2"}
    (tmp_path / "run.json").write_text(json.dumps(run))
    plan = json.loads((config.build / "platforms" / "plan.json").read_text())
    report = platforms.build_report(config, plan, tmp_path / "run.json", tmp_path / "run.json")
    assert platforms.check(config, report) == []
    assert platforms.stamps_in_step(config, report) == ["demo/01_demo: cell 5"]  # not yet written into the cell
    assert platforms.stamp(config, report) == ["demo/01_demo"]
    import nbformat

    src = nbformat.read(config.root / "source" / "demo" / "01_demo.ipynb", as_version=4).cells[4].source
    assert 'TPU_RECORDED = """measured 42\n(measured on TPU v5 lite, jax 0.10.2, ' in src, src
    assert platforms.stamps_in_step(config, report) == []
    assert platforms.check(config, report) == [], "stamping what the run printed does not make the run stale"
    assert platforms.stamp(config, report) == [], "a second stamp changes nothing"
    path = config.root / "source" / "demo" / "01_demo.ipynb"
    path.write_text(path.read_text().replace("print(math.sqrt(4.0))", "print(math.sqrt(9.0))"))
    assert platforms.check(config, report) == ["demo/01_demo"]
    variants = config.root / "variants" / "demo" / "01_demo.toml"
    path.write_text(path.read_text().replace("print(math.sqrt(9.0))", "print(math.sqrt(4.0))"))
    assert platforms.check(config, report) == []
    variants.write_text(variants.read_text() + "\n# a comment\n")
    assert platforms.check(config, report) == ["demo/01_demo"], "the proof ran the variants too"


def test_a_chapter_that_kills_its_process_is_reported_not_lost(tmp_path):
    cells = good_cells()
    cells.insert(4, code("import os\nos._exit(3)"))
    config = Config.load(make_course(tmp_path / "course", cells=cells))
    run = _run(config, tmp_path / "run.json")
    (chapter,) = run["chapters"]
    assert chapter["crash"] == "the chapter's process ended with 3"
    plan = json.loads((config.build / "platforms" / "plan.json").read_text())
    assert platforms.judge(plan["chapters"][0], chapter).crash.startswith("the run crashed")


REPORTS = sorted((ROOT / "reports" / "platforms").glob("*.json"))


@pytest.mark.parametrize("path", REPORTS, ids=[p.stem for p in REPORTS])
def test_committed_platform_reports_are_current(path):
    """A chapter edited since its accelerator run must be run there again (`jaxpath platform plan CHAPTER`), and
    the chapters' platform-output cells show exactly what that run printed."""
    config = Config.load(ROOT)
    report = json.loads(path.read_text())
    stale = platforms.check(config, report)
    assert not stale, f"{path.name}: changed since their run on {report['chip']}: {stale}"
    assert platforms.stamps_in_step(config, report) == [], "run `jaxpath platform stamp`"


def test_the_tpu_report_exists():
    assert (ROOT / "reports" / "platforms" / "tpu-v5e.json").exists(), "the course's run on a TPU v5e is committed"
