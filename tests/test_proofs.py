"""Committed proofs (jaxpath.authoring.proofs): what their key covers, that the committed ones are current, that a
stale one names the input that changed, and that `jaxpath build` proves again exactly the chapters whose proof is
stale (the others run reference-only)."""
import json
import shutil

import grimp
import nbformat
import pytest
from conftest import ROOT
from course_factory import VARIANTS, make_course

from jaxpath import Config, load_manifest
from jaxpath.authoring import proofs
from jaxpath.authoring.proofs import (
    checking_code,
    proof_inputs,
    proof_key,
    proof_path,
    proof_state,
    proof_text,
    read_proof,
    write_proof,
)
from jaxpath.cli import main

CHAPTERS = [c.id for c in load_manifest(Config.load(ROOT)).written()]


def test_committed_proofs_are_current(real_config):
    """Every chapter has a committed proof whose key matches the chapter as it is: after changing a chapter, its
    variants, its manifest entry, the lock or the checking code, run `jaxpath validate CHAPTER` and commit proofs/."""
    stale = [f"{s.chapter}: {'; '.join(s.changed)}" for s in map(lambda c: proof_state(real_config, c), CHAPTERS)
             if not s.current]
    assert not stale, "stale proofs (run `jaxpath validate` on them and commit proofs/):\n" + "\n".join(stale)


@pytest.mark.parametrize("chapter", CHAPTERS[:1] + CHAPTERS[-1:])
def test_a_committed_proof_is_written_as_proving_again_would_write_it(real_config, chapter):
    text = proof_path(real_config, chapter).read_text(encoding="utf-8")
    proof = json.loads(text)
    assert proof_text(proof) == text  # sorted keys, one indentation, a final newline
    assert proof["chapter"] == chapter and proof["every_wrong"] is True
    assert proof["inputs"] == proof_inputs(real_config, chapter) and proof["key"] == proof_key(proof["inputs"])
    assert proof["mistakes"] and all({"exercise", "number", "failed", "hint", "why"} <= set(m) for m in proof["mistakes"])


def test_the_checking_code_is_the_import_closure_of_validate_and_its_kernel_modules():
    """The key's code is what import-linter's graph (grimp) sees validate import, their packages' __init__.py, and the
    kernel modules sent by name; nothing of the classroom, the learner's side, the grader or the CLI."""
    graph = grimp.build_graph("jaxpath", cache_dir=None)
    modules, todo = set(), {proofs.ENTRY}
    while todo:  # what it imports, and what the packages above each module import (their __init__.py runs first)
        modules |= todo
        found = set().union(*(graph.find_upstream_modules(m, as_package=False) for m in todo))
        found |= {".".join(m.split(".")[:i]) for m in modules | found for i in range(1, m.count(".") + 1)}
        todo = found - modules
    expected = {proofs._module_file(m) for m in modules}
    expected |= {proofs.PACKAGE / "kernel" / "stamp.py", proofs.PACKAGE / "kernel" / "requirements.py"}
    assert set(checking_code()) == expected
    rel = [p.relative_to(proofs.PACKAGE).as_posix() for p in checking_code()]
    assert not [r for r in rel if r.split("/")[0] in {"classroom", "learner", "grade", "cli", "templates"}], rel
    assert {"authoring/validate.py", "authoring/chapter.py", "execute.py", "kernel/stamp.py"} <= set(rel)
    assert "kernel/integrity.py" not in rel  # the grader's, never sent by validate


@pytest.fixture
def proven(tmp_path):
    """A fixture course with a proof written as validate writes it (no kernel: the mistakes are made up)."""
    root = make_course(tmp_path / "c")
    config = Config.load(root)
    inputs = proof_inputs(config, "demo/01_demo")
    write_proof(config, "demo/01_demo", {"chapter": "demo/01_demo", "key": proof_key(inputs), "inputs": inputs,
                                         "exercises": 3, "variants": 6, "mistakes": [], "every_wrong": True})
    assert proof_state(config, "demo/01_demo").current
    return config


def test_a_stale_proof_names_the_input_that_changed(proven, monkeypatch, tmp_path):
    root, cid = proven.root, "demo/01_demo"
    (root / "variants/demo/01_demo.toml").write_text(VARIANTS + "\n# a comment\n")
    assert proof_state(proven, cid).changed == ["the variants (variants/demo/01_demo.toml)"]
    nb = nbformat.read(root / "source/demo/01_demo.ipynb", as_version=4)
    nb.cells[3].source += "\n"
    nbformat.write(nb, root / "source/demo/01_demo.ipynb")
    (root / "requirements.txt").write_text("jax==0.12.0\n")
    assert proof_state(proven, cid).changed == ["the notebook (source/demo/01_demo.ipynb)",
                                                "the variants (variants/demo/01_demo.toml)", "requirements.txt"]
    extra = tmp_path / "extra.py"
    extra.write_text("x = 1\n")
    monkeypatch.setattr(proofs, "checking_code", lambda: (extra,))
    changed = proof_state(proven, cid).changed
    assert f"{extra} (new)" in changed and "jaxpath/authoring/validate.py (gone)" in changed


