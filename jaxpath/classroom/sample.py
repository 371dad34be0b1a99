"""A small synthetic class, graded in a scratch copy of the course: what `make` ends with, so a newcomer
sees the platform's main job from the first command.

Students are made from the course's own material: the reference solutions (correct), for every exercise a
wrong answer from the variants file that loses part of its points (partly wrong: the one with a hint where
there is one, so that its page names the mistake), the released stub, a crash, an endless loop, and a
broken file. Three more are written here, for the class-wide views (`jaxpath similar`, `jaxpath clusters`):
a near-copy pair (one set of answers, unlike the reference solutions, copied with names, comments and
whitespace changed) and a mistake two students make independently, in different styles, that the variants
file does not know (`SharedMistake`).
"""
from __future__ import annotations

import json
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from ..authoring.proofs import proof_path
from ..cells import grade_id, is_answer, solution_source
from ..config import Config

SAMPLE_CHAPTERS = ("basics/01_introduction", "basics/02_jit")
TIMESTAMP = "2026-11-20 10:00:00.000000 UTC"


def answers_from_source(source_nb) -> dict[str, str]:
    """grade_id -> the reference answer's code (solution markers removed)."""
    return {c.metadata.nbgrader["grade_id"]: solution_source(c.source) for c in source_nb.cells if is_answer(c)}


def submission(release_nb, answers: dict[str, str]):
    """The released notebook with some answer cells filled in (grade_id -> code)."""
    nb = nbformat.from_dict(json.loads(nbformat.writes(release_nb)))
    for c in nb.cells:
        gid = grade_id(c)
        if gid in answers:
            c.source = answers[gid]
    return nb


def submit(root: Path, student: str, part: str, name: str, nb=None, raw: bytes | None = None,
           timestamp: str | None = TIMESTAMP) -> Path:
    d = root / "submitted" / student / part
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}.ipynb"
    if raw is not None:
        path.write_bytes(raw)
    else:
        nbformat.write(nb, path)
    if timestamp is not None:
        (d / "timestamp.txt").write_text(timestamp)
    return path


@dataclass(frozen=True)
class SharedMistake:
    """One wrong answer that several students wrote independently: the same behaviour on the checks (the same
    requirements fail, with the same messages) from code in different styles, so that it is a shared
    misconception and not a copy."""
    chapter: str                 # "basics/01_introduction"
    exercise: str                # "lookup_or_fill"
    students: tuple[str, ...]
    breaks: tuple[str, ...]      # the requirements it fails
    why: str


@dataclass
class SampleClass:
    root: Path
    part: str
    students: list[str]
    expected: dict[tuple[str, str], float] = field(default_factory=dict)
    """(student, notebook) -> the points its answers earn, for the students whose score is known in advance
    (correct, partly_wrong, stub, and the three of NEAR_COPIES and SHARED_MISTAKE): what both `jaxpath grade`
    and stock `nbgrader autograde` must give."""
    near_copies: tuple[str, ...] = ()
    """Two students whose answers are one set of answers copied (names, comments and whitespace changed), in a
    style unlike the reference solutions: the one pair `jaxpath similar` must find; no other pair of the class
    shares more than the course's own code."""
    shared_mistake: SharedMistake | None = None
    """A mistake made independently by two students (one of them of the near-copy pair, on an exercise its
    partner did not copy): what `jaxpath clusters` must group, and `jaxpath similar` must not pair."""


# ---- the students written for the class-wide views ------------------------------------------------------
# Answer code by student, chapter and answer cell; an answer cell not named here holds the reference solution
# (which `jaxpath similar` leaves out: everyone may start from it), a chapter not named is not handed in.
# near_copy_a wrote its own answers, unlike the reference solutions (with the off-by-one of SHARED_MISTAKE in
# lookup_or_fill); near_copy_b copied them, renaming, recommenting and reformatting, all but lookup_or_fill,
# where it has the reference's. off_by_one makes near_copy_a's mistake on its own, in another style.
NEAR_COPIES = ("near_copy_a", "near_copy_b")
SHARED_MISTAKE = SharedMistake(
    "basics/01_introduction", "lookup_or_fill", ("near_copy_a", "off_by_one"), ("R1",),
    "an index equal to the table's length counts as valid (<= instead of <), so it reads the last row "
    "(JAX clamps it) instead of giving fill")

