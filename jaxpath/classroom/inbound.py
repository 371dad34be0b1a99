"""Collect from nbgrader's exchange (its `inbound/` folder) into `submitted/`, safe to run while students submit
and to kill at any moment: jaxpath's own collect, in place of `nbgrader collect` (docs/storm.md says why).

What it does that nbgrader's collect does not:

- **Only whole submissions.** `nbgrader submit` copies into its final name in `inbound/` and makes that folder
  mode 0777 as its very last step; an entry not yet 0777 (a submit under way, or one that died half-way) is
  left for a later round and reported, never copied (nbgrader#919: a collect during a submit).
- **A time the student cannot forge.** An entry's `timestamp.txt` and its name are written by the student's own
  process (nbgrader#1104). jaxpath trusts the newest *ctime* among the entry and its files instead: the kernel
  sets a ctime to the current time on every change (a write, a chmod, a rename) and no unprivileged call can set
  it back, so a submission can look later than it was, never earlier. That time is what `submitted/.../
  timestamp.txt` says (nbgrader's format, UTC), so the gradebook's lateness comes from it.
- **The instructor's choice of which submission counts** (nbgrader#1171, #1320): `rule="latest"` (nbgrader's
  collect: the newest entry) or `rule="before-due"` (the newest entry made by the due date; the newest late one
  only when none was on time).
- **Atomic and resumable.** Each submission is copied into a private temporary folder beside its place and
  renamed into place; a killed collect leaves at most that temporary folder, which the next run removes. What
  was collected is remembered (`.jaxpath-entry` in the submission's folder): a rerun copies nothing twice.
"""
from __future__ import annotations

import datetime as dt
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import JaxpathError
from ..faults import checkpoint, readable

RULES = ("latest", "before-due")
MARK = ".jaxpath-entry"
"""In each collected submission's folder: the exchange entry it was copied from, and its trusted time."""
TMP = ".jaxpath-collecting-"
OLD = ".jaxpath-replaced-"
NBGRADER_TIME = "%Y-%m-%d %H:%M:%S.%f UTC"


class InboundError(JaxpathError):
    """The exchange cannot be read, or a submission cannot be put in place (the path is named)."""


@dataclass(frozen=True)
class Entry:
    """One submission in the exchange's inbound folder (`student+part+time+random`)."""
    path: Path
    student: str
    part: str
    claimed: str
    """What the entry's name and timestamp.txt say: the student's own claim, kept for the report only."""
    trusted: dt.datetime
    """The newest ctime of the entry and its files (UTC, naive): when it last changed."""
    complete: bool

    def late(self, due: dt.datetime | None) -> bool:
        return due is not None and self.trusted > due


@dataclass
class InboundReport:
    collected: list[Entry] = field(default_factory=list)
    """Copied into submitted/ by this run."""
    unchanged: list[str] = field(default_factory=list)
    """Students whose chosen entry was collected before (by an earlier run)."""
    incomplete: list[Path] = field(default_factory=list)
    """Entries still being written (or left half-written by a submit that died): not collected."""
    passed_over: list[Entry] = field(default_factory=list)
    """Entries not chosen: older ones, and late ones when an on-time one exists under the "before-due" rule."""
    forged: list[Entry] = field(default_factory=list)
    """Chosen entries whose own claim (timestamp.txt) says on time while they were made after the due date."""
    late: list[Entry] = field(default_factory=list)
    """Chosen entries made after the due date."""
    removed_leftovers: list[Path] = field(default_factory=list)


def _ctime(path: Path) -> float:
    newest = path.lstat().st_ctime
    for dirpath, dirnames, filenames in os.walk(path):
        for n in dirnames + filenames:
            newest = max(newest, os.lstat(os.path.join(dirpath, n)).st_ctime)
    return newest


def _utc(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).replace(tzinfo=None)


