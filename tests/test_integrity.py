"""The integrity checks of jaxpath.grade.integrity, in one kernel: what the probe sees, and what it does not
mistake for tampering. (The whole defence, graded end to end, is in test_hostile.py.)"""
import nbformat
import pytest

from jaxpath import execute
from jaxpath.execute import Session
from jaxpath.grade import integrity as I
from jaxpath.texts import HIDDEN_ERROR

pytestmark = pytest.mark.slow


def test_names_a_test_relies_on():
    src = ("table = jnp.zeros(4)\ngot = accumulate(table, idx)\ndef _check(x):\n    return np.allclose(x, ref)\n"
           "assert _check(got) and isinstance(got, jax.Array), f'{len(got)}'\nimport math as m\nm.pi")
    assert I.relied_on(src, {"accumulate"}) == {"jnp", "idx", "np", "ref", "isinstance", "jax", "len"}
    assert I.answer_names(["def accumulate(t, i):\n    return t", "helper = 1\nimport numpy as npx"]) == \
        {"accumulate", "t", "i", "helper", "npx"}
    assert I.notebook_imports(["import jax.numpy as jnp, optax\nfrom flax import nnx\nfrom . import x", "1 +"]) == \
        ["flax", "jax.numpy", "optax"]


def _probe(s, names=(), ignore=()):
    nonce = I.new_token()
    ok, text = s.evaluate(I.probe_code(nonce, names, ignore), I.RESULT)
    data = I.parse_result(text)
    assert ok and data and data["nonce"] == nonce
    return data


def test_probe_sees_tampering_and_nothing_else(tmp_path):
    nb = nbformat.v4.new_notebook()
    with Session(nb, tmp_path, timeout=60) as s:
        ok, text = s.evaluate(I.prelude_code(["optax"], ["optax"]), I.RESULT)
        digest = I.parse_result(text)["digest"]
        # ordinary work changes nothing watched
        out, _ = s.run_code("import jax, jax.numpy as jnp, numpy as np, optax, matplotlib.pyplot as plt\n"
                            "x = jnp.arange(3.0)\nprint(jax.jit(lambda v: v * 2)(x))\nopt = optax.adam(1e-3)\n"
                            "jax.config.update('jax_enable_x64', False)\nplt.plot([1, 2])" + I.trailer("tok1"))
        assert out.ok, out.summary
        data = _probe(s, ["jnp", "x", "len"])
        assert data["changed"] == [] and data["digest"] == digest and data["ended"] == "tok1"
        assert data["names"] == {"jnp": "module jax.numpy", "x": "value jaxlib._jax.ArrayImpl",
                                 "len": "builtin builtins.len"}
        assert _probe(s)["ended"] is None, "a token is read once"
        # each kind of tampering is seen, named
        for code, seen in [("optax.adam = lambda *a, **k: None", "optax.adam"),
                           ("np.testing.assert_allclose.__code__ = (lambda *a, **k: None).__code__",
                            "numpy.testing.assert_allclose.__code__"),
                           ("import ast; get_ipython().ast_transformers.append(ast.NodeTransformer())",
                            "IPython ast_transformers"),
                           ("import sys; sys.settrace(lambda *a: None)", "sys.settrace"),
                           ("get_ipython().showtraceback = print", "IPython shell.showtraceback")]:
            out, _ = s.run_code(code)
            assert out.ok, (code, out.summary)
            assert seen in _probe(s)["changed"], code
        assert "optax.adam" not in _probe(s, ignore=["optax.adam"])["changed"], "the reference run's changes are ignored"
        s.run_code("len = lambda x: 3")
        assert _probe(s, ["len"])["names"]["len"].startswith("function __main__.<lambda>")


def test_an_error_nobody_sees_still_fails(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("assert 1 == 2, 'wrong'")])
    with Session(nb, tmp_path, timeout=60) as s:
        s.run_code("get_ipython().showtraceback = lambda *a, **k: None")
        out = s.run(0)
        assert not out.ok and out.error_name == HIDDEN_ERROR
        assert [o["ename"] for o in nb.cells[0].outputs if o["output_type"] == "error"] == [HIDDEN_ERROR]


def test_a_session_leaves_no_thread_running(tmp_path):
    """Every thread a Session starts (the kernel client's channels, the heartbeat's among them) has ended when
    it closes: a heartbeat thread left polling a socket the garbage collector closes aborts the process."""
    import threading

    from jupyter_client.channels import HBChannel

    before = set(threading.enumerate())
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
    with Session(nb, tmp_path, timeout=60) as s:
        assert s.run(0).ok
        started = set(threading.enumerate()) - before
        assert any(isinstance(t, HBChannel) for t in started), started  # what the check below is about
    left = [t for t in started if t.is_alive()]
    assert not left, f"threads still running after the session closed: {left}"


