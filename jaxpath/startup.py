"""What every jaxpath process does before it imports anything else: today, one deferral.

`nbformat` imports `jsonschema`, whose format checkers import `rfc3987_syntax` (pulled in by
`jsonschema[format-nongpl]`, which `nbformat` and `jupyter-events` ask for). That package builds about 35 Earley
parsers of its IRI grammar while it is imported: 0.9 s of CPU here, in every process that reads a notebook
(`jaxpath --help` took 2.3 s, 40 % of it this). Only the `iri` and `iri-reference` formats use those parsers,
and no notebook or nbgrader schema asks for either (upstream: python-jsonschema/jsonschema#1428).

`defer_iri_grammar` puts in its place the same package, not yet run: `rfc3987_syntax.is_valid_syntax` (the one
name jsonschema imports) loads the real grammar on its first call, and any other name on first use, so every
check gives the answer it gave before, only later. Nothing changes where `rfc3987_syntax` or jsonschema's
format checkers were already imported, or where the package is not installed."""
from __future__ import annotations

import importlib
import importlib.util
import sys

_PACKAGE = "rfc3987_syntax"
_HELPERS = f"{_PACKAGE}.syntax_helpers"


def defer_iri_grammar() -> bool:
    """Make `rfc3987_syntax` build its grammar on first use instead of on import. True when deferred now."""
    if _PACKAGE in sys.modules or "jsonschema._format" in sys.modules:
        return False
    try:
        spec = importlib.util.find_spec(_PACKAGE)
    except (ImportError, ValueError):
        return False
    if spec is None or not spec.submodule_search_locations:
        return False
    module = importlib.util.module_from_spec(spec)  # the package itself, its __init__ not run

    def is_valid_syntax(term: str, value: str):
        return importlib.import_module(_HELPERS).is_valid_syntax(term, value)

    def __getattr__(name: str):  # the package's other names (it re-exports syntax_helpers), on first use
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return getattr(importlib.import_module(_HELPERS), name)
        except AttributeError:
            raise AttributeError(f"module {_PACKAGE!r} has no attribute {name!r}") from None

    is_valid_syntax.__doc__ = "rfc3987_syntax.is_valid_syntax, its grammar built on the first call."
    module.is_valid_syntax = is_valid_syntax
    module.__getattr__ = __getattr__
    sys.modules[_PACKAGE] = module
    return True