def read_entries(inbound: Path, part: str) -> list[Entry]:
    """Every entry of `part` in `inbound`, whole or not, oldest (trusted time) first."""
    try:
        names = sorted(os.listdir(inbound))
    except OSError as e:
        raise InboundError(f"{inbound}: cannot list the exchange's inbound folder ({e.strerror}); "
                           "collect as the course's owner or root") from e
    out = []
    for name in names:
        fields = name.split("+")
        if len(fields) < 3 or fields[1] != part:
            continue
        path = inbound / name
        try:
            mode = path.lstat().st_mode
            if not stat.S_ISDIR(mode):
                continue
            complete = stat.S_IMODE(mode) == 0o777 and (path / "submission_secret.txt").is_file()
            claimed = fields[2]
            ts = path / "timestamp.txt"
            if ts.is_file():
                claimed = ts.read_text(errors="replace").strip()[:64]
            out.append(Entry(path, fields[0], part, claimed, _utc(_ctime(path)), complete))
        except FileNotFoundError:
            continue  # removed while we looked (an instructor cleaning up)
    return sorted(out, key=lambda e: (e.trusted, e.path.name))


def choose(entries: list[Entry], rule: str, due: dt.datetime | None) -> Entry | None:
    """The entry that counts among one student's whole entries (oldest first), by `rule`."""
    if rule not in RULES:
        raise InboundError(f"unknown rule {rule!r}: one of {', '.join(RULES)}")
    if not entries:
        return None
    if rule == "before-due" and due is not None:
        on_time = [e for e in entries if not e.late(due)]
        if on_time:
            return on_time[-1]
    return entries[-1]


def _claimed_time(e: Entry) -> dt.datetime | None:
    for fmt in (NBGRADER_TIME, "%Y-%m-%d %H:%M:%S.%f %Z", "%Y-%m-%d %H:%M:%S.%f"):
        try:
            return dt.datetime.strptime(e.claimed, fmt)
        except ValueError:
            continue
    return None


def collected_entry(place: Path) -> str | None:
    """The exchange entry whose copy is at `place` (submitted/<student>/<part>), or None."""
    try:
        return (place / MARK).read_text().splitlines()[0]
    except (OSError, IndexError):
        return None


def _remove_leftovers(folder: Path, report: InboundReport) -> None:
    """Temporary folders of a collect that was killed (its process is gone) are removed."""
    for p in folder.glob(f"{TMP}*") if folder.is_dir() else ():
        pid = p.name.removeprefix(TMP).split("-")[0]
        if pid.isdigit() and int(pid) != os.getpid() and Path(f"/proc/{pid}").exists():
            continue  # another collect is at work on it
        shutil.rmtree(p, ignore_errors=True)
        report.removed_leftovers.append(p)
    for p in folder.glob(f"{OLD}*") if folder.is_dir() else ():
        shutil.rmtree(p, ignore_errors=True)
        report.removed_leftovers.append(p)