def test_a_cell_whose_output_never_arrives_fails(tmp_path, monkeypatch):
    """A cell whose output does not end within the IOPub wait after its reply fails, saying so, instead of passing
    with what arrived: a test cell's score held back behind an earlier cell's flood of output counted as full marks
    (nbgrader scores a test cell without an error as passed). Here the cell's messages are never processed, as if
    still queued: the wait runs out by construction."""
    from jaxpath.texts import OUTPUT_LOST

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"),
                                         nbformat.v4.new_code_cell("print('checked')\n0.5")])
    monkeypatch.setattr(execute, "IOPUB_TIMEOUT", 1)  # read by every cell (nbclient's own value is reset per cell)
    with Session(nb, tmp_path, timeout=60) as s:
        process = s.client.process_message
        s.client.process_message = lambda msg, cell, i: None if i == 1 else process(msg, cell, i)
        assert s.run(0).ok
        out = s.run(1)
        s.client.process_message = process
        assert s.run(0).ok  # the session goes on
    assert not out.ok and out.error_name == OUTPUT_LOST and out.reply == "ok", out
    assert [o["ename"] for o in nb.cells[1].outputs if o["output_type"] == "error"] == [OUTPUT_LOST]


def test_a_timed_out_cell_waits_for_its_output_briefly_and_the_next_cell_fully(tmp_path, monkeypatch):
    """After a cell runs past its limit and is interrupted, its output is waited for TIMED_OUT_IOPUB_TIMEOUT
    seconds, not IOPUB_TIMEOUT: a kernel that ignores the interrupt never ends that output, and the full wait
    (twice, with `responsive`'s probe) made such a notebook take four times its cell limit. The next cell waits
    IOPUB_TIMEOUT again. The waits are read from the timeouts nbclient is given, not from a clock."""
    import asyncio

    from jaxpath.execute import IOPUB_TIMEOUT, TIMED_OUT_IOPUB_TIMEOUT

    waits = []
    wait_for = asyncio.wait_for

    def recorded(awaitable, timeout):
        waits.append(timeout)
        return wait_for(awaitable, timeout)

    monkeypatch.setattr(asyncio, "wait_for", recorded)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import time\ntime.sleep(600)"),
                                         nbformat.v4.new_code_cell("x = 1"),
                                         nbformat.v4.new_code_cell("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                                                                   "while True:\n    pass")])
    with Session(nb, tmp_path, timeout=2) as s:
        out = s.run(0)                       # interrupted: the kernel honours it
        assert out.timed_out and waits == [TIMED_OUT_IOPUB_TIMEOUT], (out, waits)
        assert s.responsive(30)
        waits.clear()
        s.client.timeout = 120               # a plain cell: no limit it could reach on a loaded machine
        assert s.run(1).ok and waits == [IOPUB_TIMEOUT], waits
        s.client.timeout = 2
        waits.clear()
        out = s.run(2)                       # a kernel deaf to the interrupt
        assert out.timed_out and waits == [TIMED_OUT_IOPUB_TIMEOUT], (out, waits)
        waits.clear()
        assert not s.responsive(2)           # its probe runs past its limit too, and is waited for as briefly
        assert waits == [TIMED_OUT_IOPUB_TIMEOUT], waits


def test_a_kernel_interrupted_by_message_that_stopped_is_never_judged_deaf(tmp_path, monkeypatch):
    """A sandboxed kernel is interrupted by a control-channel message (jaxpath.grade.sandbox). When a cell runs past
    its limit nbclient interrupts it; `responsive` must then probe without a second interrupt, which would reach
    the kernel while it runs the probe (ipykernel: "KeyboardInterrupt caught in kernel", no reply), and a kernel
    that had stopped at once was judged deaf and killed: 4 of 8 sleeping cells past a 2 s limit. After `ask` runs
    past its limit, which interrupts nothing, `responsive` interrupts once."""
    from jaxpath.grade.sandbox import SandboxedKernelManager

    km = SandboxedKernelManager(kernel_name="python3", transport="ipc", ip=str(tmp_path / "k"))  # no walls: no prefix
    assert km.kernel_spec.interrupt_mode == "message"
    sent = []
    interrupt = km.interrupt_kernel

    async def counted():
        sent.append(1)
        await interrupt()

    monkeypatch.setattr(km, "interrupt_kernel", counted)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import time\ntime.sleep(600)"),
                                         nbformat.v4.new_code_cell("n = n + 1 if 'n' in dir() else 1")])
    with Session(nb, tmp_path, timeout=1, km=km) as s:
        for attempt in range(6):
            s.client.timeout = 1
            out = s.run(0)
            assert out.timed_out, out
            assert s.responsive(30), f"attempt {attempt + 1}: a kernel that stopped at the interrupt was judged deaf"
            s.client.timeout = 120              # a plain cell: no limit it could reach on a loaded machine
            assert s.run(1).ok                  # it runs the next cell, and its state is intact
        assert len(sent) == 6, f"{len(sent)} interrupts for 6 timed-out cells: responsive sent a second one"
        assert s.ask("time.sleep(600)", "None", timeout=1) is None
        assert s.responsive(30) and len(sent) == 7, sent
        ok, text = s.evaluate("", "n")
        assert ok and text == "6", text


