"""`jaxpath mutants`: mutation testing of every exercise.

`validate` proves an exercise's tests against the wrong answers its author thought of; this proves them
against mistakes nobody listed. For each exercise, `mutate.generate` makes mutants of the reference
solution (small edits inside the solution region), and each runs, like a wrong variant, against the
exercise's tests (visible and hidden): a mutant that fails a test is *killed*; one that passes every
test *survives*. A survivor is either a hole in the tests or an *equivalent* mutant (it behaves like the
reference in every way the statement cares about), which the author records in the variants file:

    [[name.equivalent]]
    id = "number-5b6932b8"
    why = "the noise is symmetric: -0.1 * eps has the same distribution as 0.1 * eps"

The machinery is validate's: one kernel per chapter runs the chapter top to bottom; at each answer cell,
before the reference runs, the reference and then every mutant run in a throw-away copy of the kernel's
namespace (`jaxpath.kernel.trial.run`, one round trip each), followed by the exercise's test cells. A mutant has a time
limit (a multiple of the reference's time, with a floor); one that hangs is interrupted, and if the
kernel does not answer, it is restarted and the chapter replayed up to the exercise.

Results go to `build/mutants/` (a JSON per chapter, and `report.md` with every survivor as a diff) and
into the committed `MUTANTS.md`, whose first line states the course-wide kill rate, keyed per chapter
by the hash of its code cells, its variants file and the engine version: `jaxpath mutants --check`
(and the test suite) fails when a chapter changed and its mutation results did not.
"""
from __future__ import annotations

import contextlib
import copy
import fcntl
import hashlib
import json
import multiprocessing
import queue
import re
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import nbformat

from .cells import nbgrader_meta
from .chapter import Chapter, Exercise, load_chapter
from .config import Config
from .execute import Session
from .files import write_atomic
from .manifest import load_manifest, notebook_path, variants_path
from .mutate import ENGINE_VERSION, OPERATORS, generate
from .problems import ChapterError, Problem
from .validate import resolve_chapters

SUMMARY_FILE = "MUTANTS.md"
EXERCISE_MIN, COURSE_MIN = 90.0, 95.0
"""Kill rates (percent of non-equivalent mutants) every exercise and the whole course must reach."""
_DATA_START, _DATA_END = "<!-- jaxpath-mutants-data", "jaxpath-mutants-data -->"


@dataclass
class MutantResult:
    id: str
    operator: str
    description: str
    line: int
    outcome: str
    """'killed', 'timeout' (killed by the time limit), 'survived' or 'equivalent'."""
    detail: str = ""
    """What killed it (the failing test cell and its error), or the author's reason for an equivalent."""
    diff: str = ""


@dataclass
class ExerciseResult:
    chapter: str
    name: str
    mutants: list[MutantResult] = field(default_factory=list)
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(m.outcome == outcome for m in self.mutants)

    @property
    def generated(self) -> int:
        return len(self.mutants)

    @property
    def killed(self) -> int:
        return self.count("killed") + self.count("timeout")

    @property
    def equivalent(self) -> int:
        return self.count("equivalent")

    @property
    def survived(self) -> int:
        return self.count("survived")

    @property
    def rate(self) -> float:
        live = self.generated - self.equivalent
        return 100.0 * self.killed / live if live else 100.0


@dataclass
class ChapterResult:
    id: str
    key: str
    exercises: list[ExerciseResult] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems and all(not e.problems and not e.survived and e.rate >= EXERCISE_MIN
                                         for e in self.exercises)


