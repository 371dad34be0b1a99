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
from pathlib import Path

import nbformat

from ..cells import grade_id, is_test
from ..execute import HIDDEN_ERROR, Session, kernel_env
from ..files import write_into
from ..kernel import source as kernel_source
from . import integrity
from .cachepack import CachePack, reader_env, unpack
from .isolation import NONE, Level
from .isolation.rlimits import address_space_mb
from .reference import following
from .sandbox import Sandbox, Written, written_files
from .statuses import GradeStatus
from .tasks import IntegritySpec, Result, Task

NBGRADER_ENV = {"NBGRADER_EXECUTION": "autograde"}
"""What nbgrader's autograde sets while a submission runs (nbgrader/converters/autograde.py), so a notebook
that branches on it runs as it would under nbgrader."""



def _error_output(ename: str, evalue: str):
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


PRELUDE_TIMEOUT = 120.0
"""Seconds the grader's own start of a kernel (importing JAX, the integrity prelude) may take, each."""


def run_task(task: Task, cache_pack: CachePack | None = None) -> Result:  # noqa: C901
    """Execute task.notebook (nbformat JSON) with task.files beside it.

    Returns the executed notebook, a status (graded, timed out, crashed) and its reason, and the files
    the notebook created or changed in its folder and those it removed. Cells that
    could not run after a crash or a timeout get an error output saying so, so they score zero while the
    cells graded before keep their points.

    `cache_pack` (a worker on another machine than the coordinator's) is the warmed compilation cache,
    unpacked once per machine and used when it was compiled for this kind of machine."""
    limits = task.limits
    if cache_pack is not None and task.jax_cache is None:
        try:
            task.jax_cache = unpack(cache_pack)
        except OSError:  # a full temporary folder: compile instead
            task.jax_cache = None
    cache_hits: list[int] = []
    written = Written({}, [], [])
    nb = nbformat.reads(task.notebook, as_version=4)
    files = dict(task.files)
    t0 = time.perf_counter()
    status, reason = GradeStatus.GRADED, ""
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    for i in code_cells:
        nb.cells[i].outputs, nb.cells[i].execution_count = [], None

    guard = _Guard(nb, task.integrity) if task.integrity else None
    # Graded beside its reference run on this machine: each code cell runs once the reference has run its own,
    # reading what that compiled, and in turn with the other such tasks (reference.Progress). The waits are not
    # the notebook's time.
    leader = following(task.integrity.follow) if task.integrity and task.integrity.deferred else None
    paused = 0.0
    times: dict[str, float] = {}
    clock = [time.perf_counter()]

    def lap(name: str) -> None:
        """Seconds since the last lap, added to `name`: where a notebook's time goes (`jaxpath grade --times`)."""
        now = time.perf_counter()
        times[name] = times.get(name, 0.0) + now - clock[0]
        clock[0] = now

    def execute(session: Session) -> None:
        lap("kernel start")
        if guard:
            with contextlib.ExitStack() as turn:
                if leader is not None:  # importing jax and the prelude are a cell's worth of work too
                    follow(turn)
                guard.start(session, lap, max(PRELUDE_TIMEOUT, limits.cell_timeout))
        if task.jax_cache:
            session.evaluate(kernel_source("cachestats") + "\n__jaxpath_cache_stats(); del __jaxpath_cache_stats\n", "None")
        try:
            run_cells(session)
        finally:
            lap("cells")
        if task.jax_cache and not session.dead:
            ok, text = session.evaluate("", "__import__('sys').modules['_jaxpath_cache'].hits", timeout=10)
            if ok and text and text.isdigit():
                cache_hits.append(int(text))

    def follow(turn: contextlib.ExitStack, cells: int = 0) -> None:
        """Wait until the reference has run `cells` code cells, then for a turn held until `turn` closes: time
        shown apart and not counted as the notebook's."""
        nonlocal paused
        lap("cells")
        if cells:
            paused += leader.wait(cells)
        paused += turn.enter_context(leader.turn())
        lap("following the reference run")

    def run_cells(session: Session) -> None:
        for n, i in enumerate(code_cells):
            with contextlib.ExitStack() as turn:
                if leader is not None and not leader.over:
                    follow(turn, n + 1)
                if not run_cell(session, n, i):
                    return

    def run_cell(session: Session, n: int, i: int) -> bool:
        """Run code cell `i` (the n-th); False when the notebook stops there."""
        nonlocal status, reason
        if time.perf_counter() - t0 - paused > limits.notebook_timeout:
            status = GradeStatus.TIMED_OUT
            reason = f"the notebook ran past its {limits.notebook_timeout} s limit at cell {i + 1}"
            _mark_rest(nb, code_cells[n:], "not run: the notebook ran out of time")
            session.kill()
            return False
        out = guard.run_test(session, i) if guard and i in guard.tests else session.run(i)
        if out.error_name == "Aborted":
            nb.cells[i].outputs.append(_error_output("NotRun", "the kernel aborted this cell without running it"))
        if out.dead:
            status = GradeStatus.CRASHED
            reason = f"the kernel died in cell {i + 1}"
            nb.cells[i].outputs.append(_error_output("DeadKernelError", "the kernel died while running this cell"))
            _mark_rest(nb, code_cells[n + 1:], f"not run: the kernel died in cell {i + 1}")
            return False
        if out.timed_out:
            status, reason = GradeStatus.TIMED_OUT, f"cell {i + 1} ran past its {limits.cell_timeout} s limit"
            if not session.responsive():
                reason += " and ignored the interrupt"
                session.kill()
                _mark_rest(nb, code_cells[n + 1:], f"not run: cell {i + 1} never finished")
                return False
        return True

    level = Level.parse(task.isolation) if task.isolation else None  # None: what this host gives
    if task.sandbox:
        with Sandbox(files, limits, {"IPYTHONDIR": "/tmp/.ipython", **NBGRADER_ENV}, jax_cache=task.jax_cache,
                     level=level, font_list=task.font_list) as sb:
            lap("sandbox")
            km = sb.kernel_manager(task.kernel_name)
            try:
                with Session(nb, sb.workdir, timeout=limits.cell_timeout, km=km, env={},
                             kernel_name=task.kernel_name) as s:
                    execute(s)
            except RuntimeError as e:  # the kernel did not start
                status, reason = GradeStatus.CRASHED, f"the kernel did not start: {e}"
                _mark_rest(nb, code_cells, "not run: the kernel did not start")
            if status == GradeStatus.CRASHED and sb.cgroup.oom_killed():
                reason += f": it used more than its {limits.memory_mb} MB of memory"
            elif not sb.level.cgroup and _raised(nb, "MemoryError"):  # rlimits: the cell fails, the kernel lives
                reason = (reason + "; " if reason else "") + ("a cell ran out of memory (MemoryError at the "
                                                              f"{address_space_mb(limits)} MB address-space limit)")
        written, level = sb.written, sb.level
    else:
        with tempfile.TemporaryDirectory(prefix="jaxpath-nosbx-") as d:
            write_into(Path(d), files)  # a path that climbs out of the folder is never written
            env = {**kernel_env(), **NBGRADER_ENV}
            if task.jax_cache:
                env.update(reader_env(task.jax_cache))
            with Session(nb, d, timeout=limits.cell_timeout, env=env, kernel_name=task.kernel_name) as s:
                execute(s)
            written = written_files(Path(d), files, limits.file_mb * 1024 * 1024)
    lap("teardown")
    if guard and guard.broken:  # graded all the same, but the grader says what it could not check
        reason = (reason + "; " if reason else "") + guard.broken + ": tampering in the kernel was not checked"
    if written.left_out:
        reason = (reason + "; " if reason else "") + "files it wrote not kept: " + ", ".join(written.left_out[:5])
    return Result(task.id, nbformat.writes(nb), status, reason, seconds=time.perf_counter() - t0,
                  worker=socket.gethostname(), tampering=guard.evidence if guard else [], written=written.files,
                  removed=written.removed, isolation=level.name if task.sandbox else NONE.name,
                  probes=guard.probes if guard else [], times=times,
                  cache_hits=cache_hits[0] if cache_hits else None)


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
        self.probes: list[dict] = []
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
            self.broken = "the integrity prelude failed"

    def _fail(self, cell, ename: str, why: str, i: int) -> None:
        cell.outputs.append(nbformat.v4.new_output("error", ename=ename, evalue=why, traceback=[f"{ename}: {why}"]))
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
        if out.error_name == HIDDEN_ERROR:
            self.evidence.append(f"cell {i + 1} ({self.tests[i]}): it raised, but no error was displayed")
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
            self._fail(cell, "NotCounted", "the test reported success without running to its end as written", i)
            return out
        if data is None:
            why = "the grader's integrity probe got no answer after this test"
            if passed:
                self._fail(cell, "NotCounted", why + "; the pass is not counted", i)
            else:
                self.evidence.append(f"cell {i + 1} ({gid}): {why}")
            return out
        if self.deferred:  # judged by the coordinator against the reference run, once that is done
            self.probes.append({"cell": i, "gid": gid, "passed": passed, "data": data, "digest": self.digest})
            return out
        line = integrity.verdict(cell, f"cell {i + 1} ({gid})", passed,
                                 integrity.judge(data, self.digest, expect, self.ignore))
        if line:
            self.evidence.append(line)
        return out


def _mark_rest(nb, indices, why: str) -> None:
    for i in indices:
        nb.cells[i].outputs = [_error_output("NotRun", why)]
