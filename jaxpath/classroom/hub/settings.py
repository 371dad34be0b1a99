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

With an `[lti]` table, people come from the LMS (an LTI 1.3 launch) instead of typing a password (docs/lti.md):

    [lti]
    issuer = "https://canvas.instructure.com"          # the platform's issuer (the id_token's `iss`)
    client_id = "10000000000042"                       # the tool's client id on that platform (the `aud`)
    deployment_ids = ["1:8865aa05b4b79b64a91a"]        # the deployments of the tool this hub accepts
    jwks_url = "https://sso.canvaslms.com/api/lti/security/jwks"           # the platform's public keys
    auth_url = "https://sso.canvaslms.com/api/lti/authorize_redirect"      # its OIDC authorization endpoint
    token_url = "https://sso.canvaslms.com/login/oauth2/token"             # its OAuth2 token endpoint (AGS)
    private_key = "/etc/jaxpath/lti-tool.pem"          # the tool's key (AGS): mode 0600, outside the repository

    [lti.users]                                        # the LMS user (the id_token's `sub`) -> the account
    "a6e2f1c4-0d1b-4c9e-9a61-3f0c2d7e5b10" = "jxp-student1"

and, per course, `lti_context` (the LMS course's context id) and `lti_lineitems` (its AGS line items URL, which
`jaxpath lti push` posts scores to).

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
    lti_context: str | None = None
    """The LMS course (the launch's context id) this course is, with an [lti] table."""
    lti_lineitems: str | None = None
    """The course's AGS line items URL (`jaxpath lti push`)."""

    def role_of(self, account: str) -> str | None:
        """'instructor', 'grader' or 'student': the account's role in this course (None: not in it)."""
        for role, names in (("instructor", self.instructors), ("grader", self.graders), ("student", self.students)):
            if account in names:
                return role
        return None

    @property
    def staff(self) -> tuple[str, ...]:
        """Instructors and graders: members of the account's group, of `formgrade-<id>`, with the formgrader."""
        return tuple(dict.fromkeys(self.instructors + self.graders))


@dataclass(frozen=True)
class LtiSettings:
    """The LMS platform the hub accepts launches from (an LTI 1.3 tool registration)."""
    issuer: str
    client_id: str
    deployment_ids: tuple[str, ...]
    jwks_url: str
    auth_url: str
    token_url: str | None
    private_key: Path | None
    users: dict[str, str]
    """The LMS's user id (the id_token's `sub`, also the AGS `userId`) -> the hub account."""

    def sub_of(self, account: str) -> str | None:
        return next((sub for sub, name in self.users.items() if name == account), None)


@dataclass(frozen=True)
class HubSettings:
    path: Path
    url: str
    state: Path
    exchange: Path
    courses: tuple[Course, ...]
    lti: LtiSettings | None = None

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
    unknown = set(entry) - {"id", "title", "directory", "account", "instructors", "graders", "students", "lti_context",
                            "lti_lineitems"}
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
                    _names(where, entry.get("students"), "students"),
                    _text(where, entry, "lti_context"), _url(where, entry, "lti_lineitems"))
    if not course.staff:
        raise HubSettingsError(f"{where}: no instructors or graders: nobody could release or grade it")
    both = set(course.staff) & set(course.students)
    if both:
        raise HubSettingsError(f"{where}: {sorted(both)} both teach and take the course")
    if account in course.staff + course.students:
        raise HubSettingsError(f"{where}: its account {account!r} is a service account, not a person of the course")
    return course


