"""`jaxpath clusters`: the class's answers grouped by behaviour. On synthetic graded notebooks of the real chapter
basics/01_introduction (no kernel: each test cell's printed requirement lines written here): the behaviour
signature, the grouping, matching the known wrong answers (those without a hint too), the passing answers written
unlike the course, the proposals and their merge, and that no student's code lands anywhere but build/clusters/.
On the graded sample class: its shared mistake is one cluster of two that no known wrong answer matches, `--propose`
turns it into a candidate that `jaxpath validate` accepts once merged, and each page renders in chromium."""
import json
import re
import shutil
import tomllib
from pathlib import Path

import nbformat
import pytest

from jaxpath import Config
from jaxpath.authoring.proofs import proof_path
from jaxpath.authoring.requirements import Outcome, outcome_text, parse_outcomes
from jaxpath.cells import grade_id, solution_source, stub_source
from jaxpath.classroom.clusters import (
    KNOWN,
    LIKE,
    PASSES,
    STOPPED,
    STUB,
    TODO,
    UNKNOWN,
    Behaviour,
    clusters,
    likeness,
    merge_proposals,
    normalised,
    proposals_text,
    with_variants,
)
from jaxpath.cli import main
from jaxpath.errors import JaxpathError

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = "basics/01_introduction"
EXERCISE = "lookup_or_fill"
WEIGHTS = {"R1": 0.75, "R2": 0.5, "R3": 0.25, "R4": 0.25, "R5": 0.25}
M2 = "index -1 is padding and should give fill, but you got the last element (recorded for wrong answer 2)"
M3 = "index -1 gave table[-1] = 7 instead of fill 0 (recorded for wrong answer 3)"
OFF_BY_ONE = "idx 5 is past the end of a table of 5 rows and should give fill 0, but you got 7"
STUB_MESSAGE = "lookup_or_fill raised NotImplementedError: (no message)"

NOVEL = '''def lookup_or_fill(table, idx, fill):
    # novel_marker_zeta: clip, gather, then select
    n = table.shape[0]
    out_of_range = jnp.logical_or(jnp.less(idx, 0), jnp.greater_equal(idx, n))
    gathered = jnp.take(table, jnp.clip(idx, 0, n - 1), axis=0)
    return jax.lax.select(out_of_range, jnp.full_like(gathered, fill), gathered)
'''
NOVEL_RENAMED = '''def lookup_or_fill(table, idx, fill):
    size = table.shape[0]
    bad = jnp.logical_or(jnp.less(idx, 0), jnp.greater_equal(idx, size))   # outside?
    rows = jnp.take(table, jnp.clip(idx, 0, size - 1), axis=0)
    return jax.lax.select(bad, jnp.full_like(rows, fill), rows)
'''
SHARED_A = '''def lookup_or_fill(table, idx, fill):
    # written by shared_one_secret_name, please do not copy
    inside = jnp.logical_and(idx >= 0, idx <= table.shape[0])
    return jnp.where(inside, table[idx], fill).astype(table.dtype)
'''
SHARED_B = '''def lookup_or_fill(table, idx, fill):
    n = len(table)
    bad = (idx < 0) | (idx > n)
    return jnp.where(bad, jnp.asarray(fill, dtype=table.dtype), table[idx])
'''


def _variants() -> dict:
    return tomllib.loads((ROOT / "variants" / f"{CHAPTER}.toml").read_text(encoding="utf-8"))[EXERCISE]


def _outcomes(failed: dict[str, str]) -> list[Outcome]:
    return [Outcome(rid, "✗" if rid in failed else "✓", pts, failed.get(rid, "")) for rid, pts in WEIGHTS.items()]


