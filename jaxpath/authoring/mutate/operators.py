"""The mutation operators: which edits are made where (the tables of confusions a learner makes, and the
AST visitor that records, for each node of a solution region, every replacement that applies to it).
`jaxpath.authoring.mutate.generate` turns the recorded edits into mutants."""
from __future__ import annotations

import ast
import copy

_BINOP_SWAPS = {
    ast.Add: [ast.Sub], ast.Sub: [ast.Add], ast.Mult: [ast.Div, ast.Add], ast.Div: [ast.Mult, ast.FloorDiv],
    ast.FloorDiv: [ast.Div], ast.Mod: [ast.FloorDiv], ast.Pow: [ast.Mult], ast.MatMult: [ast.Mult],
    ast.BitAnd: [ast.BitOr], ast.BitOr: [ast.BitAnd], ast.BitXor: [ast.BitOr],
    ast.LShift: [ast.RShift], ast.RShift: [ast.LShift],
}
_CMP_SWAPS = {
    ast.Lt: [ast.LtE, ast.Gt], ast.LtE: [ast.Lt, ast.GtE], ast.Gt: [ast.GtE, ast.Lt], ast.GtE: [ast.Gt, ast.LtE],
    ast.Eq: [ast.NotEq], ast.NotEq: [ast.Eq], ast.Is: [ast.IsNot], ast.IsNot: [ast.Is],
    ast.In: [ast.NotIn], ast.NotIn: [ast.In],
}
_FUNCTION_SWAPS = {
    "sum": ["mean"], "mean": ["sum"], "max": ["min"], "min": ["max"], "amax": ["amin"], "amin": ["amax"],
    "argmax": ["argmin"], "argmin": ["argmax"], "maximum": ["minimum"], "minimum": ["maximum"],
    "nanmax": ["nanmin"], "nanmin": ["nanmax"], "any": ["all"], "all": ["any"], "floor": ["ceil"],
    "ceil": ["floor"], "cumsum": ["cumprod"], "cumprod": ["cumsum"], "prod": ["sum"], "sin": ["cos"],
    "cos": ["sin"], "log": ["log1p"], "log1p": ["log"], "exp": ["expm1"], "expm1": ["exp"],
    "zeros": ["ones"], "ones": ["zeros"], "zeros_like": ["ones_like"], "ones_like": ["zeros_like"],
    "triu": ["tril"], "tril": ["triu"], "hstack": ["vstack"], "vstack": ["hstack"], "var": ["std"],
    "std": ["var"], "logsumexp": ["max"], "softmax": ["log_softmax"], "log_softmax": ["softmax"],
    "floor_divide": ["true_divide"], "round": ["floor"], "sqrt": ["abs"], "square": ["abs"],
    "relu": ["gelu"], "sigmoid": ["tanh"], "tanh": ["sigmoid"], "cummax": ["cummin"], "cummin": ["cummax"],
    "psum": ["pmean"], "pmean": ["psum"], "pmax": ["pmin"], "pmin": ["pmax"], "sort": ["argsort"],
    "concatenate": ["stack"], "stack": ["concatenate"], "transpose": ["ravel"], "inv": ["pinv"],
    "solve": ["lstsq"], "grad": ["jacfwd"], "jacrev": ["jacfwd"], "jacfwd": ["jacrev"],
    "fold_in": ["split"], "normal": ["uniform"], "uniform": ["normal"], "bernoulli": ["uniform"],
    "split": ["fold_in"],
}
_REDUCTIONS = {"sum", "mean", "max", "min", "prod", "argmax", "argmin", "any", "all", "std", "var", "amax",
               "amin", "logsumexp", "cumsum", "cumprod", "softmax", "log_softmax", "norm", "nanmax", "nanmin",
               "nansum", "nanmean", "median", "count_nonzero", "sort", "argsort", "squeeze", "expand_dims"}
_UNWRAP_CALLS = {"stop_gradient", "abs", "absolute", "block_until_ready", "clip", "asarray", "float32", "float",
                 "int"}
