"""One student of the storm, run as that student's own account (`python .../storm/student.py PLAN.json`): fetch
the part with nbgrader, answer it, say "ready", wait for the minute to start (the storm's `go` pipe closing:
every student wakes at once), submit with nbgrader's submit (once, or twice), say "done";
a late student then waits for the due date to pass (the `late` pipe) and submits again, one of them forging the
time its submission claims. What happened, with the time each submit took, goes to its results file.

Nothing here sleeps: every wait is a read on a pipe that the storm closes. It imports nothing of jaxpath (it is
run as a file). It submits the way JupyterLab's assignment list does: nbgrader's own `SubmitApp`, run inside a
process that is already up (there, the student's Jupyter server; here, this one, which imports nbgrader before it
says "ready"). A fresh `nbgrader submit` per submission would spend about 3 s of CPU starting Python and importing
nbgrader, so 60 of them could not even start within one minute on two cores: the storm would measure the
interpreter's start-up, not the exchange."""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from nbgrader.apps.submitapp import SubmitApp  # before "ready": the minute pays for the submission, not the import


def _say(fifo: str, line: str) -> None:
    fd = os.open(fifo, os.O_WRONLY)  # the storm holds the pipe open: this does not block
    try:
        os.write(fd, f"{line}\n".encode())  # shorter than PIPE_BUF: one line, never mixed with another's
    finally:
        os.close(fd)


def _wait(fd: int) -> None:
    while os.read(fd, 1):  # EOF once the storm closes its end
        pass
    os.close(fd)


def _answer(path: Path, answers: dict[str, str]) -> None:
    """Fill the answer cells, as an editor saves them (course.answer, which this file cannot import)."""
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell["source"] = answers[gid]
    path.write_text(json.dumps(nb, indent=1))


def nbgrader_submit(argv: list[str], work: Path) -> tuple[int, str]:
    """`nbgrader submit ARGV...` run in this process from `work`: its exit status and what it logged."""
    log = io.StringIO()
    os.chdir(work)  # nbgrader reads the assignment folder and ./nbgrader_config.py from where it runs
    try:
        with contextlib.redirect_stderr(log), contextlib.redirect_stdout(log):
            app = SubmitApp.instance()  # its logger is made here, writing to the redirected stderr
            app.initialize(argv)
            app.start()
        return 0, log.getvalue()
    except SystemExit as e:  # nbgrader's `fail` exits
        return (e.code if isinstance(e.code, int) else 1) or 0, log.getvalue()
    except Exception as e:  # noqa: BLE001 - a bug in the exchange is this submission's error, not the storm's
        return 1, f"{log.getvalue()}{type(e).__name__}: {e}"
    finally:
        SubmitApp.clear_instance()  # the next submission configures a fresh one (a forged time, say)


def _submit(plan: dict, kind: str, work: Path, forge: str | None = None) -> dict:
    _answer(work / plan["part"] / f"{plan['notebook']}.ipynb", plan["answers"][kind])
    argv = [plan["part"]]
    if forge:  # the student's own process writes the claimed time (name and timestamp.txt): nbgrader#1104
        argv.append(f"--Exchange.timestamp_format={forge}")
    t0 = time.time()
    rc, log = nbgrader_submit(argv, work)
    t1 = time.time()
    return {"kind": kind, "start": t0, "end": t1, "rc": rc, "forged": forge,
            "error": "" if rc == 0 else log[-2000:]}


def main(plan_path: str) -> int:
    plan = json.loads(Path(plan_path).read_text())
    home = Path(os.environ["HOME"])
    work = home / "work"
    out: dict = {"id": plan["id"], "submits": [], "error": ""}
    go = os.open(plan["go"], os.O_RDONLY)
    late = os.open(plan["late_go"], os.O_RDONLY) if plan["late"] else None
    said = set()
    try:
        f = subprocess.run([plan["nbgrader"], "fetch_assignment", plan["part"]], cwd=work, capture_output=True, text=True)
        if f.returncode != 0:
            raise RuntimeError(f"nbgrader fetch_assignment exited {f.returncode}: {(f.stderr or f.stdout)[-2000:]}")
        _say(plan["ready"], f"ready {plan['id']}")
        said.add("ready")
        _wait(go)
        for kind in plan["on_time"]:
            out["submits"].append(_submit(plan, kind, work))
        _say(plan["ready"], f"done {plan['id']}")
        said.add("done")
        if late is not None:
            _wait(late)
            out["submits"].append({**_submit(plan, plan["late"], work, plan.get("forge")), "late": True})
    except Exception as e:  # noqa: BLE001 - reported to the storm, which names the student
        out["error"] = f"{type(e).__name__}: {e}"
    finally:
        (home / "storm-result.json").write_text(json.dumps(out))
        for what in ("ready", "done"):
            if what not in said:
                _say(plan["ready"], f"{what} {plan['id']}")
        _say(plan["ready"], f"exit {plan['id']}")
    return 0 if not out["error"] and all(s["rc"] == 0 for s in out["submits"]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