WRITTEN: dict[str, dict[str, dict[str, str]]] = {
    "near_copy_a": {
        "basics/01_introduction": {
            "accumulate-answer": '''def accumulate(table, idx, delta):
    # scatter-add: every delta lands on its row, repeated rows sum up
    rows = jnp.asarray(idx)
    updates = jnp.asarray(delta, dtype=table.dtype)
    result = table.at[rows].add(updates)
    return result
''',
            "make_regression_data-answer": '''def make_regression_data(key, n, d):
    # one fresh subkey per draw; the carried key is never drawn from
    samples = []
    for shape in [(n, d), (d,), (n,)]:
        key, subkey = jax.random.split(key)
        samples.append(jax.random.normal(subkey, shape))
    features, weights, noise = samples
    targets = features @ weights + noise / 10
    return features, weights, targets
''',
            "lookup_or_fill-answer": '''def lookup_or_fill(table, idx, fill):
    # an index is usable when it points inside the table
    inside = jnp.logical_and(idx >= 0, idx <= table.shape[0])
    picked = table[idx]
    return jnp.where(inside, picked, fill).astype(table.dtype)
''',
            "brighten-answer": '''def brighten(img, amount):
    # widen first so the sum cannot wrap, then saturate and narrow again
    level = jnp.asarray(img, dtype=jnp.int32) + amount
    level = jnp.where(level > 255, 255, level)
    level = jnp.where(level < 0, 0, level)
    return level.astype(jnp.uint8)
''',
        },
        "basics/02_jit": {
            "huber-answer": '''def huber(x, delta):
    # quadratic inside the band, linear outside; both meet at |x| == delta
    size = jnp.abs(x)
    inner = x * x / 2
    outer = delta * size - delta * delta / 2
    return jnp.where(size > delta, outer, inner)
''',
            "jit_config-answer": '''def jit_config(fn):
    # settings travel as a hashable static key, data as traced arguments
    def call(x, data, frozen):
        merged = dict(data)
        merged.update(frozen)
        return fn(x, merged)

    call_jit = jax.jit(call, static_argnums=2)

    def wrapper(x, config):
        static_keys = [k for k in config if isinstance(config[k], (int, str))]
        frozen = frozenset((k, config[k]) for k in static_keys)
        data = {k: config[k] for k in config if k not in static_keys}
        return call_jit(x, data, frozen)

    return wrapper
''',
            "bucketed-answer": '''def bucketed(fn):
    # one compiled program per power-of-two length
    compiled = jax.jit(fn)

    def padded_call(x):
        length = x.shape[0]
        bucket = 1
        while bucket < length:
            bucket *= 2
        tail = jnp.zeros((bucket - length,) + x.shape[1:], dtype=x.dtype)
        return compiled(jnp.concatenate([x, tail]), length)

    return padded_call
''',
            "sgd_epoch-answer": '''def sgd_epoch(loss_fn, w, X, y, lrs, batch_size):
    # the gradient is compiled once per batch shape; the update itself is cheap
    grad_fn = jax.jit(jax.grad(loss_fn))
    n_rows = X.shape[0]
    for step, rate in enumerate(lrs):
        lo = step * batch_size
        hi = min(lo + batch_size, n_rows)
        w = w - rate * grad_fn(w, X[lo:hi], y[lo:hi])
    return w
''',
        },
    },
    "near_copy_b": {
        "basics/01_introduction": {
            "accumulate-answer": '''def accumulate(table, idx, delta):
    positions = jnp.asarray(idx)

    # deltas in the dtype of the table
    vals = jnp.asarray(delta, dtype = table.dtype)
    out = table.at[positions].add(vals)
    return out
''',
            "make_regression_data-answer": '''def make_regression_data(key, n, d):
    draws = []
    for shp in [(n, d), (d,), (n,)]:
        key, k = jax.random.split(key)    # new subkey every time
        draws.append(jax.random.normal(k, shp))
    X, w, eps = draws
    y = X@w + eps/10
    return X, w, y
''',
            "brighten-answer": '''def brighten(img, amount):
    v = jnp.asarray(img, dtype=jnp.int32)+amount
    v = jnp.where(v > 255, 255, v)   # too bright
    v = jnp.where(v < 0, 0, v)       # too dark

    return v.astype(jnp.uint8)
''',
        },
        "basics/02_jit": {
            "huber-answer": '''def huber(x, delta):
    ax = jnp.abs(x)
    quad = x*x/2                       # small |x|
    lin = delta*ax - delta*delta/2     # large |x|
    return jnp.where(ax > delta, lin, quad)
''',
            "jit_config-answer": '''def jit_config(fn):
    def inner(x, arrays, static):
        cfg = dict(arrays)
        cfg.update(static)
        return fn(x, cfg)
    inner_jit = jax.jit(inner, static_argnums=2)

    def g(x, config):
        # ints, bools and strings are static
        names = [name for name in config if isinstance(config[name], (int, str))]
        static = frozenset((name, config[name]) for name in names)
        arrays = {name: config[name] for name in config if name not in names}
        return inner_jit(x, arrays, static)
    return g
''',
            "bucketed-answer": '''def bucketed(fn):
    f = jax.jit(fn)

    def g(x):
        n = x.shape[0]
        size = 1
        while size < n:
            size *= 2   # next power of two
        pad = jnp.zeros((size - n,) + x.shape[1:], dtype=x.dtype)
        return f(jnp.concatenate([x, pad]), n)
    return g
''',
            "sgd_epoch-answer": '''def sgd_epoch(loss_fn, w, X, y, lrs, batch_size):
    g = jax.jit(jax.grad(loss_fn))
    N = X.shape[0]
    for i, lr in enumerate(lrs):
        a = i * batch_size
        b = min(a + batch_size, N)
        w = w - lr * g(w, X[a:b], y[a:b])   # one SGD step
    return w
''',
        },
    },
    "off_by_one": {
        "basics/01_introduction": {
            "lookup_or_fill-answer": '''def lookup_or_fill(table, idx, fill):
    n = len(table)
    bad = (idx < 0) | (idx > n)
    fill_value = jnp.asarray(fill, dtype=table.dtype)
    return jnp.where(bad, fill_value, table[idx])
''',
        },
    },
}


