"""The worker side of grading: execute one prepared notebook and hand back what happened.

A task carries the notebook and its files (not paths), so a worker needs no shared filesystem: it may
be a process of a local Dask cluster or a machine of a remote one. Pass or fail is not decided here;
the coordinator reads the executed notebook with nbgrader's own grading code.
"""
from __future__ import annotations

import contextlib
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .. import texts
from ..cells import grade_id, is_test
from ..execute import Session, kernel_env
from ..files import write_into
from ..kernel import source as kernel_source
from . import integrity
from .cachepack import CachePack, reader_env, unpack
from .follow import Follower, following
from .isolation import NONE, Level
from .isolation.rlimits import address_space_mb
from .sandbox import Sandbox, Written, written_files
from .statuses import GradeStatus
from .tasks import IntegritySpec, Probe, Result, Task

NBGRADER_ENV = {"NBGRADER_EXECUTION": "autograde"}
"""What nbgrader's autograde sets while a submission runs (nbgrader/converters/autograde.py), so a notebook
that branches on it runs as it would under nbgrader."""



PRELUDE_TIMEOUT = 120.0
"""Seconds the grader's own start of a kernel (importing JAX, the integrity prelude) may take, each."""


def run_task(task: Task, cache_pack: CachePack | None = None) -> Result:
    """Execute task.notebook (nbformat JSON) with task.files beside it.

    Returns the executed notebook, a status (graded, timed out, crashed) and its reason, and the files
    the notebook created or changed in its folder and those it removed. Cells that
    could not run after a crash or a timeout get an error output saying so, so they score zero while the
    cells graded before keep their points.

    `cache_pack` (a worker on another machine than the coordinator's) is the warmed compilation cache,
    unpacked once per machine and used when it was compiled for this kind of machine."""
    return TaskRun(task, cache_pack).run()


@dataclass
class _Place:
    """Where the kernel starts: its work folder, and either a kernel manager (the sandbox's) or an environment."""
    workdir: Path | str
    km: object | None = None
    env: dict[str, str] = field(default_factory=dict)


