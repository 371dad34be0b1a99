"""How a batch schedules its tasks beside its reference runs (grade/dispatch.py, grade/reference.py,
grade/batch.py): the gate that holds tasks back while reference runs hold the cores, the order tasks go in,
and the reference runs of one batch finishing one notebook at a time. No kernel runs here: the worker's
`run_task` is replaced by a function that records what it was given, and the reference runs by functions that
wait on events, so every check is of an order of events, never of a duration."""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import pytest

from jaxpath.grade.dispatch import Gate, disconnect, dispatch
from jaxpath.grade.follow import FOLLOWERS_PER_CORE
from jaxpath.grade.integrity import Reference
from jaxpath.grade.jobs import Job
from jaxpath.grade.reference import ReferenceGate, ReferenceRuns
from jaxpath.grade.statuses import GradeStatus
from jaxpath.grade.tasks import Result, Task

FINISHED: list[str] = []


def fake_run_task(task: Task) -> Result:
    """Stands in for the worker: runs nothing, and says it is done before its future completes (so a task the
    dispatcher still counts as in flight is never missing from FINISHED)."""
    FINISHED.append(task.id)
    return Result(task.id, task.notebook, GradeStatus.GRADED)


@pytest.fixture
def client():
    """A Dask client of two worker threads in this process, whose tasks run `fake_run_task`."""
    import logging

    from distributed import Client, LocalCluster

    FINISHED.clear()
    cluster = LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address="127.0.0.1:0",
                           worker_dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    c = Client(cluster)
    try:
        yield c
    finally:
        disconnect(c, cluster)


def jobs(*names: str) -> list[Job]:
    return [Job(f"s{i}", nb, None) for i, nb in enumerate(names)]


class Run:
    """Sends and results, in the order they happened (both in the thread that consumes `dispatch`). At each
    send, `in_flight` gets how many tasks would then be running: those sent and not finished, plus this one
    (at most what the dispatcher counts; never more)."""

    def __init__(self, gate=None):
        self.gate, self.sent, self.done, self.in_flight = gate, [], [], []

    def make_task(self, job: Job) -> Task:
        if self.gate is not None:
            assert self.gate.open, f"{job.student} was sent while the gate was closed"
        task = Task(f"demo/{job.student}/{job.notebook}", "{}")
        self.in_flight.append(len(self.sent) - len(FINISHED) + 1)
        self.sent.append(job.student)
        return task

    def __call__(self, client, todo):
        for job, result in dispatch(todo, client, fake_run_task, self.make_task, gate=self.gate):
            assert result.status == GradeStatus.GRADED
            self.done.append(job.student)
        return self


class OpensOnce(Gate):
    """Closed the first time the dispatcher asks; it then opens and says so through its event queue, as a
    batch's gate does when a reference run ends. Picks the last waiting job first."""

    def __init__(self):
        super().__init__()
        self.open, self.asked = False, 0

    def limit(self, slots: int, waiting=()) -> int:
        self.asked += 1
        if not self.open:
            self.open = True  # from the next question on
            self.events.put(None)
            return 0
        return 1

    def pick(self, waiting: list[Job]) -> int:
        return len(waiting) - 1


def test_nothing_is_sent_while_the_gate_is_closed_and_its_event_wakes_the_dispatcher(client):
    gate = OpensOnce()
    run = Run(gate)(client, jobs("a", "a", "b"))
    assert run.sent == ["s2", "s1", "s0"]  # the gate's pick, not the list's order
    assert sorted(run.done) == ["s0", "s1", "s2"]
    assert max(run.in_flight) == 1  # the gate allows one, the workers two
    assert gate.asked >= 2


def test_the_default_gate_sends_in_order_up_to_the_workers_threads(client):
    run = Run()(client, jobs("a", "b", "c", "d"))
    assert run.sent == ["s0", "s1", "s2", "s3"] and sorted(run.done) == run.sent
    assert max(run.in_flight) <= 2  # never more than the workers' two threads


class Blocking:
    """Reference runs that end when the test says so."""

    def __init__(self, *names: str):
        self.release = {n: threading.Event() for n in names}
        self.running = {n: threading.Event() for n in names}
        self.started: list[str] = []

    def __call__(self, name: str, on_cell=None) -> Reference:
        self.started.append(name)
        self.running[name].set()
        self.release[name].wait()
        return Reference(imports=[name])


def test_reference_runs_end_one_notebook_at_a_time():
    run = Blocking("01", "02", "03")
    ended = threading.Semaphore(0)
    refs = ReferenceRuns(run, {"03", "01", "02"}, workers=2, saved={"00": Reference(imports=["saved"])},
                         on_done=ended.release)
    try:
        assert refs.done("00") and refs.result("00").imports == ["saved"]  # saved: done from the start
        assert refs.done("not in the batch") and refs.result("not in the batch").names == {}
        assert not refs.done("01") and not refs.all_done()
        assert refs.busy() == 2  # two workers, three runs left
        run.release["01"].set()
        assert ended.acquire(timeout=600)  # a guard against a hang, not a measure
        assert refs.done("01") and refs.result("01").imports == ["01"] and not refs.done("03")
        assert refs.busy() == 2  # 02 runs, 03 has taken 01's place
        run.release["02"].set()
        assert ended.acquire(timeout=600)  # a guard against a hang, not a measure
        assert refs.busy() == 1 and not refs.all_done()
        run.release["03"].set()
        assert ended.acquire(timeout=600)
        assert refs.all_done() and refs.busy() == 0
        assert set(run.started[:2]) == {"01", "02"} and run.started[2] == "03"  # reference_order: sorted
        assert set(refs.wait()) == {"00", "01", "02", "03"}
    finally:
        for e in run.release.values():
            e.set()
        refs.close()


