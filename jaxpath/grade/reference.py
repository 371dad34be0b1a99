"""The reference run: each source notebook of an assignment run once, as trusted code, before (or beside)
the submissions. It calibrates the integrity checks and warms the compilation cache the workers read.

For each test cell it records the fingerprints of the names the test reads (what a submission's names must
match) and which watched things the course's own code changes (never evidence of tampering). With the
compilation cache on, the same run compiles the programs every submission shares (the chapter's own cells,
the tests) once for the whole class instead of once per student.

Where it lives: `build/grading/<part>/<notebook>-<key>.json` (the calibration) and `build/jax-cache/<part>/`
(the compiled programs, with a `.warmed-<notebook>-<key>` marker; `Config.compile_cache_dir` moves it). The
kernel writes into a staging folder beside it, and after each cell what it compiled is published into the
cache whole (`_publish`), so the tasks already running read it while the reference run goes on; a task of
this process follows the run cell by cell (follow.py), so it compiles nothing the reference compiles. The key
hashes the grader's version, the source notebook, the Python version and the integrity code (both sides), so
editing a notebook, upgrading jaxpath or Python invalidates it; otherwise every later batch (a `--student`
regrade included) reuses it.

`ReferenceRuns` runs a batch's references beside its submissions; `ReferenceGate`, the batch's gate for the
dispatcher, sends tasks only onto the cores those runs leave free."""
from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterable

import nbformat

from ..cells import grade_id, is_answer, is_test
from ..files import private_temp_dir, write_atomic
from . import integrity
from .cachepack import writer_env
from .dispatch import Gate
from .follow import FOLLOWERS_PER_CORE, Progress, register, withdraw
from .jobs import Job

log = logging.getLogger("jaxpath.grade")


def reference_key(path: Path, grader_version: str) -> str:
    """What a saved reference run of the notebook at `path` is valid for."""
    return hashlib.sha256(grader_version.encode() + path.read_bytes() + sys.version.encode()
                          + Path(integrity.__file__).read_bytes()
                          + integrity.kernel_source("integrity").encode()).hexdigest()[:16]


def saved_reference(path: Path, *, store: Path, grader_version: str,
                    jax_cache: Path | None = None) -> integrity.Reference | None:
    """The saved reference run of one source notebook, when it is current (and warmed the cache)."""
    key = reference_key(path, grader_version)
    saved = store / f"{path.stem}-{key}.json"
    marker = jax_cache / f".warmed-{path.stem}-{key}" if jax_cache else None
    if saved.exists() and (marker is None or marker.exists()):
        return integrity.Reference.from_json(saved.read_text())
    return None