def _graded(src, answers: dict[str, tuple[str, object]]) -> dict:
    """The source notebook as graded: each exercise's answer cell holds the code given for it (else the reference),
    and its test cell shows what the grader would put there: `result` is {requirement: ✗ message} (the requirement
    lines and the points), ("error", name, value) for a test cell that raised, or ("answer", name) for an answer cell
    that raised (its test cell then printed that nothing is defined)."""
    nb = json.loads(nbformat.writes(src))
    for cell in nb["cells"]:
        gid = grade_id(cell) or ""
        name = gid.removesuffix("-answer").removesuffix("-check")
        code, result = answers.get(name, (None, {}))
        if cell["cell_type"] != "code":
            continue
        cell["execution_count"], cell["outputs"] = 1, []
        if gid.endswith("-answer"):
            cell["source"] = code if code is not None else solution_source("".join(cell["source"]))
            if isinstance(result, tuple) and result[0] == "answer":
                cell["outputs"] = [{"output_type": "error", "ename": result[1], "evalue": "", "traceback": []}]
        elif gid.endswith("-check"):
            if isinstance(result, tuple) and result[0] == "error":
                cell["outputs"] = [{"output_type": "error", "ename": result[1], "evalue": result[2], "traceback": []}]
                continue
            failed = ({rid: f"{name} raised NameError: name '{name}' is not defined" for rid in WEIGHTS}
                      if isinstance(result, tuple) else result)
            weights = WEIGHTS if name == EXERCISE else {"R1": 1.0}
            outcomes = [Outcome(rid, "✗" if rid in failed else "✓", pts, failed.get(rid, ""))
                        for rid, pts in weights.items()]
            text = outcome_text(name, outcomes)
            # as nbformat writes it: a list of lines (the reader must join them)
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": text.splitlines(keepends=True)},
                               {"output_type": "execute_result", "execution_count": 1, "metadata": {},
                                "data": {"text/plain": [f"{sum(o.points for o in outcomes if o.passed):g}"]}}]
    return nb


def make_course(dest: Path) -> tuple[Path, dict[str, str]]:
    """A course with the real chapter, its variants, a validate proof recording wrong answers 2 (with its hint) and 3
    (without one), and a graded class; returns the course and each student's lookup_or_fill code."""
    dest.mkdir(parents=True)
    for name in ("nbgrader_config.py", "course.toml"):
        shutil.copy(ROOT / name, dest / name)
    for kind in ("source", "variants"):
        (dest / kind / "basics").mkdir(parents=True)
    shutil.copy(ROOT / "source" / f"{CHAPTER}.ipynb", dest / "source" / "basics")
    shutil.copy(ROOT / "variants" / f"{CHAPTER}.toml", dest / "variants" / "basics")
    config = Config.load(dest)
    proof = proof_path(config, CHAPTER)
    proof.parent.mkdir(parents=True)
    v = _variants()
    proof.write_text(json.dumps({"key": "test", "every_wrong": True, "mistakes": [
        {"exercise": EXERCISE, "number": 2, "failed": {"R2": M2}, "hint": v["wrong"][1]["hint"], "why": v["wrong"][1]["why"]},
        {"exercise": EXERCISE, "number": 3, "failed": {"R2": M3}, "hint": "", "why": v["wrong"][2]["why"]}]}))
    src = nbformat.read(dest / "source" / f"{CHAPTER}.ipynb", as_version=4)
    reference = solution_source(next(c.source for c in src.cells if grade_id(c) == f"{EXERCISE}-answer"))
    stub = stub_source(next(c.source for c in src.cells if grade_id(c) == f"{EXERCISE}-answer"))
    renamed = reference.replace("valid", "ok_rows") + "    # the same idea, my names\n"
    students = {
        "ada": (reference, {}), "bo": (renamed, {}), "cy": (v["alternative"][0]["code"], {}),
        "dee": (NOVEL, {}), "ed": (NOVEL_RENAMED, {}),
        "fay": (v["wrong"][1]["code"], {"R2": M2}),
        "gus": (v["wrong"][1]["code"].replace("fill_value", "fill_value "), {"R2": M2}),
        "hal": (v["wrong"][2]["code"], {"R2": M3}),
        "ivy": (SHARED_A, {"R1": OFF_BY_ONE}), "jo": (SHARED_B, {"R1": OFF_BY_ONE}),
        "kim": (SHARED_B, {"R1": OFF_BY_ONE.replace("7", "8")}),  # the same requirement, other values: another cluster
        "lu": (stub, {rid: STUB_MESSAGE for rid in WEIGHTS}),
        "mo": (reference, ("error", "NotRun", "not run: the kernel died in cell 40")),
        "ned": ("while True:\n    pass\n", ("answer", "KeyboardInterrupt")),
    }
    for student, (code, result) in students.items():
        d = dest / "autograded" / student / "basics"
        d.mkdir(parents=True)
        (d / "01_introduction.ipynb").write_text(json.dumps(_graded(src, {EXERCISE: (code, result)})), encoding="utf-8")
    return dest, {s: code for s, (code, _) in students.items()}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return make_course(tmp_path_factory.mktemp("clusters") / "course")


