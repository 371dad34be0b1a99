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
   fingerprint (module name; a function's module, qualified name and code; a class's name; a value's
   type) as in the reference solution's run. The names the student defines are those the source's answer
   cells bind, and any name the reference run leaves undefined where the test runs (a course whose source
   keeps the answer cell as a stub): only student code can have bound it, so it is the student's.

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

VOLATILE = ("builtins.input", "builtins.getpass", "sys.excepthook", "sys.breakpointhook")
"""Replaced by ipykernel itself around every request: never evidence."""
WATCH_ROOTS = ("builtins", "numpy", "jax", "jaxlib", "math", "cmath", "operator", "functools", "itertools",
               "inspect", "ast", "types", "traceback", "sys", "IPython", "ipykernel", "traitlets", "optax",
               "flax", "scipy", "unittest", "re", "contextlib", "warnings")
"""Top-level packages whose modules are watched (those already imported when the prelude runs)."""
IMPORTS = ("numpy", "numpy.testing", "jax", "jax.numpy", "math")
"""Imported by the prelude, so that they are recorded before any student code can touch them."""

_FINGERPRINT = r'''
def _fp(o, _depth=0):
    import types, hashlib, functools
    def code_hash(c, d=0):
        h = hashlib.sha256(c.co_code)
        h.update(repr((c.co_names, c.co_varnames, c.co_freevars)).encode())
        for k in c.co_consts:
            if isinstance(k, types.CodeType) and d < 20:
                h.update(code_hash(k, d + 1).encode())
            elif isinstance(k, (int, float, complex, str, bytes, bool, type(None))):
                h.update(repr(k).encode())
            else:
                h.update(type(k).__qualname__.encode())
        return h.hexdigest()[:16]
    if isinstance(o, types.ModuleType):
        return "module " + str(getattr(o, "__name__", "?"))
    if isinstance(o, type):
        return f"class {o.__module__}.{o.__qualname__}"
    if isinstance(o, types.MethodType):
        return "method " + _fp(o.__func__, _depth + 1)
    if isinstance(o, functools.partial):
        return "partial " + _fp(o.func, _depth + 1)
    if isinstance(o, types.FunctionType):
        return f"function {o.__module__}.{o.__qualname__} {code_hash(o.__code__)}"
    if isinstance(o, (types.BuiltinFunctionType, types.BuiltinMethodType)):
        return f"builtin {getattr(o, '__module__', None)}.{getattr(o, '__qualname__', '?')}"
    w = getattr(o, "__wrapped__", None) if callable(o) else None
    t = type(o)
    if w is not None and _depth < 5:
        return f"{t.__module__}.{t.__qualname__} of " + _fp(w, _depth + 1)
    return f"value {t.__module__}.{t.__qualname__}"
'''

_PRELUDE = r'''
def __jaxpath_prelude(roots, imports):
    import sys, types, importlib, inspect, threading, builtins, json
    for m in imports:
        try:
            importlib.import_module(m)
        except Exception:
            pass
    ip = get_ipython()
    MISSING = object()
    refs = []      # (kind, owner, name, object): compared by identity
    def watch_obj(kind, owner, holder):
        for n in dir(type(holder)):
            if n.startswith("__") and n not in ("__call__",):
                continue
            try:
                v = inspect.getattr_static(holder, n)
            except Exception:
                continue
            if callable(v) or isinstance(v, (staticmethod, classmethod)):
                refs.append((kind, owner, n, v))
    for name, mod in list(sys.modules.items()):
        if not isinstance(mod, types.ModuleType) or name.split(".")[0] not in roots:
            continue
        refs.append(("module", "sys.modules", name, mod))
        for a, v in list(getattr(mod, "__dict__", {}).items()):
            if a.startswith("__") or not (callable(v) or isinstance(v, types.ModuleType)):
                continue
            refs.append(("attr", name, a, v))
            if isinstance(v, types.FunctionType):
                refs.append(("code", name, a, v.__code__))
            if isinstance(v, type) and getattr(v, "__module__", "") == name:
                for ca, cv in list(vars(v).items()):
                    if callable(cv) or isinstance(cv, (staticmethod, classmethod, property)):
                        refs.append(("class", f"{name}.{a}", ca, cv))
    watch_obj("shell", "IPython shell", ip)
    kernel = getattr(ip, "kernel", None)
    if kernel is not None:
        watch_obj("kernel", "kernel", kernel)
        watch_obj("session", "kernel session", kernel.session)
        for k, v in dict(getattr(kernel, "shell_handlers", {})).items():
            refs.append(("handler", "kernel.shell_handlers", k, v))
    for holder, label in ((ip.compile, "IPython compiler"), (ip.display_pub, "display publisher"),
                          (ip.displayhook, "display hook"), (ip.input_transformer_manager, "input transformer")):
        refs.append(("object", "IPython shell", label, holder))
        watch_obj("helper", label, holder)
    values = {
        "IPython ast_transformers": lambda: tuple(map(id, ip.ast_transformers)),
        "IPython input_transformers_post": lambda: tuple(map(id, ip.input_transformers_post)),
        "IPython input_transformers_cleanup": lambda: tuple(map(id, ip.input_transformer_manager.cleanup_transforms)),
        "IPython line transforms": lambda: tuple(map(id, ip.input_transformer_manager.line_transforms)),
        "IPython token transformers": lambda: tuple(map(id, ip.input_transformer_manager.token_transformers)),
        "IPython custom exception handlers": lambda: tuple(map(id, ip.custom_exceptions)),
        "IPython CustomTB": lambda: id(ip.CustomTB),
        "IPython InteractiveTB": lambda: id(ip.InteractiveTB),
        "sys.settrace": lambda: id(sys.gettrace()),
        "sys.setprofile": lambda: id(sys.getprofile()),
        "threading.settrace": lambda: id(threading.gettrace()),
        "threading.setprofile": lambda: id(threading.getprofile()),
        "sys.monitoring": lambda: tuple(sys.monitoring.get_tool(i) for i in range(6)),
        "sys.displayhook": lambda: id(sys.displayhook),
        "sys.stdout": lambda: id(sys.stdout),
        "sys.stderr": lambda: id(sys.stderr),
        "builtins dict": lambda: id(builtins.__dict__),
        "the user namespace": lambda: id(ip.user_ns),
    }
    keep = [ip.ast_transformers, ip.input_transformers_post, ip.custom_exceptions, ip.CustomTB,
            sys.gettrace(), sys.getprofile(), sys.displayhook, sys.stdout, sys.stderr]
    state = types.ModuleType("_jaxpath_integrity")
    state.refs, state.values, state.keep, state.MISSING = refs, values, keep, MISSING
    state.baseline = {k: f() for k, f in values.items()}
    state.digest = hash(tuple(id(r[3]) for r in refs)) ^ len(refs)
    sys.modules["_jaxpath_integrity"] = state
    state.ended = None
    state.result = json.dumps({"prelude": len(refs), "digest": state.digest})
__jaxpath_prelude(__ROOTS__, __IMPORTS__); del __jaxpath_prelude
'''

