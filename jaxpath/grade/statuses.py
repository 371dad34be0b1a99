"""What became of a graded notebook: the one list of grading statuses (stored in the status table, printed
by `jaxpath grade`, exported, reported). A `StrEnum`, so a status read back from the database as text
compares equal to its member."""
from __future__ import annotations

from enum import StrEnum


class GradeStatus(StrEnum):
    GRADED = "graded"
    """Every cell ran (or failed on its own); the scores are nbgrader's."""
    TIMED_OUT = "timed out"
    """A cell or the whole notebook ran past its limit; the cells after it were not run."""
    CRASHED = "crashed"
    """The kernel died (out of memory, killed, would not start)."""
    INVALID = "invalid notebook"
    """Not a notebook of the assignment, unreadable, nbgrader could not restore its cells, or nbgrader refused its
    scores (a test cell that ends in more than its points)."""
    TAMPERED = "tampered"
    """The submission changed what grading relies on (tests, checks, the grader's own functions)."""
    MISSING = "missing"
    """Nothing was submitted for this notebook."""


FINAL = frozenset(GradeStatus)
"""Statuses that a rerun keeps while the submission is unchanged (all of them: none is provisional)."""
