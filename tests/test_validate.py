"""`jaxpath validate` on small fixture chapters: each failure it promises to catch, with a clear message."""
import platform

import nbformat
import pytest
from course_factory import VARIANTS, code, good_cells, make_course

from jaxpath import Config
from jaxpath.authoring.validate import validate, validate_one
from jaxpath.cli import main

pytestmark = pytest.mark.slow
NB = "source/demo/01_demo.ipynb"


def run(tmp_path, cells=None, variants=VARIANTS):
    root = make_course(tmp_path / "c", cells, variants)
    return root, [str(p) for p in validate_one(Config.load(root), "demo/01_demo").problems]


def test_good_chapter_passes_and_is_executed_once(tmp_path):
    cells = good_cells()
    # A main-text cell that records every time it runs: variants must not re-run the chapter.
    cells.insert(2, code("with open('runs.log', 'a') as f:\n    f.write('ran\\n')"))
    root, problems = run(tmp_path, cells)
    assert problems == []
    assert (root / "source/demo/runs.log").read_text() == "ran\n"
    executed = nbformat.read(root / "build/executed/demo/01_demo.ipynb", as_version=4)
    assert executed.metadata["jaxpath"]["executed"]["python"].startswith("3.")
    assert "Executed with" in executed.cells[0].source
    # the stamp names the OS, not the build host's kernel release
    assert platform.release() not in executed.cells[0].source and platform.system() in executed.cells[0].source
    outputs = [o for c in executed.cells if c.cell_type == "code" for o in c.outputs]
    assert any("2.0" in o.get("text", "") for o in outputs)


def test_test_that_passes_on_the_stub(tmp_path):
    cells = good_cells()
    # A self-check that only checks that the name exists: it passes on the untouched stub.
    cells[17].source = "# 🧪 Self-check\nassert callable(halve)\n### BEGIN HIDDEN TESTS\n### END HIDDEN TESTS"
    _, problems = run(tmp_path, cells)
    assert any(p.startswith(f"{NB}, cell 18 (exercise `halve`, self-check halve-check): this test cell passes on "
                            "the stub") for p in problems), problems


def test_visible_self_check_that_passes_on_the_stub(tmp_path):
    cells = good_cells()
    cells[17].source = ("# 🧪 Self-check\nassert callable(halve)\n### BEGIN HIDDEN TESTS\n"
                        "assert halve(3) == 1.5\nassert isinstance(halve(4), float)\n### END HIDDEN TESTS")
    _, problems = run(tmp_path, cells)
    assert any("cell 18" in p and "the visible self-check passes on the stub" in p for p in problems), problems


def test_wrong_answer_that_passes(tmp_path):
    # A test too weak to catch 'x + 2' or 'x ** 2': at x = 2 all three give 4.
    cells = good_cells()
    cells[11].source = ("# 🧪 Self-check\nassert double(2) == 4, 'double(2) should be 4'\n"
                        "### BEGIN HIDDEN TESTS\n### END HIDDEN TESTS")
    _, problems = run(tmp_path, cells)
    assert any(p.startswith(f"{NB}, cell 11 (exercise `double`): wrong answer 1 (adds two) passes every test")
               for p in problems), problems
    assert any("wrong answer 2 (squares) passes every test" in p for p in problems)
    assert not any("exercise `square`" in p for p in problems)


def test_alternative_that_fails(tmp_path):
    variants = VARIANTS.replace("return x * 0.5", "return x * 0.5 + 1")
    _, problems = run(tmp_path, variants=variants)
    assert any("cell 18 (exercise `halve`, self-check halve-check): alternative answer 1 (multiply by one half) is "
               "correct but fails this test: AssertionError: halve(3) should be 1.5" in p for p in problems), problems


