"""The one exception base of jaxpath: every error a user can cause (a bad chapter name, a broken manifest,
an unreadable notebook, a zip that cannot be collected, a batch that cannot be graded) is a JaxpathError
whose message says what is wrong and where, and the CLI prints it as one line and exits 2 (1 for grading)."""
from __future__ import annotations


class JaxpathError(Exception):
    """Base of every error jaxpath raises on purpose."""


class GradeError(JaxpathError):
    """Grading cannot start or go on (no such assignment, a locked gradebook, a full disk): one clear sentence."""


class UnknownChapter(JaxpathError, LookupError):
    """A chapter name on the command line that the manifest does not list (or lists as planned)."""