def test_output_is_capped_per_cell(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("for i in range(4000):\n    print('x' * 2000)")])
    with Session(nb, tmp_path, timeout=60) as s:
        out = s.run(0)
    assert out.ok
    text = "".join(o.get("text", "") for o in nb.cells[0].outputs)
    assert 1.5 * 2**20 < len(text) < 3 * 2**20 and "output past 2 MB was dropped" in text


def test_probes_judged_after_the_reference_run_give_the_verdicts_the_worker_gives(tmp_path, real_config, shared_compile_cache):
    """A task sent before the reference run is done brings its probes back unjudged (a deferred spec) and the
    coordinator settles them later: the evidence and the NotCounted outputs must be exactly the ones the
    worker gives when the reference run came first. With the compilation cache as in a batch (this test run's:
    tests/conftest.py), the reference run warming it and both tasks reading it."""
    from pathlib import Path

    from jaxpath.cells import is_answer
    from jaxpath.grade.reference import run_reference
    from jaxpath.grade.tasks import IntegritySpec, Task
    from jaxpath.grade.worker import run_task

    source = Path(__file__).resolve().parents[1] / "source" / "basics" / "01_introduction.ipynb"
    cache = real_config.compile_cache("basics")
    ref = run_reference(source, store=tmp_path / "ref", grader_version="test", cell_timeout=120, jax_cache=cache)
    assert ref.names, "the reference run recorded no test names"
    nb = nbformat.read(source, as_version=4)
    first = next(i for i, c in enumerate(nb.cells) if is_answer(c))
    nb.cells.insert(first, nbformat.v4.new_code_cell(
        "import types, jax.numpy, numpy.testing as npt\n"
        "jnp = types.SimpleNamespace(**{k: getattr(jax.numpy, k) for k in dir(jax.numpy) if not k.startswith('__')})\n"
        "jnp.allclose = lambda *a, **k: True\njnp.array_equal = lambda *a, **k: True\n"
        "npt.assert_allclose = lambda *a, **k: None"))
    text = nbformat.writes(nb)

    def run(spec):
        return run_task(Task("t/s/01", text, sandbox=False, integrity=spec, jax_cache=str(cache)))

    now = run(IntegritySpec(ref.names, ref.ignore, ref.imports, ref.roots))
    names = {gid: dict.fromkeys(ns, "") for gid, ns in I.static_names(nbformat.read(source, as_version=4)).items()}
    assert {g: sorted(n) for g, n in names.items()} == {g: sorted(n) for g, n in ref.names.items()}
    later = run(IntegritySpec(names, [], ref.imports, ref.roots, deferred=True))
    assert not now.probes and later.probes, "only the deferred run leaves probes to judge"
    executed = nbformat.reads(later.notebook, as_version=4)
    evidence = I.settle_probes(executed, later.probes, later.tampering, ref)
    assert evidence and evidence == now.tampering

    def errors(nb_json_or_nb):
        nb_ = nbformat.reads(nb_json_or_nb, as_version=4) if isinstance(nb_json_or_nb, str) else nb_json_or_nb
        return [[(o.get("ename"), o.get("evalue")) for o in c.get("outputs", []) if o.get("output_type") == "error"]
                for c in nb_.cells if c.cell_type == "code"]

    assert errors(executed) == errors(now.notebook)
    assert any(e[0] == "NotCounted" for cell in errors(executed) for e in cell), "the tampering paid nowhere?"


def test_the_requirements_helper_is_fingerprinted_by_its_code(tmp_path):
    """A test cell reads `Requirements` (the chapter's helper class): a student who patches one of its methods, its
    nested block class, or defines a look-alike class of the same name, changes its fingerprint."""
    from jaxpath.kernel import source

    nb = nbformat.v4.new_notebook()
    with Session(nb, tmp_path, timeout=60) as s:
        ok, _ = s.evaluate(I.prelude_code([], []), I.RESULT)
        out, _ = s.run_code(source("requirements"))
        assert ok and out.ok, out.summary
        honest = _probe(s, ["Requirements"])["names"]["Requirements"]
        assert honest.startswith("class __main__.Requirements {") and "_Check=class" in honest
        assert _probe(s, ["Requirements"])["names"]["Requirements"] == honest, "the same class, the same print"
        for code in ["Requirements._Check.__exit__ = lambda self, *a: True",
                     "Requirements.score = lambda self: sum(self.points.values())",
                     "class Requirements:\n    def __init__(self, e, p):\n        self.p = p\n"
                     "    def score(self):\n        return sum(self.p.values())"]:
            s.run_code(source("requirements"))
            assert _probe(s, ["Requirements"])["names"]["Requirements"] == honest
            out, _ = s.run_code(code)
            assert out.ok, out.summary
            assert _probe(s, ["Requirements"])["names"]["Requirements"] != honest, code
