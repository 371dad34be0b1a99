"""jaxpath/startup.py: the IRI grammar that jsonschema's format checkers import is built on first use, not when
a jaxpath process starts, and every check still answers as before."""
import json
import subprocess
import sys

CHECKS = ["http://example.org/ünïcode?q=1#frag", "a relative/ref", "http://[::1", "", "not an iri"]

PROBE = """
import json, sys
{setup}
import nbformat  # what every jaxpath process imports: nbformat -> jsonschema -> its format checkers
built = "rfc3987_syntax.syntax_helpers" in sys.modules
from jsonschema import Draft7Validator
fc = Draft7Validator.FORMAT_CHECKER
answers = {{fmt: [fc.conforms(v, fmt) for v in {checks!r}] for fmt in ("iri", "iri-reference")}}
print(json.dumps({{"built_on_import": built, "answers": answers}}))
"""


def _run(setup: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE.format(setup=setup, checks=CHECKS)], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_jaxpath_process_builds_the_iri_grammar_only_when_a_check_needs_it_and_every_answer_is_unchanged():
    plain = _run("")
    deferred = _run("import jaxpath")
    assert plain["built_on_import"] is True      # the cost being deferred exists on this stack
    assert deferred["built_on_import"] is False  # jaxpath's processes do not pay it at start
    assert deferred["answers"] == plain["answers"]
    assert True in deferred["answers"]["iri"] and False in deferred["answers"]["iri"]  # checks that decide


def test_nothing_is_deferred_where_the_grammar_or_the_format_checkers_were_imported_first():
    from jaxpath.startup import defer_iri_grammar

    assert "jsonschema._format" in sys.modules  # pytest's process imported nbformat long ago
    assert defer_iri_grammar() is False