def _place(entry: Entry, place: Path) -> None:
    """Copy `entry` to `place` whole: into a temporary folder beside it, then renamed into place."""
    place.parent.mkdir(parents=True, exist_ok=True)
    tmp = place.parent / f"{TMP}{os.getpid()}-{place.name}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(mode=0o700)
    files = sorted(p for p in entry.path.rglob("*") if p.is_file() and not p.is_symlink())
    for i, src in enumerate(files):
        rel = src.relative_to(entry.path)
        if rel.as_posix() == "timestamp.txt":
            continue  # written below, from the trusted time
        dst = tmp / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(src, dst)
        except OSError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            raise InboundError(f"{src}: cannot copy it into {place} ({e.strerror})") from e
        if i == 0:
            checkpoint("collect-copying")  # a copy under way: the storm kills the collector here
    (tmp / "timestamp.txt").write_text(entry.trusted.strftime(NBGRADER_TIME))
    (tmp / MARK).write_text(f"{entry.path.name}\n{entry.trusted.isoformat()}\nclaimed {entry.claimed}\n")
    for dirpath, _, filenames in os.walk(tmp):
        for n in filenames:
            with open(os.path.join(dirpath, n), "rb") as f:
                os.fsync(f.fileno())
    os.chmod(tmp, 0o755)
    if place.exists():
        old = place.parent / f"{OLD}{os.getpid()}-{place.name}"
        os.rename(place, old)
        os.rename(tmp, place)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, place)
    fd = os.open(place.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def due_date(db_url: str, part: str) -> dt.datetime | None:
    """The part's due date in the gradebook at `db_url` (UTC, naive), or None (no gradebook, part or date)."""
    from nbgrader.api import Gradebook, MissingEntry

    if db_url.startswith("sqlite:///") and not Path(db_url.removeprefix("sqlite:///")).exists():
        return None  # no gradebook yet (opening one would make it)
    with Gradebook(db_url) as gb:
        try:
            return gb.find_assignment(part).duedate
        except MissingEntry:
            return None


def collect_inbound(exchange: Path, course_id: str, part: str, course_root: Path, *, rule: str = "before-due",
                    due: dt.datetime | None = None, submitted_dir: str = "submitted",
                    students: list[str] | None = None) -> InboundReport:
    """Collect `part` from `exchange/<course_id>/inbound/` into `course_root/<submitted_dir>/<student>/<part>/`:
    per student the entry `rule` chooses (see the module's text), copied whole, once; `due` is the part's due
    date (UTC, naive), None when it has none."""
    if rule not in RULES:
        raise InboundError(f"unknown rule {rule!r}: one of {', '.join(RULES)}")
    report = InboundReport()
    by_student: dict[str, list[Entry]] = {}
    for e in read_entries(exchange / course_id / "inbound", part):
        if students is not None and e.student not in students:
            continue
        if not e.complete:
            report.incomplete.append(e.path)
            continue
        by_student.setdefault(e.student, []).append(e)
    for student, entries in sorted(by_student.items()):
        chosen = choose(entries, rule, due)
        report.passed_over += [e for e in entries if e is not chosen]
        place = course_root / submitted_dir / student / part
        _remove_leftovers(place.parent, report)
        if chosen.late(due):
            report.late.append(chosen)
        claimed = _claimed_time(chosen)
        if claimed is not None and chosen.late(due) and claimed <= due:
            report.forged.append(chosen)
        if collected_entry(place) == chosen.path.name:
            report.unchanged.append(student)
            continue
        _place(chosen, place)
        report.collected.append(chosen)
    return report


IN_ATTRIB, IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE, IN_CLOEXEC = 0x4, 0x8, 0x80, 0x100, 0o2000000


def _watch(paths: list[Path]) -> int:
    """An inotify descriptor watching `paths` for new entries and changed modes (Linux)."""
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    fd = libc.inotify_init1(IN_CLOEXEC)
    if fd < 0:
        raise InboundError(f"inotify_init1 failed: {os.strerror(ctypes.get_errno())}")
    for p in paths:
        if libc.inotify_add_watch(fd, str(p).encode(), IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE) < 0:
            os.close(fd)
            raise InboundError(f"{p}: cannot watch it ({os.strerror(ctypes.get_errno())})")
    return fd


def collect_until(exchange: Path, course_id: str, part: str, course_root: Path, stop: Path, *, due_of,
                  on_round, rule: str = "before-due") -> None:
    """Collect in rounds while students submit: a round, then a wait for the next change in the inbound folder (a
    new entry, a mode changed: inotify, no polling), until the file `stop` exists; then one last round.
    `due_of()` gives the due date for each round (it may be set while this runs); `on_round(start, end, report)`."""
    import time

    inbound = exchange / course_id / "inbound"
    fd = _watch([inbound, stop.parent])
    try:
        while True:
            while readable([fd], 0):  # what happened so far, this round sees
                os.read(fd, 65536)
            # Only after the events are read: a stop file made before this line is seen now, one made after it
            # leaves an event that ends the wait below. (Read before, a stop file made in between had its event
            # read here and the loop waited for ever.)
            stopping = stop.exists()
            start = time.time()
            report = collect_inbound(exchange, course_id, part, course_root, rule=rule, due=due_of())
            on_round(start, time.time(), report)
            if stopping:
                return
            readable([fd])
    finally:
        os.close(fd)


__all__ = ["Entry", "InboundError", "InboundReport", "MARK", "RULES", "choose", "collect_inbound", "collect_until",
           "collected_entry", "due_date",
           "read_entries"]
