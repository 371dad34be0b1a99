"""`jaxpath similar`: pairs of submissions whose answers share long stretches of code. On the graded sample class
(jaxpath.classroom.sample: a near-copy pair, a mistake two students make independently, the reference and the stub): the
pair is found and no one else; on synthetic classes: the planted pairs, and not every pair compared; the
normalisation and the boilerplate (copydetect) in units."""
import csv
import re
from pathlib import Path

import pytest

from jaxpath import Config
from jaxpath.classroom.sample import synthetic_class
from jaxpath.classroom.similar import (
    CSV_COLUMNS,
    LOOK,
    NOISE,
    THRESHOLD,
    ExerciseMatch,
    boilerplate_hashes,
    fingerprint,
    normalised,
    similar,
)
from jaxpath.cli import main

ROOT = Path(__file__).resolve().parents[1]
ACCUSING = re.compile(r"plagiar|cheat|copied|guilt|dishonest|suspic|misconduct|stole", re.IGNORECASE)

ANSWER = '''def lookup_or_fill(table, idx, fill):
    # the valid indices
    inside = jnp.logical_and(idx >= 0, idx < table.shape[0])
    picked = table[idx]
    return jnp.where(inside, picked, fill).astype(table.dtype)
'''
RENAMED = '''def lookup_or_fill(table, idx, fill):
    ok = jnp.logical_and(idx>=0, idx<table.shape[0])   # in range?

    vals = table[idx]
    return jnp.where(ok, vals, fill).astype(table.dtype)
'''


# ---- normalisation and boilerplate (units) --------------------------------------------------------------
def test_names_comments_and_whitespace_do_not_change_the_normalised_code():
    assert normalised(ANSWER) == normalised(RENAMED)
    assert "inside" not in normalised(ANSWER) and "#" not in normalised(ANSWER) and " " not in normalised(ANSWER)
    assert normalised(ANSWER) != normalised(RENAMED.replace("idx<table", "idx<=table"))  # an operator is code
    assert fingerprint(ANSWER).hashes == fingerprint(RENAMED).hashes


def test_the_fingerprints_are_the_same_in_every_run():
    """copydetect hashes with Python's salted `hash`: without jaxpath's stable hash another process (another
    PYTHONHASHSEED) keeps other fingerprints, and a report's scores change from run to run."""
    import os
    import subprocess
    import sys

    code = f"from jaxpath.classroom.similar import fingerprint; print(sorted(fingerprint({ANSWER!r}).hashes))"
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert runs == {f"{sorted(fingerprint(ANSWER).hashes)}\n"}


def test_boilerplate_code_leaves_no_fingerprint():
    """What the course gives (here the answer itself, as a reference solution would be) is never a match: an
    answer made of it has nothing left to compare, one that adds to it keeps only its own part."""
    given = boilerplate_hashes([ANSWER])
    assert fingerprint(ANSWER).hashes and not fingerprint(RENAMED, boilerplate=given).hashes
    own = RENAMED + "    total_count = jnp.sum(jnp.where(ok, 1, 0)) + jnp.size(vals) * 3\n"
    left = fingerprint(own, boilerplate=given)
    assert left.hashes and left.token_coverage <= len(normalised(own)) - len(normalised(RENAMED)) + NOISE


def test_the_highlighted_segments_are_the_code_cut_at_the_shared_regions():
    code = "abcdefghij"
    m = ExerciseMatch("nb", "ex-answer", (0.5, 0.5), 4, 2, (code, code), ([(2, 4), (6, 8)], [(0, 10)]))
    assert "".join(t for t, _ in m.segments(0)) == code
    assert [t for t, shared in m.segments(0) if shared] == ["cd", "gh"]
    assert m.segments(1) == [(code, True)]


# ---- synthetic classes (no kernel: quick) ---------------------------------------------------------------
@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return synthetic_class(Config.load(ROOT), tmp_path_factory.mktemp("synthetic") / "class", 120, near_copies=3)


def test_a_synthetic_class_gives_its_planted_pairs_and_nothing_else(synthetic):
    r = similar(Config.load(synthetic.root), synthetic.part)
    assert sorted((p.a, p.b) for p in r.flagged) == sorted(synthetic.near_copies)
    assert all(p.score > 0.9 for p in r.flagged)
    assert max(p.score for p in r.pairs if not p.flagged) < THRESHOLD
    assert r.students == 120 and r.answers == 120 * 8 and not r.skipped


def test_only_pairs_that_share_a_fingerprint_are_compared(synthetic):
    """The inverted index: with the common code (stretches more than max_shared students hold) left out, a
    class of 120 compares a small share of its 7140 pairs, and finds the planted ones all the same."""
    r = similar(Config.load(synthetic.root), synthetic.part, output=synthetic.root / "build" / "similar-3", max_shared=3)
    n = len(synthetic.students)
    every = n * (n - 1) // 2
    assert r.compared < every / 10, (r.compared, every)
    assert sorted((p.a, p.b) for p in r.flagged) == sorted(synthetic.near_copies)


def test_an_unreadable_submission_is_named_and_the_rest_compared(tmp_path):
    c = synthetic_class(Config.load(ROOT), tmp_path / "class", 6, near_copies=1)
    broken = c.root / "submitted" / "s0005" / c.part / "02_jit.ipynb"
    broken.write_text('{"cells": [', encoding="utf-8")
    r = similar(Config.load(c.root), c.part)
    assert len(r.skipped) == 1 and r.skipped[0].startswith("submitted/s0005/basics/02_jit.ipynb: not a readable")
    assert [(p.a, p.b) for p in r.flagged] == c.near_copies


