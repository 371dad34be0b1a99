"""Defence in depth against a notebook that tampers with its own tests.

A student's code runs in the same Python process as the tests that grade it: it can monkeypatch the
helpers tests call (`jnp.allclose`, `numpy.testing`, builtins), hide its errors (IPython's traceback
display, custom exception handlers), rewrite the cells that follow (AST or input transformers, trace
functions), or rebind the names a test relies on. nbgrader decides pass/fail from one thing: whether an
error output was printed. The grader decides it from four:

1. **The kernel's execute reply.** A cell whose reply says it raised fails, whatever it printed.
2. **The test ran to its end as written.** Each test cell is executed with a last line added, which
   prints a fresh random token. A cell that reports success without printing its token failed.
3. **What tests rely on is intact.** Before any student code runs, a prelude records the identity of
   everything the tests reach through modules and the interpreter: every function, class and submodule
   of numpy, jax, math, builtins and friends (and the code object of every Python function among them),
   the methods of IPython's shell and kernel, its transformer lists, its exception handlers, the trace and
   profile hooks, sys.stdout. After each test cell that passed, a probe (fresh code, sent by the grader)
   compares all of them with the record, and checks that the record itself is unchanged.
4. **The names a test reads mean what they meant in the reference run.** Each global name a test cell
   reads (but does not assign), other than the names the student is asked to define, must have the same
   fingerprint (module name; a function's module, qualified name and code; a class's name, and for a class
   the notebook defines, such as the course's `Requirements` helper, the code of its methods and nested
   classes; a value's type) as in the reference solution's run. The names the student defines are those
   the source's answer cells bind, and any name the reference run leaves undefined where the test runs (a
   course whose source keeps the answer cell as a stub): only student code can have bound it, so it is the
   student's.

A test cell that passed while any of these fails is not counted (it gets an error output saying why) and
the notebook is flagged *tampered* for a person to review. Test cells that passed before the tampering
keep their points: a wrong answer plus tampering never scores more than the wrong answer alone.

What changes when the course's own (reference) notebook runs is not evidence: the reference run records
which of the watched things the course itself changes, and those are left out for that notebook.

Not defended: code that takes over the kernel's execution machinery *and* recognizes and forges the
grader's probes can make all of this report "intact" (it runs in the same process). Isolation still
holds against it: it cannot see hidden tests before they run, nor the gradebook, nor other students.
"""
from __future__ import annotations

import ast
import json
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..kernel import source as kernel_source
from ..texts import not_counted

if TYPE_CHECKING:
    from .tasks import Probe

VOLATILE = ("builtins.input", "builtins.getpass", "sys.excepthook", "sys.breakpointhook")
"""Replaced by ipykernel itself around every request: never evidence."""
WATCH_ROOTS = ("builtins", "numpy", "jax", "jaxlib", "math", "cmath", "operator", "functools", "itertools",
               "inspect", "ast", "types", "traceback", "sys", "IPython", "ipykernel", "traitlets", "optax",
               "flax", "scipy", "unittest", "re", "contextlib", "warnings")
"""Top-level packages whose modules are watched (those already imported when the prelude runs)."""
IMPORTS = ("numpy", "numpy.testing", "jax", "jax.numpy", "math")
"""Imported by the prelude, so that they are recorded before any student code can touch them."""

UNDEFINED = "undefined"
"""The fingerprint of a name that is not bound (neither in the user namespace nor a builtin)."""

RESULT = "__import__('sys').modules['_jaxpath_integrity'].result"
"""The user expression that brings the prelude's and the probe's results back in the kernel's execute
reply (the shell channel), not through printed output, which a loaded kernel may deliver late."""


def notebook_imports(sources) -> list[str]:
    """The modules a notebook's own code imports (`import a.b`, `from a.b import c`): the prelude imports and
    watches them too, so that a chapter's tests on optax or flax are guarded like those on numpy."""
    found = set()
    for src in sources:
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
    return sorted(found)


_KERNEL_NAMES = "__jaxpath_fp, __jaxpath_prelude, __jaxpath_probe"


def _as_cell(code: str) -> str:
    """A cell that runs `code` in the user namespace: compiled by `exec` from one string literal, not line by
    line through IPython's transformers (a probe spent half its time there)."""
    return f"exec(compile({code!r}, '<jaxpath integrity>', 'exec'))\n"


