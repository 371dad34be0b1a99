"""The coordinator's writes: autograded notebooks, nbgrader's gradebook, and one status row per notebook.

Only the coordinator calls these, each through `gradebook_call` (a lock held by another grader or a full disk
ends in one clear sentence). Each notebook is recorded in an order that survives a kill at any
moment: the autograded notebook is written to a temporary file and renamed into place, then nbgrader's
SaveAutoGrades stores the scores, and the status row (with the content hash that makes reruns skip it)
is written last. A kill before the status row means the next run grades that notebook again and
overwrites what is there: nothing is half-written and nothing is counted twice.
"""
from __future__ import annotations

import datetime as dt
import importlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from ..errors import GradeError
from ..files import inside, write_into

log = logging.getLogger("jaxpath.grade")

metadata = sa.MetaData()
status_table = sa.Table(
    "jaxpath_grading", metadata,
    sa.Column("assignment", sa.String(128), primary_key=True),
    sa.Column("student", sa.String(128), primary_key=True),
    sa.Column("notebook", sa.String(256), primary_key=True),
    sa.Column("content_hash", sa.String(64), nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("reason", sa.Text, nullable=False, default=""),
    sa.Column("score", sa.Float),
    sa.Column("max_score", sa.Float),
    sa.Column("seconds", sa.Float),
    sa.Column("graded_at", sa.DateTime),
    sa.Column("isolation", sa.String(64)),
)
released_points_table = sa.Table(
    "jaxpath_released_points", metadata,
    sa.Column("assignment", sa.String(128), primary_key=True),
    sa.Column("notebook", sa.String(256), primary_key=True),
    sa.Column("grade_id", sa.String(256), primary_key=True),
    sa.Column("points", sa.Float, primary_key=True),
)
"""Every point value a grade cell has had in the gradebook while jaxpath graded it: a submission that
carries one of them comes from an earlier release; any other value was typed in by hand."""
ADDED_COLUMNS = {"isolation": "VARCHAR(64)"}
"""Columns added after the table's first release: added to an existing table when a store opens it."""
SCHEMA_LOCK = 0x6A6178706174  # "jaxpat": the PostgreSQL advisory lock held while a store sets up its tables

@dataclass
class Status:
    assignment: str
    student: str
    notebook: str
    content_hash: str
    status: str
    reason: str = ""
    score: float | None = None
    max_score: float | None = None
    seconds: float | None = None
    graded_at: dt.datetime | None = None
    isolation: str | None = None
    """The isolation level the notebook ran at (`none`: without a sandbox; empty: not run, e.g. missing)."""


class StatusStore:
    """Grading status rows, kept in the gradebook's own database (SQLite or PostgreSQL)."""

    def __init__(self, db_url: str):
        self.engine = sa.create_engine(db_url)
        self._ensure_schema()

    def _ensure_schema(self) -> None:
        """The tables and columns this jaxpath writes, created where missing, by one grader at a time: several
        graders may open one fresh gradebook at the same moment (a shared PostgreSQL server), and two plain
        CREATE TABLEs, even with IF NOT EXISTS, can both pass the check and one then fails on PostgreSQL's
        catalog (pg_type's unique index). PostgreSQL: the whole setup is one transaction holding an advisory
        lock; SQLite: CREATE TABLE IF NOT EXISTS is atomic there (one writer at a time), and a column another
        grader added meanwhile is taken as added."""
        try:
            with self.engine.begin() as c:
                if c.dialect.name == "postgresql":
                    c.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK})
                for table in metadata.sorted_tables:
                    c.execute(sa.schema.CreateTable(table, if_not_exists=True))
                have = {col["name"] for col in sa.inspect(c).get_columns(status_table.name)}
                for name, sql_type in ADDED_COLUMNS.items():
                    if name not in have:  # a gradebook graded by an older jaxpath
                        c.execute(sa.text(f"ALTER TABLE {status_table.name} ADD COLUMN {name} {sql_type}"))
        except sa.exc.OperationalError:  # SQLite: another grader added a column between the look and the ALTER
            if not set(ADDED_COLUMNS) <= {col["name"] for col in sa.inspect(self.engine).get_columns(status_table.name)}:
                raise

    @classmethod
    def existing(cls, db_url: str) -> "StatusStore | None":
        """The store of a gradebook jaxpath has graded into, or None (one only stock nbgrader graded): a reader
        such as `jaxpath feedback` then adds no table to it."""
        engine = sa.create_engine(db_url)
        try:
            if not sa.inspect(engine).has_table(status_table.name):
                return None
        finally:
            engine.dispose()
        return cls(db_url)

    def get(self, assignment: str, student: str, notebook: str) -> Status | None:
        t = status_table
        with self.engine.connect() as c:
            row = c.execute(sa.select(t).where(t.c.assignment == assignment, t.c.student == student,
                                               t.c.notebook == notebook)).mappings().first()
        return Status(**row) if row else None

    def all(self, assignment: str) -> list[Status]:
        t = status_table
        with self.engine.connect() as c:
            rows = c.execute(sa.select(t).where(t.c.assignment == assignment)
                             .order_by(t.c.student, t.c.notebook)).mappings().all()
        return [Status(**r) for r in rows]

    def put(self, s: Status) -> None:
        t = status_table
        s.graded_at = s.graded_at or dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        values = {k: getattr(s, k) for k in ("assignment", "student", "notebook", "content_hash", "status",
                                              "reason", "score", "max_score", "seconds", "graded_at",
                                              "isolation")}
        with self.engine.begin() as c:
            c.execute(sa.delete(t).where(t.c.assignment == s.assignment, t.c.student == s.student,
                                         t.c.notebook == s.notebook))
            c.execute(sa.insert(t).values(**values))

    def remember_points(self, assignment: str, points: dict[tuple[str, str], float]) -> None:
        """Adds these (notebook, grade id) -> points to the values the part's cells have had."""
        t = released_points_table
        known = self.released_points(assignment)
        new = [{"assignment": assignment, "notebook": nb, "grade_id": gid, "points": float(p)}
               for (nb, gid), p in sorted(points.items()) if float(p) not in known.get((nb, gid), set())]
        if new:
            self._insert_new(t, new)

    def _insert_new(self, table: sa.Table, rows: list[dict]) -> None:
        """Insert rows, skipping any another grader sharing the gradebook inserted since it was read: two batches
        that remember the same points at once must both go on (PostgreSQL raised a unique violation)."""
        dialect = self.engine.dialect.name
        if dialect in ("postgresql", "sqlite"):
            insert = importlib.import_module(f"sqlalchemy.dialects.{dialect}").insert
            with self.engine.begin() as c:
                c.execute(insert(table).on_conflict_do_nothing(), rows)
            return
        for row in rows:  # another database: one row at a time, a duplicate skipped
            try:
                with self.engine.begin() as c:
                    c.execute(sa.insert(table), [row])
            except sa.exc.IntegrityError:
                pass

    def released_points(self, assignment: str) -> dict[tuple[str, str], set[float]]:
        """(notebook, grade id) -> every point value remembered for that cell."""
        t = released_points_table
        with self.engine.connect() as c:
            rows = c.execute(sa.select(t).where(t.c.assignment == assignment)).mappings().all()
        out: dict[tuple[str, str], set[float]] = {}
        for r in rows:
            out.setdefault((r["notebook"], r["grade_id"]), set()).add(float(r["points"]))
        return out

    def dispose(self) -> None:
        self.engine.dispose()


