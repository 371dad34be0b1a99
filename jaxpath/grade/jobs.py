"""A job: one student's notebook in a batch, from the moment the coordinator finds it to the status it records.
The coordinator makes and settles jobs, the dispatcher sends their tasks, a gate (reference.ReferenceGate) picks
which goes next."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .record import Status
from .tasks import Task


@dataclass
class Job:
    student: str
    notebook: str
    path: Path | None
    content_hash: str = ""
    task: Task | None = None
    status: Status | None = None
    """Set when the notebook is settled without running (missing, invalid)."""
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Worth telling the grader, not tampering (a duplicated grade cell)."""
    files: dict[str, bytes] = field(default_factory=dict)