class TaskRun:
    """One task, in phases: `place` (a sandbox, or a temporary folder where isolation is off), `start` (the
    kernel, the integrity prelude), `cells` (each code cell in turn, following the reference run where the task
    was sent beside it), then `result`. Every kernel starts through `start`, sandboxed or not."""

    def __init__(self, task: Task, cache_pack: CachePack | None = None):
        self.task, self.limits = task, task.limits
        if cache_pack is not None and task.jax_cache is None:
            try:
                task.jax_cache = unpack(cache_pack)
            except OSError:  # a full temporary folder: compile instead
                task.jax_cache = None
        self.nb = nbformat.reads(task.notebook, as_version=4)
        self.code_cells = [i for i, c in enumerate(self.nb.cells) if c.cell_type == "code"]
        for i in self.code_cells:
            self.nb.cells[i].outputs, self.nb.cells[i].execution_count = [], None
        self.status, self.reason = GradeStatus.GRADED, ""
        self.guard = _Guard(self.nb, task.integrity) if task.integrity else None
        self.written, self.level, self.cache_hits = Written({}, [], []), NONE, None
        self.times: dict[str, float] = {}
        self.t0 = self._clock = time.perf_counter()
        # Sent beside its reference run on this machine: each code cell runs once the reference has run its own
        # (follow.py). The waits are not the notebook's time.
        progress = following(task.follow)
        self.follower = Follower(progress, self.lap) if progress is not None else None

    def lap(self, name: str) -> None:
        """Seconds since the last lap, added to `name`: where a notebook's time goes (`jaxpath grade --times`)."""
        now = time.perf_counter()
        self.times[name] = self.times.get(name, 0.0) + now - self._clock
        self._clock = now

    def _follow(self, cells: int = 0):
        return self.follower.cell(cells) if self.follower is not None else contextlib.nullcontext()

    def run(self) -> Result:
        place = self._sandboxed() if self.task.sandbox else self._unsandboxed()
        with place as where:
            if self.task.sandbox:
                self.lap("sandbox")
            self.start(where)
        self.lap("teardown")
        return self.result()

    @contextlib.contextmanager
    def _sandboxed(self):
        limits = self.limits
        level = Level.parse(self.task.isolation) if self.task.isolation else None  # None: what this host gives
        with Sandbox(dict(self.task.files), limits, {"IPYTHONDIR": "/tmp/.ipython", **NBGRADER_ENV},
                     jax_cache=self.task.jax_cache, level=level, font_list=self.task.font_list) as sb:
            yield _Place(sb.workdir, km=sb.kernel_manager(self.task.kernel_name))
            if self.status == GradeStatus.CRASHED and sb.cgroup.oom_killed():
                self.reason += texts.reason_out_of_memory(limits.memory_mb)
            elif not sb.level.cgroup and _raised(self.nb, "MemoryError"):  # rlimits: the cell fails, the kernel lives
                self.reason = texts.joined(self.reason, texts.reason_memory_error(address_space_mb(limits)))
        self.written, self.level = sb.written, sb.level

    @contextlib.contextmanager
    def _unsandboxed(self):
        with tempfile.TemporaryDirectory(prefix="jaxpath-nosbx-") as d:
            write_into(Path(d), self.task.files)  # a path that climbs out of the folder is never written
            env = {**kernel_env(), **NBGRADER_ENV}
            if self.task.jax_cache:
                env.update(reader_env(self.task.jax_cache))
            yield _Place(d, env=env)
            self.written = written_files(Path(d), self.task.files, self.limits.file_mb * 1024 * 1024)

    def start(self, where: _Place) -> None:
        """Start the kernel at `where`, then the grader's own start (the integrity prelude, the cache counter)
        and the cells. A kernel that does not start crashes the notebook, every cell not run."""
        try:
            with Session(self.nb, where.workdir, timeout=self.limits.cell_timeout, km=where.km, env=where.env,
                         kernel_name=self.task.kernel_name) as session:
                self.lap("kernel start")
                if self.guard:
                    with self._follow():  # importing jax and the prelude are a cell's worth of work too
                        self.guard.start(session, self.lap, max(PRELUDE_TIMEOUT, self.limits.cell_timeout))
                if self.task.jax_cache:
                    session.evaluate(kernel_source("cachestats") + "\n__jaxpath_cache_stats(); del __jaxpath_cache_stats\n",
                                     "None")
                try:
                    self.cells(session)
                finally:
                    self.lap("cells")
                if self.task.jax_cache and not session.dead:
                    ok, text = session.evaluate("", "__import__('sys').modules['_jaxpath_cache'].hits", timeout=10)
                    if ok and text and text.isdigit():
                        self.cache_hits = int(text)
        except RuntimeError as e:  # the kernel did not start
            self.status, self.reason = GradeStatus.CRASHED, texts.reason_no_kernel(e)
            _mark_rest(self.nb, self.code_cells, texts.NO_KERNEL)

    def cells(self, session: Session) -> None:
        for n, i in enumerate(self.code_cells):
            with self._follow(n + 1):
                if not self.cell(session, n, i):
                    return

    def cell(self, session: Session, n: int, i: int) -> bool:
        """Run code cell `i` (the n-th); False when the notebook stops there."""
        limits, nb = self.limits, self.nb
        paused = self.follower.paused if self.follower is not None else 0.0
        if time.perf_counter() - self.t0 - paused > limits.notebook_timeout:
            self.status = GradeStatus.TIMED_OUT
            self.reason = texts.reason_notebook_timeout(limits.notebook_timeout, i + 1)
            _mark_rest(nb, self.code_cells[n:], texts.OUT_OF_TIME)
            session.kill()
            return False
        out = self.guard.run_test(session, i) if self.guard and i in self.guard.tests else session.run(i)
        if out.error_name == "Aborted":
            nb.cells[i].outputs.append(texts.aborted())
        if out.dead:
            self.status, self.reason = GradeStatus.CRASHED, texts.reason_kernel_died(i + 1)
            nb.cells[i].outputs.append(texts.dead_kernel())
            _mark_rest(nb, self.code_cells[n + 1:], texts.after_death(i + 1))
            return False
        if out.timed_out:
            self.status, self.reason = GradeStatus.TIMED_OUT, texts.reason_cell_timeout(i + 1, limits.cell_timeout)
            if not session.responsive():
                self.reason += texts.IGNORED_INTERRUPT
                session.kill()
                _mark_rest(nb, self.code_cells[n + 1:], texts.after_hang(i + 1))
                return False
        return True

    def result(self) -> Result:
        reason, guard = self.reason, self.guard
        if guard and guard.broken:  # graded all the same, but the grader says what it could not check
            reason = texts.joined(reason, texts.reason_unchecked(guard.broken))
        if self.written.left_out:
            reason = texts.joined(reason, texts.reason_files_not_kept(self.written.left_out))
        return Result(self.task.id, nbformat.writes(self.nb), self.status, reason, seconds=time.perf_counter() - self.t0,
                      worker=socket.gethostname(), tampering=guard.evidence if guard else [], written=self.written.files,
                      removed=self.written.removed, isolation=self.level.name if self.task.sandbox else NONE.name,
                      probes=guard.probes if guard else [], times=self.times, cache_hits=self.cache_hits)