def _text(where: str, table: dict, key: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise HubSettingsError(f"{where}: `{key}` = {value!r} is not a non-empty string")
    return value


def _url(where: str, table: dict, key: str) -> str | None:
    """An https address (http only on loopback, as a test platform is)."""
    value = _text(where, table, key)
    if value is None:
        return None
    u = urlparse(value)
    loopback = u.hostname in ("127.0.0.1", "localhost", "::1")
    if u.scheme != "https" and not (u.scheme == "http" and loopback) or not u.hostname:
        raise HubSettingsError(f"{where}: `{key}` = {value!r} is not an https:// address (http:// only on loopback)")
    return value


LTI_KEYS = {"issuer", "client_id", "deployment_ids", "jwks_url", "auth_url", "token_url", "private_key", "users"}


def _lti(path: Path, base: Path, table) -> LtiSettings:
    where = f"{path}: [lti]"
    if not isinstance(table, dict):
        raise HubSettingsError(f"{where}: a table")
    unknown = set(table) - LTI_KEYS
    if unknown:
        raise HubSettingsError(f"{where}: unknown key(s) {sorted(unknown)} (it takes {', '.join(sorted(LTI_KEYS))})")
    for key in ("issuer", "client_id", "jwks_url", "auth_url"):
        if key not in table:
            raise HubSettingsError(f"{where}: `{key}` is missing (the platform's {LTI_NEEDS[key]})")
    deployments = table.get("deployment_ids")
    if not isinstance(deployments, list) or not deployments or not all(isinstance(d, str) and d for d in deployments):
        raise HubSettingsError(f"{where}: `deployment_ids` is a non-empty list of the platform's deployment ids "
                               "(strings): a launch from any other deployment is refused")
    users = table.get("users", {})
    if not isinstance(users, dict) or not all(isinstance(k, str) and k and isinstance(v, str) for k, v in users.items()):
        raise HubSettingsError(f"{where}.users: a table of \"<LMS user id>\" = \"<account>\"")
    for sub, account in users.items():
        if not ACCOUNT.match(account):
            raise HubSettingsError(f"{where}.users: {sub!r} = {account!r}, which is not an account name")
    twice = sorted({a for a in users.values() if list(users.values()).count(a) > 1})
    if twice:
        raise HubSettingsError(f"{where}.users: {twice} are named for more than one LMS user (one each: the AGS "
                               "scores go to that user)")
    key = table.get("private_key")
    return LtiSettings(_text(where, table, "issuer"), _text(where, table, "client_id"), tuple(deployments),
                       _url(where, table, "jwks_url"), _url(where, table, "auth_url"), _url(where, table, "token_url"),
                       _path(base, key, f"{where}: `private_key`") if key is not None else None, dict(users))


LTI_NEEDS = {"issuer": "issuer (the id_token's `iss`)", "client_id": "client id for this tool (the id_token's `aud`)",
             "jwks_url": "public keyset URL", "auth_url": "OIDC authorization (authentication request) URL"}


def _check_lti(settings: HubSettings) -> None:
    path = settings.path
    if settings.lti is None:
        odd = [c.id for c in settings.courses if c.lti_context or c.lti_lineitems]
        if odd:
            raise HubSettingsError(f"{path}: course(s) {odd} name an LMS course (lti_context, lti_lineitems) "
                                   "but the file has no [lti] table")
        return
    missing = [c.id for c in settings.courses if not c.lti_context]
    if missing:
        raise HubSettingsError(f"{path}: course(s) {missing}: `lti_context` is missing (the LMS course's context id; "
                               "with [lti] people arrive from the LMS, so a course without one could not be entered)")
    contexts = [c.lti_context for c in settings.courses]
    twice = sorted({x for x in contexts if contexts.count(x) > 1})
    if twice:
        raise HubSettingsError(f"{path}: lti_context {twice} is named by more than one course")
    people = set(settings.people)
    strangers = sorted(f"{sub!r} = {a!r}" for sub, a in settings.lti.users.items() if a not in people)
    if strangers:
        raise HubSettingsError(f"{path}: [lti.users] {', '.join(strangers)}: no course names that account")


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
    unknown = set(data) - {"hub", "course", "lti"}
    if unknown:
        raise HubSettingsError(f"{path}: unknown table(s) {sorted(unknown)} (the file has [hub], [[course]] and "
                               "optionally [lti])")
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
    lti = _lti(path, base, data["lti"]) if "lti" in data else None
    settings = HubSettings(path, url.rstrip("/"), state, exchange, tuple(courses), lti)
    _check_lti(settings)
    clash = set(settings.people) & set(settings.course_accounts)
    if clash:
        raise HubSettingsError(f"{path}: {sorted(clash)} own a course and also log in: use another account to log in")
    return settings
