"""Execute chapters on the side stack with validate's own machinery (`run_chapter`: the chapter top to bottom,
with the stub, every wrong and every alternative answer at each exercise), in parallel, and compare each with
the pinned build.

The pinned side is `build/executed/<chapter>.ipynb` (written by `make` / `jaxpath validate`) when it was
executed from the chapter as it is now on the lock's jax; otherwise the chapter is executed on the pinned stack
too, into build/drift/pinned/ (build/executed/ is left alone)."""
from __future__ import annotations

import json
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable

import nbformat

from ...config import Config
from ...files import write_atomic
from ...manifest import load_manifest, notebook_path, variants_path
from ...problems import Problem
from ..chapter import Chapter, load_chapter
from ..validate import resolve_chapters, run_chapter
from .compare import Finding, compare_chapter, strip_stamp
from .env import STACK, DriftError, SideEnv, side_requirements
from .normalize import version_rule


@dataclass
class ChapterDrift:
    id: str
    title: str
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    """Wall time of the side run of this chapter."""
    baseline: str = ""
    """Where the pinned outputs came from: 'build/executed' or 'executed now'."""
    pinned_stamp: dict = field(default_factory=dict)
    side_stamp: dict = field(default_factory=dict)

    def count(self, severity: int) -> int:
        return sum(f.severity == severity for f in self.findings)


@dataclass
class DriftResult:
    env: SideEnv
    chapters: list[ChapterDrift]
    seconds: float
    """Wall time of the whole run (side runs, pinned runs where needed, comparison)."""
    compare_seconds: float = 0.0
    jobs: int = 1
    executed_seconds: float | None = None
    """Wall time of the execution the comparison is of (None: unknown, a --compare-only of a partial run)."""

    @property
    def findings(self) -> list[Finding]:
        return [f for c in self.chapters for f in c.findings]

    def count(self, severity: int) -> int:
        return sum(c.count(severity) for c in self.chapters)

    @property
    def broken(self) -> bool:
        """Something of severity 1 or 2: the course is not true on the side stack."""
        return any(f.severity <= 2 for f in self.findings)


def _load(config: Config, chapter_id: str) -> Chapter:
    return load_chapter(notebook_path(config, chapter_id), chapter_id, config.root, variants_path(config, chapter_id))


def lock_version(config: Config, package: str = "jax") -> str:
    """The version the lock (requirements.txt) pins `package` to ("" when it pins none)."""
    lock = config.root / "requirements.txt"
    if not lock.exists():
        return ""
    for line in side_requirements(lock.read_text(encoding="utf-8"), []).splitlines():
        name, _, version = line.partition("==")
        if name.strip().lower() == package:
            return version.strip()
    return ""


def pinned_build(config: Config, ch: Chapter) -> nbformat.NotebookNode | None:
    """build/executed/<chapter>.ipynb when it was executed from the chapter's present cells on the lock's jax."""
    path = config.executed / f"{ch.id}.ipynb"
    try:
        nb = nbformat.read(path, as_version=4)
    except (OSError, ValueError):
        return None
    cells = strip_stamp(nb)
    stamp = nb.metadata.get("jaxpath", {}).get("executed", {})
    if stamp.get("jax") != lock_version(config) or len(cells) != len(ch.nb.cells):
        return None
    if any(a.source != b.source or a.cell_type != b.cell_type for a, b in zip(cells, ch.nb.cells)):
        return None
    return nb


