"""Problems found in a chapter, each naming the file and the cell it is about."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import JaxpathError


@dataclass(frozen=True)
class Problem:
    path: str
    """The file the problem is in, relative to the course root where possible."""
    message: str
    cell: int | None = None
    """0-based index of the cell in the notebook (printed 1-based, as Jupyter's cell list shows it)."""
    exercise: str | None = None
    what: str | None = None
    """A short label of the cell: 'answer count_above-answer', 'self-check count_above-check', ..."""

    def __str__(self) -> str:
        where = self.path
        if self.cell is not None:
            where += f", cell {self.cell + 1}"
        details = []
        if self.exercise:
            details.append(f"exercise `{self.exercise}`")
        if self.what:
            details.append(self.what)
        if details:
            where += " (" + ", ".join(details) + ")"
        return f"{where}: {self.message}"


class ChapterError(JaxpathError):
    """Raised when a chapter cannot even be read (not JSON, not a notebook)."""

    def __init__(self, problem: Problem):
        super().__init__(str(problem))
        self.problem = problem


def relpath(path: Path, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root))
    except ValueError:
        return str(path)