@pytest.fixture(scope="module")
def report(course):
    root, _ = course
    return clusters(Config.load(root), "basics", propose=True)


def _exercise(report, name=EXERCISE):
    return next(e for e in report.exercises if e.exercise == name)


def _by_students(ex) -> dict[tuple[str, ...], object]:
    return {tuple(c.students): c for c in ex.clusters}


# ---- signatures and code (units) -----------------------------------------------------------------------
def test_the_printed_lines_round_trip():
    outcomes = _outcomes({"R2": "index -1: got 7, want 0"})
    assert [(o.rid, o.mark, o.message) for o in parse_outcomes(outcome_text(EXERCISE, outcomes))] == \
        [(o.rid, o.mark, o.message) for o in outcomes]


def test_a_behaviour_is_what_the_test_cells_said_and_how_they_ended():
    def cell(failed=None, error=None, answer=None):
        text = outcome_text(EXERCISE, _outcomes(failed or {}))
        outputs = [{"output_type": "stream", "name": "stdout", "text": text}]
        if error:
            outputs = [{"output_type": "error", "ename": error[0], "evalue": error[1]}] + outputs
        return {"cell_type": "code", "outputs": outputs, "execution_count": 3}

    ok = Behaviour.of([cell()])
    assert ok.passed and not ok.failed and not ok.stopped and ok.breaks() == []
    wrong = Behaviour.of([cell({"R1": "got 7"})])
    assert not wrong.passed and wrong.failed == {"R1": "got 7"} and wrong.breaks() == ["R1"]
    assert Behaviour.of([cell({"R1": "got 7"})]) == wrong != Behaviour.of([cell({"R1": "got 8"})])  # the values count
    raised = Behaviour.of([cell(error=("AssertionError", "R3: keeps the dtype\nmore lines"))])
    assert raised.errors == ("AssertionError: R3: keeps the dtype",) and raised.breaks() == ["R3"] and not raised.passed
    assert Behaviour.of([cell(error=("NotCounted", "the test reported success without running"))]).stopped
    assert Behaviour.of([{"cell_type": "code", "outputs": [], "execution_count": None}]).stopped  # never executed
    timed_out = Behaviour.of([cell()], [{"outputs": [{"output_type": "error", "ename": "KeyboardInterrupt", "evalue": ""}]}])
    assert timed_out.stopped and timed_out != ok
    syntax = Behaviour.of([cell({"R1": "x"})], [{"outputs": [{"output_type": "error", "ename": "SyntaxError", "evalue": "a"}]}])
    assert syntax.answer == "SyntaxError" and not syntax.stopped


def test_names_comments_layout_and_docstrings_do_not_change_the_normalised_code():
    assert normalised(NOVEL) == normalised(NOVEL_RENAMED)
    assert normalised('def f(x):\n    """Doc."""\n    return jnp.sum(x)  # sum\n') == normalised("def g(y):\n  return jnp.sum(y)")
    assert normalised("def f(x):\n    return jnp.sum(x)") != normalised("def f(x):\n    return jnp.mean(x)")  # the API is code
    assert likeness(normalised(NOVEL), normalised(NOVEL)) == 1.0
    assert likeness(normalised(NOVEL), normalised(_variants()["alternative"][1]["code"])) < LIKE
    assert normalised("def f(:\n  # c\n\n  x") == "def f(:\n  x"  # what does not parse is compared as written


# ---- a synthetic graded class ----------------------------------------------------------------------
def test_answers_that_behave_alike_are_one_cluster(report):
    ex = _exercise(report)
    assert report.students == 14 and ex.answers == 14 and not report.skipped
    got = {students: c.kind for students, c in _by_students(ex).items()}
    assert got == {("ada", "bo", "cy", "dee", "ed"): PASSES, ("fay", "gus"): KNOWN, ("ivy", "jo"): UNKNOWN,
                   ("hal",): KNOWN, ("kim",): UNKNOWN, ("lu",): STUB, ("mo",): STOPPED, ("ned",): STOPPED}
    assert [c.size for c in ex.clusters] == sorted((c.size for c in ex.clusters), reverse=True)
    assert [c.number for c in ex.clusters] == list(range(1, len(ex.clusters) + 1))
    others = [e for e in report.exercises if e.exercise != EXERCISE]
    assert others and all([c.kind for c in e.clusters] == [PASSES] and not e.unlike for e in others)  # the reference


