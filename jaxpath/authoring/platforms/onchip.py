"""Run planned chapters on the accelerator of this host: the part of `jaxpath platform` that travels.

It needs nothing but Python's standard library and IPython (3.11 or newer): the machines with a TPU run their
own Python and JAX, have no TCP at all (a Jupyter kernel cannot start) and let one process hold the chip at a
time. So it is run as a file, not imported from the jaxpath package:

    python jaxpath/authoring/platforms/onchip.py PLAN.json OUT.json [--chapters basics/02_jit ...] [--timeout 600]

PLAN.json is what `jaxpath platform plan` wrote on the course's pinned stack: every chapter's code cells with
their tags and roles, and per exercise the stub, the wrong and the alternative answers (validate's proof). Each
chapter runs in a fresh Python process of its own (one after another: the chip is one process's at a time), in
an in-process IPython shell, top to bottom. At an exercise's answer cell, before the reference solution, each
candidate answer is defined in a throw-away copy of the shell's namespace and the exercise's test cells run
after it, exactly as `jaxpath validate` does in a kernel. What each cell and each trial did goes to OUT.json:
judging it (what is a platform's difference, what the stack's) happens on the pinned stack, by
`jaxpath platform report`.

Set JAX_PLATFORMS=cpu for the control run on the same host and stack (it may run beside the chip's run).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import traceback

FORMAT = 1
PRINTED_KEPT = 4000  # the last characters of what each cell printed: the report compares the chip's with the CPU's


def _summary(e: BaseException) -> str:
    text = str(e).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(e).__name__}: {first[:400]}" if first else type(e).__name__


class CellTimeout(Exception):
    pass


@contextlib.contextmanager
def _limit(seconds: float):
    def on_alarm(signum, frame):
        raise CellTimeout(f"ran past {seconds:g} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class PallasCounter:
    """How many kernels the chapter's cells built with `pallas_call`, compiled (interpret off) or interpreted.

    The chapter imports `jax.experimental.pallas` itself (after its setup cell has set XLA_FLAGS); from the cell
    after that on, the module's `pallas_call` is wrapped to count. Kernels are counted per cell and kept only for
    cells that ran without an error."""

    def __init__(self):
        self.compiled = self.interpreted = 0
        self.patched = False

    def patch(self) -> None:
        if self.patched or "jax.experimental.pallas" not in sys.modules:
            return
        pl = sys.modules["jax.experimental.pallas"]
        original = pl.pallas_call

        def counting(*args, **kwargs):
            if kwargs.get("interpret"):
                self.interpreted += 1
            else:
                self.compiled += 1
            return original(*args, **kwargs)

        counting.__wrapped__ = original
        pl.pallas_call = counting
        self.patched = True

    def take(self) -> tuple[int, int]:
        out = (self.compiled, self.interpreted)
        self.compiled = self.interpreted = 0
        return out


def _run_source(shell, source: str, seconds: float) -> tuple[bool, str, str]:
    """Run one cell in the shell; (ok, error summary, captured stdout)."""
    from IPython.utils.capture import capture_output

    with capture_output() as cap:
        try:
            with _limit(seconds):
                result = shell.run_cell(source, store_history=True, silent=False)
        except CellTimeout as e:
            return False, f"TimeoutError: {e}", cap.stdout
    err = result.error_in_exec or result.error_before_exec
    if err is not None:
        return False, _summary(err), cap.stdout
    return True, "", cap.stdout


def _last_score(ns: dict):
    req = ns.get("Requirements")
    last = getattr(req, "last", None)
    return json.loads(json.dumps(last)) if isinstance(last, dict) else None


def _trial(shell, answer: str, tests: list[dict], label: str, seconds: float) -> dict:
    """One candidate answer and the exercise's test cells, in a copy of the shell's namespace (prints swallowed)."""
    ns = dict(shell.user_ns)
    out = {"answer_error": "", "tests": []}
    sink = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        try:
            with _limit(seconds):
                exec(compile(answer, f"<{label}>", "exec"), ns)
        except Exception as e:
            out["answer_error"] = _summary(e)
        for t in tests:
            req = ns.get("Requirements")
            if req is not None:
                req.last = None
            ok, error = True, ""
            try:
                with _limit(seconds):
                    exec(compile(t["source"], f"<{label}: tests>", "exec"), ns)
            except Exception as e:
                ok, error = False, _summary(e)
            out["tests"].append({"cell": t["index"], "ok": ok, "error": error, "score": _last_score(ns)})
    ns.clear()
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def run_chapter(chapter: dict, folder: str, seconds: float) -> dict:
    """Execute one planned chapter top to bottom in this process."""
    from IPython.core.interactiveshell import InteractiveShell

    os.chdir(folder)
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ.setdefault("PYTHONHASHSEED", "0")
    shell = InteractiveShell.instance()
    shell.enable_gui = lambda gui=None: None  # no event loop here: `%matplotlib` then just picks the backend
    counter = PallasCounter()
    cells = {c["index"]: c for c in chapter["cells"]}
    answers = {e["answer"]: e for e in chapter["exercises"]}
    record = {"id": chapter["id"], "sha256": chapter["sha256"], "cells": [], "trials": [], "pallas": [0, 0]}
    t0 = time.perf_counter()
    for index in sorted(cells):
        cell = cells[index]
        if index in answers:
            ex = answers[index]
            tests = [cells[t] for t in ex["tests"]]
            for cand in ex["candidates"]:
                trial = _trial(shell, cand["code"], tests, f"{ex['name']}: {cand['label']}", seconds)
                trial.update(exercise=ex["name"], label=cand["label"], kind=cand["kind"])
                record["trials"].append(trial)
        req = shell.user_ns.get("Requirements")
        if req is not None:
            req.last = None
        started = time.perf_counter()
        ok, error, printed = _run_source(shell, cell["source"], seconds)
        counter.patch()
        compiled, interpreted = counter.take()
        if ok:
            record["pallas"][0] += compiled
            record["pallas"][1] += interpreted
        record["cells"].append({"index": index, "ok": ok, "error": error, "score": _last_score(shell.user_ns),
                                "seconds": round(time.perf_counter() - started, 3),
                                "stamped": printed if cell.get("stamp") and ok else None,
                                "printed": printed[-PRINTED_KEPT:]})
    record["seconds"] = round(time.perf_counter() - t0, 2)
    record["platform"] = _platform(shell.user_ns)
    return record


def _platform(ns: dict) -> dict:
    jax = sys.modules.get("jax")
    out = {"python": sys.version.split()[0]}
    if jax is None:
        return out
    try:
        dev = jax.devices()[0]
        out.update(jax=jax.__version__, backend=jax.default_backend(), device_kind=dev.device_kind,
                   devices=jax.device_count())
        import jaxlib

        out["jaxlib"] = jaxlib.__version__
    except Exception as e:  # a chapter that broke the backend: say so, keep the record
        out["error"] = _summary(e)
    return out


def _one(plan_path: str, chapter_id: str, out_path: str, seconds: float) -> int:
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    chapter = next(c for c in plan["chapters"] if c["id"] == chapter_id)
    folder = os.path.join(os.path.dirname(os.path.abspath(plan_path)), plan.get("root", "."), chapter["folder"])
    try:
        record = run_chapter(chapter, folder, seconds)
    except BaseException as e:  # the runner itself failed: the record says where
        record = {"id": chapter_id, "sha256": chapter["sha256"], "crash": _summary(e),
                  "traceback": traceback.format_exc()[-4000:]}
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(record, f)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("plan")
    p.add_argument("out")
    p.add_argument("--chapters", nargs="*", default=None, help="chapter ids (default: every chapter in the plan)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds one cell or one trial may run")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        return _one(args.plan, args.one, args.out, args.timeout)
    with open(args.plan, encoding="utf-8") as f:
        plan = json.load(f)
    planned = [c["id"] for c in plan["chapters"]]
    ids = [c for c in args.chapters if c in planned] if args.chapters else planned  # in the order asked
    results = {"format": FORMAT, "platform_env": os.environ.get("JAX_PLATFORMS", ""), "chapters": []}
    for cid in ids:
        part = f"{args.out}.{cid.replace('/', '__')}.part"
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), args.plan, part, "--one", cid,
                               "--timeout", str(args.timeout)], capture_output=True, text=True)
        try:
            with open(part, encoding="utf-8") as f:
                record = json.load(f)
            os.unlink(part)
        except (OSError, ValueError):
            record = {"id": cid, "crash": f"the chapter's process ended with {proc.returncode}",
                      "traceback": (proc.stderr or "")[-4000:]}
        record["wall"] = round(time.perf_counter() - t0, 2)
        results["chapters"].append(record)
        bad = sum(not c["ok"] for c in record.get("cells", []))
        print(f"{cid}: {record['wall']:.1f} s, {bad} cells raised{', CRASH ' + record['crash'] if 'crash' in record else ''}",
              flush=True)
        with open(args.out, "w", encoding="utf-8") as f:  # after every chapter: a run cut short keeps what it did
            json.dump(results, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
