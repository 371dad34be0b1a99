"""`jaxpath extend PART STUDENT --hours N` (or `--days N`, or `--until WHEN`): grant a student more time on a part,
in nbgrader's own field.

nbgrader keeps a per-submission `extension` (its late penalty is computed from the due date plus it) but has no
command to set it. The extension is recorded on the student's submission of the part; one that has not submitted
yet gets an empty submission record, which nbgrader's autograde and `jaxpath grade` fill in when the work comes.
The next `jaxpath grade` regrades the student's notebooks of the part, so the late penalty follows."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from ..config import Config
from ..errors import JaxpathError
from ..gradebooks import prepare_nbgrader


@dataclass
class Extension:
    part: str
    student: str
    extension: dt.timedelta | None
    due: dt.datetime | None
    """The student's own due date with the extension (None when the part has no due date)."""


def extend(config: Config, part: str, student: str, *, hours: float = 0, days: float = 0,
           until: dt.datetime | None = None, db_url: str | None = None) -> Extension:
    """Record the extension: `hours` + `days`, or up to `until` (an aware time, e.g. from
    jaxpath.manifest.parse_due: the student's own due date). Neither: the extension is removed."""
    from nbgrader.api import Gradebook, MissingEntry

    from ..manifest import due_utc

    if hours < 0 or days < 0:
        raise JaxpathError("an extension is a length of time, not negative")
    if until is not None and (hours or days):
        raise JaxpathError("give the extension as a length (--hours, --days) or as a time (--until), not both")
    if until is not None and until.tzinfo is None:
        raise JaxpathError("--until needs a time zone, like \"2026-12-10 17:00 Europe/Berlin\"")
    prepare_nbgrader()
    coursedir = config.coursedir(db_url)
    delta = dt.timedelta(hours=hours, days=days) or None
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        try:
            assignment = gb.find_assignment(part)
        except MissingEntry:
            raise JaxpathError(f"no assignment {part!r} in the gradebook: run `jaxpath grade {part}` or "
                               f"`nbgrader db assignment add {part}` first") from None
        try:
            gb.find_student(student)
        except MissingEntry:
            raise JaxpathError(f"no student {student!r} in the gradebook (`nbgrader db student add {student}`)") from None
        if until is not None:
            if assignment.duedate is None:
                raise JaxpathError(f"{part} has no due date to extend from: give --hours or --days")
            delta = due_utc(until) - assignment.duedate
            if delta <= dt.timedelta(0):
                raise JaxpathError(f"{until:%Y-%m-%d %H:%M %Z} is not after the due date of {part} "
                                   f"({assignment.duedate:%Y-%m-%d %H:%M} UTC)")
        try:
            sub = gb.find_submission(part, student)
        except MissingEntry:
            sub = gb.add_submission(part, student)
        sub.extension = delta
        gb.db.commit()
        due = assignment.duedate + delta if assignment.duedate and delta else assignment.duedate
    return Extension(part, student, delta, due)
