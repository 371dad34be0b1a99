"""A batch, start to finish: `grade()` plans, prepares, starts the cluster and the reference run, sends the
tasks, and records each result, overlapping the fixed costs (see its docstring)."""
from __future__ import annotations

import contextlib
import logging
import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable

from ..config import Config
from ..faults import checkpoint
from ..files import remove_orphaned_temp_dirs
from . import cachepack
from .coordinator import Coordinator, GradeReport
from .dispatch import connect, disconnect, dispatch
from .follow import FOLLOWERS_PER_CORE
from .fontlist import font_list
from .jobs import Job
from .limits import Limits
from .record import Status, gradebook_call
from .reference import ReferenceGate, reference_order
from .tasks import IntegritySpec, Result, Task
from .worker import run_task

log = logging.getLogger("jaxpath.grade")
isolation_log = logging.getLogger("jaxpath.grade.isolation")
isolation_log.setLevel(logging.INFO)  # the level a batch runs at is always said, -v or not


def grade(config: Config, part: str, *, students: Iterable[str] | None = None, notebooks: Iterable[str] | None = None,
          workers: int | None = None, scheduler: str | None = None, db_url: str | None = None, force: bool = False,
          sandbox: bool = True, limits: Limits | None = None, compile_cache: bool = True, isolation: str | None = None,
          on_start: Callable[[int, int], None] | None = None,
          on_result: Callable[[Status], None] | None = None, lock_timeout: float = 120.0) -> GradeReport:
    """Grade every submission of `part` (or the chosen students / notebooks) and record the results.

    The fixed costs overlap: the Dask cluster starts while submissions are prepared (with no more workers than
    the batch can use, each a thread of this process: dispatch.connect says why), and the reference runs (one per
    notebook, as many at once as there are cores and notebooks) go on while the workers grade, on the cores
    they leave free. A notebook's submissions follow its reference run: sent once it is done, they carry its
    calibration and read the compilation cache it filled; sent onto a free core before, a few per core, each
    runs a cell once the reference has run it, reading what it compiled, taking turns on that core
    (follow.py), and brings its integrity probes back unjudged, which the coordinator judges (and
    records that notebook) once the reference is done, so no verdict rests on incomplete calibration. The
    workers of a remote cluster (`scheduler`) start once every reference run is done, with the cache as one
    pack.
    """
    warnings.filterwarnings("ignore", message=".*not in session.*")  # nbgrader's own SQLAlchemy chatter
    for p in remove_orphaned_temp_dirs():  # what a grader killed with SIGKILL left (its kernels' folders)
        log.info("removed %s, left by a run that was killed", p)
    batch = Batch(config, part, workers=workers, scheduler=scheduler, db_url=db_url, force=force, sandbox=sandbox,
                  limits=limits, compile_cache=compile_cache, isolation=isolation, on_result=on_result,
                  lock_timeout=lock_timeout)
    try:
        todo = batch.plan(students, notebooks)
        if on_start:
            on_start(len(todo), len(batch.report.skipped))
        if todo:
            batch.start(todo)
            batch.send(batch.prepare(todo))
    finally:
        batch.close()
    return batch.report


