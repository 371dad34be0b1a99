"""Sending prepared tasks to Dask workers (a local cluster, or an existing scheduler), as many at a time as a
`Gate` allows (reference.ReferenceGate: the batch's own)."""
from __future__ import annotations

import hashlib
import logging
import queue
import time
from typing import Callable, Iterator

import nbformat

from .. import texts
from .jobs import Job
from .statuses import GradeStatus
from .tasks import Result, Task


def connect(workers: int, scheduler: str | None = None, *, threads: int = 1):
    """(client, cluster): a Dask client of an existing scheduler (cluster None), or of a local cluster of
    `workers` workers of `threads` threads each, all threads of this process (how many tasks run at once is
    the gate's to say: `dispatch`).

    A local worker only drives its kernel: nbclient sends the cells and collects the outputs (at most
    execute.MAX_CELL_OUTPUT bytes a cell). The student's code runs in the kernel, a process of its own in its
    sandbox with its own limits, so worker processes would add nothing to that boundary. Starting them (a nanny
    and a worker per core, each a Python importing Dask) took 7.1 s of an 8-submission batch on two cores, while
    the reference run held the other core; in process the cluster starts in 0.8 s. Dask's memory limit is off:
    in process it would count the whole process against each worker's share of the machine and could pause
    them on a small one, while the memory that matters, the kernels', is the sandbox's to limit. Dask's
    statistical profiler is off too: every 10 ms it walks the stack of each busy worker thread and of the event
    loop, which in process are this grader's own threads (about 1 s of CPU in an 8-submission batch on two
    cores, and the GIL taken 100 times a second from the threads that drive the kernels), for a dashboard
    page nobody opens while grading."""
    import dask
    from distributed import Client, LocalCluster

    if scheduler:
        return Client(scheduler, timeout="30s"), None
    # Everything the local cluster listens on is on loopback and on a free port: Dask's defaults host the
    # scheduler's HTTP server on 0.0.0.0:8787 (warning when another cluster holds it) and each worker's on
    # 0.0.0.0. The scheduler and the workers talk in memory.
    with dask.config.set({"distributed.worker.profile.enabled": False}):  # read as the servers start
        cluster = LocalCluster(n_workers=max(1, workers), threads_per_worker=max(1, threads), processes=False,
                               memory_limit=0, dashboard_address="127.0.0.1:0",
                               worker_dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    return Client(cluster), cluster


def disconnect(client, cluster) -> None:
    client.close()
    if cluster is not None:
        cluster.close()


class Gate:
    """How many tasks may be in flight, and which goes next. This one: as many as the workers have threads, in
    the order given. A batch's own gate holds tasks back while reference runs hold cores (grade/batch.py).
    Anything put into `events` makes the dispatcher look at `limit()` again."""

    def __init__(self):
        self.events: queue.SimpleQueue = queue.SimpleQueue()

    def limit(self, slots: int, waiting: list[Job] = ()) -> int:
        """How many tasks may be in flight now, of `slots` worker threads, `waiting` the jobs not sent."""
        return slots

    def pick(self, waiting: list[Job]) -> int:
        return 0


def dispatch(jobs: list[Job], client, run: Callable[..., Result], make_task: Callable[[Job], Task],
             extra: Callable[[Job], object] | None = None, gate: Gate | None = None) -> Iterator[tuple[Job, Result]]:
    """Run the jobs' tasks on the client's workers (`run(task)`: worker.run_task); yield (job, result) as each
    finishes.

    A task is made (`make_task(job)`) only when it is sent, and no more are in flight than the workers have
    threads or the `gate` allows: a task sent after its notebook's reference run finished carries its
    calibration and reads the warmed cache. `extra(job)`, when not None, is passed to the worker as a second
    argument (the scattered cache pack). The dispatcher waits on events (a task done, the gate's own), never on
    a clock."""
    gate = gate or Gate()
    waiting = list(jobs)
    inflight: dict[str, tuple[object, Job]] = {}
    slots = max(1, sum(client.nthreads().values()) or 1)

    def send(job: Job) -> None:
        job.task = make_task(job)
        key = f"jaxpath-grade-{hashlib.sha1(job.task.id.encode()).hexdigest()}-{time.time_ns()}"
        arg = extra(job) if extra else None
        args = (job.task,) if arg is None else (job.task, arg)
        fut = client.submit(run, *args, key=key, pure=False, retries=0)
        inflight[fut.key] = (fut, job)
        fut.add_done_callback(gate.events.put)

    def top_up() -> None:  # keep the workers busy while the coordinator records
        while waiting and len(inflight) < min(slots, gate.limit(slots, waiting)):
            send(waiting.pop(gate.pick(waiting)))

    top_up()
    while inflight or waiting:
        item = gate.events.get()  # a task done, or the gate's own event (nothing running: the gate opening)
        if getattr(item, "key", None) not in inflight:
            top_up()
            continue
        fut, job = inflight.pop(item.key)
        top_up()
        try:
            result = fut.result()
        except Exception as e:
            why = texts.worker_failed(e)
            result = Result(job.task.id, _all_not_run(job.task.notebook, why), GradeStatus.CRASHED, why)
        yield job, result


def _all_not_run(nb_json: str, why: str) -> str:
    nb = nbformat.reads(nb_json, as_version=4)
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs = [texts.not_run(why)]
    return nbformat.writes(nb)
