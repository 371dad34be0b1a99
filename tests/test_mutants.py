"""Mutation testing: the operators (no kernel), the runner on a small course (fast kernels, no JAX), and
the committed MUTANTS.md of the real course (current and meeting the bar; nothing is rerun)."""
import ast
import textwrap

import nbformat
import pytest
from course_factory import VARIANTS, exercise, good_cells, make_course

from jaxpath import Config
from jaxpath.authoring.mutants import (
    COURSE_MIN,
    EXERCISE_MIN,
    SUMMARY_FILE,
    chapter_key,
    check,
    committed,
    mutants_one,
    run_mutants,
)
from jaxpath.authoring.mutate import generate
from jaxpath.cells import solution_ranges


def cell(body: str, head: str = "def f(x, key, table, c, a, b, i, n):") -> str:
    solution = textwrap.indent(textwrap.dedent(body).strip(), "    ")
    return f"# ✍️ Your answer\n{head}\n    ### BEGIN SOLUTION\n{solution}\n    ### END SOLUTION\n"


def mutated_lines(src: str) -> set[str]:
    ref = set(src.split("\n"))
    return {l.strip() for m in generate(src) for l in m.source.split("\n") if l not in ref}


@pytest.mark.parametrize("body, expected", [
    ("return jnp.sum(x, axis=0)", {"return jnp.mean(x, axis=0)", "return jnp.sum(x)", "return jnp.sum(x, axis=1)"}),
    ("return jnp.sum(x)", {"return jnp.sum(x, axis=0)", "return jnp.sum(x, axis=-1)", "return jnp.sum(x, keepdims=True)"}),
    ("return jnp.argmax(x, axis=-1)", {"return jnp.argmin(x, axis=-1)", "return jnp.argmax(x, axis=0)"}),
    ("return jnp.maximum(a, b)", {"return jnp.minimum(a, b)", "return jnp.maximum(b, a)"}),
    ("return jnp.where(c, a, b)", {"return jnp.where(c, b, a)", "return jnp.where(a, c, b)"}),
    ("return x[i]", {"return x[i + 1]", "return x[i - 1]"}),
    ("return x[1:n]", {"return x[0:n]", "return x[2:n]", "return x[1:n + 1]", "return x[1:n - 1]"}),
    ("return a < b", {"return (a <= b)", "return (a > b)"}),
    ("for j in range(n):\n    x = x + j\nreturn x", {"for j in range(n + 1):", "for j in range(n - 1):", "x = (x - j)"}),
    ("return a * b + 1", {"return (a / b) + 1", "return (a * b - 1)", "return a * b + 0", "return a * b + 2"}),
    ("return -x", {"return x"}),
    ("return a and b", {"return (a or b)"}),
    ("return jax.lax.stop_gradient(x) * 2", {"return x * 2"}),
    ("return x.astype(jnp.float32)", {"return x", "return x.astype(jnp.float16)"}),
    ("y = x + 1\nreturn y", {"pass"}),
    ("x += a\nreturn x", {"x -= a", "x = a"}),
])
def test_operators(body, expected):
    got = mutated_lines(cell(body))
    assert expected <= got, sorted(got)


def test_key_reuse_operators():
    src = cell("""
        k1, k2 = jax.random.split(key)
        a = jax.random.normal(k1, (3,))
        b = jax.random.normal(jax.random.fold_in(k2, 7), (3,))
        return a, b, k2
    """)
    got = mutated_lines(src)
    assert "a = jax.random.normal(key, (3,))" in got  # a derived key replaced by its parent
    assert "a = jax.random.normal(k2, (3,))" in got  # ... or by its sibling
    assert "b = jax.random.normal(k2, (3,))" in got  # fold_in(k2, 7) replaced by k2
    assert "return (a, b, key)" in got or "return a, b, key" in got  # the spent parent handed back


def test_only_the_solution_region_is_mutated_and_every_mutant_is_distinct():
    src = cell("return jnp.sum(x * 2, axis=0) + 1", head="def f(x, y=1 + 2, axis=0):")
    ms = generate(src)
    assert ms
    ((lo, hi),) = solution_ranges(src)
    ref = src.split("\n")
    dumps = set()
    for m in ms:
        lines = m.source.split("\n")
        assert lines[:lo - 1] == ref[:lo - 1], m.diff  # signature and the ✍️ line untouched
        assert lines[-2:] == ref[-2:]
        tree = ast.parse(m.source)
        assert ast.dump(tree) != ast.dump(ast.parse(src))
        dumps.add(ast.dump(tree))
        assert m.diff.startswith("--- reference")
    assert len(dumps) == len(ms)
    assert len({m.id for m in ms}) == len(ms)


