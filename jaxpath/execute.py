"""The one notebook executor (nbclient), used by validate, appendix, site and grading.

`Session` keeps one kernel alive and runs cells one at a time, so callers can interleave their own
cells (variants, probes) with the notebook's and see each cell's outcome.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from .files import private_temp_dir
from .kernel import source as kernel_source
from .texts import CELL_TIMEOUT, HIDDEN_ERROR, HIDDEN_ERROR_WHY, OUTPUT_LOST, cell_timeout, error_output, output_lost


@dataclass
class CellOutcome:
    ok: bool
    error_name: str = ""
    error_value: str = ""
    traceback: str = ""
    timed_out: bool = False
    dead: bool = False
    seconds: float = 0.0
    reply: str = ""
    """The status of the kernel's execute reply ("ok", "error", "aborted"), when one came."""

    @property
    def summary(self) -> str:
        if self.dead:
            return "the kernel died"
        if self.timed_out:
            return "timed out"
        first = self.error_value.strip().splitlines()[0] if self.error_value.strip() else ""
        return f"{self.error_name}: {first}" if first else self.error_name


def kernel_env() -> dict:
    """The kernel's environment: the course's Python first on PATH, no inherited Jupyter state."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JPY_", "JUPYTER_"))}
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.setdefault("PYTHONHASHSEED", "0")
    # matplotlib's inline backend, as in Jupyter: a figure a chapter shows becomes an image output (under Agg,
    # plt.show() shows nothing); it needs no display either
    env.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    return env


IOPUB_TIMEOUT = 10
"""Seconds a cell's output may lag behind its execute reply (nbclient's default is 4). A cell whose output
has not ended by then fails (OUTPUT_LOST) instead of passing with the output it has."""

TIMED_OUT_IOPUB_TIMEOUT = 2
"""Seconds the output of a cell that ran past its time limit may take to end once it has been interrupted. The
cell has failed already; a kernel that ignores the interrupt never ends it, and waiting IOPUB_TIMEOUT for it,
and again for the probe that then finds the kernel deaf (`Session.responsive`), made such a notebook take four
times its cell limit. What is still on its way is read past by the next cell, whose own wait is IOPUB_TIMEOUT."""

MAX_CELL_OUTPUT = 2 * 2**20
"""Bytes of output one cell keeps (stream text and displays); an error output is always kept."""


class _CappedClient(NotebookClient):
    """nbclient, keeping at most MAX_CELL_OUTPUT bytes of output per cell: a cell that prints without
    end costs its time limit, not the grader's memory."""

    max_cell_output = MAX_CELL_OUTPUT

    def output(self, outs, msg, display_id, cell_index):
        if msg["msg_type"] == "error":
            return super().output(outs, msg, display_id, cell_index)
        used = getattr(self, "_jaxpath_used", {})
        self._jaxpath_used = used
        spent = used.get(cell_index, 0)
        if spent > self.max_cell_output:
            return None  # already cut: drop silently
        size = len(json.dumps(msg.get("content", {})))
        if spent + size <= self.max_cell_output:
            used[cell_index] = spent + size
            return super().output(outs, msg, display_id, cell_index)
        used[cell_index] = self.max_cell_output + 1
        out = None
        if msg["msg_type"] == "stream":  # keep the part of the text that fits
            msg = {**msg, "content": {**msg["content"], "text": msg["content"].get("text", "")[: self.max_cell_output - spent]}}
            out = super().output(outs, msg, display_id, cell_index)
        outs.append(nbformat.v4.new_output("stream", name="stderr", text=(
            f"\n[jaxpath: output past {self.max_cell_output // 2**20} MB was dropped]\n")))
        return out

    def reset_output_count(self, cell_index: int) -> None:
        getattr(self, "_jaxpath_used", {}).pop(cell_index, None)

    complete: int | None = None
    """The index of the last cell whose output ended (its `status: idle` arrived on IOPub). nbclient waits
    `iopub_timeout` seconds for it after the execute reply, then goes on with whatever output it has, and a
    test cell whose output (its error, or the score it ends in) never arrived would count as passed: after a
    cell that printed without end was interrupted, the IOPub backlog held back the next cell's output so (a
    hostile case got full marks on a loaded machine)."""

    def process_message(self, msg, cell, cell_index):
        if msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle":
            self.complete = cell_index
        return super().process_message(msg, cell, cell_index)

    async def _async_handle_timeout(self, timeout, cell=None):
        reply = await super()._async_handle_timeout(timeout, cell)
        self.iopub_timeout = TIMED_OUT_IOPUB_TIMEOUT  # this cell only: `Session._execute` sets it back
        return reply