def chapter_key(config: Config, chapter_id: str) -> str:
    """What the mutation results of a chapter depend on: every code cell (sources and nbgrader metadata),
    the variants file (it records the equivalents) and the engine version. Prose does not count."""
    h = hashlib.sha256(f"engine {ENGINE_VERSION}\n".encode())
    nb = nbformat.read(notebook_path(config, chapter_id), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            h.update(cell.source.encode("utf-8"))
            h.update(json.dumps(nbgrader_meta(cell), sort_keys=True).encode())
            h.update(b"\0")
    vp = variants_path(config, chapter_id)
    h.update(vp.read_bytes() if vp.exists() else b"")
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------------------------------
# Running mutants in a chapter's kernel
# --------------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------------
# Results: build/mutants/ and the committed summary
# --------------------------------------------------------------------------------------------------

def _out_dir(config: Config) -> Path:
    return config.build / "mutants"


def _save_chapter(config: Config, r: ChapterResult) -> None:
    data = {"id": r.id, "key": r.key, "seconds": r.seconds, "problems": [str(p) for p in r.problems],
            "exercises": [asdict(e) for e in r.exercises]}
    write_atomic(_out_dir(config) / f"{r.id}.json", json.dumps(data, indent=1, ensure_ascii=False))


def _load_chapter_result(data: dict) -> ChapterResult:
    r = ChapterResult(data["id"], data["key"], seconds=data.get("seconds", 0.0))
    for e in data.get("exercises", []):
        ex = ExerciseResult(e["chapter"], e["name"], [MutantResult(**m) for m in e["mutants"]], e.get("seconds", 0.0),
                            e.get("problems", []))
        r.exercises.append(ex)
    r.problems = [Problem(r.id, p) for p in data.get("problems", [])]
    return r


def committed(config: Config) -> dict:
    """The data block of the committed MUTANTS.md: {chapter id: {"key", "exercises": {name: counts}}}."""
    path = config.root / SUMMARY_FILE
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    m = re.search(re.escape(_DATA_START) + r"\n(.*?)\n" + re.escape(_DATA_END), text, re.S)
    if not m:
        return {}
    try:
        return json.loads(m.group(1)).get("chapters", {})
    except json.JSONDecodeError:
        return {}


def _counts(e: ExerciseResult) -> dict:
    return {"generated": e.generated, "killed": e.killed, "equivalent": e.equivalent, "survived": e.survived,
            "survivors": [m.id for m in e.mutants if m.outcome == "survived"], "problems": e.problems}


def write_summary(config: Config, results: list[ChapterResult]) -> Path:
    """Merge `results` into MUTANTS.md (chapters not in `results` keep their committed rows) and write the
    full report with every survivor's diff to build/mutants/report.md."""
    with _locked(config):
        return _write_summary(config, results)


@contextlib.contextmanager
def _locked(config: Config):
    """Two runs on different chapters at once (two terminals) each merge their rows: one at a time."""
    lock = config.build / "mutants" / ".lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _write_summary(config: Config, results: list[ChapterResult]) -> Path:
    data = committed(config)
    for r in results:
        data[r.id] = {"key": r.key,
                      "problems": [str(p) for p in r.problems],
                      "exercises": {e.name: _counts(e) for e in r.exercises}}
    order = [c.id for c in load_manifest(config).written()]
    data = {c: data[c] for c in order if c in data}
    text = render_summary(data)
    path = config.root / SUMMARY_FILE
    write_atomic(path, text)
    write_atomic(_out_dir(config) / "report.md", render_report(config, order))
    return path


def course_rate(data: dict) -> tuple[float, int, int, int, int]:
    gen = kill = eq = surv = 0
    for ch in data.values():
        for e in ch["exercises"].values():
            gen += e["generated"]
            kill += e["killed"]
            eq += e["equivalent"]
            surv += e["survived"]
    live = gen - eq
    return (100.0 * kill / live if live else 100.0), gen, kill, eq, surv


def _rate(e: dict) -> float:
    live = e["generated"] - e["equivalent"]
    return 100.0 * e["killed"] / live if live else 100.0


def render_summary(data: dict) -> str:
    rate, gen, kill, eq, surv = course_rate(data)
    lines = [f"course: {rate:.1f} % of non-equivalent mutants killed",
             "",
             f"{gen} mutants of the reference solutions in {len(data)} chapters: {kill} killed by the exercises' "
             f"tests, {eq} recorded as equivalent (with a reason, in `variants/`), {surv} surviving. "
             f"Every exercise must kill at least {EXERCISE_MIN:.0f} % of its non-equivalent mutants and the "
             f"course {COURSE_MIN:.0f} %.",
             "",
             "Generated by `jaxpath mutants` (see AUTHORING.md, *Mutants*); do not edit by hand. "
             "`jaxpath mutants --check` fails when a chapter's code cells or variants changed since its row "
             "was written. The diffs of surviving mutants are in `build/mutants/report.md`.",
             "",
             "| chapter | exercise | mutants | killed | equivalent | surviving | killed % |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for cid, ch in data.items():
        for name, e in ch["exercises"].items():
            lines.append(f"| {cid} | `{name}` | {e['generated']} | {e['killed']} | {e['equivalent']} | "
                         f"{e['survived']} | {_rate(e):.1f} |")
    survivors = [(cid, n, e["survivors"]) for cid, ch in data.items() for n, e in ch["exercises"].items()
                 if e["survivors"]]
    if survivors:
        lines += ["", "## Surviving mutants", ""]
        for cid, n, ids in survivors:
            lines.append(f"- {cid} `{n}`: " + ", ".join(f"`{i}`" for i in ids))
    lines += ["", "## Operators", "", "| operator | mutation |", "|---|---|"]
    lines += [f"| `{k}` | {v} |" for k, v in OPERATORS.items()]
    lines += ["", _DATA_START, json.dumps({"engine": ENGINE_VERSION, "chapters": data}, indent=1,
                                          ensure_ascii=False), _DATA_END, ""]
    return "\n".join(lines)


def render_report(config: Config, order: list[str]) -> str:
    """Every chapter's last run in build/mutants/, with each surviving and equivalent mutant's diff."""
    out = ["# Mutation report", "", "The last `jaxpath mutants` run of each chapter on this machine.", ""]
    for cid in order:
        path = _out_dir(config) / f"{cid}.json"
        if not path.exists():
            continue
        try:
            r = _load_chapter_result(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, KeyError, TypeError):
            out.append(f"## {cid}: unreadable results in {path.name}, run it again")
            continue
        out.append(f"## {r.id} ({r.seconds:.0f} s)")
        for p in r.problems:
            out.append(f"- problem: {p}")
        for e in r.exercises:
            out += ["", f"### `{e.name}`: {e.generated} mutants, {e.killed} killed, {e.equivalent} equivalent, "
                        f"{e.survived} surviving ({e.rate:.1f} %)", ""]
            for p in e.problems:
                out.append(f"- problem: {p}")
            for m in e.mutants:
                if m.outcome in ("survived", "equivalent"):
                    out += [f"**{m.outcome}** `{m.id}` (line {m.line}, {m.description})"
                            + (f": {m.detail}" if m.detail else ""), "", "```diff", m.diff, "```", ""]
    return "\n".join(out)


@dataclass
class CheckResult:
    stale: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    below: list[str] = field(default_factory=list)
    """Exercises (and the course) below their kill rate, or with surviving mutants or problems."""
    rate: float = 0.0

    @property
    def ok(self) -> bool:
        return not (self.stale or self.missing or self.below)


def check(config: Config) -> CheckResult:
    """Is MUTANTS.md current for every chapter, and does every exercise meet the bar? Reruns nothing."""
    data = committed(config)
    res = CheckResult()
    for c in load_manifest(config).written():
        if c.id not in data:
            res.missing.append(c.id)
        elif data[c.id]["key"] != chapter_key(config, c.id):
            res.stale.append(c.id)
    for cid, ch in data.items():
        for p in ch.get("problems", []):
            res.below.append(f"{cid}: {p}")
        for name, e in ch["exercises"].items():
            if e["survived"]:
                res.below.append(f"{cid} `{name}`: {e['survived']} surviving mutant(s) "
                                 f"({', '.join(e['survivors'])}): kill them or record them as equivalent")
            elif _rate(e) < EXERCISE_MIN:
                res.below.append(f"{cid} `{name}`: {_rate(e):.1f} % of mutants killed (needs {EXERCISE_MIN:.0f} %)")
            for p in e.get("problems", []):
                res.below.append(f"{cid} `{name}`: {p}")
    res.rate = course_rate(data)[0]
    if data and res.rate < COURSE_MIN:
        res.below.append(f"course: {res.rate:.1f} % of mutants killed (needs {COURSE_MIN:.0f} %)")
    return res
