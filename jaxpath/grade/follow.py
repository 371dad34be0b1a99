"""Following the reference run: the one idea that lets a batch grade while its reference runs still go on.

A notebook's reference run (reference.py) compiles the programs every submission shares and publishes them into
the compilation cache cell by cell. A task of that notebook sent before the run is done *follows* it: it runs its
n-th code cell only once the reference has run its own, so it reads that cell's programs from the cache instead
of compiling them a second time beside the reference, and waits, idle, while the reference compiles. Here:

- `Progress`: how far one run has got (the reference side advances it, the followers wait on it);
- the registry (`register`, `following`, `withdraw`): where a task of this process finds a run's progress by the
  key its `Task.follow` carries (a worker on another machine finds nothing there and runs at its own pace);
- `Follower`: the worker's side, waiting before each cell and taking turns, its waits kept apart from the
  notebook's own time;
- `FOLLOWERS_PER_CORE`: how many tasks may follow the runs per core they leave free (the batch's gate,
  reference.ReferenceGate, sends them).
"""
from __future__ import annotations

import contextlib
import secrets
import threading
import time
from typing import Callable

FOLLOWERS_PER_CORE = 4
"""While reference runs go on, how many tasks of their notebooks may be sent per core they leave free. Such a
task follows its reference cell by cell: it waits while the reference compiles, then runs the cell from the
cache, at about a third of the cold cell's time here (basics/01: 3-5 s of cells warm against 14 s cold), taking
turns with the others on the free core. Enough of them keep that core busy for the whole reference run without
compiling anything twice or slowing the reference; each waiting one holds an idle kernel (about 0.3 GB).
Measured on 8 submissions of basics/01 (two cores, interleaved runs): three gave 31-35 s, four 29-32 s."""


class Progress:
    """How far one notebook's reference run has got: the code cells it has run and published.

    The tasks that follow the runs of one batch take turns (`turn`, as many at once as `turns` allows: the
    cores the reference runs leave free) to run a cell: all at once, their kernels would take a reference
    kernel's core from it, and it is the one every later task waits for."""

    def __init__(self, turns: threading.Semaphore | None = None):
        self._cond = threading.Condition()
        self._turns = turns
        self.cells = 0
        self.over = False

    def advance(self, cells: int) -> None:
        with self._cond:
            self.cells = max(self.cells, cells)
            self._cond.notify_all()

    def finish(self) -> None:
        """The run is over (done, failed or cancelled): nobody waits on it any more."""
        with self._cond:
            self.over = True
            self._cond.notify_all()

    def wait(self, cells: int) -> float:
        """Block until the reference has run `cells` code cells or is over; the seconds it waited."""
        t = time.perf_counter()
        with self._cond:
            self._cond.wait_for(lambda: self.over or self.cells >= cells)
        return time.perf_counter() - t

    @contextlib.contextmanager
    def turn(self):
        """Hold one of the followers' turns (given the seconds waited for it) while running a cell."""
        t = time.perf_counter()
        if self._turns is None or self.over:
            yield 0.0
            return
        with self._turns:
            yield time.perf_counter() - t


_registry: dict[str, Progress] = {}
_registry_lock = threading.Lock()


def register(progress: Progress, name: str) -> str:
    """Publish `progress` (the run of notebook `name`) to the tasks of this process: the key a task carries."""
    key = f"{secrets.token_hex(8)}/{name}"
    with _registry_lock:
        _registry[key] = progress
    return key


def withdraw(key: str) -> None:
    """The batch is over: the key leads nowhere any more."""
    with _registry_lock:
        _registry.pop(key, None)


def following(key: str | None) -> Progress | None:
    """The progress registered under `key` in this process (None elsewhere: a worker of a remote cluster, or a
    batch that is over, runs at its own pace)."""
    with _registry_lock:
        return _registry.get(key) if key else None


class Follower:
    """A task's side of following its reference run: before its n-th code cell it waits until the reference has
    run n, then for a turn held while the cell runs. `lap(name)` is the task's clock (worker.TaskRun.lap); the
    seconds waited are `paused`, which do not count against the notebook's time limit."""

    def __init__(self, progress: Progress, lap: Callable[[str], None]):
        self.progress, self.lap = progress, lap
        self.paused = 0.0

    @contextlib.contextmanager
    def cell(self, cells: int = 0):
        """Around one piece of the task's work: wait for the reference's `cells` code cells (0: none, e.g. the
        kernel's start), then hold a turn until the block ends. Nothing is waited for once the run is over."""
        if self.progress.over:
            yield
            return
        self.lap("cells")
        if cells:
            self.paused += self.progress.wait(cells)
        with self.progress.turn() as waited:
            self.paused += waited
            self.lap("following the reference run")
            yield
