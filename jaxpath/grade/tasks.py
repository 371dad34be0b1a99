"""What travels between the coordinator and a worker: a prepared `Task` out, a `Result` back.

Both carry content, not paths (the notebook as nbformat JSON, its files as bytes), so a worker needs no
shared filesystem; both are plain dataclasses, pickled by Dask."""
from __future__ import annotations

from dataclasses import dataclass, field

from .limits import Limits
from .statuses import GradeStatus


@dataclass
class IntegritySpec:
    """What the reference run established for one notebook (jaxpath.grade.integrity.Reference)."""
    names: dict[str, dict[str, str]] = field(default_factory=dict)
    """grade_id -> {name the test reads: its fingerprint in the reference run}."""
    ignore: list[str] = field(default_factory=list)
    """Watched things the course's own code changes (never evidence)."""
    imports: list[str] = field(default_factory=list)
    roots: list[str] = field(default_factory=list)
    deferred: bool = False
    """The reference run was not done when the task left: `names` holds the names to fingerprint (values
    empty), and the worker returns each probe's answer for the coordinator to judge once it is."""


@dataclass
class Task:
    """One prepared notebook to execute."""
    id: str
    """'<part>/<student>/<notebook>', for logs and the Dask key."""
    notebook: str
    """The notebook after nbgrader's sanitize steps, as nbformat JSON."""
    files: dict[str, bytes] = field(default_factory=dict)
    """The files beside it (relative path -> content)."""
    limits: Limits = field(default_factory=Limits)
    sandbox: bool = True
    isolation: str | None = None
    """The isolation level's name, chosen once by the coordinator (None: what the worker's host gives)."""
    kernel_name: str = "python3"
    jax_cache: str | None = None
    """A warmed compilation cache, mounted read-only in the sandbox."""
    font_list: str | None = None
    """matplotlib's font list made for sandboxes on this machine (grade/fontlist.py), mounted read-only."""
    integrity: IntegritySpec | None = None
    """Set once the reference run is done; None runs no integrity checks."""
    follow: str | None = None
    """Sent before its reference run is done, on the coordinator's own machine: the key under which the worker
    finds that run's progress (follow.following), to run each code cell only once the reference has run it. A
    worker elsewhere finds nothing there and runs at its own pace."""


@dataclass
class Probe:
    """One test cell's integrity probe, brought back unjudged from a task with a deferred spec: the coordinator
    judges it against the reference run once that is done (integrity.settle_probes)."""
    cell: int
    """The cell's index in the notebook."""
    gid: str
    """Its grade id."""
    passed: bool
    """Whether the test passed as the kernel reported it."""
    data: dict
    """The probe's answer (integrity.parse_result)."""
    digest: str | None
    """The prelude's digest of the watched things."""


@dataclass
class Result:
    """What became of a task. Pass or fail is not decided here: the coordinator scores the executed notebook
    with nbgrader's own steps."""
    id: str
    notebook: str
    """The executed notebook, as nbformat JSON."""
    status: GradeStatus
    reason: str = ""
    seconds: float | None = None
    worker: str = ""
    tampering: list[str] = field(default_factory=list)
    """Evidence that the notebook tampered with its tests (the notebook is then *tampered*)."""
    written: dict[str, bytes] = field(default_factory=dict)
    """Files the notebook created or changed in its folder."""
    removed: list[str] = field(default_factory=list)
    """Files of its folder it removed."""
    isolation: str = ""
    """The isolation level it ran at."""
    probes: list[Probe] = field(default_factory=list)
    """With a deferred integrity spec: per test cell, its probe to judge."""
    times: dict[str, float] = field(default_factory=dict)
    """Where the worker's seconds went: sandbox, kernel start, import jax, prelude, cells."""
    cache_hits: int | None = None
    """Compilations read from the warmed cache (None: it ran without one)."""