def test_a_failing_cluster_is_a_known_wrong_answer_when_it_fails_as_validate_recorded(report):
    by = _by_students(_exercise(report))
    assert [(m.number, m.why) for m in by[("fay", "gus")].known] == [(2, _variants()["wrong"][1]["why"])]
    assert [m.number for m in by[("hal",)].known] == [3]  # a wrong answer without a hint is known too
    shared = by[("ivy", "jo")]
    assert not shared.known and shared.behaviour.failed == {"R1": OFF_BY_ONE}
    assert shared.representative.student == "ivy"


def test_passing_answers_written_unlike_the_course_are_listed(report):
    ex = _exercise(report)
    assert [u.students for u in ex.unlike] == [["dee", "ed"]]  # not the reference, a renamed one, alternative 1
    assert ex.unlike[0].likeness < LIKE and ex.unlike[0].closest


def test_the_pages(report):
    ex = _exercise(report)
    page = ex.page.read_text(encoding="utf-8")
    assert ex.page == report.index.parent / f"{EXERCISE}.html"
    assert page.count('<section class="cluster') == len(ex.clusters) and "data:image/png;base64," in page
    assert "not a known mistake" in page and "#2 (" in page and OFF_BY_ONE in page and "novel_marker_zeta" in page
    assert "written unlike the course" in page
    index = report.index.read_text(encoding="utf-8")
    assert all(f'href="{e.page.name}"' in index for e in report.exercises) and 'href="proposals.toml"' in index


def test_the_proposals_name_the_catching_requirement_and_no_student(report, course):
    _, codes = course
    text = report.proposals.read_text(encoding="utf-8")
    assert text == proposals_text(report)
    entries = tomllib.loads(text)[EXERCISE]
    assert len(entries["wrong"]) == 2 and len(entries["alternative"]) == 1  # ivy and jo's, kim's; dee and ed's
    wrong = entries["wrong"][0]
    assert wrong["breaks"] == ["R1"] and wrong["why"].startswith(TODO) and "hint" not in wrong
    assert "idx <= table.shape[0]" in wrong["code"]
    flat = text.replace("\n# ", " ")  # the comments, unwrapped
    assert f"The tests already catch it: R1 fails: {OFF_BY_ONE}" in flat
    assert "It passes every check. If it is in fact wrong, no test catches it" in flat
    assert max(len(line) for line in text.splitlines() if line.startswith("#")) <= 120
    assert "jax.lax.select" in entries["alternative"][0]["code"]
    assert "# ================ into variants/basics/01_introduction.toml ================" in text
    for student in codes:
        assert not re.search(rf"\b{student}\b", text), student
    assert "shared_one_secret_name" not in text and "novel_marker_zeta" not in text  # comments are left out


def test_student_code_lands_only_in_build_clusters(course, tmp_path):
    """Copied again, clustered with --propose: every file that changed or appeared is under build/clusters/, and no
    other file of the course (autograded/ aside, where the class's notebooks are) holds a line of a student's."""
    root = tmp_path / "course"
    shutil.copytree(course[0], root, ignore=shutil.ignore_patterns("clusters"))

    def files():
        return {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}

    before = files()
    assert main(["--root", str(root), "clusters", "basics", "--propose"]) == 0
    after = files()
    changed = {p for p in after if before.get(p) != after[p]}
    assert changed and all(p.parts[:2] == ("build", "clusters") for p in changed), changed
    marks = ("novel_marker_zeta", "greater_equal(idx, size)", "idx <= table.shape[0]", "(idx > n)")
    holding = {p for p, data in after.items() if any(m.encode() in data for m in marks)}
    assert {p.parts[0] for p in holding} == {"autograded", "build"}
    assert all(p.parts[:2] == ("build", "clusters") for p in holding if p.parts[0] == "build")