class Session:
    """A kernel running one notebook cell by cell.

    with Session(nb, cwd) as s:
        outcome = s.run(index)            # a cell of the notebook, outputs kept in the notebook
        outcome = s.run_code("x = 1")     # a cell of the caller's, outputs discarded
    """

    def __init__(self, nb: nbformat.NotebookNode, cwd: Path | str, *, timeout: int = 180,
                 startup_timeout: int = 60, kernel_name: str = "python3", km: AsyncKernelManager | None = None,
                 env: dict | None = None):
        self.nb = nb
        self._env = env
        # ZeroMQ over ipc sockets in a private folder: nothing listens on TCP, and the sandbox used in
        # grading (no network namespace) works the same way.
        self._sockdir = str(private_temp_dir("kernel"))
        self.km = km or AsyncKernelManager(kernel_name=kernel_name, transport="ipc",
                                           ip=os.path.join(self._sockdir, "k"))
        self.client = _CappedClient(
            nb, km=self.km, timeout=timeout, startup_timeout=startup_timeout, kernel_name=kernel_name,
            allow_errors=True, record_timing=False,
            # On a timeout nbclient interrupts the kernel and returns this error at once. (Raising instead
            # would leave nbclient's output reader of the timed-out cell running, and it would swallow the
            # outputs of the cells after it.)
            interrupt_on_timeout=True,
            error_on_timeout=cell_timeout(timeout),
            iopub_timeout=IOPUB_TIMEOUT,
            resources={"metadata": {"path": str(cwd)}})
        self._ctx = None
        self.dead = False
        self._reply_status = None
        self._interrupted = False
        """Whether the last request ran past its limit and nbclient interrupted the kernel then (`responsive`)."""
        self.client.on_cell_executed = self._on_cell_executed

    def _on_cell_executed(self, cell=None, cell_index=None, execute_reply=None, **kw) -> None:
        content = (execute_reply or {}).get("content", {})
        self._reply_status = content.get("status")
        if content.get("ename") == CELL_TIMEOUT:
            self._reply_status = "timeout"

    def __enter__(self) -> "Session":
        try:
            self._ctx = self.client.setup_kernel(env=self._env if self._env is not None else kernel_env(),
                                                 cwd=str(self.client.resources["metadata"]["path"]))
            self._ctx.__enter__()
        except BaseException:  # a kernel that did not start: `with` calls no __exit__, so clean up here
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._ctx.__exit__(*exc)
        except Exception:
            pass
        finally:
            # nbclient neither stops the client's channels nor shuts down a kernel manager it did not create
            # (its `cleanup_kc` follows `owns_km`). Channels left running keep a heartbeat thread per kernel
            # polling a socket that the garbage collector later closes under it, and ZeroMQ aborts the whole
            # process on that (a pytest worker that had run about a hundred kernels died so).
            self._stop_channels()
            try:
                if self.km.has_kernel:
                    run_sync(self.km.shutdown_kernel)(now=True)
            except Exception:
                pass
            shutil.rmtree(self._sockdir, ignore_errors=True)

    def _stop_channels(self) -> None:
        kc, self.client.kc = getattr(self.client, "kc", None), None
        if kc is not None:
            try:
                kc.stop_channels()
            except Exception:
                pass

    def _execute(self, cell, index: int) -> CellOutcome:
        if self.dead:
            return CellOutcome(False, dead=True)
        t0 = time.perf_counter()
        self._reply_status = None
        self._interrupted = False
        self.client.complete = None
        self.client.iopub_timeout = IOPUB_TIMEOUT
        try:
            self.client.execute_cell(cell, index)
        except CellTimeoutError as e:
            self._interrupted = True
            return CellOutcome(False, CELL_TIMEOUT, str(e), timed_out=True, seconds=time.perf_counter() - t0)
        except DeadKernelError as e:
            self.dead = True
            return CellOutcome(False, "DeadKernelError", str(e), dead=True, seconds=time.perf_counter() - t0)
        dt = time.perf_counter() - t0
        if self._reply_status == "timeout":
            self._interrupted = True
            cell.outputs.append(nbformat.v4.new_output("error", **cell_timeout(self.client.timeout, traceback=False)))
            return CellOutcome(False, CELL_TIMEOUT, "timed out", timed_out=True, seconds=dt)
        if self._reply_status == "aborted":
            # The kernel skipped the cell (it drops requests queued behind an error): never a pass.
            return CellOutcome(False, "Aborted", "the kernel aborted this cell without running it", seconds=dt)
        if self._reply_status is not None and self.client.complete != index:  # it ran, but its output never ended
            cell.outputs.append(error_output(OUTPUT_LOST, output_lost(self.client.iopub_timeout)))
            return CellOutcome(False, OUTPUT_LOST, output_lost(self.client.iopub_timeout), seconds=dt,
                               reply=self._reply_status)
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return CellOutcome(False, out.get("ename", ""), out.get("evalue", ""),
                                   "\n".join(out.get("traceback", [])), seconds=dt, reply=self._reply_status or "")
        if self._reply_status not in ("ok", None):
            # The kernel says the cell raised, yet no error was displayed: something hid it (a replaced
            # traceback display, a custom exception handler). It failed all the same, and shows why.
            cell.outputs.append(error_output(HIDDEN_ERROR, HIDDEN_ERROR_WHY))
            return CellOutcome(False, HIDDEN_ERROR, HIDDEN_ERROR_WHY, seconds=dt, reply=self._reply_status)
        return CellOutcome(True, seconds=dt, reply=self._reply_status or "")

    def run(self, index: int) -> CellOutcome:
        cell = self.nb.cells[index]
        cell.outputs = []
        self.client.reset_output_count(index)
        return self._execute(cell, index)

    def run_code(self, source: str) -> tuple[CellOutcome, list]:
        # nbclient writes the executed cell back into nb.cells[index]: give it a slot of its own.
        cell = nbformat.v4.new_code_cell(source)
        self.nb.cells.append(cell)
        self.client.reset_output_count(len(self.nb.cells) - 1)
        try:
            outcome = self._execute(cell, len(self.nb.cells) - 1)
        finally:
            self.nb.cells.pop()
        return outcome, cell.get("outputs", [])

    def ask(self, code: str, expression: str, timeout: float | None = None) -> dict | None:
        """Run `code` silently (no history, no outputs kept) and return the kernel's execute reply, which
        carries `expression`'s text/plain repr in content.user_expressions["r"]: nothing depends on when
        printed output arrives. None when the kernel does not answer within `timeout` seconds (it may still
        be running the code: interrupt it, see `responsive`)."""
        if self.dead:
            return None
        kc = self.client.kc
        limit = timeout if timeout is not None else self.client.timeout
        self._interrupted = False  # nothing interrupts the kernel when this runs past `limit`

        async def ask():
            msg_id = kc.execute(code, silent=True, store_history=False, user_expressions={"r": expression})
            deadline = time.monotonic() + limit
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                try:
                    msg = await kc.get_shell_msg(timeout=left)
                except Exception:
                    return None
                if msg.get("parent_header", {}).get("msg_id") == msg_id:
                    return msg

        try:
            return run_sync(ask)()
        except Exception:
            return None

    def evaluate(self, code: str, expression: str, timeout: float | None = None) -> tuple[bool, str | None]:
        """`ask`, reduced to (the code ran without raising, the text/plain repr of `expression`).
        (False, None) when the kernel does not answer in time or the code raised."""
        reply = self.ask(code, expression, timeout)
        if reply is None:
            return False, None
        content = reply.get("content", {})
        value = content.get("user_expressions", {}).get("r", {})
        text = value.get("data", {}).get("text/plain") if value.get("status") == "ok" else None
        return content.get("status") == "ok", text

    def responsive(self, seconds: float = 10.0) -> bool:
        """After a timeout: see whether the kernel answers again within `seconds`, interrupting it first unless
        nbclient already did when the cell (`run`, `run_code`) ran past its limit; after `ask` nothing did.

        Never a second interrupt: a kernel that obeyed the first is idle again, and the second lands on the probe
        below. A sandboxed kernel is interrupted by a control-channel message (jaxpath.grade.sandbox), which its
        control thread turns into SIGINT while the main thread may already be running the probe: ipykernel then
        logs "KeyboardInterrupt caught in kernel" and never replies, so a kernel that had stopped at once was
        judged deaf and killed, and the cells after it were never run (a sleeping cell past a 2 s limit: 4 of 8)."""
        if self.dead:
            return False
        if not self._interrupted:
            try:
                run_sync(self.km.interrupt_kernel)()
            except Exception:
                return False
        saved = self.client.timeout
        deadline = time.perf_counter() + seconds
        try:
            while time.perf_counter() < deadline and not self.dead:
                self.client.timeout = max(1, int(deadline - time.perf_counter()))
                out, _ = self.run_code("pass")
                if out.ok:
                    return True
                if out.timed_out or out.dead:
                    return False
                time.sleep(0.2)  # aborted: the kernel is still dropping what was queued behind the interrupt
        finally:
            self.client.timeout = saved
        return False

    def kill(self) -> None:
        self.dead = True
        try:
            run_sync(self.km.shutdown_kernel)(now=True)
        except Exception:
            pass

    def stamp(self) -> dict:
        outcome, outputs = self.run_code(kernel_source("stamp"))
        for out in outputs:
            if out.get("output_type") == "stream" and "__JAXPATH_STAMP__" in out.get("text", ""):
                line = [l for l in out["text"].splitlines() if l.startswith("__JAXPATH_STAMP__")][0]
                return json.loads(line[len("__JAXPATH_STAMP__"):])
        return {}


