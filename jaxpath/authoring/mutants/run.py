"""Running mutants in a chapter's kernel: one kernel per chapter, one round trip per mutant."""
from __future__ import annotations

import copy
import json
import multiprocessing
import queue
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Iterable

from ...config import Config
from ...execute import Session
from ...manifest import load_manifest, notebook_path, variants_path
from ...problems import ChapterError
from ..chapter import Chapter, Exercise, load_chapter
from ..mutate import generate
from ..validate import resolve_chapters
from .results import ChapterResult, ExerciseResult, MutantResult, chapter_key
from .summary import _save_chapter, write_summary


class _Kernel:
    """A chapter's kernel that can be replaced: after a mutant that hangs past an interrupt, a fresh
    kernel replays the cells run so far."""

    def __init__(self, nb, cwd, config: Config):
        self.nb, self.cwd, self.config = nb, cwd, config
        self.ran: list[int] = []
        self.restarts = 0
        self.s: Session | None = None
        self._start()

    def _start(self) -> None:
        self.s = Session(self.nb, self.cwd, timeout=self.config.cell_timeout,
                         startup_timeout=self.config.startup_timeout, kernel_name=self.config.kernel_name)
        self.s.__enter__()
        out, _ = self.s.run_code("import jaxpath.kernel.trial as __jaxpath_trial")
        if not out.ok:
            raise RuntimeError(f"the kernel cannot import jaxpath.kernel.trial: {out.summary}")

    def run(self, index: int):
        out = self.s.run(index)
        self.ran.append(index)
        return out

    def restart(self) -> bool:
        """A fresh kernel with the cells run so far replayed; False when the kernel dies during the replay."""
        self.s.kill()
        self.s.__exit__(None, None, None)
        self.restarts += 1
        self._start()
        for i in self.ran:  # a cell that failed the first time fails again: the chapter run reported it
            self.s.run(i)
            if self.s.dead:
                return False
        return True

    def trial(self, answer: str, tests: list[str], label: str, limit: float) -> dict:
        code = f"__jaxpath_r = __jaxpath_trial.run(globals(), {answer!r}, {tests!r}, {label!r})"
        reply = self.s.ask(code, "__jaxpath_r", timeout=limit)
        if reply is None:
            if not self.s.responsive(3) and not self.restart():
                raise RuntimeError("the kernel could not be restarted after a mutant hung")
            self.s.run_code("__jaxpath_r = None")
            return {"failed": "timeout", "error": f"ran past its {limit:.0f} s limit", "seconds": limit}
        content = reply.get("content", {})
        value = content.get("user_expressions", {}).get("r", {})
        if content.get("status") != "ok" or value.get("status") != "ok":
            # The trial catches every Exception: this was a BaseException (SystemExit, an interrupt).
            why = content.get("ename") or value.get("ename") or "the trial did not return"
            if self.s.dead and not self.restart():
                raise RuntimeError("the kernel died and could not be restarted")
            return {"failed": "answer", "error": why, "seconds": 0.0}
        text = value.get("data", {}).get("text/plain", "")
        try:
            import ast
            return json.loads(ast.literal_eval(text))
        except (ValueError, SyntaxError):
            return {"failed": "answer", "error": f"unreadable trial result {text[:80]!r}", "seconds": 0.0}

    def close(self) -> None:
        if self.s is not None:
            self.s.__exit__(None, None, None)


