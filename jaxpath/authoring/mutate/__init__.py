"""Mutants of a reference solution: small, plausible mistakes, made to the code inside an answer
cell's `### BEGIN SOLUTION` region.

This module is pure (no kernel): it parses the answer cell with `ast`, applies each operator at each
place it fits, and splices the replacement into the original text at the node's position, so that a
mutant differs from the reference only where it was mutated and its diff reads like a one-line edit.

The general operators follow mutmut's set (2.x: `+`↔`-`, `*`↔`/`, `//`→`/`, `**`→`*`, the shifts and bit
operators, `x += d`→`x -= d` and `x = d`, the comparison boundaries `<`↔`<=`, `>`↔`>=`, `==`↔`!=`, `not`
removed, `is`↔`is not`, `in`↔`not in`, `break`↔`continue`, numbers n→n+1, `True`↔`False`) and
cosmic-ray's (a comparison replaced by its mirror, `and`↔`or`, unary operators removed, a statement
removed); mutmut's string mutations (`"XX" + s + "XX"`) are left out, since a changed dictionary key or
option name fails loudly and says nothing about the tests. Neither tool runs on code held in a notebook
cell (both mutate files on disk and run a test command per mutant, where a chapter's kernel is what makes
one mutant cost a fraction of a second), so the engine is ours; the array- and JAX-specific operators are ours
too: reductions and their axes, the
function pairs a learner mixes up, `jnp.where` branches, `stop_gradient` and `.astype` dropped,
dtypes, slice and index off-by-one, swapped positional arguments, and a PRNG key derived by
`split`/`fold_in` replaced by its parent (the key-reuse mistake).

A mutant's id is stable under edits elsewhere in the cell: it hashes the operator and the changed
lines only, so an author's record of an equivalent mutant survives unrelated changes.
"""
from __future__ import annotations

import ast
import difflib
import hashlib
from dataclasses import dataclass

from ...cells import solution_ranges
from .operators import _ATOMIC, _Collector

ENGINE_VERSION = 1
"""Bumped whenever an operator is added, removed or changed: committed mutation results keyed by an
older engine are stale."""


@dataclass(frozen=True)
class Mutant:
    id: str
    operator: str
    description: str
    line: int
    """1-based line in the answer cell."""
    source: str
    """The whole answer cell, mutated."""
    diff: str


OPERATORS = {
    "arith": "arithmetic operator swapped",
    "compare": "comparison changed (boundary or negation)",
    "bool": "boolean operator swapped or `not` removed",
    "sign": "unary minus removed",
    "number": "number changed (0↔1, n±1, sign)",
    "flag": "True↔False",
    "function": "function swapped for its usual confusion (sum↔mean, max↔min, argmax↔argmin, …)",
    "axis": "reduction axis dropped or added, keepdims flipped",
    "keyword": "keyword argument dropped",
    "index": "index, slice or loop bound off by one",
    "args": "two positional arguments swapped (jnp.where: branches swapped)",
    "unwrap": "stop_gradient, abs, .astype or block_until_ready removed",
    "dtype": "dtype changed",
    "key": "a key derived by split/fold_in replaced by its parent (key reuse)",
    "negate": "condition negated",
    "loop": "break↔continue",
    "delete": "statement removed",
}


def _offsets(source: str) -> list[int]:
    """Byte offset of the start of each line (ast positions are UTF-8 byte columns)."""
    out, pos = [0], 0
    for line in source.encode("utf-8").split(b"\n"):
        pos += len(line) + 1
        out.append(pos)
    return out


def _splice(source: str, node: ast.AST, text: str) -> str:
    raw = source.encode("utf-8")
    starts = _offsets(source)
    a = starts[node.lineno - 1] + node.col_offset
    b = starts[node.end_lineno - 1] + node.end_col_offset
    return (raw[:a] + text.encode("utf-8") + raw[b:]).decode("utf-8")


def _render(node: ast.AST, replacement) -> str:
    if replacement == "pass":
        return "pass"
    text = ast.unparse(ast.fix_missing_locations(replacement))
    if isinstance(replacement, ast.expr) and not isinstance(replacement, _ATOMIC):
        text = f"({text})"  # keeps the precedence of whatever surrounds the node
    return text


def mutant_id(operator: str, before: list[str], after: list[str]) -> str:
    h = hashlib.sha256("\n".join([operator, *[l.strip() for l in before], "→", *[l.strip() for l in after]])
                       .encode("utf-8")).hexdigest()
    return f"{operator}-{h[:8]}"


def generate(source: str, label: str = "answer") -> list[Mutant]:
    """Every distinct mutant of the solution region of an answer cell, in source order.

    Mutants that do not compile, or that compile to the same program as the reference, are dropped;
    two edits that give the same program are kept once."""
    regions = solution_ranges(source)
    if not regions:
        return []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    col = _Collector(regions)
    col.parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            col.parents[child] = node
    # key children must be known before their uses are visited: collect assignments first
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and col.inside(node):
            col._note_key_children(node)
    col.visit(tree)
    ref_dump = ast.dump(tree)
    seen = {ref_dump}
    mutants: list[Mutant] = []
    ids: dict[str, int] = {}
    ref_lines = source.split("\n")
    for node, replacement, op, desc in sorted(col.edits, key=lambda e: (e[0].lineno, e[0].col_offset)):
        try:
            text = _render(node, replacement)
            new = _splice(source, node, text)
            new_tree = ast.parse(new)
            compile(new_tree, f"<{label}>", "exec")
        except (SyntaxError, ValueError, TypeError):
            continue
        dump = ast.dump(new_tree)
        if dump in seen:
            continue
        seen.add(dump)
        new_lines = new.split("\n")
        sm = difflib.SequenceMatcher(a=ref_lines, b=new_lines, autojunk=False)
        before, after = [], []
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag != "equal":
                before += ref_lines[i1:i2]
                after += new_lines[j1:j2]
        mid = mutant_id(op, before, after)
        if mid in ids:  # the same edit on two identical lines: number them
            ids[mid] += 1
            mid = f"{mid}.{ids[mid]}"
        else:
            ids[mid] = 1
        diff = "\n".join(difflib.unified_diff(ref_lines, new_lines, "reference", "mutant", n=1, lineterm=""))
        mutants.append(Mutant(mid, op, desc, node.lineno, new, diff))
    return mutants