_UNWRAP_METHODS = {"astype", "block_until_ready", "squeeze", "reshape", "ravel", "compile", "copy"}
_METHOD_SWAPS = {"add": ["set", "multiply"], "set": ["add"], "multiply": ["add"], "divide": ["multiply"],
                 "apply": ["set"], "get": ["set"]}
"""`.at[...]` updates a learner confuses (only as methods: `x.at[i].add(v)`)."""
_DTYPE_SWAPS = {"float32": ["float16", "bfloat16"], "float16": ["float32"], "bfloat16": ["float32"],
                "int32": ["int8", "float32"], "int8": ["uint8"], "uint8": ["int8", "int32"], "float64": ["float16"],
                "int64": ["int8"], "bool_": ["int32"], "int16": ["int8"], "uint32": ["int32"]}
_KEY_DERIVERS = {"split", "fold_in", "clone"}
_KEY_CONSUMERS = {"normal", "uniform", "bernoulli", "randint", "categorical", "permutation", "choice",
                  "gumbel", "truncated_normal", "exponential", "split", "fold_in", "key_data", "shuffle",
                  "multivariate_normal", "gamma", "beta", "dirichlet", "poisson", "laplace", "logistic",
                  "rademacher", "orthogonal", "ball", "cauchy", "t", "bits", "loggamma"}
_NO_SWAP_CALLS = {"print", "isinstance", "getattr", "setattr", "hasattr", "range", "zip", "enumerate", "dict",
                  "format", "len", "super"}
_ATOMIC = (ast.Name, ast.Constant, ast.Attribute, ast.Call, ast.Subscript, ast.List, ast.Tuple, ast.Dict,
           ast.Set, ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp, ast.JoinedStr, ast.Starred)


def _name_of(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _int(n: int) -> ast.expr:
    return ast.Constant(n) if n >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-n))


def _plus(e: ast.expr, k: int) -> ast.expr:
    return ast.BinOp(e, ast.Add() if k > 0 else ast.Sub(), ast.Constant(abs(k)))


