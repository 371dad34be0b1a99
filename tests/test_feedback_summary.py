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


def _page_notebook(*extra_cells):
    """A graded-looking notebook: markdown, code with a stream, an error and an HTML table, and `extra_cells`."""
    v4 = nbformat.v4
    cells = [v4.new_markdown_cell("# Chapter\nSome *text* & <b>bold</b>, `x < y`, $a_1$."),
             v4.new_code_cell("import numpy as np\nprint('a < b & c')", outputs=[
                 v4.new_output("stream", name="stdout", text="a < b & c\n")]),
             v4.new_code_cell("1 / 0", outputs=[v4.new_output(
                 "error", ename="ZeroDivisionError", evalue="division by zero",
                 traceback=["\x1b[31mZeroDivisionError\x1b[0m"])]),
             v4.new_code_cell("df", outputs=[v4.new_output("execute_result", execution_count=3, data={
                 "text/html": "<table><tr><td>1</td><td>&amp;</td></tr></table>", "text/plain": "df"})]),
             *extra_cells]
    cells[2].metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "t1", "points": 2, "score": 0}
    nb = v4.new_notebook(cells=cells)
    nb.metadata["language_info"] = {"name": "python", "pygments_lexer": "ipython3"}
    return nb


PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def test_feedback_pages_are_what_stock_nbconvert_writes():
    """jaxpath's exporter skips nbconvert's BeautifulSoup pass: its page, read back as nbconvert reads it, is stock
    nbconvert's page byte for byte, an image output's default alt text included; a page on which an image has no alt
    text otherwise (raw <img> in a cell) goes through nbconvert's own path and is stock nbconvert's page itself."""
    from bs4 import BeautifulSoup
    from nbconvert.exporters import HTMLExporter

    from jaxpath.classroom.feedback import DEFAULT_ALT, FeedbackExporter, page_config

    v4 = nbformat.v4
    image = {"image/png": PNG, "text/plain": "<Figure>"}
    skipped = {  # what: (notebook, alt texts on the page)
        "no image": (_page_notebook(), []),
        "output image": (_page_notebook(v4.new_code_cell("plot()", outputs=[
            v4.new_output("display_data", data=image)])), [DEFAULT_ALT]),
        "output images with alt text, the output's and the cell's": (_page_notebook(
            v4.new_code_cell("plot()", outputs=[v4.new_output("display_data", data=image,
                                                              metadata={"image/png": {"alt": "a dot", "width": 3}})]),
            v4.new_code_cell("plot()", metadata={"alt": "the cell's dot"}, outputs=[
                v4.new_output("display_data", data=image)])), ["a dot", "the cell's dot"]),
        "markdown image": (_page_notebook(v4.new_markdown_cell(f"![a dot](data:image/png;base64,{PNG})")), ["a dot"]),
    }
    stock_path = {
        "raw img, no alt": _page_notebook(v4.new_markdown_cell(f'<img src="data:image/png;base64,{PNG}">')),
        "img in an output's html": _page_notebook(v4.new_code_cell("show()", outputs=[v4.new_output(
            "display_data", data={"text/html": f'<img src="data:image/png;base64,{PNG}">', "text/plain": "x"})])),
    }
    ours, stock = FeedbackExporter(config=page_config()), HTMLExporter(config=page_config())

    def pages(nb):
        def resources():
            return {"nbgrader": {"notebook": "ch", "score": 1.5, "max_score": 2, "late_penalty": 0}}
        return ours.from_notebook_node(nb, resources())[0], stock.from_notebook_node(nb, resources())[0]

    for what, (nb, alts) in skipped.items():
        before = nbformat.writes(nb)
        page, want = pages(nb)
        assert nbformat.writes(nb) == before, f"{what}: the notebook was changed"
        assert "a &lt; b &amp; c" in page and page.count("<img") == len(alts), what
        assert page != want, f"{what}: the pass was not skipped: nothing is measured here"
        assert str(BeautifulSoup(page, features="html.parser")) == want, what
        assert [img.get("alt") for img in BeautifulSoup(page, features="html.parser").find_all("img")] == alts, what
    for what, nb in stock_path.items():
        page, want = pages(nb)
        assert page == want and f'alt="{DEFAULT_ALT}"' in page, what