def _breaks(wrong: dict) -> tuple[str, ...]:
    b = wrong.get("breaks", ())
    return (b,) if isinstance(b, str) else tuple(b)


def telling_wrong(entry: dict) -> tuple[str, float] | None:
    """An exercise's wrong answer for the partly-wrong student, and the points it loses: one that loses some
    but not all of them (with a hint, where one has), else the first; None for an exercise without one."""
    weights, wrong = entry.get("points", {}), entry.get("wrong", [])
    partial = [w for w in wrong if weights and 0 < len(_breaks(w)) < len(weights)]
    pick = next(iter([w for w in partial if w.get("hint")] + partial + wrong), None)
    if pick is None:
        return None
    lost = sum(weights[r] for r in _breaks(pick)) if weights else None
    return pick["code"], lost


def partly_wrong(source_nb, variants: dict) -> tuple[dict[str, str], float]:
    """The answers of a student who makes, in every exercise, the mistake `telling_wrong` picks (grade_id ->
    code), and the points these answers lose."""
    answers, lost = answers_from_source(source_nb), 0.0
    for gid in list(answers):
        name = gid.removesuffix("-answer")
        pick = telling_wrong(variants.get(name, {}))
        if pick is not None:
            answers[gid] = pick[0]
            cells = [c for c in source_nb.cells if grade_id(c) == f"{name}-check"]
            lost += pick[1] if pick[1] is not None else sum(float(c.metadata.nbgrader["points"]) for c in cells)
    return answers, lost


def copy_proof(config: Config, dest: Config, chapter_id: str) -> bool:
    """Copy the chapter's proof (it records the known mistakes the feedback pages name) from `config`'s proofs/
    into `dest`'s; False when the chapter has none."""
    proof = proof_path(config, chapter_id)
    if not proof.exists():
        return False
    there = proof_path(dest, chapter_id)
    there.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(proof, there)
    return True