class _Collector(ast.NodeVisitor):
    """Walks the answer cell; for every node inside the solution region, records (node, replacement,
    operator, description) edits. A replacement is an AST node or the string "pass"."""

    def __init__(self, regions: list[tuple[int, int]]):
        self.regions = regions
        self.edits: list[tuple[ast.AST, object, str, str]] = []
        self.parents: dict[ast.AST, ast.AST] = {}
        self.key_children: dict[str, str] = {}
        """Names bound to a key derived by split/fold_in, mapped to the source of the parent key."""
        self.key_siblings: dict[str, list[str]] = {}
        """Names bound by one `a, b, c = split(key)`: each maps to the others."""

    def inside(self, node: ast.AST) -> bool:
        return hasattr(node, "lineno") and any(node.lineno >= lo and (node.end_lineno or node.lineno) <= hi
                                               for lo, hi in self.regions)

    def add(self, node, replacement, op, description):
        if self.inside(node):
            self.edits.append((node, replacement, op, description))

    def generic_visit(self, node):
        for child in ast.iter_child_nodes(node):
            self.parents[child] = node
        super().generic_visit(node)

    # -- operators on expressions --------------------------------------------------------------------
    def visit_BinOp(self, node):
        for new in _BINOP_SWAPS.get(type(node.op), []):
            self.add(node, ast.BinOp(node.left, new(), node.right), "arith",
                     f"{_opsym(node.op)} → {_opsym(new())}")
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        for new in _BINOP_SWAPS.get(type(node.op), []):
            self.add(node, ast.AugAssign(node.target, new(), node.value), "arith",
                     f"{_opsym(node.op)}= → {_opsym(new())}=")
        target = copy.copy(node.target)
        target.ctx = ast.Store()
        self.add(node, ast.Assign([target], node.value), "arith", f"{_opsym(node.op)}= → =")
        self.add(node, "pass", "delete", "statement removed")
        self.generic_visit(node)

    def visit_Compare(self, node):
        for i, op in enumerate(node.ops):
            for new in _CMP_SWAPS.get(type(op), []):
                ops = list(node.ops)
                ops[i] = new()
                self.add(node, ast.Compare(node.left, ops, node.comparators), "compare",
                         f"{_opsym(op)} → {_opsym(new())}")
        self.generic_visit(node)

    def visit_BoolOp(self, node):
        new = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        self.add(node, ast.BoolOp(new, node.values), "bool", f"{_opsym(node.op)} → {_opsym(new)}")
        self.generic_visit(node)

    def visit_UnaryOp(self, node):
        if isinstance(node.op, ast.Not):
            self.add(node, node.operand, "bool", "`not` removed")
        elif isinstance(node.op, ast.USub):
            if isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float)) \
                    and not isinstance(node.operand.value, bool):
                v = -node.operand.value
                self._numbers(node, v)
                return
            self.add(node, node.operand, "sign", "unary minus removed")
        elif isinstance(node.op, ast.Invert):
            self.add(node, node.operand, "bool", "`~` removed")
        self.generic_visit(node)

    def visit_Constant(self, node):
        v = node.value
        if isinstance(v, bool):
            self.add(node, ast.Constant(not v), "flag", f"{v} → {not v}")
        elif isinstance(v, (int, float)):
            self._numbers(node, v)

    def _numbers(self, node, v):
        if self._in_keyword(node, {"axis", "axes", "static_argnums", "donate_argnums", "in_axes", "out_axes"}):
            # axis values: one changed value is enough (and the axis operator covers dropping it)
            cands = [v + 1] if v >= 0 else [v - 1]
            if v == -1:
                cands = [0]
        elif isinstance(v, int):
            cands = [1 if v == 0 else 0] + [v + 1] + ([v - 1] if v not in (0, 1) else []) + ([-v] if v not in (0, 1) else [])
        else:
            cands = [1.0 if v == 0 else 0.0, v + 1.0, -v] if v != 0 else [1.0, -1.0]
            if v not in (0.0, 1.0):
                cands.append(v * 2)
        seen = set()
        for c in cands:
            if c == v or c in seen:
                continue
            seen.add(c)
            self.add(node, _int(c) if isinstance(c, int) else
                     (ast.Constant(c) if c >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-c))),
                     "number", f"{v!r} → {c!r}")

    def _in_keyword(self, node, names) -> bool:
        p = self.parents.get(node)
        while p is not None and not isinstance(p, ast.stmt):
            if isinstance(p, ast.keyword):
                return p.arg in names
            p = self.parents.get(p)
        return False

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            for new in _DTYPE_SWAPS.get(node.id, []):
                self.add(node, ast.Name(new, ast.Load()), "dtype", f"{node.id} → {new}")
            parent = self.key_children.get(node.id)
            if parent is not None and self._used_as_key(node):
                self.add(node, ast.parse(parent, mode="eval").body, "key",
                         f"the derived key `{node.id}` → its parent `{parent}`")
                for sib in self.key_siblings.get(node.id, [])[:1]:
                    self.add(node, ast.Name(sib, ast.Load()), "key",
                             f"the derived key `{node.id}` → its sibling `{sib}` (one key used twice)")

    def _used_as_key(self, node) -> bool:
        p = self.parents.get(node)
        return not (isinstance(p, ast.Subscript) and p.value is node)

    def visit_Attribute(self, node):
        if isinstance(node.ctx, ast.Load):
            for new in _DTYPE_SWAPS.get(node.attr, []):
                self.add(node, ast.Attribute(node.value, new, ast.Load()), "dtype", f"{node.attr} → {new}")
            if node.attr == "T":
                self.add(node, node.value, "unwrap", "`.T` removed")
        self.generic_visit(node)

    def visit_Subscript(self, node):
        if isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name) \
                and node.value.id in self.key_children:
            parent = self.key_children[node.value.id]
            self.add(node, ast.parse(parent, mode="eval").body, "key",
                     f"`{ast.unparse(node)}` (derived by split) → its parent `{parent}`")
        if isinstance(node.value, ast.Call) and _name_of(node.value.func) in _KEY_DERIVERS and node.value.args:
            parent = node.value.args[0]
            self.add(node, parent, "key", f"`{ast.unparse(node)}` → its parent `{ast.unparse(parent)}`")
        sl = node.slice
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        for j, e in enumerate(elts):
            if isinstance(e, ast.Slice):
                for attr in ("lower", "upper"):
                    b = getattr(e, attr)
                    if b is None:
                        continue
                    if isinstance(b, ast.Constant) or (isinstance(b, ast.UnaryOp) and isinstance(b.operand, ast.Constant)):
                        continue  # the number operator changes literal bounds
                    for k in (1, -1):
                        new_sl = ast.Slice(**{**{a: getattr(e, a) for a in ("lower", "upper", "step")}, attr: _plus(b, k)})
                        self.add(node, _replace_elt(node, j, new_sl), "index",
                                 f"slice {attr} bound {ast.unparse(b)} → {ast.unparse(_plus(b, k))}")
            elif isinstance(e, (ast.Name, ast.BinOp)) and isinstance(node.ctx, ast.Load):
                for k in (1, -1):
                    self.add(node, _replace_elt(node, j, _plus(e, k)), "index",
                             f"index {ast.unparse(e)} → {ast.unparse(_plus(e, k))}")
        self.generic_visit(node)

    def visit_Call(self, node):  # noqa: C901
        name = _name_of(node.func)
        # functions a learner confuses
        for new in _FUNCTION_SWAPS.get(name or "", []):
            if isinstance(node.func, ast.Attribute):
                f = ast.Attribute(node.func.value, new, ast.Load())
            elif name in {"sum", "max", "min", "any", "all", "round", "abs"}:
                continue  # Python builtins: their swap is rarely the learner's confusion
            else:
                f = ast.Name(new, ast.Load())
            self.add(node, ast.Call(f, node.args, node.keywords), "function", f"{name} → {new}")
        if name in ("range", "fori_loop"):  # loop bounds off by one (literal bounds: the number operator)
            for j, arg in enumerate(node.args[:2]):
                if isinstance(arg, ast.Constant) or (isinstance(arg, ast.UnaryOp) and isinstance(arg.operand, ast.Constant)):
                    continue
                for k in (1, -1):
                    args = list(node.args)
                    args[j] = _plus(arg, k)
                    self.add(node, ast.Call(node.func, args, node.keywords), "index",
                             f"{name} bound {ast.unparse(arg)} → {ast.unparse(_plus(arg, k))}")
        if isinstance(node.func, ast.Attribute) and not _is_module(node.func.value):
            for new in _METHOD_SWAPS.get(name or "", []):
                f = ast.Attribute(node.func.value, new, ast.Load())
                self.add(node, ast.Call(f, node.args, node.keywords), "function", f".{name} → .{new}")
        # reduction axes
        kws = {k.arg: k for k in node.keywords}
        if name in _REDUCTIONS:
            if "axis" not in kws and len(node.args) == (0 if isinstance(node.func, ast.Attribute)
                                                        and not _is_module(node.func.value) else 1):
                for ax in (0, -1):
                    self.add(node, ast.Call(node.func, node.args, node.keywords + [ast.keyword("axis", _int(ax))]),
                             "axis", f"axis={ax} added to {name}")
            # a keepdims= already there is flipped by the flag operator
            if "keepdims" not in kws and name not in {"argmax", "argmin", "sort", "argsort", "squeeze", "expand_dims",
                                                      "softmax", "log_softmax", "cumsum", "cumprod"}:
                self.add(node, ast.Call(node.func, node.args, node.keywords + [ast.keyword("keepdims", ast.Constant(True))]),
                         "axis", f"keepdims=True added to {name}")
        for k in node.keywords:
            if k.arg is None:
                continue
            rest = [x for x in node.keywords if x is not k]
            op = "axis" if k.arg in ("axis", "axes", "keepdims") else "keyword"
            self.add(node, ast.Call(node.func, node.args, rest), op, f"`{k.arg}=` dropped from {name}")
        # swapped positional arguments
        if name not in _NO_SWAP_CALLS and not any(isinstance(a, ast.Starred) for a in node.args):
            for i in range(len(node.args) - 1):
                a, b = node.args[i], node.args[i + 1]
                if ast.dump(a) == ast.dump(b):
                    continue
                args = list(node.args)
                args[i], args[i + 1] = b, a
                desc = "jnp.where branches swapped" if name == "where" and i == 1 else \
                    f"arguments {i + 1} and {i + 2} of {name} swapped"
                self.add(node, ast.Call(node.func, args, node.keywords), "args", desc)
        # wrappers removed
        if name in _UNWRAP_CALLS and node.args and not (isinstance(node.func, ast.Attribute)
                                                        and not _is_module(node.func.value)):
            self.add(node, node.args[0], "unwrap", f"{name}(…) removed")
        if isinstance(node.func, ast.Attribute) and name in _UNWRAP_METHODS and not _is_module(node.func.value):
            self.add(node, node.func.value, "unwrap", f".{name}(…) removed")
        # keys derived inline and consumed at once: fold_in(key, i) → key
        if name in _KEY_DERIVERS and node.args and not isinstance(self.parents.get(node), (ast.Assign, ast.Subscript)):
            p = self.parents.get(node)
            if not isinstance(p, (ast.For, ast.comprehension)):
                self.add(node, node.args[0], "key", f"`{ast.unparse(node)}` → its parent `{ast.unparse(node.args[0])}`")
        self.generic_visit(node)

    def visit_IfExp(self, node):
        self.add(node, ast.IfExp(_negate(node.test), node.body, node.orelse), "negate", "condition negated")
        self.generic_visit(node)

    # -- operators on statements ---------------------------------------------------------------------
    def visit_Assign(self, node):
        self._note_key_children(node)
        self.add(node, "pass", "delete", "statement removed")
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self.add(node, "pass", "delete", "statement removed")
        self.generic_visit(node)

    def visit_Expr(self, node):
        if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            self.add(node, "pass", "delete", "statement removed")
        self.generic_visit(node)

    def visit_If(self, node):
        self.add(node.test, _negate(node.test), "negate", "condition negated")
        self.generic_visit(node)

    def visit_While(self, node):
        self.add(node.test, _negate(node.test), "negate", "condition negated")
        self.generic_visit(node)

    def visit_Break(self, node):
        self.add(node, ast.Continue(), "loop", "break → continue")

    def visit_Continue(self, node):
        self.add(node, ast.Break(), "loop", "continue → break")

    def _note_key_children(self, node: ast.Assign) -> None:
        v = node.value
        call = v.value if isinstance(v, ast.Subscript) else v
        if not (isinstance(call, ast.Call) and _name_of(call.func) in _KEY_DERIVERS and call.args):
            return
        parent = ast.unparse(call.args[0])
        for t in node.targets:
            names = [n.id for n in ast.walk(t) if isinstance(n, ast.Name) and n.id != parent]
            for i, name in enumerate(names):
                self.key_children[name] = parent
                if len(names) > 1 and name not in self.key_siblings:
                    # the next one along: `b` for `a`, …, `a` for the last
                    self.key_siblings[name] = [names[(i + 1) % len(names)]]


def _is_module(e: ast.expr) -> bool:
    """`jnp.sum` or `jax.lax.stop_gradient`, rather than a method on a value (`x.sum`)."""
    while isinstance(e, ast.Attribute):
        e = e.value
    return isinstance(e, ast.Name) and e.id in {"jnp", "np", "jax", "lax", "random", "nn", "optax", "nnx",
                                                "math", "scipy", "jsp", "pl", "ocp", "numpy", "jr"}


def _negate(test: ast.expr) -> ast.expr:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    return ast.UnaryOp(ast.Not(), test)


def _replace_elt(sub: ast.Subscript, j: int, new: ast.expr) -> ast.Subscript:
    if isinstance(sub.slice, ast.Tuple):
        elts = list(sub.slice.elts)
        elts[j] = new
        return ast.Subscript(sub.value, ast.Tuple(elts, ast.Load()), sub.ctx)
    return ast.Subscript(sub.value, new, sub.ctx)


_SYM = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
        ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
        ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is",
        ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in", ast.And: "and", ast.Or: "or"}


def _opsym(op) -> str:
    return _SYM.get(type(op), type(op).__name__)
