"""Every text a student reads that the grader writes, in one place: the error outputs put into a graded
notebook (a cell not run, a kernel that died, a time limit, a pass not counted, a hidden error), the reasons
of a notebook's status, and what the feedback page shows in place of hidden tests.

The grader (jaxpath.grade), the kernel session (jaxpath.execute) and the feedback pages (jaxpath.classroom.feedback)
build them here, so one wording is used wherever a student meets a case. The error names are nbgrader's
contract too: an error output in a test cell is what makes nbgrader score it zero."""
from __future__ import annotations

import nbformat


def error_output(ename: str, evalue: str, traceback: list[str] | None = None):
    """An error output as a kernel would display it (one traceback line `ename: evalue` unless given)."""
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue,
                                  traceback=[f"{ename}: {evalue}"] if traceback is None else traceback)


# --- cells that did not run, or did not finish -----------------------------------------------------------

NOT_RUN = "NotRun"


def not_run(why: str):
    """The output of a cell the grader did not run (`why` starts with "not run: ")."""
    return error_output(NOT_RUN, why)


def aborted():
    return error_output(NOT_RUN, "the kernel aborted this cell without running it")


def dead_kernel():
    return error_output("DeadKernelError", "the kernel died while running this cell")


OUT_OF_TIME = "not run: the notebook ran out of time"
NO_KERNEL = "not run: the kernel did not start"


def after_death(cell: int) -> str:
    return f"not run: the kernel died in cell {cell}"


def after_hang(cell: int) -> str:
    return f"not run: cell {cell} never finished"


def worker_failed(e: BaseException) -> str:
    return f"the worker failed: {type(e).__name__}: {str(e)[:300]}"


CELL_TIMEOUT = "CellTimeoutError"


def cell_timeout(seconds: float, traceback: bool = True) -> dict:
    """A cell that ran past its limit: the fields of its error output (nbclient's `error_on_timeout` too)."""
    evalue = f"the cell ran past its {seconds} s limit"
    return {"ename": CELL_TIMEOUT, "evalue": evalue, "traceback": [f"{CELL_TIMEOUT}: {evalue}"] if traceback else []}


HIDDEN_ERROR = "HiddenError"
HIDDEN_ERROR_WHY = "the cell raised an exception, but no error was displayed (the notebook hides its errors)"

OUTPUT_LOST = "OutputLost"


def output_lost(seconds: float) -> str:
    return (f"the cell finished, but its output did not arrive within {seconds} s (the kernel was still sending an "
            "earlier cell's output): what it displayed, a score included, is unknown, so it counts as failed")


# --- the reasons of a notebook's status ------------------------------------------------------------------

def reason_notebook_timeout(limit: float, cell: int) -> str:
    return f"the notebook ran past its {limit} s limit at cell {cell}"


def reason_cell_timeout(cell: int, limit: float) -> str:
    return f"cell {cell} ran past its {limit} s limit"


IGNORED_INTERRUPT = " and ignored the interrupt"


def reason_kernel_died(cell: int) -> str:
    return f"the kernel died in cell {cell}"


def reason_no_kernel(e: BaseException) -> str:
    return f"the kernel did not start: {e}"


def reason_out_of_memory(memory_mb: int) -> str:
    return f": it used more than its {memory_mb} MB of memory"


def reason_memory_error(address_space_mb: int) -> str:
    return f"a cell ran out of memory (MemoryError at the {address_space_mb} MB address-space limit)"


def reason_score_refused(cell: int, grade_id: str, value: str, points: float) -> str:
    return (f"cell {cell} ({grade_id}) ends in {value}, more than its {points:g} points: nbgrader refuses a partial "
            "credit above a cell's points, so the notebook has no scores (fix the test cell, then grade again)")


PRELUDE_FAILED = "the integrity prelude failed"


def reason_unchecked(why: str) -> str:
    return f"{why}: tampering in the kernel was not checked"


def reason_files_not_kept(names: list[str]) -> str:
    return "files it wrote not kept: " + ", ".join(names[:5])


def joined(reason: str, more: str) -> str:
    """`more` after the reason so far (`; ` between)."""
    return (reason + "; " if reason else "") + more


# --- passes the integrity checks do not count ------------------------------------------------------------

NOT_COUNTED = "NotCounted"
ENDED_EARLY = "the test reported success without running to its end as written"
NO_PROBE_ANSWER = "the grader's integrity probe got no answer after this test"
RAISED_UNSEEN = "it raised, but no error was displayed"


def not_counted(why: str):
    return error_output(NOT_COUNTED, why)


# --- the feedback page -----------------------------------------------------------------------------------

HIDDEN_NOTE = "# (hidden tests ran here; their source is not shown)"
REDACTED = "[jaxpath: a line of a hidden test was removed here]"


def hidden_test_failed(message: str) -> str:
    return f"A hidden test failed. {message}"


# --- the summary at the top of a feedback page ------------------------------------------------------------

SUMMARY_TITLE = "Your results"

STATUS_WORDS = {
    "graded": "Every cell ran; the points below are your tests' results.",
    "timed out": "Grading stopped early: {reason}. The cells after it were not run and score nothing.",
    "crashed": "Grading stopped early: {reason}. The cells after it were not run and score nothing.",
    "tampered": "Flagged for your instructor to review: {reason}.",
    "invalid notebook": "This notebook could not be graded: {reason}.",
}
"""A notebook's grading status in plain words (jaxpath.grade.statuses), for the top of its feedback page."""


def status_words(status: str, reason: str) -> str:
    words = STATUS_WORDS.get(status, "Graded: {reason}.")
    return words.format(reason=reason.rstrip(".") or status)


def exercise_line(score: float | None, points: float, failure: str) -> tuple[str, str]:
    """(mark, words) of one graded cell on the feedback page: ✓ full marks, ◐ part of them, ✗ none (with the
    first error the cell showed, a hidden test's message included, never its source), … to be graded by hand."""
    if score is None:
        return "…", "to be graded by your instructor"
    if score >= points:
        return "✓", "every check passed"
    if score > 0:
        return "◐", f"{score:g} of {points:g} points" + (f": {failure}" if failure else "")
    return "✗", failure or "no points"
