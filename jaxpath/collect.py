"""`jaxpath collect ZIP PART --roster ROSTER.csv`: put an LMS download (one zip for the whole class) into
nbgrader's `submitted/<student>/<part>/`, and report every file it could not place.

File names follow Canvas's download format, `<name>[_LATE]_<user id>_<submission id>_<original name>`, where
Canvas may add `-1`, `-2`, ... to resubmitted files. The roster maps the LMS user id (or the name key) to
the course's student id: a CSV with columns `student_id` and `lms_id` (and optionally `name`).
"""
from __future__ import annotations

import csv
import datetime as dt
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .grade.record import write_atomic

CANVAS = re.compile(r"^(?P<name>[a-z0-9]+?)(?:_LATE)?_(?P<uid>\d+)_(?P<sid>\d+)_(?P<file>.+)$", re.IGNORECASE)
RESUBMIT = re.compile(r"^(?P<stem>.+?)-\d+$")
MAX_FILE = 100 * 1024 * 1024


@dataclass
class CollectReport:
    placed: list[tuple[str, str]] = field(default_factory=list)
    """(student id, path under submitted/) for every file placed."""
    unplaced: list[tuple[str, str]] = field(default_factory=list)
    """(zip entry, why) for every file that was not placed."""


def read_roster(path: Path) -> dict[str, str]:
    """LMS id or name key -> student id."""
    out = {}
    with open(path, newline="", encoding="utf-8-sig") as f:
        for row in csv.DictReader(f):
            sid = (row.get("student_id") or "").strip()
            if not sid:
                continue
            for key in ("lms_id", "name"):
                if (row.get(key) or "").strip():
                    out[row[key].strip().lower()] = sid
    return out


def _notebook_name(original: str, known: set[str]) -> str | None:
    stem = PurePosixPath(original).stem
    if stem in known:
        return stem
    m = RESUBMIT.match(stem)
    if m and m.group("stem") in known:
        return m.group("stem")
    return None


def collect(zip_path: Path, part: str, roster: Path, course_root: Path, *, submitted_dir: str = "submitted",
            source_dir: str = "source", release_dir: str = "release") -> CollectReport:
    report = CollectReport()
    who = read_roster(roster)
    known = {p.stem for d in (course_root / source_dir / part, course_root / release_dir / part) if d.is_dir()
             for p in d.glob("*.ipynb")}
    chosen: dict[tuple[str, str], tuple[zipfile.ZipInfo, dt.datetime]] = {}
    extra: list[tuple[str, str, zipfile.ZipInfo]] = []
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            name = PurePosixPath(info.filename).name
            if name.startswith(".") or "__MACOSX" in info.filename:
                continue
            m = CANVAS.match(name)
            if not m:
                report.unplaced.append((info.filename, "name is not <name>_<user id>_<submission id>_<file>"))
                continue
            student = who.get(m.group("uid")) or who.get(m.group("name").lower())
            if student is None:
                report.unplaced.append((info.filename, f"LMS user {m.group('uid')} ({m.group('name')}) is not in the roster"))
                continue
            if info.file_size > MAX_FILE:
                report.unplaced.append((info.filename, f"larger than {MAX_FILE // 2**20} MB"))
                continue
            when = dt.datetime(*info.date_time)
            original = m.group("file")
            if original.endswith(".ipynb"):
                nb = _notebook_name(original, known)
                if nb is None:
                    report.unplaced.append((info.filename, f"{original} is not a notebook of {part} "
                                                           f"({', '.join(sorted(known)) or 'none known'})"))
                    continue
                key = (student, nb)
                if key in chosen:
                    older, newer = sorted([chosen[key], (info, when)], key=lambda x: x[1])
                    report.unplaced.append((older[0].filename, f"an older submission of {nb}.ipynb by {student}; "
                                                               f"kept {newer[0].filename}"))
                    chosen[key] = newer
                else:
                    chosen[key] = (info, when)
            else:
                extra.append((student, original, info))
        students_times: dict[str, dt.datetime] = {}
        for (student, nb), (info, when) in sorted(chosen.items()):
            dest = course_root / submitted_dir / student / part / f"{nb}.ipynb"
            write_atomic(dest, zf.read(info))
            report.placed.append((student, str(dest.relative_to(course_root / submitted_dir))))
            students_times[student] = max(when, students_times.get(student, when))
        for student, original, info in extra:
            safe = PurePosixPath(original).name
            dest = course_root / submitted_dir / student / part / safe
            write_atomic(dest, zf.read(info))
            report.placed.append((student, str(dest.relative_to(course_root / submitted_dir))))
        for student, when in students_times.items():
            # nbgrader's timestamp format; the zip keeps local time without a zone: say UTC explicitly
            write_atomic(course_root / submitted_dir / student / part / "timestamp.txt",
                         when.strftime("%Y-%m-%d %H:%M:%S.%f UTC").encode())
    return report
