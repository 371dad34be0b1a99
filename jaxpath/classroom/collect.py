"""`jaxpath collect ZIP PART --roster ROSTER.csv`: put an LMS download (one zip for the whole class) into
nbgrader's `submitted/<student>/<part>/`, and report every file it could not place.

Who a file belongs to is read from, in this order:

- its name, in Canvas's download format `<name>[_LATE]_<user id>_<submission id>_<original name>` (Canvas
  adds `-1`, `-2`, ... to resubmitted files), at any depth of the zip (a re-zipped download folder);
- the folder it is in, in Moodle's format `<Full Name>_<participant id>_assignsubmission_file_`;
- a folder named after a student id, LMS id or name of the roster (`ada/01_demo.ipynb`, `class/ada/...`).

The roster maps the LMS user id (or the name) to the course's student id: a CSV with columns `student_id`
and `lms_id` (and optionally `name`). When a student has several files for one notebook (resubmissions),
the newest (the zip's time stamp) is kept and every one of them is reported. A zip that cannot be read, or
one with a corrupt member, stops the collection before anything is written.
"""
from __future__ import annotations

import csv
import datetime as dt
import re
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..errors import JaxpathError
from ..files import write_atomic

CANVAS = re.compile(r"^(?P<name>[a-z0-9]+?)(?P<late>_LATE)?_(?P<uid>\d+)_(?P<sid>\d+)_(?P<file>.+)$", re.IGNORECASE)
MOODLE = re.compile(r"^(?P<name>.+?)_(?P<uid>\d+)_assign(?:submission|feedback)_[a-z]+_?$", re.IGNORECASE)
RESUBMIT = re.compile(r"^(?P<stem>.+?)-\d+$")
MAX_FILE = 100 * 1024 * 1024


class CollectError(JaxpathError):
    """The zip cannot be collected at all (unreadable, corrupt, no roster): nothing was written."""


@dataclass
class Duplicate:
    student: str
    file: str
    """The file's name under submitted/<student>/<part>/."""
    kept: str
    """The zip entry placed (the newest)."""
    dropped: list[str]
    """The older zip entries, not placed."""


@dataclass
class CollectReport:
    placed: list[tuple[str, str]] = field(default_factory=list)
    """(student id, path under submitted/) for every file placed."""
    unplaced: list[tuple[str, str]] = field(default_factory=list)
    """(zip entry, why) for every file that was not placed."""
    duplicates: list[Duplicate] = field(default_factory=list)
    """Students with several files for one name: the newest was placed, the others are also in `unplaced`."""
    zone: str = "UTC"
    """The time zone the zip's times were read in (a zip stores local time without a zone)."""
    lms_late: list[str] = field(default_factory=list)
    """Students whose placed submission Canvas marked late (`_LATE` in its name)."""
    disagree: list[str] = field(default_factory=list)
    """Where Canvas's late marker and the time stamp against the due date disagree (a wrong --zone?)."""


@dataclass
class Roster:
    by_lms: dict[str, str]
    """LMS user id -> student id."""
    by_name: dict[str, str]
    """Name key (lowercase letters and digits only) -> student id."""
    students: set[str]
    rows: dict[str, dict] = field(default_factory=dict)
    """Student id -> the roster's row (its columns as written, stripped): what the Canvas export maps through."""

    def lookup(self, uid: str | None, name: str | None) -> str | None:
        if uid and uid in self.by_lms:
            return self.by_lms[uid]
        key = name_key(name or "")
        return self.by_name.get(key) if key else None


def name_key(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.lower())


def read_roster(path: Path) -> Roster:
    try:
        f = open(path, newline="", encoding="utf-8-sig")
    except OSError as e:
        raise CollectError(f"{path}: cannot read the roster ({e.strerror or e})") from None
    roster = Roster({}, {}, set())
    with f:
        reader = csv.DictReader(f)
        if "student_id" not in (reader.fieldnames or []):
            raise CollectError(f"{path}: the roster needs a `student_id` column (and `lms_id`, optionally `name`, "
                               "`sis_user_id`, `sis_login_id`, `section`); "
                               f"found {', '.join(reader.fieldnames or []) or 'no header'}")
        for row in reader:
            sid = (row.get("student_id") or "").strip()
            if not sid:
                continue
            roster.students.add(sid)
            roster.rows[sid] = {k: (v or "").strip() for k, v in row.items() if k}
            if (row.get("lms_id") or "").strip():
                roster.by_lms[row["lms_id"].strip()] = sid
            if name_key(row.get("name") or ""):
                roster.by_name[name_key(row["name"])] = sid
    return roster


def _notebook_name(original: str, known: set[str]) -> str | None:
    stem = PurePosixPath(original).stem
    if stem in known:
        return stem
    m = RESUBMIT.match(stem)
    if m and m.group("stem") in known:
        return m.group("stem")
    return None


def _owner(entry: str, roster: Roster) -> tuple[str | None, str, str]:
    """(student id or None, original file name, why not) for one zip entry."""
    path = PurePosixPath(entry)
    m = CANVAS.match(path.name)
    if m:
        student = roster.lookup(m.group("uid"), m.group("name"))
        why = "" if student else f"LMS user {m.group('uid')} ({m.group('name')}) is not in the roster"
        return student, m.group("file"), why
    for folder in reversed(path.parts[:-1]):  # the innermost folder that names a student wins
        m = MOODLE.match(folder)
        if m:
            student = roster.lookup(m.group("uid"), m.group("name"))
            why = "" if student else f"LMS user {m.group('uid')} ({m.group('name')}) is not in the roster"
            return student, path.name, why
        if folder in roster.students:
            return folder, path.name, ""
        student = roster.lookup(folder, folder)
        if student:
            return student, path.name, ""
    if len(path.parts) > 1:
        return None, path.name, ("neither its name (<name>_<user id>_<submission id>_<file>) nor a folder above it "
                                 "names a student of the roster")
    return None, path.name, "name is not <name>_<user id>_<submission id>_<file>"