def test_a_reviewed_proposal_is_merged_after_its_exercise(course, tmp_path):
    root = tmp_path / "course"
    shutil.copytree(course[0], root)
    config = Config.load(root)
    r = clusters(config, "basics", EXERCISE, propose=True)
    variants = root / "variants" / f"{CHAPTER}.toml"
    original = variants.read_text(encoding="utf-8")
    with pytest.raises(JaxpathError, match=rf"\[\[{EXERCISE}.wrong\]\] for {CHAPTER}: write its why first"):
        merge_proposals(config, r.proposals, "basics")
    assert variants.read_text(encoding="utf-8") == original  # refused: nothing written
    text = r.proposals.read_text(encoding="utf-8").replace(f'why = "{TODO}: the misconception, in one line"',
                                                           'why = "counts an index equal to the length as valid"', 1)
    text = text.replace(f'# hint = "{TODO}: what a student whose answer fails like this should be told"',
                        'hint = "An index equal to the length is past the end."', 1)
    kept = text[:text.index("# ---- lookup_or_fill, cluster", text.index("[[lookup_or_fill.wrong]]"))]  # the first only
    reviewed = tmp_path / "reviewed.toml"
    reviewed.write_text(kept, encoding="utf-8")
    merged = merge_proposals(config, reviewed, "basics")
    want = len(_variants()["wrong"]) + 1
    assert [(m.chapter, m.entries) for m in merged] == [(CHAPTER, [f"{EXERCISE}: wrong answer #{want}"])]
    after = tomllib.loads(variants.read_text(encoding="utf-8"))
    new = after[EXERCISE]["wrong"][-1]
    assert new["why"] == "counts an index equal to the length as valid" and new["breaks"] == ["R1"]
    assert new["hint"] == "An index equal to the length is past the end." and "idx <= table.shape[0]" in new["code"]
    text_after = variants.read_text(encoding="utf-8")
    assert text_after.index("counts an index equal") < text_after.index("[brighten]")  # under its own exercise
    assert after["brighten"] == tomllib.loads(original)["brighten"]
    from jaxpath.authoring.chapter import load_chapter

    ch = load_chapter(root / "source" / f"{CHAPTER}.ipynb", CHAPTER, root, variants)
    assert not ch.problems, ch.problems


