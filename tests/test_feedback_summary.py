"""The results at the top of a feedback page, for a cell that scores per requirement: each requirement with ✓/✗,
its text and its message, and the explanation of a known mistake when the answer failed exactly like one."""
import html
import re

import nbformat
from course_factory import CHECK_META, code, md

from jaxpath.authoring.requirements import Mistake
from jaxpath.classroom.feedback import ChapterFacts, summary_cell

PRINTED = ("gd_step:\n  ✓ R1 (1/1)\n  ✗ R2 (0/0.5): gd_step called loss_fn 2 times for one step\n"
           "  ✓ R3 (0.5/0.5)\n")
FACTS = ChapterFacts(
    {"gd_step": {"R1": "returns `(new_params, loss, aux)`", "R2": "calls `loss_fn` once per step", "R3": "works <jit>"}},
    {"gd_step": [Mistake("gd_step", 6, {"R2": "gd_step called loss_fn 2 times for one step"},
                         "Each call of `loss_fn` is a forward pass: asking for the loss and then the gradient pays twice."),
                 Mistake("gd_step", 1, {"R1": "grad saw the whole pair"}, "not this one")]})


def _graded(printed: str, score: float):
    nb = nbformat.v4.new_notebook()
    cell = code("check.score()", nbgrader={**CHECK_META, "grade_id": "gd_step-check", "points": 2})
    cell.metadata["nbgrader"]["score"] = score
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    nb.cells = [md("### Exercise 1: one step"), cell]
    return nb


def _text(cell) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", cell.source)))


def test_each_requirement_shows_with_its_text_its_mark_and_its_message():
    cell = summary_cell(_graded(PRINTED, 1.5), 1.5, 2, None, FACTS)
    text = _text(cell)
    assert "1.5 / 2 points." in text and "◐ 1.5 of 2 points" in text
    assert "✓ R1 (1/1) returns (new_params, loss, aux)" in text
    assert "✗ R2 (0/0.5) calls loss_fn once per step gd_step called loss_fn 2 times for one step" in text
    assert "<code>loss_fn</code>" in cell.source and "works &lt;jit&gt;" in cell.source  # code spans; text escaped
    # the answer failed exactly as wrong answer 6 did: its hint, and no other
    assert "A known mistake. Each call of loss_fn is a forward pass" in text and "not this one" not in text


def test_no_hint_unless_the_failures_match_a_known_mistake_exactly():
    other = PRINTED.replace("2 times", "3 times")
    text = _text(summary_cell(_graded(other, 1.5), 1.5, 2, None, FACTS))
    assert "known mistake" not in text and "gd_step called loss_fn 3 times" in text
    full = "gd_step:\n  ✓ R1 (1/1)\n  ✓ R2 (0.5/0.5)\n  ✓ R3 (0.5/0.5)\n"
    text = _text(summary_cell(_graded(full, 2), 2, 2, None, FACTS))
    assert "✓ every check passed" in text and "known mistake" not in text and "✗" not in text