def prelude_code(imports=IMPORTS, roots=WATCH_ROOTS) -> str:
    """The cell that runs the prelude (jaxpath/kernel/integrity.py) and leaves no name behind."""
    imports = tuple(dict.fromkeys([*IMPORTS, *imports]))
    roots = tuple(dict.fromkeys([*WATCH_ROOTS, *roots]))
    return _as_cell(f"{kernel_source('integrity')}\n__jaxpath_prelude({roots!r}, {imports!r}); del {_KERNEL_NAMES}\n")


def probe_code(nonce: str, names=(), ignore=()) -> str:
    """The cell that runs the probe after a test cell and leaves no name behind."""
    ignore = sorted({*ignore, *VOLATILE})
    return _as_cell(f"{kernel_source('integrity')}\n__jaxpath_probe({nonce!r}, {sorted(names)!r}, set({ignore!r})); "
                    f"del {_KERNEL_NAMES}\n")


_STATE = "__import__('sys').modules['_jaxpath_integrity']"


def trailer(token: str) -> str:
    """The line added to the end of a test cell: it leaves `token` where the next probe reads it."""
    return f"\n{_STATE}.ended = {token!r}"


def with_trailer(source: str, token: str) -> str:
    """A test cell with `trailer(token)` at its end, keeping the value of its last expression: nbgrader gives
    partial credit when a test cell's last expression is a number (nbgrader.utils.determine_grade reads the
    cell's execute_result), so a cell that ends in `score` must still end in it. The expression is kept aside,
    the token left, then the value shown again as the cell's result; a cell IPython syntax makes unparsable
    as Python (a magic) ends as before."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source + trailer(token)
    last = tree.body[-1] if tree.body else None
    if not isinstance(last, ast.Expr) or last.end_lineno is None:
        return source + trailer(token)
    lines = source.split("\n")

    # ast's offsets count UTF-8 bytes within a line: convert the line's byte offsets to characters
    def at(lineno: int, col: int) -> int:
        line = lines[lineno - 1]
        return sum(len(l) + 1 for l in lines[:lineno - 1]) + len(line.encode("utf-8")[:col].decode("utf-8", "ignore"))

    start, end = at(last.lineno, last.col_offset), at(last.end_lineno, last.end_col_offset)
    # `score;` shows nothing in IPython (and scores in full under nbgrader): so does the value shown again
    quiet = ";" if source[end:].split("\n", 1)[0].split("#", 1)[0].strip().startswith(";") else ""
    return (f"{source[:start]}{_STATE}.last_value = (\n{source[start:end]}\n){source[end:]}{trailer(token)}"
            f"\n{_STATE}.last_value{quiet}")


def new_token() -> str:
    return secrets.token_hex(12)


def parse_result(text: str | None) -> dict | None:
    """The JSON the prelude or a probe left in the kernel, from the execute reply's text/plain repr."""
    if not text:
        return None
    try:
        return json.loads(ast.literal_eval(text))
    except (ValueError, SyntaxError, TypeError):
        return None