def written_expected(student: str, cid: str, total: float, variants: dict) -> float:
    """The points a WRITTEN student's answers to chapter `cid` earn: full marks, less the points of the
    requirements that SHARED_MISTAKE breaks where the student makes it."""
    m = SHARED_MISTAKE
    if cid == m.chapter and student in m.students:
        return total - sum(variants[m.exercise]["points"][r] for r in m.breaks)
    return total


def make_sample_class(config: Config, dest: Path, chapters=SAMPLE_CHAPTERS) -> SampleClass:
    """A scratch course at `dest` holding `chapters`, six synthetic students made from the course's material and
    the WRITTEN ones (each on the chapters it answers among `chapters`)."""
    from nbgrader.apps import NbGraderAPI

    from ..config import nbgrader_config
    from ..gradebooks import prepare_nbgrader

    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    parts = {c.split("/")[0] for c in chapters}
    if len(parts) != 1:
        raise ValueError("the sample class grades chapters of one part")
    part = parts.pop()
    for name in ("nbgrader_config.py", "course.toml"):
        shutil.copy(config.root / name, dest / name)
    (dest / "source" / part).mkdir(parents=True)
    for cid in chapters:
        shutil.copy(config.source / f"{cid}.ipynb", dest / "source" / f"{cid}.ipynb")
    (dest / "gradebook").mkdir()
    prepare_nbgrader()
    result = NbGraderAPI(config=nbgrader_config(dest)).generate_assignment(part, force=True, create=True)
    if not result.get("success"):
        raise RuntimeError(f"nbgrader generate_assignment failed: {result.get('error')}")
    students = ["correct", "partly_wrong", "stub", "crashing", "looping", "malformed"]
    students += [s for s, answers in WRITTEN.items() if set(answers) & set(chapters)]
    expected: dict[tuple[str, str], float] = {}
    for cid in chapters:
        stem = cid.split("/")[1]
        src = nbformat.read(config.source / f"{cid}.ipynb", as_version=4)
        rel = nbformat.read(dest / "release" / part / f"{stem}.ipynb", as_version=4)
        ok = answers_from_source(src)
        first = next(iter(ok))
        variants = tomllib.loads((config.variants / f"{cid}.toml").read_text())
        total = sum(float(c.metadata.nbgrader.get("points", 0) or 0) for c in src.cells
                    if c.metadata.get("nbgrader", {}).get("grade"))
        wrong, lost = partly_wrong(src, variants)
        expected.update({("correct", stem): total, ("partly_wrong", stem): total - lost, ("stub", stem): 0.0})
        submit(dest, "correct", part, stem, submission(rel, ok))
        submit(dest, "partly_wrong", part, stem, submission(rel, wrong))
        submit(dest, "stub", part, stem, rel)
        submit(dest, "crashing", part, stem, submission(rel, {**ok, first: "import os\nos._exit(1)"}))
        submit(dest, "looping", part, stem, submission(rel, {**ok, first: "while True:\n    pass"}))
        submit(dest, "malformed", part, stem, raw=nbformat.writes(submission(rel, ok)).encode()[:2000])
        for student, answers in WRITTEN.items():
            if cid in answers:
                unknown = set(answers[cid]) - set(ok)
                if unknown:
                    raise ValueError(f"sample student {student}: {cid} has no answer cell {sorted(unknown)}")
                submit(dest, student, part, stem, submission(rel, {**ok, **answers[cid]}))
                expected[(student, stem)] = written_expected(student, cid, total, variants)
        copy_proof(config, Config(dest), cid)
    for student in students:
        for cid in chapters:  # a notebook a student with a submission left out: missing, 0 points (nbgrader's)
            if student in WRITTEN:
                expected.setdefault((student, cid.split("/")[1]), 0.0)
    present = set(students)
    mistake = SHARED_MISTAKE if SHARED_MISTAKE.chapter in chapters else None
    return SampleClass(dest, part, students, expected,
                       near_copies=NEAR_COPIES if present >= set(NEAR_COPIES) else (),
                       shared_mistake=mistake)


# ---- a synthetic class of any size (benchmarks and tests of the class-wide views) ---------------------------
@dataclass
class SyntheticClass:
    root: Path
    part: str
    students: list[str]
    near_copies: list[tuple[str, str]]
    """The planted pairs: the second student's answers are the first's, renamed again and recommented."""