def test_reference_that_fails_its_test(tmp_path):
    cells = good_cells()
    cells[13].source = cells[13].source.replace("return x * x", "return x + x")
    _, problems = run(tmp_path, cells)
    assert any("cell 15 (exercise `square`, self-check square-check): the test fails on the reference solution: "
               "AssertionError: square(3) should be 9" in p for p in problems), problems


def test_erroring_cell(tmp_path):
    cells = good_cells()
    cells[3].source = "print(undefined_name)"
    _, problems = run(tmp_path, cells)
    assert any(p.startswith(f"{NB}, cell 4: raised NameError: name 'undefined_name' is not defined")
               for p in problems), problems


def test_intended_error_that_does_not_raise(tmp_path):
    cells = good_cells()
    cells[5].source = "1 / 1"
    _, problems = run(tmp_path, cells)
    assert any(f"{NB}, cell 6: tagged raises-exception but raised nothing" in p for p in problems), problems


def test_kernel_death_is_reported(tmp_path):
    cells = good_cells()
    cells[3].source = "import os\nos._exit(3)"
    _, problems = run(tmp_path, cells)
    assert any("cell 4: the kernel died" in p for p in problems), problems


def test_failed_chapter_leaves_no_executed_copy(tmp_path):
    cells = good_cells()
    cells[3].source = "raise RuntimeError('boom')"
    root, _ = run(tmp_path, cells)
    assert not (root / "build/executed/demo/01_demo.ipynb").exists()


def test_cli_exit_codes_and_messages(tmp_path, capsys):
    root = make_course(tmp_path / "c")
    assert main(["--root", str(root), "validate"]) == 0
    (root / NB).write_text("{ not json")
    assert main(["--root", str(root), "validate"]) == 1
    out = capsys.readouterr().out
    assert f"{NB}: not valid JSON" in out
    assert main(["--root", str(root), "validate", "nope"]) == 2
    assert "no chapter 'nope'" in capsys.readouterr().out


def test_parallel_validation_reports_every_chapter(tmp_path):
    root = make_course(tmp_path / "c")
    text = (root / "course.toml").read_text().replace('planned = true\n', '')
    (root / "course.toml").write_text(text)
    import shutil
    shutil.copy(root / NB, root / "source/demo/02_later.ipynb")
    shutil.copy(root / "variants/demo/01_demo.toml", root / "variants/demo/02_later.toml")
    course_problems, reports = validate(Config.load(root), jobs=2)
    assert course_problems == []
    assert [r.id for r in reports] == ["demo/01_demo", "demo/02_later"]
    assert all(r.ok for r in reports)


def test_a_proof_is_reused_only_for_exactly_what_it_proved(tmp_path):
    root = make_course(tmp_path / "c")
    config = Config.load(root)
    first = validate_one(config, "demo/01_demo")
    assert first.ok and not first.reused and first.proof == root / "proofs/demo/01_demo.json"
    again = validate_one(config, "demo/01_demo", reuse=True)  # reference-only: executed, the proof kept
    assert again.ok and again.reused and again.proof is None and again.exercises == first.exercises
    assert again.executed.exists()
    assert not validate_one(config, "demo/01_demo").reused  # without reuse it proves
    # a change to the variants (or the notebook, the manifest entry, the checking code, the lock) invalidates it
    (root / "variants/demo/01_demo.toml").write_text(VARIANTS + "\n# a comment\n")
    assert not validate_one(config, "demo/01_demo", reuse=True).reused
    # a failing chapter writes no proof: the one there stays, stale, and is not reused
    nb = nbformat.read(root / NB, as_version=4)
    nb.cells[3].source = "raise ValueError('broken')"
    nbformat.write(nb, root / NB)
    before = (root / "proofs/demo/01_demo.json").read_bytes()
    failed = validate_one(config, "demo/01_demo")
    assert not failed.ok and failed.proof is None
    assert (root / "proofs/demo/01_demo.json").read_bytes() == before
    assert not validate_one(config, "demo/01_demo", reuse=True).reused