# -- which names a test reads ---------------------------------------------------------------------------
def _names(source: str) -> tuple[set[str], set[str]]:
    """Global names a cell reads, and names it binds (anywhere in it)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(), set()
    loads, stores = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else stores).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stores.add(node.name)
            a = node.args if not isinstance(node, ast.ClassDef) else None
            if a is not None:
                for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
                    if arg is not None:
                        stores.add(arg.arg)
        elif isinstance(node, ast.Lambda):
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg,
                        node.args.kwarg]:
                if arg is not None:
                    stores.add(arg.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                stores.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            stores.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            stores.update(node.names)
    return loads, stores


def relied_on(test_source: str, answer_names: set[str]) -> set[str]:
    """The global names a test cell reads that it does not bind and the student is not asked to define."""
    loads, stores = _names(test_source)
    return {n for n in loads - stores - answer_names if not n.startswith("__")}


def answer_names(answer_sources) -> set[str]:
    names = set()
    for src in answer_sources:
        names |= _names(src)[1]
    return names


def static_names(nb) -> dict[str, list[str]]:
    """grade_id -> the names its test cell reads that the student is not asked to define: what a probe
    fingerprints (the same rule as the reference run's, without running anything)."""
    from ..cells import grade_id, is_answer, is_test

    answers = answer_names(c.source for c in nb.cells if is_answer(c))
    return {grade_id(c): sorted(relied_on(c.source, answers)) for c in nb.cells if is_test(c)}


def expected(names: dict[str, str]) -> dict[str, str]:
    """Of a test's reference fingerprints, those a submission must match: a name the course leaves undefined
    at this test (its answer cell is a stub, or the reference never binds it) can only have been bound by
    the student's code, so it is theirs, whatever it holds."""
    return {n: fp for n, fp in names.items() if fp != UNDEFINED}


def judge(data: dict, digest, expect: dict[str, str], ignore=()) -> list[str]:
    """What one probe's answer holds against the reference: [] when the test machinery is intact."""
    problems = []
    if data.get("digest") != digest:
        problems.append("the grader's record of the test machinery was altered")
    skip = set(ignore)
    shown = sorted({c for c in data.get("changed", []) if c not in skip})
    if shown:
        problems.append("changed: " + ", ".join(shown[:8]) + (f" and {len(shown) - 8} more" if len(shown) > 8 else ""))
    got = data.get("names", {})
    renamed = [n for n, fp in sorted(expect.items()) if got.get(n) != fp]
    if renamed:
        problems.append("names this test relies on are rebound: " + ", ".join(
            f"{n} is {got.get(n, '?')}, expected {expect[n]}" for n in renamed[:4]))
    return problems


def void(cell, why: str) -> None:
    """Make a test cell that ran to its end score nothing: a NotCounted error output, put *first*, because
    nbgrader scores a code cell by its first telling output (nbgrader.utils.determine_grade): an error is 0, but
    an execute_result before it (a cell that gives partial credit ends in its points) would be its score."""
    cell.outputs.insert(0, not_counted(why))


def verdict(cell, label: str, passed: bool, problems: list[str]) -> str | None:
    """The evidence line for a probe's problems (None when there are none); a pass they make void gets a
    NotCounted error output, so nbgrader scores the test as failed."""
    if not problems:
        return None
    if passed:
        why = "the pass is not counted, the test machinery was tampered with: " + "; ".join(problems)
        void(cell, why)
        return f"{label}: {why}"
    return f"{label}: failed, and the test machinery was tampered with: " + "; ".join(problems)


def settle_probes(nb, probes: list[Probe], evidence: list[str], ref: Reference) -> list[str]:
    """Judge the probes a worker brought back unjudged (it ran before the reference run was done) exactly as
    the worker would have: a void pass gets its NotCounted output in `nb`; returns all evidence, in cell order."""
    found = list(evidence)
    for p in probes:
        problems = judge(p.data, p.digest, expected(ref.names.get(p.gid, {})), ref.ignore)
        line = verdict(nb.cells[p.cell], f"cell {p.cell + 1} ({p.gid})", p.passed, problems)
        if line:
            found.append(line)
    return evidence_order(found)


def evidence_order(lines: list[str]) -> list[str]:
    """Evidence lines ('cell N (grade id): ...') in cell order, whichever side found them."""
    def cell(line: str) -> int:
        head = line.split(" ", 2)
        return int(head[1]) if len(head) > 1 and head[0] == "cell" and head[1].isdigit() else 0
    return sorted(lines, key=cell)


@dataclass
class Reference:
    """What the reference run of one notebook established."""
    names: dict[str, dict[str, str]] = field(default_factory=dict)
    """grade_id -> {name the test reads: its fingerprint}."""
    ignore: list[str] = field(default_factory=list)
    """Watched things the course's own notebook changes (not evidence of tampering)."""
    imports: list[str] = field(default_factory=list)
    """Modules the notebook imports: imported and watched from the prelude on."""

    @property
    def roots(self) -> list[str]:
        return sorted({m.split(".")[0] for m in self.imports})

    def to_json(self) -> str:
        return json.dumps({"names": self.names, "ignore": self.ignore, "imports": self.imports}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Reference":
        d = json.loads(text)
        return cls(d.get("names", {}), d.get("ignore", []), d.get("imports", []))
