"""The hub's settings file (`deploy/hub.toml`): where the hub listens and keeps its state, and, per course, its
directory, the account that owns it and the people in each role.

    [hub]
    url = "http://127.0.0.1:8000"     # the address students open (the proxy's)
    state = "build/hub"               # the hub's database, the course directories, the exchange, jupyter config
    exchange = ""                     # default: <state>/exchange (a real server: /srv/nbgrader/exchange)

    [[course]]
    id = "jax-path"                   # nbgrader's course id: also the name of the course's formgrader service
    title = "The JAX path"
    directory = "."                   # copied once into <state>/courses/<id>/ (a git repository is cloned)
    account = "jxp-jax-path"          # owns that copy and runs the formgrader; its group is the course's staff
    instructors = ["jxp-instructor"]
    graders = ["jxp-grader"]
    students = ["jxp-student1", "jxp-student2"]

Relative paths are read from the folder that holds the settings file's folder (the repository for
`deploy/hub.toml`). Every mistake is reported with the key it is in, before anything is changed."""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from ...errors import JaxpathError

ACCOUNT = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
"""A name `useradd` takes on Debian (and JupyterHub's PAM authenticator keeps as is)."""
COURSE_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,40}$")
"""nbgrader's course id: a folder of the exchange, a JupyterHub service and group name (`nbgrader-<id>`)."""


class HubSettingsError(JaxpathError):
    """The settings file is missing, not TOML, or names something impossible: nothing was changed."""


@dataclass(frozen=True)
class Course:
    id: str
    title: str
    directory: Path
    """Where the course comes from (copied once into the hub's state)."""
    account: str
    instructors: tuple[str, ...]
    graders: tuple[str, ...]
    students: tuple[str, ...]

    @property
    def staff(self) -> tuple[str, ...]:
        """Instructors and graders: members of the account's group, of `formgrade-<id>`, with the formgrader."""
        return tuple(dict.fromkeys(self.instructors + self.graders))


@dataclass(frozen=True)
class HubSettings:
    path: Path
    url: str
    state: Path
    exchange: Path
    courses: tuple[Course, ...]

    @property
    def people(self) -> tuple[str, ...]:
        """Every account that logs in (staff and students of every course), in the order the file names them."""
        names: dict[str, None] = {}
        for c in self.courses:
            names.update(dict.fromkeys(c.staff + c.students))
        return tuple(names)

    @property
    def course_accounts(self) -> tuple[str, ...]:
        return tuple(c.account for c in self.courses)

    @property
    def port(self) -> int:
        return urlparse(self.url).port or 80

    def course(self, course_id: str) -> Course:
        for c in self.courses:
            if c.id == course_id:
                return c
        raise HubSettingsError(f"{self.path}: no course {course_id!r} (it has {[c.id for c in self.courses]})")

    def course_dir(self, course_id: str) -> Path:
        return self.state / "courses" / course_id