def copy_files(files: dict[str, bytes], dest: Path) -> None:
    """The files under dest, each written atomically; nothing outside dest is written."""
    write_into(dest, files, atomic=True)


def remove_files(names, dest: Path) -> None:
    """Remove files under dest (a notebook deleted them in its folder); nothing outside dest is touched."""
    for rel in names:
        target = dest / rel
        if inside(dest, rel) is not None and (target.is_file() or target.is_symlink()):
            target.unlink()


def gradebook_call(fn, *args, lock_timeout: float, what: str):
    """Call fn(*args), waiting while another process holds the gradebook locked (SQLite) and turning a
    full disk into one clear sentence. Nothing half-written is left: each write is atomic."""
    import sqlalchemy.exc

    deadline = time.monotonic() + lock_timeout
    delay = 0.5
    while True:
        try:
            return fn(*args)
        except sqlalchemy.exc.OperationalError as e:
            text = str(e.orig if getattr(e, "orig", None) is not None else e)
            if "locked" in text or "busy" in text:
                if time.monotonic() < deadline:
                    log.warning("the gradebook is locked (%s): waiting", what)
                    time.sleep(delay)
                    delay = min(delay * 2, 5.0)
                    continue
                raise GradeError(f"the gradebook is locked by another process; waited {lock_timeout:g} s while "
                                 f"{what} ({text.strip()}). Nothing recorded is lost: stop the other process and "
                                 "run the same command again") from e
            if "full" in text:
                raise GradeError(f"the disk is full: the gradebook could not be written while {what} ({text.strip()}). "
                                 "Nothing recorded is lost: free space and run the same command again") from e
            raise
        except OSError as e:
            import errno

            if e.errno in (errno.ENOSPC, errno.EDQUOT):
                raise GradeError(f"the disk is full ({e.filename or 'a file'}: {e.strerror}) while {what}. Nothing "
                                 "recorded is lost and no file is half-written: free space and run the same command "
                                 "again") from e
            raise