def stamp_text(stamp: dict) -> str:
    """The provenance stamp in words, the line a reader sees: the stack, the Python, the devices, the OS and the
    day of the run (the raw platform string of the metadata, with the build host's kernel, is left out)."""
    if not stamp:
        return "Executed on an unknown stack."
    pkgs = ", ".join(f"{k} {stamp[k]}" for k in ("jax", "jaxlib", "flax", "optax") if k in stamp)
    where = stamp.get("backend", "cpu").upper()
    if stamp.get("devices"):
        where += f" ({stamp['devices']} device{'s' if stamp['devices'] != 1 else ''})"
    system = str(stamp.get("platform", "")).split("-", 1)[0]
    os_name = " ".join(x for x in (system, stamp.get("machine", "")) if x) or "an unknown system"
    date = str(stamp.get("date", ""))
    when = f"on {date[:10]} at {date[11:16]} UTC" if len(date) >= 16 else "on an unknown date"
    return f"Executed with {pkgs} and Python {stamp.get('python', '?')} on {where}, {os_name}, {when}."


def stamp_notebook(nb: nbformat.NotebookNode, stamp: dict) -> None:
    """Record the stamp in the notebook metadata and as a visible first cell."""
    nb.metadata["jaxpath"] = {"executed": stamp}
    cell = nbformat.v4.new_markdown_cell(f"*{stamp_text(stamp)}*")
    cell.metadata["tags"] = ["jaxpath-stamp"]
    nb.cells.insert(0, cell)
