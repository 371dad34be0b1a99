"""`jaxpath platform`: the course and validate's proof on an accelerator, with a CPU control on the same host.

Three steps, so that the part that runs on the accelerator's host needs nothing of the course's stack:

1. `plan` (here, on the pinned stack): every chapter's code cells and, per exercise, the stub, the wrong and the
   alternative answers with the requirements each breaks, into one JSON file (`build/platforms/plan.json`).
2. `onchip.py` (there, as a file: standard library and IPython only) runs the plan on the host's default
   backend and, with `JAX_PLATFORMS=cpu`, on its CPU: the control, same host, same Python, same JAX.
3. `report` (here again) judges both runs as `jaxpath validate` would and writes `reports/platforms/<chip>.md`
   and `.json`: per chapter the source's sha256, the two platforms and stacks, and what failed on the
   accelerator only (a platform difference) apart from what failed on both (a difference of that host's stack
   from the pinned one, which is `jaxpath drift`'s business). `check` says which reported chapters changed since.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...cells import INTENDED_ERROR, tags
from ...config import Config
from ...files import write_atomic
from ...manifest import load_manifest, notebook_path, variants_path
from ..chapter import load_chapter, stub_source

STAMP_TAG = "platform-output"
"""A cell tagged so runs live on the accelerator and elsewhere prints what the accelerator's last run printed,
kept in the cell between RECORDED_START and RECORDED_END by `stamp` (from the report)."""
RECORDED_START = "# ▼ recorded on a TPU by `jaxpath platform stamp` (do not edit)"
RECORDED_END = "# ▲"
_RECORDED = re.compile(re.escape(RECORDED_START) + r".*?" + re.escape(RECORDED_END), re.DOTALL)

RUNNER = Path(__file__).with_name("onchip.py")


def without_recorded(source: str) -> str:
    """A cell's source without the output it keeps from the accelerator's last run."""
    return _RECORDED.sub(RECORDED_START + "\n" + RECORDED_END, source)


def source_sha256(config: Config, chapter_id: str) -> str:
    """The digest the report keys a chapter by: the source notebook (with what `stamp` wrote into it left out, so
    that stamping a run's outputs does not make that run stale) and its variants file."""
    nb = json.loads(notebook_path(config, chapter_id).read_text(encoding="utf-8"))
    for cell in nb.get("cells", []):
        src = cell.get("source", "")
        src = "".join(src) if isinstance(src, list) else src
        cell["source"] = without_recorded(src) if RECORDED_START in src else src
    h = hashlib.sha256(json.dumps(nb, sort_keys=True, ensure_ascii=False).encode("utf-8"))
    vp = variants_path(config, chapter_id)
    h.update(vp.read_bytes() if vp.exists() else b"")
    return h.hexdigest()


def plan(config: Config, chapter_ids: list[str]) -> dict:
    """What the accelerator's host runs: cells and candidate answers, judged later by `judge`."""
    chapters = []
    for cid in chapter_ids:
        path = notebook_path(config, cid)
        ch = load_chapter(path, cid, config.root, variants_path(config, cid))
        answers = {e.answer: e for e in ch.exercises}
        tests = {t for e in ch.exercises for t in e.tests}
        cells = []
        for i, cell in enumerate(ch.nb.cells):
            if cell.cell_type != "code":
                continue
            role = "answer" if i in answers else "test" if i in tests else "code"
            cells.append({"index": i, "source": cell.source, "tags": sorted(tags(cell)), "role": role,
                          "stamp": STAMP_TAG in tags(cell)})
        exercises = []
        for e in ch.exercises:
            cands = [{"label": "the stub", "kind": "stub", "code": stub_source(ch.nb.cells[e.answer].source),
                      "breaks": sorted(e.weights)}]
            cands += [{"label": v.label, "kind": v.kind, "code": v.code, "breaks": list(v.breaks)} for v in e.variants]
            exercises.append({"name": e.name, "answer": e.answer, "tests": list(e.tests), "weights": e.weights,
                              "points": e.points, "candidates": cands})
        chapters.append({"id": cid, "folder": str(path.parent.relative_to(config.root)),
                         "sha256": source_sha256(config, cid), "cells": cells, "exercises": exercises})
    return {"root": ".", "chapters": chapters}


def write_plan(config: Config, chapter_ids: list[str], out: Path) -> Path:
    """The plan, with the course's root given relative to the plan's folder (the runner finds the chapters'
    folders from there, wherever the course and its plan are copied together)."""
    import os

    data = plan(config, chapter_ids)
    data["root"] = os.path.relpath(config.root.resolve(), out.resolve().parent)
    write_atomic(out, json.dumps(data))
    return out


# --- judging one run ---------------------------------------------------------------------------------------------

@dataclass
class Findings:
    """What went wrong in one chapter on one platform, each as a short line naming the cell (1-based, as Jupyter)."""
    cells: list[str] = field(default_factory=list)           # raised unexpectedly, or a raises-exception cell did not
    references: list[str] = field(default_factory=list)      # a test cell failed or lost points on the reference
    wrong_passing: list[str] = field(default_factory=list)   # a wrong answer kept points of a requirement it breaks
    wrong_other: list[str] = field(default_factory=list)     # a wrong answer lost points of one it does not break
    alternatives: list[str] = field(default_factory=list)    # a correct alternative lost points or failed a test
    stub: list[str] = field(default_factory=list)            # the stub earned points
    crash: str = ""

    def all(self) -> list[str]:
        return self.cells + self.references + self.wrong_passing + self.wrong_other + self.alternatives + self.stub + \
            ([self.crash] if self.crash else [])


def _score_ok(score: dict | None, weights: dict, breaks: set[str]) -> tuple[bool, str]:
    if not weights:
        return True, ""
    if score is None:
        return False, "no score (the test cell stopped before check.score())"
    failed, ran = set(score.get("failed", {})), set(score.get("ran", []))
    want = sum(w for r, w in weights.items() if r not in breaks)
    if failed == breaks and ran == set(weights) and abs(score.get("score", -1) - want) < 1e-9:
        return True, ""
    msgs = "; ".join(f"{r}: {m}" for r, m in score.get("failed", {}).items()) or "nothing failed"
    return False, f"{score.get('score')} of {sum(weights.values()):g} points ({msgs})"


def judge(planned: dict, record: dict) -> Findings:
    """One chapter's run against what validate requires of it."""
    f = Findings()
    if "crash" in record:
        f.crash = f"the run crashed: {record['crash']}"
        return f
    planned_cells = {c["index"]: c for c in planned["cells"]}
    exercises = {e["name"]: e for e in planned["exercises"]}
    by_test = {t: e for e in planned["exercises"] for t in e["tests"]}
    for c in record["cells"]:
        pc = planned_cells[c["index"]]
        intended = INTENDED_ERROR in pc["tags"]
        where = f"cell {c['index'] + 1}"
        if pc["role"] == "test":
            ex = by_test[c["index"]]
            ok, why = _score_ok(c.get("score"), ex["weights"], set())
            if not c["ok"] or not ok:
                f.references.append(f"{where} ({ex['name']}): {why or c['error']}")
        elif intended and c["ok"]:
            f.cells.append(f"{where}: tagged {INTENDED_ERROR} but raised nothing")
        elif not intended and not c["ok"]:
            f.cells.append(f"{where}: {c['error']}")
    for t in record["trials"]:
        ex = exercises[t["exercise"]]
        cand = next(c for c in ex["candidates"] if c["label"] == t["label"])
        breaks = set(cand["breaks"])
        all_pass = all(r["ok"] for r in t["tests"])
        judged = [(r, *_score_ok(r.get("score"), ex["weights"], breaks)) for r in t["tests"]]
        score_ok = all(ok for _, ok, _ in judged)
        why = "; ".join(msg or r["error"] for r, ok, msg in judged if not ok or not r["ok"])
        name = f"{ex['name']} {t['label']}"
        if t["kind"] == "alternative" and (t["answer_error"] or not all_pass or not score_ok):
            f.alternatives.append(f"{name}: {t['answer_error'] or why}")
        elif t["kind"] == "wrong" and (all_pass or not score_ok):
            kept = ex["weights"] and any(set(cand["breaks"]) - set((r.get("score") or {}).get("failed", {}))
                                         for r in t["tests"] if r.get("score"))
            if all_pass or kept:  # it keeps points it should lose: the checks miss this mistake here
                f.wrong_passing.append(f"{name}: {why or 'passes every test'}")
            else:                 # it loses more than it breaks: a check fails here on what the answer got right
                f.wrong_other.append(f"{name}: {why}")
        elif t["kind"] == "stub" and (any(r["ok"] for r in t["tests"]) or not score_ok):
            f.stub.append(f"{name}: {why or 'a test cell passes on it'}")
    return f


# --- the report --------------------------------------------------------------------------------------------------

def chip_name(platform: dict) -> str:
    kind = platform.get("device_kind", platform.get("backend", "unknown"))
    names = {"TPU v5 lite": "tpu-v5e", "TPU v5e": "tpu-v5e", "TPU v6 lite": "tpu-v6e", "TPU v4": "tpu-v4"}
    return names.get(kind, kind.lower().replace(" ", "-"))


def _load(path: Path) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {c["id"]: c for c in data["chapters"]}


def run_platform(path: Path) -> dict:
    """The platform a run reports (its first chapter that got as far as naming one)."""
    return next((r["platform"] for r in _load(path).values() if r.get("platform")), {})


KINDS = ("cells", "references", "wrong_passing", "wrong_other", "alternatives", "stub")


def build_report(config: Config, plan_data: dict, accel: Path, control: Path, chip: str | None = None,
                 previous: dict | None = None) -> dict:
    """Judge the accelerator's run and the CPU control's; split what differs by platform from what the stack does.
    Chapters not in these runs keep their entry from `previous` (the committed report)."""
    planned = {c["id"]: c for c in plan_data["chapters"]}
    runs_a, runs_c = _load(accel), _load(control)
    first = run_platform(accel)
    chip = chip or chip_name(first)
    chapters = dict((previous or {}).get("chapters", {}))
    for cid, rec in runs_a.items():
        if cid not in planned:
            continue
        fa = judge(planned[cid], rec)
        ctl = runs_c.get(cid)
        fc = judge(planned[cid], ctl) if ctl else None
        entry = {"sha256": rec.get("sha256") or planned[cid]["sha256"], "platform": rec.get("platform", {}),
                 "control": (ctl or {}).get("platform", {}), "seconds": rec.get("seconds"),
                 "control_seconds": (ctl or {}).get("seconds"),
                 "pallas_compiled": rec.get("pallas", [0, 0])[0], "pallas_interpreted": rec.get("pallas", [0, 0])[1],
                 "cells": len(rec.get("cells", [])), "trials": len(rec.get("trials", [])),
                 "run": _dt.date.today().isoformat()}
        for kind in KINDS + ("crash",):
            a = getattr(fa, kind)
            a = [a] if isinstance(a, str) and a else a or []
            b = getattr(fc, kind) if fc else []
            b = [b] if isinstance(b, str) and b else b or []
            entry[f"platform_{kind}"] = [x for x in a if x not in b]     # on the accelerator only
            entry[f"stack_{kind}"] = [x for x in a if x in b]            # on both: the host's stack, not the chip
            entry[f"control_only_{kind}"] = [x for x in b if x not in a]
        entry["stamped"] = {str(c["index"]): c["stamped"] for c in rec.get("cells", []) if c.get("stamped")}
        entry["printed_differently"] = printed_differently(rec, ctl or {})
        chapters[cid] = entry
    return {"chip": chip, "platform": first, "generated": _dt.date.today().isoformat(),
            "chapters": dict(sorted(chapters.items()))}


def printed_differently(accel: dict, control: dict) -> list[str]:
    """Cells that ran on both and printed something else on the accelerator than on its CPU control: the first
    line that differs, each side. Not a failure (timings and last bits differ by nature): what to read against the
    prose next to the cell, which must hold on every platform. Runs recorded before cells' output was kept give
    nothing."""
    theirs = {c["index"]: c for c in control.get("cells", []) if c.get("ok") and "printed" in c}
    out = []
    for c in accel.get("cells", []):
        other = theirs.get(c["index"])
        if not c.get("ok") or "printed" not in c or other is None or c["printed"] == other["printed"]:
            continue
        mine, yours = c["printed"].splitlines(), other["printed"].splitlines()
        k = next((i for i, (x, y) in enumerate(zip(mine, yours)) if x != y), min(len(mine), len(yours)))
        out.append(f"cell {c['index']}, line {k + 1}: accelerator {_line_at(mine, k)}, CPU {_line_at(yours, k)}")
    return out


def _line_at(lines: list[str], k: int) -> str:
    return repr(lines[k][:160]) if k < len(lines) else "(nothing more)"


def totals(report: dict) -> dict:
    out = {}
    for kind in KINDS + ("crash",):
        out[f"platform_{kind}"] = sum(len(c.get(f"platform_{kind}", [])) for c in report["chapters"].values())
        out[f"stack_{kind}"] = sum(len(c.get(f"stack_{kind}", [])) for c in report["chapters"].values())
    out["pallas_compiled"] = sum(c.get("pallas_compiled", 0) for c in report["chapters"].values())
    out["printed_differently"] = sum(len(c.get("printed_differently", [])) for c in report["chapters"].values())
    return out


def markdown(report: dict, config: Config) -> str:
    t = totals(report)
    p = report.get("platform", {})
    every = [c.id for c in load_manifest(config).written()]
    missing = [c for c in every if c not in report["chapters"]]
    stale = check(config, report)
    lines = [f"# The course on {report['chip']}",
             "",
             "Written by `jaxpath platform report` (do not edit by hand). Each chapter ran top to bottom on the "
             "accelerator, with validate's proof (the stub, every wrong and every alternative answer, each followed by "
             "the exercise's tests), and again on the same host's CPU (`JAX_PLATFORMS=cpu`) as the control. A failure "
             "on the accelerator only is the platform's; one on both is that host's stack differing from the pinned one "
             "(see `jaxpath drift`).",
             "",
             f"- accelerator: {p.get('device_kind', '?')} ({p.get('devices', '?')} device(s)), backend "
             f"`{p.get('backend', '?')}`; Python {p.get('python', '?')}, jax {p.get('jax', '?')}, jaxlib "
             f"{p.get('jaxlib', '?')}",
             f"- chapters reported: {len(report['chapters'])} of {len(every)}"
             + (f" (not yet run there: {', '.join(missing)})" if missing else ""),
             f"- stale (source changed since its run): {', '.join(stale) if stale else 'none'}",
             "",
             "| on the accelerator only | count |", "|---|---:|",
             f"| cells that raise | {t['platform_cells']} |",
             f"| reference solutions failing a check | {t['platform_references']} |",
             f"| wrong answers passing (keeping points of what they break) | {t['platform_wrong_passing']} |",
             f"| wrong answers losing points of what they do not break | {t['platform_wrong_other']} |",
             f"| alternatives rejected | {t['platform_alternatives']} |",
             f"| stubs earning points | {t['platform_stub']} |",
             f"| chapters whose run crashed | {t['platform_crash']} |",
             f"| compiled `pallas_call`s | {t['pallas_compiled']} |",
             f"| cells printing otherwise than on the CPU (to read against the prose, below) | "
             f"{t['printed_differently']} |",
             "",
             "| chapter | run | accelerator s | CPU control s | cells | trials | platform-only | stack (both) "
             "| compiled kernels |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for cid, c in report["chapters"].items():
        po = sum(len(c.get(f"platform_{k}", [])) for k in KINDS + ("crash",))
        st = sum(len(c.get(f"stack_{k}", [])) for k in KINDS + ("crash",))
        lines.append(f"| {cid} | {c.get('run', '')} | {c.get('seconds') or 0:.1f} | {c.get('control_seconds') or 0:.1f} | "
                     f"{c.get('cells', 0)} | {c.get('trials', 0)} | {po} | {st} | {c.get('pallas_compiled', 0)} |")
    for title, prefix in (("On the accelerator only", "platform_"), ("On both (the host's stack)", "stack_")):
        body = []
        for cid, c in report["chapters"].items():
            found = [f"  - {k.replace('_', ' ')}: {x}" for k in KINDS + ("crash",) for x in c.get(prefix + k, [])]
            if found:
                body += [f"- **{cid}**", *found]
        lines += ["", f"## {title}", ""] + (body or ["Nothing."])
    body = []
    for cid, c in report["chapters"].items():
        if c.get("printed_differently"):
            body += [f"- **{cid}**", *(f"  - {x}" for x in c["printed_differently"])]
    lines += ["", "## Printed otherwise than on the CPU", "",
              "Not failures: timings and last bits differ by nature. Each is a place where the prose next to the cell "
              "must hold for both outputs. (Runs recorded before the runner kept what cells print show nothing here.)",
              ""] + (body or ["Nothing."])
    return "\n".join(lines) + "\n"


def report_paths(config: Config, chip: str) -> tuple[Path, Path]:
    folder = config.root / "reports" / "platforms"
    return folder / f"{chip}.json", folder / f"{chip}.md"


def write_report(config: Config, report: dict) -> tuple[Path, Path]:
    js, md = report_paths(config, report["chip"])
    write_atomic(js, json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    write_atomic(md, markdown(report, config))
    return js, md


def recorded_block(text: str, platform: dict, day: str) -> str:
    """The lines `stamp` writes into a platform-output cell: the output, then where and when it was measured."""
    body = text.rstrip("\n") + f"\n(measured on {platform.get('device_kind', '?')}, jax {platform.get('jax', '?')}, {day})"
    literal = f'"""{body}"""' if '"""' not in body and "\\" not in body and not body.endswith('"') else repr(body)
    return f"{RECORDED_START}\nTPU_RECORDED = {literal}\n{RECORDED_END}"


def stamp(config: Config, report: dict) -> list[str]:
    """Write the report's recorded outputs into the platform-output cells of the chapters it holds (source
    notebooks, keeping their format). Returns the chapters changed."""
    import nbformat

    from ...files import write_atomic as _write

    changed = []
    for cid, entry in report["chapters"].items():
        stamped = entry.get("stamped") or {}
        if not stamped:
            continue
        path = notebook_path(config, cid)
        nb = nbformat.read(path, as_version=4)
        touched = False
        for index, text in stamped.items():
            cell = nb.cells[int(index)]
            if cell.cell_type != "code" or RECORDED_START not in cell.source:
                continue
            new = _RECORDED.sub(lambda _m: recorded_block(text, entry.get("platform", {}), entry.get("run", "")),
                                cell.source, count=1)
            if new != cell.source:
                cell.source, touched = new, True
        if touched:
            _write(path, nbformat.writes(nb) + "\n")
            changed.append(cid)
    return changed


def stamps_in_step(config: Config, report: dict) -> list[str]:
    """Platform-output cells whose recorded text is not what the report's run printed (or was never recorded)."""
    import nbformat

    out = []
    for cid, entry in report["chapters"].items():
        nb = nbformat.read(notebook_path(config, cid), as_version=4)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or STAMP_TAG not in tags(cell):
                continue
            text = (entry.get("stamped") or {}).get(str(i))
            want = recorded_block(text, entry.get("platform", {}), entry.get("run", "")) if text is not None else None
            got = _RECORDED.search(cell.source)
            if want is None or got is None or got.group(0) != want:
                out.append(f"{cid}: cell {i + 1}")
    return out


def check(config: Config, report: dict) -> list[str]:
    """Chapters the report names whose source notebook or variants changed since they ran there."""
    out = []
    for cid, c in report["chapters"].items():
        try:
            now = source_sha256(config, cid)
        except OSError:
            out.append(cid)
            continue
        if c.get("sha256") != now:
            out.append(cid)
    return out
