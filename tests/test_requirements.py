"""Requirement lists: kept once in the variants file, shown in the statement, each broken by a wrong answer that
a check naming it catches (`jaxpath validate`), and the committed coverage table current."""
import re
from pathlib import Path

import pytest
from course_factory import VARIANTS, good_cells, make_course

from jaxpath import Config
from jaxpath.chapter import load_chapter
from jaxpath.manifest import load_manifest, notebook_path, variants_path
from jaxpath.requirements import render_block, write_requirements
from jaxpath.validate import validate_one

ROOT = Path(__file__).resolve().parents[1]
NB = "source/demo/01_demo.ipynb"
REQS = '''
[double]
left_open = ["whether the result is an int or a float for an int x"]
[double.requirements]
R1 = "returns twice `x` for positive x"
R2 = "works for negative x too"
'''
# double: wrong 1 (x + 2) and wrong 2 (x ** 2) both fail the visible check on x = 3.
TAGGED = VARIANTS.replace('why = "adds two"', 'why = "adds two"\nbreaks = "R1"').replace(
    'why = "squares"', 'why = "squares"\nbreaks = "R1"')


def _course(tmp_path, variants, cells=None):
    root = make_course(tmp_path / "c", cells, variants)
    cfg = Config.load(root)
    return root, cfg


def _static(cfg):
    ch = load_chapter(notebook_path(cfg, "demo/01_demo"), "demo/01_demo", cfg.root,
                      variants_path(cfg, "demo/01_demo"))
    from jaxpath.chapter import check_requirements
    return ch, [str(p) for p in ch.problems + check_requirements(ch, required=False)]


def _tag_checks(cells):
    cells[11].source = cells[11].source.replace("'double(3) should be 6'", "'R1: double(3) should be 6'").replace(
        "'negative floats too'", "'R2: negative floats too'")
    return cells


def test_statement_shows_the_list_and_is_refused_when_stale(tmp_path):
    root, cfg = _course(tmp_path, REQS + TAGGED.replace("[double]\n", "", 1), _tag_checks(good_cells()))
    _, problems = _static(cfg)
    assert any(f"{NB}, cell 10 (exercise `double`): the requirement list is missing from the statement" in p
               for p in problems), problems
    r = write_requirements(cfg)
    assert r.stale_statements == ["demo/01_demo"]
    ch, problems = _static(cfg)
    text = ch.nb.cells[9].source
    assert "- **R1** returns twice `x` for positive x" in text and "- whether the result is an int" in text
    assert text.count("<!-- /requirements -->") == 1
    # R2 is named by a check, but no wrong answer breaks it
    assert any("R2 (works for negative x too) is broken by no wrong answer" in p for p in problems), problems
    assert not any("missing from the statement" in p or "differs from" in p for p in problems)
    # writing again changes nothing; editing the file makes the statement stale
    assert write_requirements(cfg).stale_statements == []
    vp = root / "variants/demo/01_demo.toml"
    vp.write_text(vp.read_text().replace("for positive x", "for every positive x"))
    _, problems = _static(cfg)
    assert any("the requirement list differs from [double.requirements]" in p for p in problems), problems
    assert write_requirements(cfg, check=True).stale_statements == ["demo/01_demo"]


def test_static_checks_name_what_is_missing(tmp_path):
    variants = REQS + VARIANTS.replace("[double]\n", "", 1).replace('why = "squares"', 'why = "squares"\nbreaks = "R7"')
    root, cfg = _course(tmp_path, variants)
    write_requirements(cfg)
    _, problems = _static(cfg)
    joined = "\n".join(problems)
    assert "wrong answer 1 (adds two) says no requirement it breaks" in joined
    assert "wrong answer 2 (squares) breaks 'R7', which is not one of the exercise's requirements (R1, R2)" in joined
    assert "R1 is named by no check in the exercise's tests" in joined
    vp = root / "variants/demo/01_demo.toml"
    vp.write_text(vp.read_text().replace("[double.requirements]\nR1", "[double.requirements]\nR3"))
    _, problems = _static(cfg)
    assert any("must be numbered R1, R2, ... in order (found R3, R2)" in p for p in problems), problems


