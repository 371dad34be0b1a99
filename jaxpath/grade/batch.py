"""A batch, start to finish: `grade()` plans, prepares, starts the cluster and the reference run, sends the
tasks, and records each result, overlapping the fixed costs (see its docstring)."""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable

from ..config import Config
from ..files import remove_orphaned_temp_dirs
from . import cachepack
from .coordinator import Coordinator, GradeReport, Job
from .dispatch import Gate, connect, disconnect, dispatch, gradebook_call
from .fontlist import font_list
from .limits import Limits
from .record import Status
from .reference import ReferenceRuns, reference_order
from .tasks import IntegritySpec, Result, Task

log = logging.getLogger("jaxpath.grade")
isolation_log = logging.getLogger("jaxpath.grade.isolation")
isolation_log.setLevel(logging.INFO)  # the level a batch runs at is always said, -v or not


def grade(config: Config, part: str, *, students: Iterable[str] | None = None, notebooks: Iterable[str] | None = None,  # noqa: C901
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
    (reference.Progress), and brings its integrity probes back unjudged, which the coordinator judges (and
    records that notebook) once the reference is done, so no verdict rests on incomplete calibration. The
    workers of a remote cluster (`scheduler`) start once every reference run is done, with the cache as one
    pack.
    """
    t0 = time.perf_counter()
    warnings.filterwarnings("ignore", message=".*not in session.*")  # nbgrader's own SQLAlchemy chatter
    for p in remove_orphaned_temp_dirs():  # what a grader killed with SIGKILL left (its kernels' folders)
        log.info("removed %s, left by a run that was killed", p)
    # The warmed compilation cache: a folder on this machine, mounted read-only by local workers; packed and
    # scattered once to the workers of a remote cluster (grade/cachepack.py).
    cache = config.compile_cache(part) if compile_cache else None

    def call(fn, *args, what):
        return gradebook_call(fn, *args, lock_timeout=lock_timeout, what=what)

    limits = limits if limits is not None else Limits.for_course(config)   # course.toml [grading]
    coord = call(lambda: Coordinator(config, part, db_url=db_url, sandbox=sandbox, limits=limits, force=force,
                                     jax_cache=cache, isolation=isolation), what="opening the gradebook")
    report = GradeReport(part, isolation=coord.level.name)
    isolation_log.info("isolation: %s (%s)", coord.level.name, coord.level.describe())
    todo, report.skipped = call(lambda: coord.plan(coord.submissions(students, notebooks)),
                                what="reading what was graded before")
    if on_start:
        on_start(len(todo), len(report.skipped))
    times = report.times
    background = ThreadPoolExecutor(max_workers=2, thread_name_prefix="jaxpath-grade")
    connection = refs = fonts = None
    try:
        if todo:
            n = workers or max(1, os.cpu_count() or 1)
            workers = min(n, len(todo))
            connection = background.submit(_timed, times, "cluster start", connect, workers, scheduler,
                                           threads=FOLLOWERS_PER_CORE)
            # matplotlib's font list, made once per host for the sandboxes (a regrade finds it made)
            fonts = background.submit(_timed, times, "font list", font_list, coord.level, limits) \
                if sandbox and coord.level.isolated and not scheduler else None
            # The reference runs start before the submissions are prepared, as many at once as there are cores
            # and notebooks; notebooks saved and current (a regrade) are calibrated and warm from the start.
            if cache:
                cache.mkdir(parents=True, exist_ok=True)
                os.chmod(cache, 0o755)  # mounted into the sandboxes from the first task on
            cores = _cores()
            gate = _ReferenceGate(cores, None if scheduler else workers)
            refs = gate.refs = coord.reference_runs({job.notebook for job in todo}, workers=cores,
                                                    on_done=lambda: gate.events.put(None))
        runnable = []
        for job in todo:
            with _timer(times, "prepare"):
                call(coord.prepare, job, what=f"preparing {job.student}/{part}/{job.notebook}.ipynb")
            if job.status is not None:
                report.results.append(call(coord.settle, job, what=f"recording {job.student}/{part}/{job.notebook}.ipynb"))
                if on_result:
                    on_result(job.status)
            else:
                runnable.append(job)
        if runnable:
            # The submissions follow the reference runs notebook by notebook, students in their order.
            names = {job.notebook for job in runnable}
            order = {name: i for i, name in enumerate(reference_order(names))}
            runnable.sort(key=lambda job: order[job.notebook])
            deferred = {name: coord.static_spec(name) for name in names}
            packed: list = []

            def make_task(job: Job) -> Task:
                if refs.done(job.notebook):
                    ref = refs.result(job.notebook)
                    job.task.integrity = IntegritySpec(ref.names, ref.ignore, ref.imports, ref.roots)
                else:  # the cache fills as the reference run goes (reference._publish): follow it, cell by cell
                    job.task.integrity = dataclasses.replace(deferred[job.notebook],
                                                             follow=None if scheduler else refs.follow_key(job.notebook))
                if scheduler:
                    job.task.jax_cache = None  # a path on this machine; the workers get the pack instead
                elif fonts is not None:
                    job.task.font_list = fonts.result()
                return job.task

            def cache_arg(job: Job):
                """The scattered pack of the warmed cache, for a remote cluster's tasks sent after the reference run."""
                if not (scheduler and cache and refs.all_done() and job.task.integrity
                        and not job.task.integrity.deferred):
                    return None
                if not packed:
                    p = cachepack.pack(cache) if cache.is_dir() else None
                    packed.append(client.scatter(p, broadcast=True, hash=False) if p is not None else None)
                    report.cache_entries = p.entries if p is not None else 0
                return packed[0]

            def record(job: Job, result: Result) -> None:
                ref = refs.result(job.notebook) if result.probes else None
                with _timer(times, "record"):
                    st = call(coord.record, job, result, ref, what=f"recording {job.student}/{part}/{job.notebook}.ipynb")
                report.results.append(st)
                report.worker_times.append(result.times)
                report.cache_hits.append(result.cache_hits)
                if on_result:
                    on_result(st)

            client, _ = connection.result()
            if scheduler and cache:
                # Workers of a remote cluster get the cache as one pack, made once the reference run is done: a
                # task sent earlier would compile every program itself. So they start with the pack (on a real
                # cluster the reference run uses the coordinator's machine, not theirs).
                with _timer(times, "waiting for the reference run"):
                    refs.wait()
            waiting: list[tuple[Job, Result]] = []  # unjudged probes, until their notebook's reference is done
            with _timer(times, "grading"):
                for job, result in dispatch(runnable, client, make_task, cache_arg, gate):
                    waiting.append((job, result))
                    for item in [w for w in waiting if not w[1].probes or refs.done(w[0].notebook)]:
                        waiting.remove(item)
                        record(*item)
                refs.wait()
                for item in waiting:
                    record(*item)
            if refs.seconds:
                times["reference run"] = refs.seconds
    finally:
        if connection is not None:
            with contextlib.suppress(Exception):
                disconnect(*connection.result())
        background.shutdown(wait=True, cancel_futures=True)
        if refs is not None:
            refs.close()  # a batch that stops early: the runs not started are cancelled, the running ones end
        coord.store.dispose()
    report.seconds = time.perf_counter() - t0
    return report


FOLLOWERS_PER_CORE = 4
"""While reference runs go on, how many tasks of their notebooks may be sent per core they leave free. Such a
task follows its reference cell by cell (reference.Progress): it waits while the reference compiles, then runs
the cell from the cache, at about a third of the cold cell's time here (basics/01: 3-5 s of cells warm against
14 s cold), taking turns with the others on the free core. Enough of them keep that core busy for the whole
reference run without compiling anything twice or slowing the reference; each waiting one holds an idle
kernel (about 0.3 GB). Measured on 8 submissions of basics/01 (two cores, interleaved runs): three gave
31-35 s, four 29-32 s."""


class _ReferenceGate(Gate):
    """Tasks beside the reference runs. While they run, tasks go only onto the cores they leave free: a task
    whose notebook's reference is done first (it runs warm, a core's worth of work), else up to
    FOLLOWERS_PER_CORE per free core that follow their reference. A task that did not follow would compile
    what its reference has not yet published, on a busy machine the same work twice. On a remote cluster none
    is sent before all are done (they then carry the pack). `workers` (None: a remote cluster's threads) is
    how many run at once otherwise."""

    def __init__(self, cores: int, workers: int | None):
        super().__init__()
        self.cores, self.workers = cores, workers
        self.refs: ReferenceRuns | None = None

    def limit(self, slots: int, waiting: list[Job] = ()) -> int:
        workers = slots if self.workers is None else min(slots, self.workers)
        if self.refs is None or self.refs.all_done():
            return workers
        if self.workers is None:
            return 0
        free = min(workers, max(0, self.cores - self.refs.busy()))
        warm = any(self.refs.done(job.notebook) for job in waiting)
        return free if warm else free * FOLLOWERS_PER_CORE

    def pick(self, waiting: list[Job]) -> int:
        return next((i for i, job in enumerate(waiting) if self.refs is None or self.refs.done(job.notebook)), 0)


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