class Batch:
    """One batch, in its steps: `plan` (what needs grading), `start` (the cluster, the font list and the reference
    runs, in the background), `prepare` (each submission, with nbgrader's steps; the ones that need no run are
    recorded at once), `send` (the tasks, as the gate lets them go), `record` (each result), `close`."""

    def __init__(self, config: Config, part: str, *, workers: int | None, scheduler: str | None, db_url: str | None,
                 force: bool, sandbox: bool, limits: Limits | None, compile_cache: bool, isolation: str | None,
                 on_result: Callable[[Status], None] | None, lock_timeout: float):
        self.t0 = time.perf_counter()
        self.part, self.workers, self.scheduler, self.sandbox = part, workers, scheduler, sandbox
        self.on_result, self.lock_timeout = on_result, lock_timeout
        # The warmed compilation cache: a folder on this machine, mounted read-only by local workers; packed and
        # scattered once to the workers of a remote cluster (grade/cachepack.py).
        self.cache = config.compile_cache(part) if compile_cache else None
        self.limits = limits if limits is not None else Limits.for_course(config)   # course.toml [grading]
        self.coord = self.call(lambda: Coordinator(config, part, db_url=db_url, sandbox=sandbox, limits=self.limits,
                                                   force=force, jax_cache=self.cache, isolation=isolation),
                               what="opening the gradebook")
        self.report = GradeReport(part, isolation=self.coord.level.name)
        self.times = self.report.times
        isolation_log.info("isolation: %s (%s)", self.coord.level.name, self.coord.level.describe())
        self.background = ThreadPoolExecutor(max_workers=2, thread_name_prefix="jaxpath-grade")
        self.connection = self.refs = self.fonts = self.gate = None
        self.packed: list = []
        self.specs: dict[str, IntegritySpec] = {}
        """Per notebook, the integrity checks a task runs before its reference run is done (read once)."""

    def call(self, fn, *args, what: str):
        return gradebook_call(fn, *args, lock_timeout=self.lock_timeout, what=what)

    def _where(self, job: Job) -> str:
        return f"{job.student}/{self.part}/{job.notebook}.ipynb"

    def plan(self, students, notebooks) -> list[Job]:
        todo, self.report.skipped = self.call(lambda: self.coord.plan(self.coord.submissions(students, notebooks)),
                                              what="reading what was graded before")
        return todo

    def start(self, todo: list[Job]) -> None:
        """In the background while submissions are prepared: the cluster, the font list, the reference runs (as
        many at once as there are cores and notebooks; notebooks saved and current, as in a regrade, are
        calibrated and warm from the start)."""
        coord, times = self.coord, self.times
        workers = min(self.workers or max(1, os.cpu_count() or 1), len(todo))
        self.connection = self.background.submit(_timed, times, "cluster start", connect, workers, self.scheduler,
                                                 threads=FOLLOWERS_PER_CORE)
        if self.sandbox and coord.level.isolated and not self.scheduler:  # made once per host (a regrade finds it)
            self.fonts = self.background.submit(_timed, times, "font list", font_list, coord.level, self.limits)
        if self.cache:
            self.cache.mkdir(parents=True, exist_ok=True)
            os.chmod(self.cache, 0o755)  # mounted into the sandboxes from the first task on
        cores = _cores()
        self.gate = ReferenceGate(cores, None if self.scheduler else workers)
        # Only the notebooks this batch will run: a notebook nobody submitted (missing for every student) costs
        # nothing; a later batch that brings it runs its reference then.
        submitted = {job.notebook for job in todo if job.path is not None}
        self.refs = self.gate.refs = coord.reference_runs(submitted, workers=cores,
                                                          on_done=lambda: self.gate.events.put(None))

    def prepare(self, todo: list[Job]) -> list[Job]:
        """Each submission prepared; those settled without running (missing, invalid) recorded now. The rest, in
        the order their reference runs go (notebook by notebook, students in their order)."""
        runnable = []
        for job in todo:
            with _timer(self.times, "prepare"):
                self.call(self.coord.prepare, job, what=f"preparing {self._where(job)}")
            if job.status is None:
                runnable.append(job)
                continue
            self._recorded(self.call(self.coord.settle, job, what=f"recording {self._where(job)}"))
        order = {name: i for i, name in enumerate(reference_order({job.notebook for job in runnable}))}
        return sorted(runnable, key=lambda job: order[job.notebook])

    def task(self, job: Job) -> Task:
        """The job's task as it leaves: calibrated where its reference run is done, else following it."""
        refs, task = self.refs, job.task
        if refs.done(job.notebook):
            ref = refs.result(job.notebook)
            task.integrity = IntegritySpec(ref.names, ref.ignore, ref.imports, ref.roots)
        else:  # the cache fills as the reference run goes (reference._publish): follow it, cell by cell
            if job.notebook not in self.specs:
                self.specs[job.notebook] = self.coord.static_spec(job.notebook)
            task.integrity = self.specs[job.notebook]
            task.follow = None if self.scheduler else refs.follow_key(job.notebook)
        if self.scheduler:
            task.jax_cache = None  # a path on this machine; the workers get the pack instead
        elif self.fonts is not None:
            task.font_list = self.fonts.result()
        return task

    def cache_arg(self, job: Job):
        """The scattered pack of the warmed cache, for a remote cluster's tasks sent after the reference run."""
        if not (self.scheduler and self.cache and self.refs.all_done() and job.task.integrity
                and not job.task.integrity.deferred):
            return None
        if not self.packed:
            p = cachepack.pack(self.cache) if self.cache.is_dir() else None
            client = self.connection.result()[0]
            self.packed.append(client.scatter(p, broadcast=True, hash=False) if p is not None else None)
            self.report.cache_entries = p.entries if p is not None else 0
        return self.packed[0]

    def send(self, runnable: list[Job]) -> None:
        """The tasks, as the gate lets them go; each result recorded as it comes, but one whose probes wait for
        their notebook's reference run only once that is done."""
        if not runnable:
            return
        refs, times = self.refs, self.times
        client, _ = self.connection.result()
        if self.scheduler and self.cache:
            # Workers of a remote cluster get the cache as one pack, made once the reference run is done: a
            # task sent earlier would compile every program itself. So they start with the pack (on a real
            # cluster the reference run uses the coordinator's machine, not theirs).
            with _timer(times, "waiting for the reference run"):
                refs.wait()
        waiting: list[tuple[Job, Result]] = []  # unjudged probes, until their notebook's reference is done
        with _timer(times, "grading"):
            for job, result in dispatch(runnable, client, run_task, self.task, self.cache_arg, self.gate):
                waiting.append((job, result))
                for item in [w for w in waiting if not w[1].probes or refs.done(w[0].notebook)]:
                    waiting.remove(item)
                    self.record(*item)
            refs.wait()
            for item in waiting:
                self.record(*item)
        if refs.seconds:
            times["reference run"] = refs.seconds

    def record(self, job: Job, result: Result) -> None:
        ref = self.refs.result(job.notebook) if result.probes else None
        with _timer(self.times, "record"):
            st = self.call(self.coord.record, job, result, ref, what=f"recording {self._where(job)}")
        self.report.worker_times.append(result.times)
        self.report.cache_hits.append(result.cache_hits)
        self._recorded(st)
        checkpoint("grade-recorded")  # a notebook recorded, the batch not done: where a fault may stop it

    def _recorded(self, st: Status) -> None:
        self.report.results.append(st)
        if self.on_result:
            self.on_result(st)

    def close(self) -> None:
        """The cluster, the background threads and the reference runs stopped (the runs not started are
        cancelled, the running ones end: a batch that stops early), the gradebook closed."""
        if self.connection is not None:
            with contextlib.suppress(Exception):
                disconnect(*self.connection.result())
        self.background.shutdown(wait=True, cancel_futures=True)
        if self.refs is not None:
            self.refs.close()
        self.coord.store.dispose()
        self.report.seconds = time.perf_counter() - self.t0


def _cores() -> int:
    """The CPUs this process may run on (its affinity, which a container or `taskset` narrows)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _timed(times: dict[str, float], name: str, fn, *args, **kw):
    with _timer(times, name):
        return fn(*args, **kw)


@contextlib.contextmanager
def _timer(times: dict[str, float], name: str):
    t = time.perf_counter()
    try:
        yield
    finally:
        times[name] = times.get(name, 0.0) + time.perf_counter() - t