def test_closing_cancels_the_runs_not_started():
    run = Blocking("01", "02")
    ended = threading.Semaphore(0)
    refs = ReferenceRuns(run, {"01", "02"}, workers=1, on_done=ended.release)
    assert run.running["01"].wait(timeout=600)  # 01 has left the queue: only 02 is there to cancel
    closing = threading.Thread(target=refs.close)  # waits for 01, which runs (and blocks) on the one worker
    closing.start()
    try:
        assert ended.acquire(timeout=600)  # the first run to end is 02, cancelled while 01 still runs
        assert run.started == ["01"] and refs.done("02") and not refs.done("01")
    finally:
        run.release["01"].set()
        closing.join()
    assert refs.done("01") and refs.done("02")
    assert refs.all_done()


@dataclass
class FakeRefs:
    left: set
    workers: int = 1

    def busy(self) -> int:
        return min(self.workers, len(self.left))

    def all_done(self) -> bool:
        return not self.left

    def done(self, name: str) -> bool:
        return name not in self.left


def test_a_batch_sends_tasks_only_onto_cores_the_reference_runs_leave_free():
    gate = ReferenceGate(cores=2, workers=2)
    gate.refs = FakeRefs({"01", "02"}, workers=2)
    assert gate.limit(6, jobs("01", "02")) == 0  # two reference kernels on two cores: no core is free
    gate.refs.left = {"02"}
    waiting = jobs("02", "02", "01")
    assert gate.limit(6, waiting) == 1  # 01's reference is done: one warm task on the free core
    assert gate.pick(waiting) == 2  # ... and it goes first
    assert gate.limit(6, jobs("02", "02")) == FOLLOWERS_PER_CORE  # only 02's: tasks that follow its reference
    gate.refs.left = set()
    assert gate.limit(6, waiting) == 2 and gate.limit(1, waiting) == 1  # all done: the workers, or the threads
    one = ReferenceGate(cores=2, workers=1)
    one.refs = FakeRefs({"01"})
    assert one.limit(3, jobs("01")) == FOLLOWERS_PER_CORE  # cold submissions follow their reference run
    assert one.pick(jobs("01")) == 0  # nothing done: the first in line


def test_a_remote_cluster_gets_no_task_before_every_reference_is_done():
    gate = ReferenceGate(cores=16, workers=None)
    gate.refs = FakeRefs({"01"})
    assert gate.limit(8, jobs("01")) == 0
    gate.refs.left = set()
    assert gate.limit(8, jobs("01")) == 8  # all done: every thread the cluster has


def test_a_reference_run_publishes_its_progress_to_the_tasks_of_this_process():
    """What a task beside its reference follows (worker.run_task): the cells the run has done, under a key the
    batch gives the task; once the run is over nothing is waited for, and once the batch is over the key
    leads nowhere."""
    from jaxpath.grade.follow import following

    cell_done, release = threading.Semaphore(0), threading.Event()

    def run(name: str, on_cell) -> Reference:
        on_cell(1)
        cell_done.release()
        release.wait()
        on_cell(2)
        return Reference(imports=[name])

    refs = ReferenceRuns(run, {"01"}, workers=1)
    key = refs.follow_key("01")
    progress = following(key)
    try:
        assert progress is not None and refs.follow_key("not in the batch") is None
        assert cell_done.acquire(timeout=600)  # a guard against a hang, not a measure
        assert progress.wait(1) >= 0 and progress.cells == 1 and not progress.over
        release.set()
        progress.wait(3)  # more cells than the run has: returns once the run is over
        assert progress.over and progress.cells == 2
        refs.wait()
        assert refs.follow_key("01") is None  # done: a task now goes warm, following nothing
    finally:
        release.set()
        refs.close()
    assert following(key) is None


def test_each_new_cache_entry_is_published_whole_once_and_never_over_one_there(tmp_path):
    """The reference run's staging folder and the cache the tasks read (reference._staging, _publish): what the
    cache holds is linked in and not looked at again; an entry the kernel writes appears in the cache after the
    cell, as the same file (a hard link, readable by the sandboxes' uids); an entry another run published
    meanwhile under the same name is kept as it is."""
    from jaxpath.grade.reference import _publish, _staging

    cache = tmp_path / "jax-cache" / "basics"
    cache.mkdir(parents=True)
    (cache / "a-cache").write_bytes(b"a")
    (cache / ".warmed-01-x").touch()
    staging, published = _staging(cache, "01")
    assert published == {"a-cache"} and sorted(p.name for p in staging.iterdir()) == ["a-cache"]
    assert (staging / "a-cache").stat().st_ino == (cache / "a-cache").stat().st_ino

    (staging / "b-cache").write_bytes(b"b")  # what one cell compiled
    os.chmod(staging / "b-cache", 0o600)
    (staging / "c-cache").write_bytes(b"mine")
    (cache / "c-cache").write_bytes(b"theirs")  # another notebook's reference run got there first
    _publish(staging, cache, published)
    assert (cache / "b-cache").stat().st_ino == (staging / "b-cache").stat().st_ino
    assert (cache / "b-cache").stat().st_mode & 0o777 == 0o644
    assert (cache / "c-cache").read_bytes() == b"theirs"
    assert published == {"a-cache", "b-cache", "c-cache"}

    (staging / "d-cache").write_bytes(b"d")  # the next cell
    _publish(staging, cache, published)
    assert (cache / "d-cache").read_bytes() == b"d"
    assert sorted(p.name for p in cache.iterdir()) == [".warmed-01-x", "a-cache", "b-cache", "c-cache", "d-cache"]
