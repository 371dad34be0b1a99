"""Runs inside a chapter's kernel: one candidate answer and its exercise's tests, in a throw-away copy
of the kernel's namespace, with one round trip to the kernel.

`jaxpath mutants` imports this module in the kernel as jaxpath.kernel.trial (the kernel runs the course's Python, where
jaxpath is installed) and calls `run(globals(), answer, tests, label)`; the JSON it returns travels
back in the execute reply's user expression.
"""
from __future__ import annotations

import contextlib
import io
import json
import time


def _summary(e: BaseException) -> str:
    text = str(e).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(e).__name__}: {first[:300]}" if first else type(e).__name__


def run(user_ns: dict, answer: str, tests: list[str], label: str) -> str:
    """Define `answer`, then run each test cell in order until one fails. Returns JSON:
    {"failed": null | "answer" | <test index>, "error": "...", "seconds": ...}. Prints are swallowed."""
    ns = dict(user_ns)
    t0 = time.perf_counter()
    failed, error = None, ""
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        try:
            exec(compile(answer, f"<{label}>", "exec"), ns)
        except Exception as e:
            failed, error = "answer", _summary(e)
        if failed is None:
            for i, src in enumerate(tests):
                try:
                    exec(compile(src, f"<{label}: tests {i + 1}>", "exec"), ns)
                except Exception as e:
                    failed, error = i, _summary(e)
                    break
    ns.clear()
    return json.dumps({"failed": failed, "error": error, "seconds": time.perf_counter() - t0})