def test_an_answer_cell_pasted_twice_is_one_answer_of_its_student(tmp_path):
    """nbgrader keeps a duplicated cell's copies; all of its code is the student's one answer to that exercise,
    never a pair of the student with itself."""
    import json

    c = synthetic_class(Config.load(ROOT), tmp_path / "class", 4, near_copies=1)
    path = c.root / "submitted" / "s0002" / c.part / "02_jit.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    i = next(i for i, cell in enumerate(nb["cells"]) if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
             == "jit_config-answer")
    nb["cells"].insert(i + 1, json.loads(json.dumps(nb["cells"][i])))
    path.write_text(json.dumps(nb), encoding="utf-8")
    r = similar(Config.load(c.root), c.part)
    assert r.answers == 4 * 8 and all(p.a != p.b for p in r.pairs)
    assert [(p.a, p.b) for p in r.flagged] == c.near_copies


def test_the_command_line_takes_its_defaults_from_the_api(tmp_path, capsys):
    c = synthetic_class(Config.load(ROOT), tmp_path / "class", 4, near_copies=1)
    assert main(["--root", str(c.root), "similar", c.part, "--output", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert f"reach the threshold {THRESHOLD:g}" in out and "s0000 and s0001" in out
    assert (tmp_path / "out" / "index.html").is_file() and (tmp_path / "out" / "pairs.csv").is_file()


# ---- the graded sample class ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sample_pairs(graded_sample):
    sample, cfg, _, _ = graded_sample
    return sample, similar(cfg, sample.part)


@pytest.mark.slow
@pytest.mark.grade
@pytest.mark.full
class TestSampleClass:
    def test_the_near_copy_pair_is_found_and_no_honest_pair(self, sample_pairs):
        sample, r = sample_pairs
        assert len(sample.near_copies) == 2
        assert [(p.a, p.b) for p in r.flagged] == [tuple(sorted(sample.near_copies))]
        pair = r.flagged[0]
        assert pair.score >= THRESHOLD and min(pair.similarity) > 0.8
        assert len(pair.exercises) >= 6  # every answer it copied, not one stretch
        assert all(p.score < THRESHOLD for p in r.pairs if p is not pair)

    def test_the_course_code_and_the_shared_mistake_are_no_match(self, sample_pairs):
        """The reference answers (the correct student's, and off_by_one's but one) and the stub are everyone's
        starting point, and the partly-wrong student's known wrong answers are its own: none of them pairs with
        anyone. The shared mistake was written twice, independently: its students are not paired."""
        sample, r = sample_pairs
        paired = {s for p in r.pairs for s in (p.a, p.b)}
        assert not paired & {"correct", "stub", "partly_wrong"}, [(p.a, p.b, p.score) for p in r.pairs]
        mistake = tuple(sorted(sample.shared_mistake.students))
        assert all((p.a, p.b) != mistake or p.score < THRESHOLD for p in r.pairs)
        assert r.students == len(sample.students) - 3  # the crash, the loop and the broken file were not kept

    def test_the_csv_and_the_page_hold_the_pair(self, sample_pairs):
        sample, r = sample_pairs
        a, b = sorted(sample.near_copies)
        rows = list(csv.DictReader(r.csv.open(encoding="utf-8")))
        assert tuple(rows[0]) == CSV_COLUMNS
        part = [row for row in rows if row["scope"] == "part" and row["flagged"] == "yes"]
        assert [(row["student_a"], row["student_b"]) for row in part] == [(a, b)]
        assert float(part[0]["score"]) >= THRESHOLD
        exercises = {row["exercise"] for row in rows if row["scope"] == "exercise" and row["student_a"] == a}
        assert {"huber-answer", "jit_config-answer", "sgd_epoch-answer"} <= exercises
        page = r.html.read_text(encoding="utf-8")
        assert f"{a} and {b}" in page and page.count('<mark class="shared">') >= 12
        assert LOOK in page and not ACCUSING.search(page) and not ACCUSING.search(r.csv.read_text())

    @pytest.mark.browser
    def test_the_page_in_chromium(self, sample_pairs, chromium, tmp_path, request):
        """What a person sees: the words asking them to look, the threshold, the pair side by side with its
        shared stretches highlighted on both sides; a screenshot kept for the manual."""
        from site_factory import save_screenshot

        sample, r = sample_pairs
        page = chromium.new_page(viewport={"width": 1400, "height": 1000})
        try:
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(r.html.as_uri())
            assert LOOK in page.locator("#context").inner_text()
            assert page.locator("#threshold").inner_text() == f"{THRESHOLD:.2f}"
            page.locator("#pairs a").first.click()
            section = page.locator("section.pair").first
            assert section.is_visible()
            sides = section.locator("div.side-by-side").first.locator(":scope > div")
            assert sides.count() == 2
            left, right = (sides.nth(i).bounding_box() for i in range(2))
            assert right["x"] >= left["x"] + left["width"] - 1 and abs(right["y"] - left["y"]) < 2  # side by side
            for i in range(2):
                mark = sides.nth(i).locator("mark.shared").first
                assert mark.is_visible()
                assert mark.evaluate("m => getComputedStyle(m).backgroundColor") not in ("rgba(0, 0, 0, 0)", "transparent")
            shot = save_screenshot(page, tmp_path, request, "similar-report")
            assert shot.stat().st_size > 10_000 and not errors, errors
        finally:
            page.close()