def test_what_the_key_leaves_out_keeps_a_proof_current(proven):
    root, cid = proven.root, "demo/01_demo"
    text = (root / "course.toml").read_text()
    (root / "course.toml").write_text(text.replace('title = "Later"', 'title = "Much later"')  # another chapter
                                      + '\n[grading]\ncell_timeout = 30\n')  # not read by validate
    assert proof_state(proven, cid).current
    (root / "course.toml").write_text(text.replace('title = "Demo"', 'title = "Demo, renamed"'))  # its own entry
    assert proof_state(proven, cid).changed == ["the manifest's [validate] or the chapter's entry (course.toml)"]
    assert read_proof(proven, cid)["exercises"] == 3


def test_validate_check_names_each_stale_proof(proven, capsys):
    root = str(proven.root)
    assert main(["--root", root, "validate", "--check"]) == 0
    assert "proofs are current (1 chapters)" in capsys.readouterr().out
    (proven.root / "variants/demo/01_demo.toml").write_text(VARIANTS + "\n# a comment\n")
    assert main(["--root", root, "validate", "--check"]) == 1
    out = capsys.readouterr().out
    assert "demo/01_demo: proof stale: the variants (variants/demo/01_demo.toml)" in out
    assert "run `jaxpath validate demo/01_demo` and commit proofs/" in out
    proof_path(proven, "demo/01_demo").unlink()
    assert main(["--root", root, "validate", "--check"]) == 1
    assert "demo/01_demo: no proof" in capsys.readouterr().out


# ---- `jaxpath build` on a fixture course of two chapters (kernels) ---------------------------------------------
TRIAL_LOG = "trials.log"
LOGGING_WRONG = '''
[[double.wrong]]
why = "adds three, and logs that it ran"
code = """
open("../../trials.log", "a").write("ran\\\\n")
def double(x):
    return x + 3
"""
'''


def two_chapters(tmp_path):
    """demo/01_demo and demo/02_later, each with a wrong answer that appends to trials.log (at the course's root, out
    of what is released) when it runs."""
    root = make_course(tmp_path / "c", variants=VARIANTS.replace("\n[square]", LOGGING_WRONG + "\n[square]"))
    (root / "course.toml").write_text((root / "course.toml").read_text().replace("planned = true\n", ""))
    shutil.copy(root / "source/demo/01_demo.ipynb", root / "source/demo/02_later.ipynb")
    shutil.copy(root / "variants/demo/01_demo.toml", root / "variants/demo/02_later.toml")
    return Config.load(root)


def proved(config) -> dict:
    return {c["chapter"]: c["proof"] for c in json.loads((config.build / "build.json").read_text())["chapters"]}


@pytest.mark.slow
def test_build_proves_again_only_the_chapter_that_changed(tmp_path, monkeypatch):
    from jaxpath.authoring.build import build

    config = two_chapters(tmp_path)
    log = config.root / TRIAL_LOG
    first = build(config)
    assert first.ok and proved(config) == {"demo/01_demo": "proved", "demo/02_later": "proved"}
    assert log.read_text() == "ran\n" * 2
    written = {c: proof_path(config, c).read_bytes() for c in ("demo/01_demo", "demo/02_later")}
    assert all(proof_state(config, c).current for c in written)

    # the second chapter changes: it is proven again (its trials run, its proof is rewritten), the first reused
    nb = nbformat.read(config.source / "demo/02_later.ipynb", as_version=4)
    nb.cells[7].source = "print('optional, changed')"
    nbformat.write(nb, config.source / "demo/02_later.ipynb")
    log.unlink()
    second = build(config)
    assert second.ok and proved(config) == {"demo/01_demo": "reused", "demo/02_later": "proved"}
    assert log.read_text() == "ran\n"  # one chapter's wrong answer ran, not the reused one's
    assert proof_path(config, "demo/01_demo").read_bytes() == written["demo/01_demo"]
    assert proof_path(config, "demo/02_later").read_bytes() != written["demo/02_later"]
    assert json.loads(proof_path(config, "demo/02_later").read_text())["mistakes"] == \
        json.loads(written["demo/02_later"])["mistakes"]
    assert all((config.executed / f"{c}.ipynb").exists() for c in written)  # reused chapters are executed too
    reused = nbformat.read(config.executed / "demo/01_demo.ipynb", as_version=4)
    assert any("2.0" in o.get("text", "") for c in reused.cells if c.cell_type == "code" for o in c.outputs)

    # nothing changed: both reused
    log.unlink()
    again = build(config)
    assert proved(config) == {"demo/01_demo": "reused", "demo/02_later": "reused"} and not log.exists()
    assert again.ok

    # a change to the checking code makes every proof stale
    extra = tmp_path / "checking.py"
    extra.write_text("CHANGED = True\n")
    code = checking_code()
    monkeypatch.setattr(proofs, "checking_code", lambda: code + (extra,))
    assert all(proof_state(config, c).changed == [f"{extra} (new)"] for c in written)
    third = build(config)
    assert third.ok and proved(config) == {"demo/01_demo": "proved", "demo/02_later": "proved"}
    assert log.read_text() == "ran\n" * 2