def _raised(nb, ename: str) -> bool:
    return any(o.get("ename") == ename for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


class _Guard:
    """The grader's side of jaxpath.grade.integrity: a prelude before any student code, each test cell run
    with an end token, and a probe after each test. A pass the evidence does not back is turned into a
    failure with an error output that says why; all evidence is reported (the notebook is then *tampered*)."""

    def __init__(self, nb, spec: IntegritySpec):
        self.nb = nb
        self.names, self.ignore, self.imports, self.roots = spec.names, spec.ignore, spec.imports, spec.roots
        self.deferred = spec.deferred
        self.probes: list[Probe] = []
        self.tests = {i: grade_id(c) for i, c in enumerate(nb.cells) if is_test(c)}
        self.evidence: list[str] = []
        self.digest = None
        self.broken = ""

    def start(self, session: Session, lap=lambda name: None, timeout: float = PRELUDE_TIMEOUT) -> None:
        """The integrity prelude, before any student code. It is the grader's own work (the imports are the
        source notebook's), so the student's cell time limit does not bound it: on a loaded machine it
        once took longer than a 5 s cell limit, and the notebook was graded unchecked."""
        session.evaluate("import jax, jax.numpy, numpy", "None", timeout)  # the prelude imports them too: timed apart
        lap("import jax")
        ok, text = session.evaluate(integrity.prelude_code(self.imports, self.roots), integrity.RESULT, timeout)
        lap("integrity prelude")
        data = integrity.parse_result(text) if ok else None
        self.digest = data.get("digest") if data else None
        if self.digest is None:  # before any student code: a fault of the grader's, not the student's
            self.broken = texts.PRELUDE_FAILED

    def _fail(self, cell, why: str, i: int) -> None:
        integrity.void(cell, why)
        self.evidence.append(f"cell {i + 1} ({self.tests[i]}): {why}")

    def run_test(self, session: Session, i: int):
        cell = self.nb.cells[i]
        token = integrity.new_token()
        source = cell.source
        if not self.broken:
            cell.source = integrity.with_trailer(source, token)
        try:
            out = session.run(i)
        finally:
            cell.source = source
        if out.error_name == texts.HIDDEN_ERROR:
            self.evidence.append(f"cell {i + 1} ({self.tests[i]}): {texts.RAISED_UNSEEN}")
        if self.broken or out.dead or out.timed_out or session.dead:
            return out
        # Probe after every test, passed or not: tampering is flagged for review even when it did not pay.
        passed = out.ok
        gid = self.tests[i]
        expect = dict.fromkeys(self.names.get(gid, {}), "") if self.deferred else integrity.expected(self.names.get(gid, {}))
        nonce = integrity.new_token()
        ok, text = session.evaluate(integrity.probe_code(nonce, expect, self.ignore), integrity.RESULT)
        data = integrity.parse_result(text) if ok else None
        if data is not None and data.get("nonce") != nonce:
            data = None
        if data is not None and passed and data.get("ended") != token:
            self._fail(cell, texts.ENDED_EARLY, i)
            return out
        if data is None:
            why = texts.NO_PROBE_ANSWER
            if passed:
                self._fail(cell, why + "; the pass is not counted", i)
            else:
                self.evidence.append(f"cell {i + 1} ({gid}): {why}")
            return out
        if self.deferred:  # judged by the coordinator against the reference run, once that is done
            self.probes.append(Probe(i, gid, passed, data, self.digest))
            return out
        line = integrity.verdict(cell, f"cell {i + 1} ({gid})", passed,
                                 integrity.judge(data, self.digest, expect, self.ignore))
        if line:
            self.evidence.append(line)
        return out


def _mark_rest(nb, indices, why: str) -> None:
    for i in indices:
        nb.cells[i].outputs = [texts.not_run(why)]