@pytest.mark.slow
def test_validate_proves_each_wrong_answer_fails_the_check_of_what_it_breaks(tmp_path):
    # wrong 1 (x + 2) claims to break R2, but it fails the R1 check: refused, with what it failed on
    variants = REQS + TAGGED.replace("[double]\n", "", 1).replace('why = "adds two"\nbreaks = "R1"',
                                                                  'why = "adds two"\nbreaks = "R2"')
    variants = variants.replace('why = "squares"\nbreaks = "R1"', 'why = "squares"\nbreaks = ["R1", "R2"]')
    root, cfg = _course(tmp_path, variants, _tag_checks(good_cells()))
    write_requirements(cfg)
    problems = [str(p) for p in validate_one(cfg, "demo/01_demo").problems]
    assert any("wrong answer 1 (adds two) breaks R2, but no check naming it caught the answer: it failed with "
               "'AssertionError: R1: double(3) should be 6'" in p for p in problems), problems
    assert any("R2 (works for negative x too): none of the wrong answers that break it (#1, #2) was caught"
               in p for p in problems), problems
    # a wrong answer that breaks only R2 (right for positive x, wrong for negative x) proves R2's check
    vp = root / "variants/demo/01_demo.toml"
    vp.write_text(vp.read_text().replace('why = "adds two"\nbreaks = "R2"', 'why = "adds two"\nbreaks = "R1"')
                  + '\n[[double.wrong]]\nwhy = "absolute value"\nbreaks = "R2"\ncode = """\ndef double(x):\n'
                    '    return 2 * abs(x)\n"""\n')
    problems = [str(p) for p in validate_one(cfg, "demo/01_demo").problems]
    assert problems == []


def test_the_course_requirements_are_current():
    """Every statement shows its variants file's list and REQUIREMENTS.md is the table of today's files."""
    r = write_requirements(Config.load("."), check=True)
    assert r.stale_statements == [], "run `jaxpath requirements`"
    assert r.table_current, "REQUIREMENTS.md is stale: run `jaxpath requirements`"


PRIVATE = [
    (re.compile(r"\bjax\._src\b|from jax import _src|jax\.(?:_[a-z]\w*)"), "JAX's private modules"),
    (re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\([^()]*\))?\.(_[A-Za-z0-9]\w*)\b(?!__)"), "an underscored attribute"),
    (re.compile(r"getattr\([^,]+,\s*['\"]_[A-Za-z]"), "an underscored attribute through getattr"),
    (re.compile(r"\b(?:BatchTracer|JVPTracer|JaxprTracer|DynamicJaxprTracer|LinearizeTracer)\b"),
     "a tracer class name"),
]


def test_no_graded_cell_names_a_private_module_or_attribute():
    """Answer and test cells use public APIs only: a check on jax._src, an underscored attribute or a tracer class
    name breaks on an upgrade for reasons that have nothing to do with the learner."""
    cfg = Config.load(".")
    found = []
    for entry in load_manifest(cfg).written():
        ch = load_chapter(notebook_path(cfg, entry.id), entry.id, cfg.root, variants_path(cfg, entry.id))
        for e in ch.exercises:
            for i in [e.answer, *e.tests]:
                for n, line in enumerate(ch.nb.cells[i].source.splitlines(), start=1):
                    code = line.split("#", 1)[0] if not line.lstrip().startswith(("'", '"')) else line
                    for pattern, what in PRIVATE:
                        m = pattern.search(code)
                        if m and not m.group(0).startswith("self."):
                            found.append(f"{ch.rel}, cell {i + 1}, line {n} ({e.name}): {what}: {line.strip()}")
    assert found == []


def test_render_block_is_stable():
    from jaxpath.chapter import Exercise
    e = Exercise("f", 1, "f", 0, [0], 1, [], requirements={"R1": "returns x"}, left_open=["the dtype"])
    assert render_block(e).splitlines()[2:] == [
        "**Requirements** (the tests check each one and name it when it fails):", "", "- **R1** returns x", "",
        "**Left open** (every choice here passes):", "", "- the dtype", "", "<!-- /requirements -->"]


def test_a_course_that_requires_lists_refuses_an_exercise_without_one(tmp_path):
    """`[validate] require_requirements = true` in the manifest (this course sets it): an exercise with no list
    is a problem naming the exercise and what to add; a course that does not set it is not held to it."""
    from jaxpath.chapter import check_requirements
    from jaxpath.errors import JaxpathError

    root, cfg = _course(tmp_path, VARIANTS)
    assert not cfg.require_requirements
    manifest = root / cfg.manifest_file
    manifest.write_text(manifest.read_text() + "\n[validate]\nrequire_requirements = true\n")
    cfg = Config.load(root)
    assert cfg.require_requirements
    ch = load_chapter(notebook_path(cfg, "demo/01_demo"), "demo/01_demo", cfg.root, variants_path(cfg, "demo/01_demo"))
    problems = [str(p) for p in check_requirements(ch, cfg.require_requirements)]
    assert any("exercise `double`" in p and "has no requirement list: add [double.requirements]" in p for p in problems)
    assert Config.load(ROOT).require_requirements, "this course holds every exercise to its list"
    manifest.write_text(manifest.read_text().replace("= true", '= "yes"'))
    with pytest.raises(JaxpathError, match=r"\[validate\]: require_requirements"):
        Config.load(root)