def test_ids_survive_an_edit_elsewhere_in_the_cell():
    a = cell("y = jnp.sum(x)\nreturn y * 3")
    b = cell("# a comment the author added\nz = 0\ny = jnp.sum(x)\nreturn y * 3")
    ids_a = {m.id: m.description for m in generate(a)}
    ids_b = {m.id: m.description for m in generate(b)}
    assert set(ids_a) <= set(ids_b)


def test_no_solution_region_no_mutants():
    assert generate("def f(x):\n    return x + 1\n") == []


def test_every_solution_region_is_mutated_and_nothing_between_them():
    src = ("# ✍️ Your answer\ndef f(x):\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION\n\n\n"
           "def g(x):\n    y = x * 3\n    ### BEGIN SOLUTION\n    return y - 2\n    ### END SOLUTION\n")
    got = mutated_lines(src)
    assert {"return (x - 1)", "return (y + 2)"} <= got
    assert not any("y = " in l for l in got)  # between the regions: the student's given code
    assert "return table.at[idx].set(delta)" in mutated_lines(cell("return table.at[idx].add(delta)"))


# --------------------------------------------------------------------------------------------------
# The runner, on a small course whose kernels start fast (no JAX)
# --------------------------------------------------------------------------------------------------

def weak_cells():
    """double is tested only at x = 2 (so `2 * x`, `x + 2`, `x ** 2` and `x * x` look alike)."""
    cells = good_cells()
    i = next(i for i, c in enumerate(cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "double-check")
    cells[i].source = "# 🧪 Self-check\nassert double(2) == 4\n### BEGIN HIDDEN TESTS\n### END HIDDEN TESTS"
    return cells


@pytest.mark.slow
def test_survivors_equivalents_and_stale_records(tmp_path):
    root = make_course(tmp_path / "c", weak_cells())
    config = Config.load(root)
    r = mutants_one(config, "demo/01_demo")
    ex = {e.name: e for e in r.exercises}
    assert set(ex) == {"double", "square", "halve"}
    survivors = {m.id: m for m in ex["double"].mutants if m.outcome == "survived"}
    assert survivors, [(m.id, m.outcome) for m in ex["double"].mutants]
    # 2 * x -> 2 + x passes at x = 2: a survivor, shown as a diff
    plus = [m for m in survivors.values() if "2 + x" in m.diff]
    assert plus and plus[0].diff.splitlines()[-3:-1] == ["-    return 2 * x", "+    return (2 + x)"]
    # square and halve are well tested: everything killed, each kill says which test cell and why
    assert ex["square"].survived == 0 and ex["square"].killed == ex["square"].generated > 0
    assert all(m.detail.startswith(("test cell 1", "defining the answer")) for m in ex["square"].mutants)

    # Record every double survivor as equivalent (pretending), plus one id that no mutant has, and one
    # that the tests kill: the first are counted as equivalent, the other two are reported.
    killed_id = next(m.id for m in ex["square"].mutants if m.outcome == "killed")
    records = "".join(f'\n[[double.equivalent]]\nid = "{i}"\nwhy = "pretend"\n' for i in survivors)
    records += '\n[[double.equivalent]]\nid = "number-00000000"\nwhy = "no such mutant"\n'
    records += f'\n[[square.equivalent]]\nid = "{killed_id}"\nwhy = "wrongly recorded"\n'
    (root / "variants/demo/01_demo.toml").write_text(VARIANTS + records)
    r2 = mutants_one(config, "demo/01_demo")
    ex2 = {e.name: e for e in r2.exercises}
    assert ex2["double"].equivalent == len(survivors) and ex2["double"].survived == 0
    assert any("number-00000000" in p and "no mutant has that id" in p for p in ex2["double"].problems)
    assert any(killed_id in p and "the tests kill it" in p for p in ex2["square"].problems)
    assert r2.key != r.key  # the variants file is part of the key


@pytest.mark.slow
def test_a_mutant_that_hangs_is_stopped_and_the_rest_still_run(tmp_path):
    cells = good_cells()[:9] + exercise(
        1, "countdown", "Count down from x to 0; return the number of steps.",
        "n = 0\nwhile x > 0:\n    x = x - 1\n    n = n + 1\nreturn n",
        "assert countdown(3) == 3", "assert countdown(0) == 0\nassert countdown(10) == 10")
    variants = ('[countdown]\n[[countdown.wrong]]\ncode = "def countdown(x):\\n    return 0"\n'
                '[[countdown.wrong]]\ncode = "def countdown(x):\\n    return 1"\n'
                '[[countdown.alternative]]\ncode = "def countdown(x):\\n    return max(x, 0)"\n')
    root = make_course(tmp_path / "c", cells, variants)
    config = Config.load(root, mutant_timeout=3.0, mutant_timeout_factor=1.0)
    r = mutants_one(config, "demo/01_demo")
    (e,) = r.exercises
    outcomes = {m.description: m.outcome for m in e.mutants}
    # `x - 1` -> `x + 1` never ends: stopped by the time limit, which kills it
    hung = [m for m in e.mutants if m.outcome == "timeout"]
    assert hung and all("limit" in m.detail for m in hung), outcomes
    # the mutants after it ran in a working kernel
    after = [m for m in e.mutants if m.line > hung[0].line]
    assert after and all(m.outcome in ("killed", "survived") for m in after), outcomes
    assert not r.problems


@pytest.mark.slow
def test_summary_check_and_staleness(tmp_path):
    root = make_course(tmp_path / "c")
    config = Config.load(root)
    assert check(config).missing == ["demo/01_demo"]
    results = run_mutants(config, ["demo/01_demo"])
    text = (root / SUMMARY_FILE).read_text()
    first = text.splitlines()[0]
    assert first.startswith("course: ") and first.endswith("% of non-equivalent mutants killed")
    assert float(first.split()[1]) == pytest.approx(100.0 * sum(e.killed for e in results[0].exercises)
                                                    / sum(e.generated - e.equivalent for e in results[0].exercises), abs=0.05)
    data = committed(config)
    assert data["demo/01_demo"]["key"] == chapter_key(config, "demo/01_demo")
    assert (root / "build/mutants/report.md").exists()
    assert (root / "build/mutants/demo/01_demo.json").exists()
    ok = check(config)
    assert not ok.stale and not ok.missing

    # prose does not count; a code cell does
    nb_path = root / "source/demo/01_demo.ipynb"
    nb = nbformat.read(nb_path, as_version=4)
    nb.cells[0].source += "\n\nMore words."
    nbformat.write(nb, nb_path)
    assert check(config).stale == []
    nb.cells[3].source = "print(math.sqrt(9.0))"
    nbformat.write(nb, nb_path)
    assert check(config).stale == ["demo/01_demo"]


@pytest.mark.slow
def test_below_the_bar_is_reported(tmp_path):
    root = make_course(tmp_path / "c", weak_cells())
    config = Config.load(root)
    run_mutants(config)
    r = check(config)
    assert any("`double`" in b and "surviving" in b for b in r.below), r.below
    assert not r.ok


# --------------------------------------------------------------------------------------------------
# The real course: the committed results are current and meet the bar (nothing rerun here)
# --------------------------------------------------------------------------------------------------

def test_committed_mutation_results_are_current(real_config):
    r = check(real_config)
    assert not r.missing, f"no mutation results for {r.missing}: run `jaxpath mutants` on them"
    assert not r.stale, (f"{r.stale} changed since their mutation results were written: run "
                         f"`jaxpath mutants {' '.join(r.stale)}` and commit {SUMMARY_FILE}")


def test_committed_mutation_results_meet_the_bar(real_config):
    r = check(real_config)
    assert r.rate >= COURSE_MIN
    assert not r.below, "\n".join(r.below)
    first = (real_config.root / SUMMARY_FILE).read_text(encoding="utf-8").splitlines()[0]
    assert first == f"course: {r.rate:.1f} % of non-equivalent mutants killed"
    for cid, ch in committed(real_config).items():
        for name, e in ch["exercises"].items():
            live = e["generated"] - e["equivalent"]
            assert e["generated"] > 0, f"{cid} {name}: no mutants at all"
            assert live == 0 or 100.0 * e["killed"] / live >= EXERCISE_MIN