def run_reference(path: Path, *, store: Path, grader_version: str, cell_timeout: int,
                  jax_cache: Path | None = None, on_cell: Callable[[int], None] | None = None) -> integrity.Reference:
    """The reference run of one source notebook (reused from `store` when it is current). `on_cell(n)` is
    called once the n-th code cell is over and what it compiled is published (a cell not run counts too)."""
    from ..execute import Session, kernel_env

    found = saved_reference(path, store=store, grader_version=grader_version, jax_cache=jax_cache)
    if found is not None:
        return found
    key = reference_key(path, grader_version)
    saved = store / f"{path.stem}-{key}.json"
    marker = jax_cache / f".warmed-{path.stem}-{key}" if jax_cache else None
    env = kernel_env()
    ref = integrity.Reference()
    try:
        with contextlib.ExitStack() as stack:
            staging = None
            published: set[str] = set()
            if jax_cache:
                staging, published = _staging(jax_cache, path.stem)
                stack.callback(shutil.rmtree, staging, True)
                env.update(writer_env(str(staging)))
            nb = nbformat.read(path, as_version=4)
            answers = integrity.answer_names(c.source for c in nb.cells if is_answer(c))
            ref.imports = integrity.notebook_imports(c.source for c in nb.cells if c.cell_type == "code")
            ignore: set[str] = set()
            # In a scratch copy: what the reference writes must not land in source/ (nor reach autograded/).
            scratch = private_temp_dir("ref")
            stack.callback(shutil.rmtree, scratch, True)
            shutil.copytree(path.parent, scratch, dirs_exist_ok=True, symlinks=True,
                            ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
            with Session(nb, scratch, timeout=cell_timeout, env=env) as s:
                s.evaluate(integrity.prelude_code(ref.imports, ref.roots), integrity.RESULT)
                code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
                for n, i in enumerate(code, 1):
                    cell = nb.cells[i]
                    if not s.dead:
                        out = s.run(i)
                        if out.timed_out or out.dead:  # it may have stopped mid-write: publish nothing from now on
                            staging = None
                        if staging is not None:  # what this cell compiled, for the tasks already running
                            _publish(staging, jax_cache, published)
                        if is_test(cell):
                            nonce = integrity.new_token()
                            names = integrity.relied_on(cell.source, answers)
                            ok, text = s.evaluate(integrity.probe_code(nonce, names), integrity.RESULT)
                            data = (integrity.parse_result(text) if ok else None) or {}
                            ref.names[grade_id(cell)] = data.get("names", {})
                            ignore.update(data.get("changed", []))
                    if on_cell:  # a cell not run (the kernel died) counts too: nobody waits for it
                        on_cell(n)
            ref.ignore = sorted(ignore)
            if ref.ignore:
                log.info("%s changes %d watched things itself: %s", path.name, len(ref.ignore), ", ".join(ref.ignore[:10]))
            write_atomic(saved, ref.to_json().encode())
            if marker is not None:
                marker.touch()
    except Exception as e:  # the integrity checks then run uncalibrated; a cold cache only costs time
        log.warning("the reference run of %s failed: %s", path, e)
    return ref


def _staging(jax_cache: Path, stem: str) -> tuple[Path, set[str]]:
    """A private folder the reference kernel writes its cache entries into, beside the cache the tasks read,
    holding (as hard links) what that cache has already, so programs shared between notebooks compile once; and
    the names it linked in (nothing `_publish` needs to look at again)."""
    jax_cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".staging-{stem}-", dir=jax_cache.parent))
    linked: set[str] = set()
    with os.scandir(jax_cache) as found:
        for entry in found:
            if entry.is_file(follow_symlinks=False) and not entry.name.startswith("."):
                with contextlib.suppress(OSError):
                    os.link(entry.path, staging / entry.name)
                    linked.add(entry.name)
    return staging, linked


def _publish(staging: Path, jax_cache: Path, published: set[str]) -> None:
    """Make the entries the reference kernel has written so far readable in the cache the tasks read, each at
    once and whole: JAX writes an entry in place, but only while a cell compiles, so between cells every file
    in `staging` is complete, and a hard link gives it its name in the cache in one step (a task's kernel never
    reads half an entry). The cache is mounted into the sandboxes, so these appear in running kernels too.

    `published` holds the names the cache has already (what `_staging` linked in, what this run published) and
    is added to: a cell costs one listing of the folder and a look at its new entries only. (Two stats per entry
    at every cell took 8.4 s of CPU for a 316-cell chapter beside a cache of 2,254 programs.)"""
    with os.scandir(staging) as found:
        new = [e for e in found if e.name not in published and e.is_file(follow_symlinks=False)]
    for entry in new:
        published.add(entry.name)
        target = jax_cache / entry.name
        if target.exists():  # another reference run published the same program meanwhile
            continue
        os.chmod(entry.path, 0o644)
        try:
            os.link(entry.path, target)
        except FileExistsError:
            pass
        except OSError:  # no hard links on this filesystem: a copy under a hidden name, renamed in one step
            part = jax_cache / f".{entry.name}.part"
            shutil.copyfile(entry.path, part)
            os.chmod(part, 0o644)
            os.replace(part, target)


def reference_order(notebooks) -> list[str]:
    """The order in which `ReferenceRuns` starts a batch's notebooks (the batch sends submissions in it too)."""
    return sorted(notebooks)


