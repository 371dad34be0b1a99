"""`python tests/grade_as.py ROOT PART OUT.json LEVEL [limits as JSON] [workers] [students,...]`: grade ROOT's PART
(those students' submissions, or all) at isolation level LEVEL and write the statuses as JSON to OUT.json. The
tests of the rootless level run it as an ordinary account (tests/as_user.py), so the whole grader, not only the
kernels, runs without root."""
from __future__ import annotations

import dataclasses
import json
import logging
import sys
import time
from pathlib import Path

from jaxpath import Config
from jaxpath.grade import Limits, grade


def main(argv: list[str]) -> int:
    root, part, out, level = Path(argv[0]), argv[1], Path(argv[2]), argv[3]
    limits = Limits(**json.loads(argv[4])) if len(argv) > 4 else Limits()
    workers = int(argv[5]) if len(argv) > 5 else 2
    students = argv[6].split(",") if len(argv) > 6 else None
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")  # and the batch's isolation line
    t0 = time.perf_counter()
    report = grade(Config.load(root), part, students=students, workers=workers, limits=limits, isolation=level,
                   force=True)
    rows = [{k: v for k, v in dataclasses.asdict(s).items() if k != "graded_at"} for s in report.results]
    out.write_text(json.dumps({"isolation": report.isolation, "seconds": time.perf_counter() - t0, "results": rows}))
    return 0


def run_as(user, root: Path, part: str, level: str, limits: Limits | None = None, workers: int = 2,
           env: dict[str, str] | None = None, students: list[str] | None = None):
    """Run this script as `user` (an ordinary account, tests/as_user.py) on ROOT's PART: (the finished process,
    its JSON output or None when it failed). The account must own ROOT (`user.give(root)`)."""
    out = user.home / "statuses.json"
    out.unlink(missing_ok=True)
    argv = [sys.executable, str(Path(__file__).resolve()), str(root), part, str(out), level,
            json.dumps(dataclasses.asdict(limits or Limits())), str(workers), *([",".join(students)] if students else [])]
    r = user.run(argv, env={"PYTHONPATH": str(Path(__file__).resolve().parent), **(env or {})}, cwd=root)
    return r, (json.loads(out.read_text()) if r.returncode == 0 else None)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

