"""The worker side of grading: execute one prepared notebook and hand back what happened.

A task carries the notebook and its files (not paths), so a worker needs no shared filesystem: it may
be a process of a local Dask cluster or a machine of a remote one. Pass or fail is not decided here;
the coordinator reads the executed notebook with nbgrader's own grading code.
"""
from __future__ import annotations

import socket
import tempfile
import time
from pathlib import Path

import nbformat

from ..execute import Session, kernel_env
from .sandbox import Limits, Sandbox

GRADED, TIMED_OUT, CRASHED = "graded", "timed out", "crashed"


def _error_output(ename: str, evalue: str):
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def run_task(task: dict) -> dict:
    """Execute task['notebook'] (nbformat JSON) with task['files'] beside it.

    Returns the executed notebook, a status ('graded', 'timed out', 'crashed') and its reason. Cells that
    could not run after a crash or a timeout get an error output saying so, so they score zero while the
    cells graded before keep their points."""
    limits = Limits(**task.get("limits", {}))
    nb = nbformat.reads(task["notebook"], as_version=4)
    files = dict(task.get("files", {}))
    t0 = time.perf_counter()
    status, reason = GRADED, ""
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    for i in code_cells:
        nb.cells[i].outputs, nb.cells[i].execution_count = [], None

    def execute(session: Session) -> None:
        nonlocal status, reason
        for n, i in enumerate(code_cells):
            if time.perf_counter() - t0 > limits.notebook_timeout:
                status, reason = TIMED_OUT, f"the notebook ran past its {limits.notebook_timeout} s limit at cell {i + 1}"
                _mark_rest(nb, code_cells[n:], "not run: the notebook ran out of time")
                session.kill()
                return
            out = session.run(i)
            if out.error_name == "Aborted":
                nb.cells[i].outputs.append(_error_output("NotRun", "the kernel aborted this cell without running it"))
            if out.dead:
                status = CRASHED
                reason = f"the kernel died in cell {i + 1}"
                nb.cells[i].outputs.append(_error_output("DeadKernelError", "the kernel died while running this cell"))
                _mark_rest(nb, code_cells[n + 1:], f"not run: the kernel died in cell {i + 1}")
                return
            if out.timed_out:
                status, reason = TIMED_OUT, f"cell {i + 1} ran past its {limits.cell_timeout} s limit"
                if not session.responsive():
                    reason += " and ignored the interrupt"
                    session.kill()
                    _mark_rest(nb, code_cells[n + 1:], f"not run: cell {i + 1} never finished")
                    return

    if task.get("sandbox", True):
        with Sandbox(files, limits, {"IPYTHONDIR": "/tmp/.ipython"}, jax_cache=task.get("jax_cache")) as sb:
            km = sb.kernel_manager(task.get("kernel_name", "python3"))
            try:
                with Session(nb, sb.workdir, timeout=limits.cell_timeout, km=km, env={},
                             kernel_name=task.get("kernel_name", "python3")) as s:
                    execute(s)
            except RuntimeError as e:  # the kernel did not start
                status, reason = CRASHED, f"the kernel did not start: {e}"
                _mark_rest(nb, code_cells, "not run: the kernel did not start")
            if status == CRASHED and sb.cgroup.oom_killed():
                reason += f": it used more than its {limits.memory_mb} MB of memory"
    else:
        with tempfile.TemporaryDirectory(prefix="jaxpath-nosbx-") as d:
            for rel, data in files.items():
                target = Path(d, rel)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            env = kernel_env()
            if task.get("jax_cache"):
                env.update(JAX_COMPILATION_CACHE_DIR=task["jax_cache"], JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
            with Session(nb, d, timeout=limits.cell_timeout, env=env,
                         kernel_name=task.get("kernel_name", "python3")) as s:
                execute(s)
    return {"id": task["id"], "notebook": nbformat.writes(nb), "status": status, "reason": reason,
            "seconds": time.perf_counter() - t0, "worker": socket.gethostname()}


def _mark_rest(nb, indices, why: str) -> None:
    for i in indices:
        nb.cells[i].outputs = [_error_output("NotRun", why)]