class ReferenceRuns:
    """The reference runs of one batch, `workers` at a time in `reference_order`, each notebook's result there as
    soon as its own run is done: that notebook's submissions can then go calibrated and warm while the next
    notebook's reference still runs. `saved` holds the notebooks already calibrated (a regrade): done from the
    start. `on_done` is called after each run, in the thread that ran it; after the last one, once the cache has
    been made readable to the sandboxed kernels (which run as other uids) and `all_done()` is true.

    `run_one(name, on_cell)` runs one notebook's reference and calls `on_cell(n)` as its code cells end: the
    run's `Progress`, which a task of this process finds under `follow_key(name)` while the run goes on. The
    tasks that follow take turns on `spare_cores` cores (the ones these runs leave free)."""

    def __init__(self, run_one: Callable[[str, Callable[[int], None]], integrity.Reference | None],
                 notebooks: Iterable[str], *,
                 workers: int = 1, saved: dict[str, integrity.Reference] | None = None,
                 jax_cache: Path | None = None, on_done: Callable[[], None] | None = None, spare_cores: int = 1):
        saved = saved or {}
        self.workers = max(1, workers)
        self.seconds = 0.0
        """Wall time from the first run's start to the last one's end (0 when every notebook was saved)."""
        self._jax_cache, self._on_done, self._t0 = jax_cache, on_done, time.perf_counter()
        self._all = threading.Event()
        self._lock = threading.Lock()
        self._futures: dict[str, Future] = {}
        self._progress: dict[str, tuple[str, Progress]] = {}
        self._pool: ThreadPoolExecutor | None = None
        todo = [name for name in reference_order(notebooks) if name not in saved]
        for name, ref in saved.items():
            self._futures[name] = done = Future()
            done.set_result(ref)
        self._left = len(todo)
        if not todo:
            self._all.set()
            return
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="jaxpath-reference")
        turns = threading.Semaphore(max(1, spare_cores))  # shared by the tasks that follow any of these runs
        for name in todo:
            progress = Progress(turns)
            self._progress[name] = register(progress, name), progress
            self._futures[name] = fut = self._pool.submit(run_one, name, progress.advance)
            fut.add_done_callback(lambda _fut, p=progress: self._finished(p))

    def _finished(self, progress: Progress) -> None:
        progress.finish()
        with self._lock:
            self._left -= 1
            last = self._left == 0
        if last:
            if self._jax_cache and self._jax_cache.exists():
                for p in [self._jax_cache, *self._jax_cache.rglob("*")]:
                    with contextlib.suppress(OSError):
                        os.chmod(p, 0o755 if p.is_dir() else 0o644)
            self.seconds = time.perf_counter() - self._t0
            self._all.set()
        if self._on_done is not None:
            self._on_done()

    def done(self, name: str) -> bool:
        """Whether the notebook's reference run is over (a notebook outside the batch counts as done)."""
        fut = self._futures.get(name)
        return fut is None or fut.done()

    def result(self, name: str) -> integrity.Reference:
        """The notebook's reference (waiting for it); an empty one for a notebook without a source."""
        fut = self._futures.get(name)
        return (fut.result() if fut is not None else None) or integrity.Reference()

    def follow_key(self, name: str) -> str | None:
        """Where a task of this process finds the progress of the notebook's run (None once it is done)."""
        if self.done(name) or name not in self._progress:
            return None
        return self._progress[name][0]

    def busy(self) -> int:
        """How many reference kernels run now or are about to: the cores they hold."""
        with self._lock:
            return min(self.workers, self._left)

    def all_done(self) -> bool:
        return self._all.is_set()

    def close(self) -> None:
        """Cancel the runs not started yet and wait for the running ones (a run is never cut off mid-write)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        for key, progress in self._progress.values():
            progress.finish()
            withdraw(key)

    def wait(self) -> dict[str, integrity.Reference]:
        """Every reference, once all are done (re-raising a run's error)."""
        self._all.wait()
        return {name: ref for name, fut in self._futures.items() if (ref := fut.result()) is not None}


class ReferenceGate(Gate):
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