def _execute(root: str, chapter_id: str, out: str, kernel_name: str | None, kernel_dirs: str | None):
    """In a worker process: run one chapter as `validate` does, on the kernel named (default: the course's)."""
    config = Config.load(root)
    if kernel_name:
        # the side kernelspec lives in the environment's folder; jupyter_client looks for it on JUPYTER_PATH
        paths = [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
        if kernel_dirs not in paths:
            os.environ["JUPYTER_PATH"] = os.pathsep.join([kernel_dirs, *paths])
        config = replace(config, kernel_name=kernel_name)
    t0 = time.perf_counter()
    problems, _ = run_chapter(_load(config, chapter_id), config, Path(out))
    seconds = time.perf_counter() - t0
    write_atomic(_problems_path(Path(out)), json.dumps({"seconds": seconds, "problems": [asdict(p) for p in problems]}))
    return chapter_id, kernel_name is None, problems, seconds


def _problems_path(notebook: Path) -> Path:
    return notebook.with_suffix(".problems.json")


def _earlier(chapter_id: str, out: str, kernel_name: str | None, kernel_dirs: str | None):
    """A run that an earlier `drift` left in build/drift/ (for --compare-only), and where its pinned side came from."""
    try:
        data = json.loads(_problems_path(Path(out)).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise DriftError(f"{out}: no earlier drift run of {chapter_id} to compare (run without --compare-only)") from None
    return chapter_id, kernel_name is None, [Problem(**p) for p in data["problems"]], data["seconds"], data.get("from")


def drift(config: Config, env: SideEnv, chapters: Iterable[str] | None = None, *, jobs: int = 2,  # noqa: C901
          on_chapter: Callable[[ChapterDrift], None] | None = None, compare_only: bool = False) -> DriftResult:
    """Run `chapters` (default: every written chapter) on `env` and compare each with the pinned build. With
    `compare_only`, execute nothing: compare the runs an earlier call left in build/drift/ again (seconds; for
    working on the normaliser)."""
    t0 = time.perf_counter()
    ids = [c for c in resolve_chapters(load_manifest(config), chapters) if notebook_path(config, c).exists()]
    out_root = config.build / "drift"
    chs = {cid: _load(config, cid) for cid in ids}
    # the pinned outputs compared with: build/executed/ when current (copied into build/drift/pinned/, so that
    # --compare-only compares with the same ones while `make` rewrites build/), else executed again there
    earlier = {cid for cid in ids if compare_only and _problems_path(out_root / "pinned" / f"{cid}.ipynb").exists()}
    pinned = {cid: None if cid in earlier else pinned_build(config, chs[cid]) for cid in ids}
    for cid, nb in pinned.items():
        if nb is not None and not compare_only:
            path = out_root / "pinned" / f"{cid}.ipynb"
            write_atomic(path, nbformat.writes(nb))
            write_atomic(_problems_path(path), json.dumps({"seconds": 0.0, "problems": [], "from": "build/executed"}))
    origin = {cid: "build/executed" if nb is not None else "executed now" for cid, nb in pinned.items()}
    tasks = [(cid, str(out_root / env.label / f"{cid}.ipynb"), env.kernel_name, str(env.kernel_dirs)) for cid in ids]
    tasks += [(cid, str(out_root / "pinned" / f"{cid}.ipynb"), None, None) for cid in ids if pinned[cid] is None]
    problems: dict[tuple[str, bool], list[Problem]] = {}
    seconds: dict[str, float] = {}
    done: list[ChapterDrift] = []
    compare_s = 0.0

    def finish(cid: str) -> None:
        nonlocal compare_s
        t = time.perf_counter()
        side = nbformat.read(out_root / env.label / f"{cid}.ipynb", as_version=4)
        base = pinned[cid] or nbformat.read(out_root / "pinned" / f"{cid}.ipynb", as_version=4)
        stamps = [nb.metadata.get("jaxpath", {}).get("executed", {}) for nb in (base, side)]
        versions = version_rule(v for s in stamps for k, v in s.items() if k in STACK)
        ch = chs[cid]
        if any([c.source for c in strip_stamp(nb)] != [c.source for c in ch.nb.cells] for nb in (base, side)):
            findings = [Finding(1, cid, 0, "not compared", "the chapter's cells changed while drift ran (someone edited "
                                "it): run drift on it again", ch.title)]
        else:
            findings = compare_chapter(ch, base, side, problems[(cid, False)], problems.get((cid, True), []), versions)
        result = ChapterDrift(cid, chs[cid].title, findings, seconds[cid],
                              origin[cid], *stamps)
        compare_s += time.perf_counter() - t
        done.append(result)
        if on_chapter:
            on_chapter(result)

    def landed(cid: str, is_pinned: bool, probs: list[Problem], secs: float) -> None:
        problems[(cid, is_pinned)] = probs
        if not is_pinned:
            seconds[cid] = secs
        if (cid, False) in problems and (pinned[cid] is not None or (cid, True) in problems):
            finish(cid)

    if compare_only:
        for task in tasks:
            cid, is_pinned, probs, secs, source = _earlier(*task)
            if is_pinned:
                origin[cid] = source or "executed now"
            landed(cid, is_pinned, probs, secs)
    elif jobs <= 1 or len(tasks) <= 1:
        for task in tasks:
            landed(*_execute(str(config.root), *task))
    else:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(_execute, str(config.root), *task) for task in tasks]
            for f in as_completed(futures):
                landed(*f.result())
    order = {c: i for i, c in enumerate(ids)}
    done.sort(key=lambda c: order[c.id])
    wall = time.perf_counter() - t0
    record = out_root / env.label / "run.json"
    executed: float | None = wall
    if compare_only:
        try:
            data = json.loads(record.read_text(encoding="utf-8"))
            executed, jobs = data["seconds"], data["jobs"]
        except (OSError, ValueError, KeyError):
            executed = None
    elif not chapters:  # the whole course: what a later --compare-only reports as the execution's wall time
        write_atomic(record, json.dumps({"seconds": wall, "jobs": jobs, "chapters": len(ids)}))
    return DriftResult(env, done, wall, compare_s, jobs, executed)