def _names(where: str, value, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise HubSettingsError(f"{where}: `{key}` is a list of account names")
    for v in value:
        if not ACCOUNT.match(v):
            raise HubSettingsError(f"{where}: `{key}` names {v!r}, which is not an account name "
                                   "(lowercase letters, digits, '-' and '_', at most 32, not starting with a digit)")
    return tuple(value)


def _path(base: Path, value, where: str) -> Path:
    if not isinstance(value, str) or not value:
        raise HubSettingsError(f"{where}: a path (a non-empty string)")
    p = Path(value)
    return (p if p.is_absolute() else base / p).resolve()


def _course(path: Path, base: Path, n: int, entry) -> Course:
    where = f"{path}: course {n}"
    if not isinstance(entry, dict):
        raise HubSettingsError(f"{where}: a [[course]] table")
    cid = entry.get("id")
    if not isinstance(cid, str) or not COURSE_ID.match(cid):
        raise HubSettingsError(f"{where}: `id` = {cid!r} is not a course id (lowercase letters, digits, '-', '_')")
    where = f"{path}: course {cid!r}"
    unknown = set(entry) - {"id", "title", "directory", "account", "instructors", "graders", "students"}
    if unknown:
        raise HubSettingsError(f"{where}: unknown key(s) {sorted(unknown)}")
    account = entry.get("account", "")
    if not isinstance(account, str) or not ACCOUNT.match(account):
        raise HubSettingsError(f"{where}: `account` = {account!r} is not an account name")
    directory = _path(base, entry.get("directory", ""), f"{where}: `directory`")
    if not (directory / "nbgrader_config.py").is_file():
        raise HubSettingsError(f"{where}: `directory` {directory} is not an nbgrader course (no nbgrader_config.py)")
    from ...config import nbgrader_config

    theirs = nbgrader_config(directory).CourseDirectory.get("course_id")
    if theirs and theirs != cid:
        raise HubSettingsError(f"{where}: its directory's nbgrader_config.py says course_id = {theirs!r}: "
                               "the two must be the same (nbgrader files the exchange and the formgrader under it)")
    course = Course(cid, str(entry.get("title", cid)), directory, account,
                    _names(where, entry.get("instructors"), "instructors"),
                    _names(where, entry.get("graders"), "graders"),
                    _names(where, entry.get("students"), "students"))
    if not course.staff:
        raise HubSettingsError(f"{where}: no instructors or graders: nobody could release or grade it")
    both = set(course.staff) & set(course.students)
    if both:
        raise HubSettingsError(f"{where}: {sorted(both)} both teach and take the course")
    if account in course.staff + course.students:
        raise HubSettingsError(f"{where}: its account {account!r} is a service account, not a person of the course")
    return course


def load_settings(path: str | Path) -> HubSettings:
    path = Path(path).resolve()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HubSettingsError(f"{path}: no such settings file") from None
    except tomllib.TOMLDecodeError as e:
        raise HubSettingsError(f"{path}: not valid TOML ({e})") from None
    base = path.parent.parent
    hub = data.get("hub", {})
    unknown = set(data) - {"hub", "course"}
    if unknown:
        raise HubSettingsError(f"{path}: unknown table(s) {sorted(unknown)} (the file has [hub] and [[course]])")
    if not isinstance(hub, dict) or set(hub) - {"url", "state", "exchange"}:
        raise HubSettingsError(f"{path}: [hub] takes url, state and exchange"
                               + (f", not {sorted(set(hub) - {'url', 'state', 'exchange'})}" if isinstance(hub, dict) else ""))
    url = hub.get("url", "http://127.0.0.1:8000")
    u = urlparse(url) if isinstance(url, str) else None
    if u is None or u.scheme not in ("http", "https") or not u.hostname:
        raise HubSettingsError(f"{path}: [hub] url = {url!r} is not an http(s) address like http://127.0.0.1:8000")
    state = _path(base, hub.get("state", "build/hub"), f"{path}: [hub] state")
    exchange = _path(base, hub["exchange"], f"{path}: [hub] exchange") if hub.get("exchange") else state / "exchange"
    raw = data.get("course", [])
    if not isinstance(raw, list) or not raw:
        raise HubSettingsError(f"{path}: no [[course]]: the hub serves at least one course")
    courses: list[Course] = []
    for n, entry in enumerate(raw, start=1):
        course = _course(path, base, n, entry)
        if any(c.id == course.id for c in courses):
            raise HubSettingsError(f"{path}: course {course.id!r} is listed twice")
        owner = next((c.id for c in courses if c.account == course.account), None)
        if owner:
            raise HubSettingsError(f"{path}: course {course.id!r}: account {course.account!r} already owns course {owner!r}")
        courses.append(course)
    settings = HubSettings(path, url.rstrip("/"), state, exchange, tuple(courses))
    clash = set(settings.people) & set(settings.course_accounts)
    if clash:
        raise HubSettingsError(f"{path}: {sorted(clash)} own a course and also log in: use another account to log in")
    return settings