def _mutate_exercise(k: _Kernel, ch: Chapter, ex: Exercise, config: Config,
                     on_mutant: Callable[[], None] | None = None) -> ExerciseResult:
    t0 = time.perf_counter()
    res = ExerciseResult(ch.id, ex.name)
    answer = ch.nb.cells[ex.answer].source
    tests = [ch.nb.cells[t].source for t in ex.tests]
    ref = k.trial(answer, tests, f"{ex.name}: reference", config.cell_timeout)
    if ref["failed"] is not None:
        res.problems.append(f"the reference solution fails its own tests in the trial harness: {ref['error']}")
        return res
    limit = max(config.mutant_timeout, config.mutant_timeout_factor * ref["seconds"])
    mutants = generate(answer, f"{ex.name}: answer")
    for m in mutants:
        r = k.trial(m.source, tests, f"{ex.name}: mutant {m.id}", limit)
        if r["failed"] == "timeout":
            outcome, detail = "timeout", r["error"]
        elif r["failed"] is None:
            outcome, detail = ("equivalent", ex.equivalent[m.id]) if m.id in ex.equivalent else ("survived", "")
        else:
            outcome = "killed"
            where = "defining the answer" if r["failed"] == "answer" else f"test cell {r['failed'] + 1}"
            detail = f"{where}: {r['error']}"
        res.mutants.append(MutantResult(m.id, m.operator, m.description, m.line, outcome, detail, m.diff))
        if on_mutant:
            on_mutant()
    ids = {m.id for m in mutants}
    for mid in ex.equivalent:
        if mid not in ids:
            res.problems.append(f"{ch.variants_rel} records {mid!r} as equivalent, but no mutant has that id "
                                "any more: remove the record")
    for m in res.mutants:
        if m.id in ex.equivalent and m.outcome != "equivalent":
            res.problems.append(f"{ch.variants_rel} records {m.id!r} as equivalent, but the tests kill it "
                                f"({m.detail}): remove the record")
    res.seconds = time.perf_counter() - t0
    return res


def mutants_one(config: Config, chapter_id: str, on_mutant: Callable[[], None] | None = None) -> ChapterResult:
    t0 = time.perf_counter()
    result = ChapterResult(chapter_id, chapter_key(config, chapter_id))
    try:
        ch = load_chapter(notebook_path(config, chapter_id), chapter_id, config.root,
                          variants_path(config, chapter_id))
    except ChapterError as e:
        result.problems.append(e.problem)
        return result
    result.problems += [p for p in ch.problems if "equivalent" in p.message]
    nb = copy.deepcopy(ch.nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    answers = {e.answer: e for e in ch.exercises}
    k = _Kernel(nb, ch.path.parent, config)
    try:
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            if i in answers:
                result.exercises.append(_mutate_exercise(k, ch, answers[i], config, on_mutant))
            out = k.run(i)
            if out.dead:
                result.problems.append(ch.problem("the kernel died running this cell", i))
                break
    except RuntimeError as e:
        result.problems.append(ch.problem(str(e)))
    finally:
        k.close()
    result.seconds = time.perf_counter() - t0
    return result


def count_mutants(config: Config, chapter_id: str) -> int:
    ch = load_chapter(notebook_path(config, chapter_id), chapter_id, config.root)
    return sum(len(generate(ch.nb.cells[e.answer].source)) for e in ch.exercises)


_progress_queue = None


def _init_worker(q) -> None:
    global _progress_queue
    _progress_queue = q


def _in_worker(root: str, chapter_id: str) -> ChapterResult:
    q = _progress_queue
    return mutants_one(Config.load(root), chapter_id, on_mutant=(lambda: q.put(1)) if q is not None else None)


def run_mutants(config: Config, chapters: Iterable[str] | None = None, *, jobs: int = 1,
                on_mutant: Callable[[], None] | None = None,
                on_chapter: Callable[[ChapterResult], None] | None = None) -> list[ChapterResult]:
    """Mutation-test chapters (default: all), write `build/mutants/` and update `MUTANTS.md`."""
    ids = resolve_chapters(load_manifest(config), chapters)
    results: list[ChapterResult] = []
    if jobs <= 1 or len(ids) <= 1:
        for cid in ids:
            r = mutants_one(config, cid, on_mutant)
            results.append(r)
            _save_chapter(config, r)
            if on_chapter:
                on_chapter(r)
    else:
        ctx = multiprocessing.get_context("spawn")
        with ctx.Manager() as manager:
            q = manager.Queue()
            with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker,
                                     initargs=(q,)) as pool:
                pending = {pool.submit(_in_worker, str(config.root), cid) for cid in ids}
                while pending:
                    try:  # one message per mutant run; wake at least twice a second to collect chapters
                        q.get(timeout=0.5)
                        if on_mutant:
                            on_mutant()
                    except queue.Empty:
                        pass
                    for f in [f for f in pending if f.done()]:
                        pending.discard(f)
                        r = f.result()
                        results.append(r)
                        _save_chapter(config, r)
                        if on_chapter:
                            on_chapter(r)
        order = {c: i for i, c in enumerate(ids)}
        results.sort(key=lambda r: order[r.id])
    write_summary(config, results)
    return results
