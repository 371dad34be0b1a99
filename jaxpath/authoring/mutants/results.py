"""What a mutation run produces: a result per mutant, exercise and chapter, the bar they must reach,
and the key a chapter's results are valid for."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import nbformat

from ...cells import nbgrader_meta
from ...config import Config
from ...manifest import notebook_path, variants_path
from ...problems import Problem
from ..mutate import ENGINE_VERSION

SUMMARY_FILE = "MUTANTS.md"
EXERCISE_MIN, COURSE_MIN = 90.0, 95.0
"""Kill rates (percent of non-equivalent mutants) every exercise and the whole course must reach."""
_DATA_START, _DATA_END = "<!-- jaxpath-mutants-data", "jaxpath-mutants-data -->"


@dataclass
class MutantResult:
    id: str
    operator: str
    description: str
    line: int
    outcome: str
    """'killed', 'timeout' (killed by the time limit), 'survived' or 'equivalent'."""
    detail: str = ""
    """What killed it (the failing test cell and its error), or the author's reason for an equivalent."""
    diff: str = ""


@dataclass
class ExerciseResult:
    chapter: str
    name: str
    mutants: list[MutantResult] = field(default_factory=list)
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(m.outcome == outcome for m in self.mutants)

    @property
    def generated(self) -> int:
        return len(self.mutants)

    @property
    def killed(self) -> int:
        return self.count("killed") + self.count("timeout")

    @property
    def equivalent(self) -> int:
        return self.count("equivalent")

    @property
    def survived(self) -> int:
        return self.count("survived")

    @property
    def rate(self) -> float:
        live = self.generated - self.equivalent
        return 100.0 * self.killed / live if live else 100.0


@dataclass
class ChapterResult:
    id: str
    key: str
    exercises: list[ExerciseResult] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems and all(not e.problems and not e.survived and e.rate >= EXERCISE_MIN
                                         for e in self.exercises)


def chapter_key(config: Config, chapter_id: str) -> str:
    """What the mutation results of a chapter depend on: every code cell (sources and nbgrader metadata),
    the variants file (it records the equivalents) and the engine version. Prose does not count."""
    h = hashlib.sha256(f"engine {ENGINE_VERSION}\n".encode())
    nb = nbformat.read(notebook_path(config, chapter_id), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            h.update(cell.source.encode("utf-8"))
            h.update(json.dumps(nbgrader_meta(cell), sort_keys=True).encode())
            h.update(b"\0")
    vp = variants_path(config, chapter_id)
    h.update(vp.read_bytes() if vp.exists() else b"")
    return h.hexdigest()[:16]
