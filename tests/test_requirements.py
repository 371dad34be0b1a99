"""Requirement lists: kept once in the variants file, shown in the statement, each broken by a wrong answer that
a check naming it catches (`jaxpath validate`), and the committed coverage table current."""
import re
from pathlib import Path

import pytest
from course_factory import VARIANTS, good_cells, make_course

from jaxpath import Config
from jaxpath.authoring.chapter import load_chapter
from jaxpath.authoring.requirements import render_block, write_requirements
from jaxpath.authoring.validate import validate_one
from jaxpath.manifest import load_manifest, notebook_path, variants_path

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
    from jaxpath.authoring.requirements import check_requirements
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
    from jaxpath.authoring.chapter import Exercise
    e = Exercise("f", 1, "f", 0, [0], 1, [], requirements={"R1": "returns x"}, left_open=["the dtype"])
    assert render_block(e).splitlines()[2:] == [
        "**Requirements** (the tests check each one and name it when it fails):", "", "- **R1** returns x", "",
        "**Left open** (every choice here passes):", "", "- the dtype", "", "<!-- /requirements -->"]


def test_a_course_that_requires_lists_refuses_an_exercise_without_one(tmp_path):
    """`[validate] require_requirements = true` in the manifest (this course sets it): an exercise with no list
    is a problem naming the exercise and what to add; a course that does not set it is not held to it."""
    from jaxpath.authoring.requirements import check_requirements
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


# -- partial credit per requirement ------------------------------------------------------------------------

BLOCKS = ("# 🧪 Self-check\nwith check('R1'):\n    assert double(3) == 6, 'double(3) should be 6'\n"
          "### BEGIN HIDDEN TESTS\nwith check('R2'):\n    assert double(-1.5) == -3.0, 'negative floats too'\n"
          "### END HIDDEN TESTS")
POINTS = "[double.points]\nR1 = 1.5\nR2 = 0.5\n"
MORE_WRONG = '''
[[double.wrong]]
why = "absolute value"
breaks = "R2"
hint = "Your answer loses the sign: a negative number doubled stays negative."
code = """
def double(x):
    return 2 * abs(x)
"""
[[double.wrong]]
why = "triples positive numbers"
breaks = "R1"
code = """
def double(x):
    return 2 * x if x < 0 else 3 * x
"""
'''


def _blocks(cells):
    cells[11].source = BLOCKS
    return cells


def test_the_helper_prints_a_line_per_requirement_and_scores_under_autograde(monkeypatch, capsys):
    """The kernel-side helper (run here as a module): a failing block fails its requirement and the cell goes on;
    the lines it prints are what jaxpath.authoring.requirements parses; the score is returned only under autograde."""
    from jaxpath.authoring.requirements import parse_outcomes
    from jaxpath.kernel.requirements import Requirements

    def run():
        check = Requirements("double", {"R1": 1.5, "R2": 0.25, "R3": 0.25})
        with check("R1"):
            assert True
        with check("R2"):
            raise ValueError("boom\nsecond line")
        with check("R2"):
            assert False, "R2: a later failure of the same requirement"
        return check.score()

    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert run() == 1.5
    lines = parse_outcomes(capsys.readouterr().out)
    assert [(o.rid, o.mark, o.points, o.message) for o in lines] == [
        ("R1", "✓", 1.5, ""), ("R2", "✗", 0.25, "raised ValueError: boom"),
        ("R3", "·", 0.25, "checked when your notebook is graded")]
    assert Requirements.last["failed"] == {"R2": "raised ValueError: boom"}
    monkeypatch.delenv("NBGRADER_EXECUTION")
    with pytest.raises(AssertionError, match="double: R2 failed"):
        run()
    check = Requirements("double", {"R1": 2})
    with pytest.raises(KeyboardInterrupt):  # an interrupt (the grader's timeout) is never swallowed
        with check("R1"):
            raise KeyboardInterrupt
    with pytest.raises(KeyError, match="no requirement 'R9'"):
        check("R9")


def test_points_are_rendered_and_checked_statically(tmp_path):
    variants = REQS + POINTS + TAGGED.replace("[double]\n", "", 1) + MORE_WRONG
    root, cfg = _course(tmp_path, variants, _blocks(good_cells()))
    write_requirements(cfg)
    ch, problems = _static(cfg)
    assert problems == [], problems
    helper = [c for c in ch.nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "requirements-helper"]
    assert len(helper) == 1 and ch.nb.cells.index(helper[0]) == 2 and helper[0].metadata["nbgrader"]["locked"]
    test = ch.nb.cells[ch.exercises[0].tests[0]].source
    assert test.splitlines()[1] == 'check = Requirements("double", {"R1": 1.5, "R2": 0.5})'
    assert test.splitlines()[-1] == "check.score()"
    assert "- **R1** (1.5 points) returns twice `x`" in ch.nb.cells[ch.exercises[0].statement[-1]].source
    vp = root / "variants/demo/01_demo.toml"
    vp.write_text(vp.read_text().replace("R2 = 0.5\n", "R2 = 0.3\n"))
    _, problems = _static(cfg)
    joined = "\n".join(problems)
    assert "the points of R2 are not positive multiples of 0.25" in joined
    assert "sum to 1.8, but the test cell is worth 2 points" in joined
    assert "differs from [double.points]" in joined  # the cell's first line no longer says what the file says


@pytest.mark.slow
def test_validate_proves_each_wrong_answer_loses_exactly_the_points_it_breaks(tmp_path):
    # wrong 1 (x + 2) fails both blocks (5 != 6, 0.5 != -3) but claims to break R1 only: refused
    variants = REQS + POINTS + TAGGED.replace("[double]\n", "", 1) + MORE_WRONG
    root, cfg = _course(tmp_path, variants, _blocks(good_cells()))
    write_requirements(cfg)
    problems = [str(p) for p in validate_one(cfg, "demo/01_demo").problems]
    assert any("wrong answer 1 (adds two) should lose exactly R1 (0.5 of 2 points) but gets 0 of 2 points: "
               "R1 failed: 'double(3) should be 6'; R2 failed: 'negative floats too'" in p for p in problems), problems
    vp = root / "variants/demo/01_demo.toml"
    vp.write_text(vp.read_text().replace('breaks = "R1"\ncode = """\ndef double(x):\n    return x',
                                         'breaks = ["R1", "R2"]\ncode = """\ndef double(x):\n    return x'))
    problems = [str(p) for p in validate_one(cfg, "demo/01_demo").problems]
    assert problems == [], problems
    from jaxpath.authoring.requirements import known_mistakes

    mistakes = known_mistakes(cfg, "demo/01_demo")["double"]
    assert [(m.number, m.failed) for m in mistakes] == [(3, {"R2": "negative floats too"})]
    assert mistakes[0].hint.startswith("Your answer loses the sign")
