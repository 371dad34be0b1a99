"""A corpus of broken and hostile submissions, generated from a released chapter of the course.

Each case is one student's submission folder (the notebook, or raw bytes, plus any other files) and what
the grader must make of it: the statuses allowed, words the reason must contain, and a score bound.
Three reference students anchor the bounds: `ref_correct` (the reference solutions), `ref_wrong` (two
wrong answers; the brighten one is caught only through `jnp.array_equal`, so a lying helper would pass it) and
`ref_stub` (the released notebook untouched). Every tampering case is `ref_wrong` plus an attack, so
"a wrong answer plus any tampering never scores more than the wrong answer alone" is checked case by case.
"""
from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass, field

import nbformat

PART, STEM = "basics", "01_introduction"
CHAPTER = f"{PART}/{STEM}"

# Wrong answers that fail only at a helper the tests call: a patched helper would turn them into passes.
WRONG = {
    "lookup_or_fill-answer": "def lookup_or_fill(table, idx, fill):\n    return jnp.zeros(idx.shape, table.dtype)",
    # caps the brightening at 99: caught only by the hidden tests' jnp.array_equal (+255, +100)
    "brighten-answer": "def brighten(img, amount):\n    return jnp.clip(img.astype(jnp.int32) + min(amount, 99), 0, 255)"
                       ".astype(jnp.uint8)",
}


@dataclass
class Case:
    student: str
    kind: str                      # "broken", "hostile" or "tampering"
    what: str
    notebook: object = None        # a NotebookNode, written as the chapter's notebook
    raw: bytes | None = None       # or raw bytes
    name: str = STEM               # the notebook's file name (without .ipynb)
    files: dict = field(default_factory=dict)
    timestamp: str | None = "2026-11-20 10:00:00.000000 UTC"
    statuses: tuple = ("graded",)
    reason: tuple = ()             # words the reason must contain (lower case)
    score: str = "<=wrong"         # "==correct", "<=wrong", "==wrong", "==0", "<correct", "<=correct"
    others: dict = field(default_factory=dict)
    """Other notebooks in the same folder: {name: (statuses, reason words)}."""
    runaway: bool = False
    """Runs until the grader stops it at the cell limit (test_hostile grades these in a batch of their own,
    under a shorter limit: what they show, a limit reached and the kernel stopped, is the same at any limit)."""
    levels: dict = field(default_factory=dict)
    """Where an isolation layer changes the outcome (docs/security.md says why):
    {layer, e.g. "rlimits": {"statuses": ..., "reason": ...}}."""

    def at(self, level: str) -> "Case":
        """This case's expectations at isolation level `level` (e.g. "rootless+rlimits")."""
        for layer, changes in self.levels.items():
            if layer in level.split("+"):
                return dataclasses.replace(self, **changes)
        return self


def _fill(nb, answers: dict):
    nb = copy.deepcopy(nb)
    for c in nb.cells:
        gid = c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in answers:
            c.source = answers[gid]
    return nb


def _grade_ids(nb, test=True):
    return [c.metadata["nbgrader"]["grade_id"] for c in nb.cells
            if c.get("metadata", {}).get("nbgrader", {}).get("grade") == test
            and not c.metadata["nbgrader"].get("solution")]


def _index(nb, grade_id):
    return next(i for i, c in enumerate(nb.cells) if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)


def _with_cell(nb, code: str, before: str = "accumulate-answer"):
    """The notebook with a new student cell of `code` just before the cell `before`."""
    nb = copy.deepcopy(nb)
    nb.cells.insert(_index(nb, before), nbformat.v4.new_code_cell(code))
    return nb


def background_sleep(port: int) -> str:
    """The argument of the `sleep` that the corpus's probe leaves running in the background: unique to a batch
    (its listener's port), so that a batch graded beside it on the same host is not mistaken for it."""
    return f"86400.{port}"