@pytest.mark.slow
def test_validate_always_proves_and_writes_the_same_bytes(tmp_path):
    from jaxpath.authoring.validate import validate

    config = two_chapters(tmp_path)
    _, first = validate(config, ["demo/01_demo"])
    text = proof_path(config, "demo/01_demo").read_bytes()
    _, second = validate(config, ["demo/01_demo"])
    assert first[0].ok and second[0].ok and not second[0].reused and second[0].proof is not None
    assert proof_path(config, "demo/01_demo").read_bytes() == text
    assert (config.root / TRIAL_LOG).read_text() == "ran\n" * 2


@pytest.mark.slow
def test_reference_only_still_checks_the_reference_and_the_intended_errors(tmp_path):
    from jaxpath.authoring.chapter import load_chapter
    from jaxpath.authoring.validate import run_chapter

    root = make_course(tmp_path / "c")
    nb = nbformat.read(root / "source/demo/01_demo.ipynb", as_version=4)
    nb.cells[5].source = "1 / 1"  # tagged raises-exception
    nb.cells[13].source = nb.cells[13].source.replace("return x * x", "return x + x")
    nbformat.write(nb, root / "source/demo/01_demo.ipynb")
    config = Config.load(root)
    ch = load_chapter(root / "source/demo/01_demo.ipynb", "demo/01_demo", root, root / "variants/demo/01_demo.toml")
    problems, _ = run_chapter(ch, config, prove=False)
    text = [str(p) for p in problems]
    assert any("cell 6: tagged raises-exception but raised nothing" in p for p in text), text
    assert any("the test fails on the reference solution: AssertionError: square(3) should be 9" in p for p in text)
    assert not any("wrong answer" in p or "stub" in p for p in text)


def test_the_manual_lists_the_checking_code():
    """docs/author.md says exactly what the key covers: its list of the checking code is checking_code()."""
    import re

    row = next(line for line in (ROOT / "docs/author.md").read_text(encoding="utf-8").splitlines()
               if line.startswith("| `jaxpath/….py` |"))
    listed = re.findall(r"`(jaxpath/[\w/]+\.py)`", row.split("Today", 1)[1])
    assert listed == [p.relative_to(proofs.PACKAGE.parent).as_posix() for p in checking_code()]


def test_a_proof_records_messages_without_what_differs_between_runs():
    """An object's address or a temporary file's name in a check's message differs from one run to the next: the proof
    records the message without them, and a learner's message is compared with it the same way."""
    from jaxpath.authoring.requirements import Mistake, Outcome, stable

    run1 = "refused (argument to <function <lambda> at 0x7eff1ec204a0> as an array); No steps found in /tmp/ck_gb8ww5x0.: none"
    run2 = "refused (argument to <function <lambda> at 0x7fca512d7ba0> as an array); No steps found in /tmp/ck_q1w2e3r4.: none"
    assert stable(run1) == stable(run2) == ("refused (argument to <function <lambda> at 0x…> as an array); "
                                            "No steps found in <tmpdir>.: none")
    assert stable("0x10 + 0xff = 271, 2.5 s") == "0x10 + 0xff = 271, 2.5 s"
    recorded = Mistake("f", 1, {"R2": stable(run1)}, "a hint")
    assert recorded.matches([Outcome("R1", "✓", 1.0, ""), Outcome("R2", "✗", 1.0, run2)])
    assert not recorded.matches([Outcome("R2", "✗", 1.0, "another message")])