def rename(code: str, suffix: str, keep: set[str] = frozenset()) -> str:
    """The code with every name it binds (assigned, a parameter, a function it defines), except those in `keep`,
    renamed `<name>_<suffix>`; comments and layout as `ast.unparse` writes them."""
    import ast

    tree = ast.parse(code)
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bound.add(node.name)
    new = {n: f"{n}_{suffix}" for n in bound - set(keep)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in new:
            node.id = new[node.id]
        elif isinstance(node, ast.arg) and node.arg in new:
            node.arg = new[node.arg]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in new:
            node.name = new[node.name]
    return ast.unparse(tree)


def own_lines(code: str, rng) -> str:
    """The code with a line of the student's own (`step = <a number of its own>`) after every statement of every
    function and loop body: two students who start from one answer then share no stretch longer than one of its
    statements, as two people who wrote the same idea their own way."""
    import ast

    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.For, ast.While)):
            body = []
            for stmt in node.body:
                body += [stmt, ast.parse(f"step = {rng.randrange(10 ** 6)}").body[0]]
            node.body = body
    return ast.unparse(ast.fix_missing_locations(tree))


def answer_pool(source_nb, variants: dict) -> dict[str, list[str]]:
    """grade_id -> every answer the course knows for that exercise: the reference, the alternatives and the wrong
    answers of the variants file."""
    pool = {}
    for gid, ref in answers_from_source(source_nb).items():
        entry = variants.get(gid.removesuffix("-answer"), {})
        pool[gid] = [ref] + [v["code"] for kind in ("alternative", "wrong") for v in entry.get(kind, [])]
    return pool


def synthetic_class(config: Config, dest: Path, students: int, *, chapters=SAMPLE_CHAPTERS,
                    near_copies: int | None = None, seed: int = 0) -> SyntheticClass:
    """A course at `dest` (the chapters' source and released notebooks, no gradebook) with `students` submissions
    of `chapters`, for measuring and testing the class-wide views at any size; not meant to be graded. Each answer
    is one the course knows for its exercise (`answer_pool`, drawn at random), its names renamed for the student
    and lines of its own after each statement (`own_lines`). `near_copies` pairs (default: one per 100 students,
    at least one) are planted: the second student's answers are the first's, renamed again and recommented."""
    import random

    rng = random.Random(seed)
    shutil.rmtree(dest, ignore_errors=True)
    part = chapters[0].split("/")[0]
    dest.mkdir(parents=True)
    for name in ("nbgrader_config.py", "course.toml"):
        shutil.copy(config.root / name, dest / name)
    names = [f"s{n:04d}" for n in range(students)]
    pairs = max(1, students // 100) if near_copies is None else near_copies
    copied = dict(zip(names[1:2 * pairs:2], names[0:2 * pairs:2]))  # copier -> the student it copies
    for cid in chapters:
        stem = cid.split("/")[1]
        for kind, base in (("source", config.source), ("release", config.release)):
            (dest / kind / part).mkdir(parents=True, exist_ok=True)
            shutil.copy(base / f"{cid}.ipynb", dest / kind / part / f"{stem}.ipynb")
        src = nbformat.read(config.source / f"{cid}.ipynb", as_version=4)
        released = json.loads((config.release / f"{cid}.ipynb").read_text(encoding="utf-8"))
        pool = answer_pool(src, tomllib.loads((config.variants / f"{cid}.toml").read_text()))
        keep = {gid.removesuffix("-answer") for gid in pool}
        written: dict[str, dict[str, str]] = {}
        for student in names:
            if student in copied:
                written[student] = {gid: "# my own version\n" + rename(code, student, keep)
                                    for gid, code in written[copied[student]].items()}
            else:
                written[student] = {gid: rename(own_lines(rng.choice(codes), rng), student, keep)
                                    for gid, codes in pool.items()}
            nb = json.loads(json.dumps(released))
            for cell in nb["cells"]:
                if grade_id(cell) in written[student]:
                    cell["source"] = written[student][grade_id(cell)]
            d = dest / "submitted" / student / part
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{stem}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
            (d / "timestamp.txt").write_text(TIMESTAMP)
    return SyntheticClass(dest, part, names, [(a, b) for b, a in copied.items()])