def build(released, correct: dict[str, str], root: str, port: int) -> list[Case]:
    """The corpus. `released` is the released notebook, `correct` the reference answers by grade id, `port` one
    the grader's host listens on (loopback), which no notebook may reach."""
    ok = _fill(released, correct)
    wrong = _fill(released, {**correct, **WRONG})
    tests = _grade_ids(released)
    first_test, last_test = tests[0], tests[-1]
    cases = [
        Case("ref_correct", "reference", "the reference solutions", ok, score="==correct"),
        Case("ref_wrong", "reference", "two wrong answers", wrong, score="<correct"),
        Case("ref_stub", "reference", "the released notebook", released, score="==0"),
    ]
    def B(student, what, *a, **k):
        cases.append(Case(student, "broken", what, *a, **k))

    def H(student, what, *a, **k):
        cases.append(Case(student, "hostile", what, *a, **k))

    def T(student, what, *a, **k):
        cases.append(Case(student, "tampering", what, *a, **{"statuses": ("tampered",), **k}))

    text = nbformat.writes(ok)

    # -- broken ------------------------------------------------------------------------------------
    B("b_not_json", "not JSON at all", raw=b"this is my homework, I hope it is fine\n", statuses=("invalid notebook",),
      reason=("cannot be read",), score="==0")
    B("b_truncated", "JSON cut off half way", raw=text.encode()[: len(text) // 2], statuses=("invalid notebook",),
      reason=("cannot be read",), score="==0")
    v3 = json.loads(text)
    v3["nbformat"], v3["nbformat_minor"] = 3, 0
    B("b_old_nbformat", "claims nbformat 3 with a version 4 body", raw=json.dumps(v3).encode(),
      statuses=("invalid notebook",), reason=("cannot be read",), score="==0")
    v5 = json.loads(text)
    v5["nbformat"], v5["nbformat_minor"] = 5, 0
    B("b_future_nbformat", "nbformat 5, which does not exist yet", raw=json.dumps(v5).encode(),
      statuses=("invalid notebook",), reason=("cannot be read",), score="==0")
    B("b_not_utf8", "Latin-1 bytes", raw=text.replace("Your answer", "Réponse").encode("latin-1", "replace"),
      statuses=("invalid notebook",), reason=("utf-8",), score="==0")
    no_ids = json.loads(text)
    for c in no_ids["cells"]:
        c.pop("id", None)
    B("b_missing_ids", "cells without ids", raw=json.dumps(no_ids).encode(), score="==correct")
    dup_ids = json.loads(text)
    for c in dup_ids["cells"]:
        c["id"] = "same"
    B("b_duplicate_ids", "every cell with the same id", raw=json.dumps(dup_ids).encode(), score="==correct")
    nb = copy.deepcopy(ok)
    del nb.cells[_index(nb, last_test)]
    B("b_test_deleted", "a test cell deleted", nb, statuses=("tampered",), reason=("restored deleted",),
      score="==correct")
    nb = copy.deepcopy(ok)
    del nb.cells[_index(nb, "brighten-answer")]
    B("b_answer_deleted", "an answer cell deleted", nb, statuses=("graded", "tampered"), score="<correct")
    nb = copy.deepcopy(ok)
    i = _index(nb, first_test)
    nb.cells.insert(i + 1, copy.deepcopy(nb.cells[i]))
    B("b_test_duplicated", "a test cell pasted twice", nb, reason=("appears 2 times",), score="==correct")
    nb = copy.deepcopy(ok)
    i, j = _index(nb, "brighten-answer"), _index(nb, "brighten-check")
    nb.cells[i], nb.cells[j] = nb.cells[j], nb.cells[i]
    B("b_reordered", "a test moved above its answer", nb, statuses=("graded", "tampered"), score="<correct")
    nb = copy.deepcopy(ok)
    i = _index(nb, last_test)
    md = nbformat.v4.new_markdown_cell(nb.cells[i].source)
    md.metadata = copy.deepcopy(nb.cells[i].metadata)
    nb.cells[i] = md
    B("b_test_to_markdown", "a test cell turned into markdown", nb, statuses=("tampered", "invalid notebook"),
      score="<=correct")
    nb = copy.deepcopy(wrong)
    for gid in tests:
        nb.cells[_index(nb, gid)].source = "# 🧪 Self-check\nprint('all good')"
    B("b_tests_edited", "every test replaced by a print", nb, statuses=("tampered",), reason=("source edited",),
      score="<=wrong")
    nb = copy.deepcopy(wrong)
    nb.cells[_index(nb, first_test)].source += "\nimport jax.numpy as _j; _j.allclose = lambda *a, **k: True"
    B("b_locked_edited", "a locked test cell edited to patch a helper", nb, statuses=("tampered",),
      reason=("source edited",), score="<=wrong")
    nb = copy.deepcopy(wrong)
    for gid in tests:
        nb.cells[_index(nb, gid)].metadata["nbgrader"]["points"] = 100
    B("b_points_edited", "test points raised to 100", nb, statuses=("tampered",), reason=("points",), score="<=wrong")
    nb = copy.deepcopy(wrong)
    for gid in tests:
        meta = nb.cells[_index(nb, gid)].metadata["nbgrader"]
        meta["grade"], meta["locked"] = False, False
        nb.cells[_index(nb, gid)].source = "pass"
    B("b_grade_flag_removed", "test cells unmarked as graded and emptied", nb,
      statuses=("tampered", "invalid notebook"), score="<=wrong")
    nb = copy.deepcopy(ok)
    big = "x" * (1 << 20)
    for c in nb.cells[:100]:
        if c.cell_type == "code":
            c.outputs = [nbformat.v4.new_output("stream", name="stdout", text=big)]
    B("b_huge_outputs", "100 MB of committed outputs", nb, score="==correct")
    B("b_odd_file_names", "extra files with spaces and non-ASCII names", ok,
      files={"my data (1).csv": b"a,b\n1,2\n", "données/über ñ.txt": "é".encode()}, score="==correct")
    B("b_no_timestamp", "no timestamp.txt", ok, timestamp=None, score="==correct")
    B("b_garbled_timestamp", "a timestamp that is not a time", ok, timestamp="yesterday-ish \x00\xff", score="==correct")
    B("b_renamed", "the notebook saved under another name", ok, name=f"{STEM} (copy)",
      statuses=("missing",), score="==0",
      others={f"{STEM} (copy)": (("invalid notebook",), ("renamed",))})
    B("b_two_submissions", "an extra copy beside the real one", ok, files={"notes.md": b"# notes\n"},
      score="==correct", others={f"{STEM}-2": (("invalid notebook",), ("not a notebook of",))})
    B("b_extra_files", "many extra files and a large one", ok,
      files={**{f"scratch/{i}.txt": b"x" for i in range(50)}, "big.bin": b"\0" * (8 << 20)}, score="==correct")

    # -- hostile: the sandbox and the limits --------------------------------------------------------
    ans = lambda code: _fill(released, {**correct, "brighten-answer": code})  # noqa: E731
    H("h_infinite_loop", "an endless loop", ans("while True:\n    pass"), statuses=("timed out",),
      reason=("limit",), score="<correct", runaway=True)
    H("h_ignores_sigint", "a loop that ignores the interrupt",
      ans("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"),
      statuses=("timed out",), reason=("ignored the interrupt",), score="<correct", runaway=True)
    H("h_os_exit", "os._exit", ans("import os\nos._exit(3)"), statuses=("crashed",), reason=("kernel died",),
      score="<correct")
    H("h_segfault", "a segmentation fault", ans("import ctypes\nctypes.string_at(0)"), statuses=("crashed",),
      reason=("kernel died",), score="<correct")
    # With rlimits alone the allocation fails inside the cell (MemoryError at the address-space limit): the
    # kernel lives, the cell fails, the later cells run; with a cgroup the OOM killer ends the kernel.
    H("h_memory", "unbounded memory", ans("x = []\nwhile True:\n    x.append(bytearray(64 * 2**20))"),
      statuses=("crashed",), reason=("memory",), score="<correct",
      levels={"rlimits": {"statuses": ("graded",), "reason": ("memory",)}})
    H("h_fork_bomb", "a fork bomb", ans("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"),
      statuses=("crashed", "timed out"), score="<correct", runaway=True)
    H("h_fill_disk", "filling the disk", ans("with open('fill', 'wb') as f:\n    while True:\n        f.write(b'0' * 2**20)"),
      statuses=("graded", "crashed"), score="<correct")
    H("h_print_flood", "printing without end", ans("while True:\n    print('spam' * 1000)"),
      statuses=("timed out",), score="<correct", runaway=True)
    H("h_sleep", "sleeping past the timeout", ans("import time\ntime.sleep(10_000)"), statuses=("timed out",),
      score="<correct", runaway=True)
    probe = (
        "import os, socket, sys\n"
        "found = []\n"
        "repo = os.path.dirname(sys.prefix)  # the course repository whose virtual environment runs this kernel\n"
        f"for p in ['{root}/source', '{root}/gradebook/gradebook.db', '{root}/submitted/ref_correct', '{root}',\n"
        "          repo + '/source', repo + '/.git', repo + '/variants', repo + '/gradebook',\n"
        "          '/root/.ssh', '/root/.bash_history', '/etc/shadow', os.path.expanduser('~/.ssh')]:\n"
        "    if os.path.exists(p): found.append(p)\n"
        "try:\n    socket.create_connection(('1.1.1.1', 80), timeout=2); found.append('network')\nexcept OSError:\n    pass\n"
        f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2); found.append('loopback')\n"
        "except OSError:\n    pass\n"
        "for k in os.environ:\n    if 'SECRET' in k or 'TOKEN' in k: found.append(k)\n"
        f"for p in ['{root}/PWNED', '/usr/PWNED', '/etc/PWNED']:\n"
        "    try:\n        open(p, 'w').write('x'); found.append('wrote ' + p)\n    except OSError:\n        pass\n"
        # a process that outlives its notebook unless the grader ends it (test_hostile looks for it afterwards)
        f"import subprocess\nsubprocess.Popen(['sleep', '{background_sleep(port)}'], start_new_session=True)\n"
        "assert not found, found\n"
    )
    H("h_reach_out", "reading source/, the gradebook, other students, the environment; network, the host's loopback; "
      "writing outside; a process left running",
      _with_cell(ok, probe), score="==correct")
    H("h_sys_exit", "sys.exit in an answer cell", _fill(released, {**correct, **WRONG, "brighten-answer":
                                                                   WRONG["brighten-answer"] + "\nimport sys\nsys.exit(0)"}),
      statuses=("graded",), score="<=wrong")

    # -- tampering with the test machinery inside the kernel: each is ref_wrong plus the attack -----
    T("t_patch_jnp", "monkeypatch jnp.allclose and jnp.array_equal",
      _with_cell(wrong, "import jax.numpy as jnp\njnp.allclose = lambda *a, **k: True\njnp.array_equal = lambda *a, **k: True"),
      reason=("jax.numpy.allclose",))
    T("t_patch_numpy_testing", "monkeypatch numpy.testing",
      _with_cell(wrong, "import numpy.testing as npt\nnpt.assert_allclose = lambda *a, **k: None\n"
                        "npt.assert_array_equal = lambda *a, **k: None"), reason=("numpy.testing",))
    T("t_patch_code", "swap the code object of numpy.testing.assert_allclose",
      _with_cell(wrong, "import numpy.testing as npt\nnpt.assert_allclose.__code__ = (lambda *a, **k: None).__code__"),
      reason=("__code__",))
    T("t_patch_builtins", "a lying builtins.isinstance",
      _with_cell(wrong, "import builtins, jax\n_isinstance = isinstance\n"
                        "builtins.isinstance = lambda o, t: True if t is jax.Array else _isinstance(o, t)"),
      reason=("builtins.isinstance",))
    T("t_hide_errors", "replace IPython's traceback display",
      _with_cell(wrong, "ip = get_ipython()\nip.showtraceback = lambda *a, **k: None\nip._showtraceback = lambda *a, **k: None"),
      reason=("showtraceback",))
    T("t_custom_exc", "a custom exception handler that swallows errors",
      _with_cell(wrong, "get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)"),
      reason=("custom exception",))
    T("t_strip_asserts", "an AST transformer that deletes every assert",
      _with_cell(wrong, "import ast\nclass NoAsserts(ast.NodeTransformer):\n    def visit_Assert(self, node):\n"
                        "        return ast.Pass()\nget_ipython().ast_transformers.append(NoAsserts())"),
      reason=("ast_transformers",))
    T("t_rebind_jnp", "rebind jnp to a namespace with lying helpers",
      _with_cell(wrong, "import types, jax.numpy\njnp = types.SimpleNamespace(**{k: getattr(jax.numpy, k) for k in "
                        "dir(jax.numpy) if not k.startswith('__')})\njnp.allclose = lambda *a, **k: True\n"
                        "jnp.array_equal = lambda *a, **k: True"),
      reason=("jnp",))
    T("t_truncate_tests", "an input transformer that cuts each cell after its first line",
      _with_cell(wrong, "def first_line(lines):\n    return lines[:1] if lines and 'Self-check' in lines[0] else lines\n"
                        "get_ipython().input_transformers_post.append(first_line)"),
      reason=("without running to its end",))
    T("t_trace_skip", "a trace function that jumps over failing asserts",
      _with_cell(wrong, "import sys\ndef tracer(frame, event, arg):\n"
                        "    if event == 'exception' and arg[0] is AssertionError: return None\n"
                        "    return tracer\nsys.settrace(tracer)"),
      reason=("sys.settrace",))
    # Reading hidden tests: the history holds every test that ran; a function can read its caller's cell.
    leak = ("def brighten(img, amount):\n    import sys, linecache\n    f = sys._getframe(1)\n"
            "    print('LEAK>', ''.join(linecache.getlines(f.f_code.co_filename)))\n    print('HIST>', In)\n    return img")
    H("h_leak_hidden_tests", "print the calling test cell and the input history into the outputs",
      # its brighten answer is not WRONG's one: with partial credit per requirement it earns what its own behaviour
      # earns, never more than the wrong answers' score
      _fill(released, {**correct, **WRONG, "brighten-answer": leak}), statuses=("graded",), score="<=wrong")
    return cases
