"""The integrity checks that run inside the grading kernel (see jaxpath/grade/integrity.py for what they
defend against). The grader sends this file's text, then one call and a `del` of these names, so nothing of
it stays in the student's namespace; `get_ipython` is the one the kernel's namespace holds. The text goes as
a string that the cell compiles and runs with `exec` (grade/integrity.py, `_as_cell`): IPython's own cell
machinery (tokenizing and transforming every line) took 25 ms of each probe's 50 for these 200 lines, and
the code it runs is the same, sent fresh each time.

- `__jaxpath_prelude(roots, imports)`, once before the first cell: records every function, class and module
  object grading relies on (by identity) and a few interpreter hooks, in a module `_jaxpath_integrity`.
- `__jaxpath_probe(nonce, names, ignore)`, after each test cell: what changed since, and a fingerprint of
  each name the test read.
Both leave their JSON result in `_jaxpath_integrity.result`, which the grader reads in the execute reply."""
# ruff: noqa: F821  (get_ipython is defined by IPython in the namespace these run in)

def __jaxpath_fp(o, _depth=0):
    import functools
    import hashlib
    import types
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
        fp = f"class {o.__module__}.{o.__qualname__}"
        if o.__module__ == "__main__" and _depth < 4:  # the notebook's own class (the course's Requirements
            parts = []                                 # helper): its methods' code, nested classes included
            for k, v in sorted(vars(o).items()):
                v = getattr(v, "__func__", v)
                if isinstance(v, (types.FunctionType, type)):
                    parts.append(f"{k}={__jaxpath_fp(v, _depth + 1)}")
            fp += " {" + ", ".join(parts) + "}"
        return fp
    if isinstance(o, types.MethodType):
        return "method " + __jaxpath_fp(o.__func__, _depth + 1)
    if isinstance(o, functools.partial):
        return "partial " + __jaxpath_fp(o.func, _depth + 1)
    if isinstance(o, types.FunctionType):
        return f"function {o.__module__}.{o.__qualname__} {code_hash(o.__code__)}"
    if isinstance(o, (types.BuiltinFunctionType, types.BuiltinMethodType)):
        return f"builtin {getattr(o, '__module__', None)}.{getattr(o, '__qualname__', '?')}"
    w = getattr(o, "__wrapped__", None) if callable(o) else None
    t = type(o)
    if w is not None and _depth < 5:
        return f"{t.__module__}.{t.__qualname__} of " + __jaxpath_fp(w, _depth + 1)
    return f"value {t.__module__}.{t.__qualname__}"


def __jaxpath_prelude(roots, imports):  # noqa: C901
    import builtins
    import importlib
    import inspect
    import json
    import operator
    import sys
    import threading
    import types
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
    state.digest = hash(tuple(map(id, map(operator.itemgetter(3), refs)))) ^ len(refs)
    sys.modules["_jaxpath_integrity"] = state
    state.ended = None
    state.result = json.dumps({"prelude": len(refs), "digest": state.digest})


def __jaxpath_probe(nonce, names, ignore):  # noqa: C901
    import builtins
    import inspect
    import json
    import operator
    import sys
    st = sys.modules.get("_jaxpath_integrity")
    out = {"nonce": nonce, "changed": [], "names": {}, "digest": None}
    if st is not None:
        out["digest"] = hash(tuple(map(id, map(operator.itemgetter(3), st.refs)))) ^ len(st.refs)
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
        out["names"][n] = "undefined" if isinstance(v, str) and v == "\x00undefined" else __jaxpath_fp(v)
    if st is not None:
        out["ended"], st.ended = st.ended, None
        st.result = json.dumps(out)