def _read_all(zip_path: Path) -> tuple[list[zipfile.ZipInfo], dict[str, bytes]]:
    """Every member's bytes, CRC-checked, before anything is written."""
    try:
        zf = zipfile.ZipFile(zip_path)
    except FileNotFoundError:
        raise CollectError(f"{zip_path}: no such file") from None
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise CollectError(f"{zip_path}: not a readable zip file ({e}); nothing was placed") from None
    data: dict[str, bytes] = {}
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        for info in infos:
            if info.file_size > MAX_FILE:
                continue  # reported as too large, never read
            try:
                data[info.filename] = zf.read(info)
            except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError, RuntimeError) as e:
                raise CollectError(f"{zip_path}: member {info.filename} is corrupt or unreadable ({e}); "
                                   "nothing was placed") from None
    return infos, data


def collect(zip_path: Path, part: str, roster: Path, course_root: Path, *, submitted_dir: str = "submitted",
            source_dir: str = "source", release_dir: str = "release", zone: str = "UTC",
            due: dt.datetime | None = None) -> CollectReport:
    """Place the notebooks (and other files) of an LMS zip into submitted/<student>/<part>/.

    `zone` (an IANA name, e.g. "America/New_York") is the time zone of the zip's times: a zip keeps the local
    time of the machine that wrote it, without a zone, and each student's timestamp.txt is written in UTC from it.
    `due` (UTC, naive, as nbgrader's gradebook keeps it) lets Canvas's own `_LATE` marker be compared with it.

    Raises CollectError, having written nothing, when the zip or the roster cannot be read or the zone is unknown."""
    zip_path, course_root = Path(zip_path), Path(course_root)
    tz = _zone(zone)
    report = CollectReport(zone=zone)
    who = read_roster(Path(roster))
    known = {p.stem for d in (course_root / source_dir / part, course_root / release_dir / part) if d.is_dir()
             for p in d.glob("*.ipynb")}
    infos, data = _read_all(zip_path)
    # (student, file name under submitted/<student>/<part>/) -> every (zip entry, time) offering it
    offers: dict[tuple[str, str], list[tuple[zipfile.ZipInfo, dt.datetime]]] = {}
    for info in infos:
        name = PurePosixPath(info.filename).name
        if name.startswith(".") or "__MACOSX" in PurePosixPath(info.filename).parts:
            continue
        student, original, why = _owner(info.filename, who)
        if student is None:
            report.unplaced.append((info.filename, why))
            continue
        if info.file_size > MAX_FILE:
            report.unplaced.append((info.filename, f"larger than {MAX_FILE // 2**20} MB"))
            continue
        original = PurePosixPath(original).name
        if original.endswith(".ipynb"):
            nb = _notebook_name(original, known)
            if nb is None:
                report.unplaced.append((info.filename, f"{original} is not a notebook of {part} "
                                                       f"({', '.join(sorted(known)) or 'none known'})"))
                continue
            original = f"{nb}.ipynb"
        elif original == "timestamp.txt":
            continue  # written from the zip's times below
        when = dt.datetime(*info.date_time, tzinfo=tz).astimezone(dt.timezone.utc).replace(tzinfo=None)
        offers.setdefault((student, original), []).append((info, when))

    plan: list[tuple[str, Path, bytes]] = []
    students_times: dict[str, dt.datetime] = {}
    for (student, fname), options in sorted(offers.items()):
        options.sort(key=lambda o: (o[1], o[0].filename))
        (info, when), older = options[-1], options[:-1]
        if older:
            dropped = [o[0].filename for o in older]
            report.duplicates.append(Duplicate(student, fname, info.filename, dropped))
            for o in older:
                report.unplaced.append((o[0].filename, f"an older submission of {fname} by {student} "
                                                       f"({o[1]:%Y-%m-%d %H:%M}); kept {info.filename} "
                                                       f"({when:%Y-%m-%d %H:%M})"))
        plan.append((student, course_root / submitted_dir / student / part / fname, data[info.filename]))
        students_times[student] = max(when, students_times.get(student, when))
        m = CANVAS.match(PurePosixPath(info.filename).name)
        if m and m.group("late") and fname.endswith(".ipynb") and student not in report.lms_late:
            report.lms_late.append(student)
    for student, dest, content in plan:
        write_atomic(dest, content)
        report.placed.append((student, str(dest.relative_to(course_root / submitted_dir))))
    for student, when in students_times.items():
        # nbgrader's timestamp format, in UTC (converted from the zip's local times in `zone`)
        write_atomic(course_root / submitted_dir / student / part / "timestamp.txt",
                     when.strftime("%Y-%m-%d %H:%M:%S.%f UTC").encode())
        _compare_late(report, student, when, due)
    return report


def _zone(zone: str):
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise CollectError(f"unknown time zone {zone!r} (an IANA name such as UTC or Europe/Berlin); nothing "
                           "was placed") from None


def _compare_late(report: CollectReport, student: str, when: dt.datetime, due: dt.datetime | None) -> None:
    """Canvas's late marker against the time stamp and the due date: a disagreement is worth a look."""
    if due is not None and (student in report.lms_late) != (when > due):
        report.disagree.append(
            f"{student}: Canvas marks the submission {'late' if student in report.lms_late else 'on time'}, "
            f"but its time {when:%Y-%m-%d %H:%M} UTC (read in {report.zone}) is "
            f"{'after' if when > due else 'before'} the due date {due:%Y-%m-%d %H:%M} UTC")