def test_one_exercise_and_the_command_line(course, tmp_path, capsys):
    root, _ = course
    out = tmp_path / "out"
    assert main(["--root", str(root), "clusters", "basics", EXERCISE, "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("14 students with graded notebooks, 1 exercises\n")
    assert "3 in 2 cluster(s) not a known mistake" in printed
    assert sorted(p.name for p in out.iterdir()) == ["index.html", f"{EXERCISE}.html"]
    assert main(["--root", str(root), "clusters", "basics", "no_such_exercise", "--output", str(out)]) == 2
    assert "basics has no exercise 'no_such_exercise'; its exercises: accumulate, brighten" in capsys.readouterr().out


def test_an_unreadable_notebook_is_named_and_the_rest_clustered(course, tmp_path):
    root = tmp_path / "course"
    shutil.copytree(course[0], root)
    (root / "autograded" / "bo" / "basics" / "01_introduction.ipynb").write_text('{"cells": [', encoding="utf-8")
    r = clusters(Config.load(root), "basics")
    assert len(r.skipped) == 1 and r.skipped[0].startswith("autograded/bo/basics/01_introduction.ipynb: not a readable")
    assert _exercise(r).answers == 13


def test_without_variants_or_proof_it_says_what_it_cannot_know(course, tmp_path):
    root = tmp_path / "course"
    shutil.copytree(course[0], root)
    shutil.rmtree(root / "variants")
    proof_path(Config.load(root), CHAPTER).unlink()
    r = clusters(Config.load(root), "basics")
    notes = " ".join(_exercise(r).notes)
    assert "no variants file" in notes and "--variants DIR" in notes and "has no proof here" in notes
    assert not _exercise(r).of_kind(KNOWN)
    again = clusters(with_variants(Config.load(root), ROOT / "variants"), "basics")
    assert [u.students for u in _exercise(again).unlike] == [["dee", "ed"]]  # alternative 1 known again


# ---- the graded sample class ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sample_clusters(graded_sample):
    """The sample class clustered with --propose (its scratch course has no variants: the course's are named)."""
    sample, cfg, _, _ = graded_sample
    config = with_variants(cfg, ROOT / "variants")
    return sample, config, clusters(config, sample.part, propose=True)


@pytest.mark.slow
@pytest.mark.grade
@pytest.mark.full
class TestSampleClass:
    def test_the_shared_mistake_is_one_cluster_of_two_and_not_a_known_one(self, sample_clusters):
        sample, _, r = sample_clusters
        m = sample.shared_mistake
        ex = next(e for e in r.exercises if e.chapter == m.chapter and e.exercise == m.exercise)
        cluster = next(c for c in ex.clusters if set(m.students) & set(c.students))
        assert cluster.students == sorted(m.students) and cluster.kind == UNKNOWN and not cluster.known
        assert sorted(cluster.behaviour.failed) == sorted(m.breaks)
        assert len(ex.of_kind(UNKNOWN)) == 1, [(c.students, c.behaviour) for c in ex.of_kind(UNKNOWN)]

    def test_the_partly_wrong_answers_are_the_known_wrong_answers(self, sample_clusters):
        """partly_wrong answers each exercise with a wrong answer of the variants file (one with a hint where there
        is one): its cluster is that wrong answer, by the failures validate recorded."""
        from jaxpath.authoring.requirements import records_every_wrong

        sample, config, r = sample_clusters
        for ex in r.exercises:
            wrong = tomllib.loads((ROOT / "variants" / f"{ex.chapter}.toml").read_text())[ex.exercise]["wrong"]
            c = next(c for c in ex.clusters if "partly_wrong" in c.students)
            number = next(n for n, w in enumerate(wrong, start=1)
                          if normalised(w["code"]) == c.answers[c.students.index("partly_wrong")].normalised)
            if wrong[number - 1].get("hint") or records_every_wrong(config, ex.chapter):
                assert c.kind == KNOWN and number in [m.number for m in c.known], (ex.exercise, c.kind, number)

    def test_propose_makes_a_candidate_that_validate_accepts_once_merged(self, sample_clusters, tmp_path):
        from jaxpath.authoring.validate import validate_one

        sample, _, r = sample_clusters
        m = sample.shared_mistake
        entries = tomllib.loads(r.proposals.read_text(encoding="utf-8"))
        candidate = entries[m.exercise]["wrong"]
        assert len(candidate) == 1 and candidate[0]["breaks"] == list(m.breaks)
        assert not any(s in r.proposals.read_text(encoding="utf-8") for s in sample.students)
        # a scratch course with the chapter and its variants: the author's review, the merge, validate
        scratch = tmp_path / "course"
        for rel in ("nbgrader_config.py", "course.toml", f"source/{m.chapter}.ipynb", f"variants/{m.chapter}.toml"):
            (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / rel, scratch / rel)
        text = r.proposals.read_text(encoding="utf-8")
        section = text[text.index(f"into variants/{m.chapter}.toml"):]
        section = section[:section.index("================ into", 20)] if "================ into" in section[20:] else section
        start = section.index(f"[[{m.exercise}.wrong]]")
        entry = section[start:section.index("\n# ----", start) if "\n# ----" in section[start:] else len(section)]
        reviewed = scratch / "reviewed.toml"
        reviewed.write_text(f"# ================ into variants/{m.chapter}.toml ================\n" +
                            entry.replace(f"{TODO}: the misconception, in one line", m.why), encoding="utf-8")
        config = Config.load(scratch)
        merged = merge_proposals(config, reviewed, sample.part)
        n = len(tomllib.loads((ROOT / "variants" / f"{m.chapter}.toml").read_text())[m.exercise]["wrong"]) + 1
        assert [x.entries for x in merged] == [[f"{m.exercise}: wrong answer #{n}"]]
        report = validate_one(config, m.chapter)
        assert report.ok, [str(p) for p in report.problems]
        from jaxpath.authoring.requirements import known_mistakes

        recorded = {k.number: k for k in known_mistakes(config, m.chapter, every=True)[m.exercise]}
        assert recorded[n].why == m.why and sorted(recorded[n].failed) == sorted(m.breaks)

    @pytest.mark.browser
    def test_each_page_in_chromium(self, sample_clusters, chromium, tmp_path, request):
        """Every exercise page: its chart drawn, the clusters table and the sections on screen, no script error; the
        shared mistake's page says it is no known mistake; screenshots kept for the manual."""
        from site_factory import save_screenshot

        sample, _, r = sample_clusters
        page = chromium.new_page(viewport={"width": 1280, "height": 1000})
        try:
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(r.index.as_uri())
            assert page.locator("#exercises tr").count() == len(r.exercises) + 1
            for ex in r.exercises:
                page.goto(ex.page.as_uri())
                assert page.locator("#chart img").evaluate("i => i.complete && i.naturalWidth > 200")
                assert page.locator("#clusters tr").count() == len(ex.clusters) + 1
                assert page.locator("section.cluster").count() == len(ex.clusters)
                if ex.exercise == sample.shared_mistake.exercise:
                    row = page.locator("#clusters tr.kind-unknown").first
                    assert "not a known mistake" in row.inner_text()
                    shot = save_screenshot(page, tmp_path, request, "clusters-page")
                    assert shot.stat().st_size > 10_000
            assert not errors, errors
        finally:
            page.close()