_PROBE = _FINGERPRINT + r'''
def __jaxpath_probe(nonce, names, ignore):
    import sys, json, inspect, builtins
    st = sys.modules.get("_jaxpath_integrity")
    out = {"nonce": nonce, "changed": [], "names": {}, "digest": None}
    if st is not None:
        out["digest"] = hash(tuple(id(r[3]) for r in st.refs)) ^ len(st.refs)
        mods, changed = sys.modules, out["changed"]
        for kind, owner, name, obj in st.refs:
            try:
                if kind == "module":
                    now = mods.get(name, st.MISSING)
                elif kind == "attr":
                    m = mods.get(owner)
                    now = getattr(m, "__dict__", {}).get(name, st.MISSING)
                elif kind == "code":
                    m = mods.get(owner)
                    now = getattr(getattr(m, "__dict__", {}).get(name, None), "__code__", st.MISSING)
                elif kind == "class":
                    mod, _, cls = owner.rpartition(".")
                    c = getattr(mods.get(mod), "__dict__", {}).get(cls)
                    now = vars(c).get(name, st.MISSING) if isinstance(c, type) else st.MISSING
                elif kind == "handler":
                    now = get_ipython().kernel.shell_handlers.get(name, st.MISSING)
                elif kind == "object":
                    ip = get_ipython()
                    now = {"IPython compiler": ip.compile, "display publisher": ip.display_pub,
                           "display hook": ip.displayhook,
                           "input transformer": ip.input_transformer_manager}.get(name, st.MISSING)
                else:
                    holder = {"shell": get_ipython(), "kernel": getattr(get_ipython(), "kernel", None)}.get(kind)
                    if kind == "session":
                        holder = get_ipython().kernel.session
                    elif kind == "helper":
                        ip = get_ipython()
                        holder = {"IPython compiler": ip.compile, "display publisher": ip.display_pub,
                                  "display hook": ip.displayhook,
                                  "input transformer": ip.input_transformer_manager}[owner]
                    now = inspect.getattr_static(holder, name, st.MISSING)
            except Exception:
                now = st.MISSING
            if now is not obj:
                key = f"{owner}.{name}" if kind not in ("module",) else f"sys.modules[{name!r}]"
                if kind == "code":
                    key += ".__code__"
                if key not in ignore:
                    changed.append(key)
        for k, f in st.values.items():
            try:
                now = f()
            except Exception:
                now = None
            if now != st.baseline[k] and k not in ignore:
                changed.append(k)
    ns = get_ipython().user_ns
    for n in names:
        v = ns[n] if n in ns else vars(builtins).get(n, "\x00undefined")
        out["names"][n] = "undefined" if isinstance(v, str) and v == "\x00undefined" else _fp(v)
    if st is not None:
        out["ended"], st.ended = st.ended, None
        st.result = json.dumps(out)
__jaxpath_probe(__NONCE__, __NAMES__, set(__IGNORE__)); del __jaxpath_probe, _fp
'''

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


def prelude_code(imports=IMPORTS, roots=WATCH_ROOTS) -> str:
    imports = tuple(dict.fromkeys([*IMPORTS, *imports]))
    roots = tuple(dict.fromkeys([*WATCH_ROOTS, *roots]))
    return _PRELUDE.replace("__ROOTS__", repr(roots)).replace("__IMPORTS__", repr(imports))


def probe_code(nonce: str, names=(), ignore=()) -> str:
    return (_PROBE.replace("__NONCE__", repr(nonce))
            .replace("__NAMES__", repr(sorted(names))).replace("__IGNORE__", repr(sorted({*ignore, *VOLATILE}))))


def trailer(token: str) -> str:
    """The line added to the end of a test cell: it leaves `token` where the next probe reads it."""
    return f"\n__import__('sys').modules['_jaxpath_integrity'].ended = {token!r}"


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
