"""`jaxpath build`: validate every chapter, then release, appendix and learning path.

A chapter whose committed proof is current is run reference-only, one whose proof is stale or missing is proven in
full and its new proof written into proofs/ (`validate(reuse=True)`); build/build.json says which was which.
Nothing is released from a chapter that failed validation: a failed build leaves release/ as it was."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

from ..config import Config
from ..files import write_atomic
from ..problems import Problem
from .appendix import AppendixReport, appendix
from .path import write_learning_path
from .release import ReleaseReport, release
from .validate import ChapterReport, validate


@dataclass
class BuildReport:
    course_problems: list[Problem] = field(default_factory=list)
    chapters: list[ChapterReport] = field(default_factory=list)
    release: ReleaseReport | None = None
    appendix: AppendixReport | None = None
    learning_path: str | None = None

    @property
    def ok(self) -> bool:
        return (not self.course_problems and all(r.ok for r in self.chapters)
                and self.release is not None and self.release.ok
                and self.appendix is not None and not self.appendix.problems)


def build(config: Config, *, jobs: int = 1, on_step: Callable[[str], None] | None = None,
          on_report: Callable[[ChapterReport], None] | None = None) -> BuildReport:
    step = on_step or (lambda s: None)
    report = BuildReport()
    step("validate")
    report.course_problems, report.chapters = validate(config, jobs=jobs, reuse=True, on_report=on_report)
    write_atomic(config.build / "build.json", json.dumps({"chapters": [
        {"chapter": r.id, "proof": "reused" if r.reused else "proved", "ok": r.ok, "seconds": round(r.seconds, 1)}
        for r in report.chapters]}, indent=1) + "\n")
    if report.course_problems or not all(r.ok for r in report.chapters):
        return report
    step("release")
    report.release = release(config)
    if not report.release.ok:
        return report
    step("appendix")
    report.appendix = appendix(config)
    step("path")
    path, _ = write_learning_path(config)
    report.learning_path = str(path.relative_to(config.root))
    return report
