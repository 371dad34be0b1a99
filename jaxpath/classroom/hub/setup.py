"""Everything the hub needs on disk before it starts, made idempotently by `jaxpath hub` (as root):

- the accounts (see `accounts`), each course's staff in its course account's group;
- `<state>/courses/<id>/`: the course directory, copied once from the settings' `directory` (a git repository
  is cloned, so only committed files come), owned by the course account and its group, group-writable and
  set-group-id (2770: staff read and write it, nobody else enters), with its gradebook made and group-writable
  (SQLite creates a database 0644 whatever the umask, so it is made here, before any grader needs it);
- the exchange (nbgrader's own permission model): its root world-writable with the sticky bit, as nbgrader's
  students check; one folder per course owned by the course account and group (2775), in which nbgrader
  makes `outbound/` (readable), `inbound/` (2733: students drop submissions in, cannot list it) and
  `feedback/` (0711: a student fetches a page only by the hash of their own submission);
- `<state>/jupyter/{students,staff,service}/`: the Jupyter configuration each kind of server reads first
  (`JUPYTER_CONFIG_PATH`, set by the hub per user): nbgrader's JupyterHub settings for every server (the
  exchange, `path_includes_course`, `JupyterHubAuthPlugin`, course titles), `groupshared` for staff and
  the formgrader services, and which of nbgrader's extensions each has (nbgrader's table of extensions per
  role: students the Assignments tab and Validate, staff also the course list, services the formgrader);
- `<state>/hub.json`: what `deploy/jupyterhub_config.py` reads (ports, paths, courses and their people)."""
from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import JaxpathError
from . import accounts
from .settings import HubSettings

REPO = Path(__file__).resolve().parents[3]  # jaxpath/classroom/hub/setup.py
DEPLOY = REPO / "deploy"
PROXY = DEPLOY / "node_modules" / ".bin" / "configurable-http-proxy"
HUB_CONFIG = DEPLOY / "jupyterhub_config.py"
HUB_JSON = "hub.json"

STUDENT_OFF = ("formgrader", "create-assignment", "course-list")
STAFF_OFF = ("formgrader", "create-assignment")
SERVICE_OFF = ("assignment-list", "course-list")
"""nbgrader's lab plugins each kind of server leaves off (nbgrader's docs, "One Class, Multiple Graders")."""
SERVER_EXTENSIONS = {"students": {"formgrader": False, "course_list": False},
                     "staff": {"formgrader": False},
                     "service": {"assignment_list": False, "course_list": False}}


class HubSetupError(JaxpathError):
    """The hub cannot be set up here (not root, a tool or an account missing): nothing half-made is left."""


@dataclass
class Prepared:
    settings: HubSettings
    hub_json: Path
    created: list[str] = field(default_factory=list)
    """Accounts made by this call."""
    passwords: dict[str, str] = field(default_factory=dict)
    """The passwords of every person account `jaxpath hub` made (this call or an earlier one)."""
    changes: list[str] = field(default_factory=list)
    """What this call did, one line each (empty when everything was in place)."""

    def hub_data(self) -> dict:
        return json.loads(self.hub_json.read_text())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def check_host(settings: HubSettings) -> None:
    if os.geteuid() != 0:
        raise HubSetupError("the hub runs as root (it starts each person's server as that person): run it with sudo")
    for tool in ("useradd", "userdel", "gpasswd", "chpasswd", "unshare", "mount"):
        if shutil.which(tool) is None:
            raise HubSetupError(f"{tool} is not installed (Debian: apt-get install passwd util-linux mount)")
    if not (Path(sys.prefix) / "bin" / "jupyterhub").exists():
        raise HubSetupError(f"jupyterhub is not installed in {sys.prefix}: run `make install` (it is in the lock)")
    if not PROXY.exists():
        raise HubSetupError(f"{PROXY} is missing: run `npm ci --prefix deploy` (or `make hub`)")
    if shutil.which("node") is None:
        raise HubSetupError("node is not installed: configurable-http-proxy runs on it (Debian: apt-get install nodejs)")


def unreachable(path: Path) -> Path | None:
    """The first folder on the way to `path` (itself included, when it is one) that other accounts cannot
    enter (no o+x), or None."""
    path = Path(path).resolve()
    chain = [*reversed(path.parents), *([path] if path.is_dir() else [])]
    return next((d for d in chain if d.exists() and not d.stat().st_mode & stat.S_IXOTH), None)


def python_view(settings: HubSettings) -> dict | None:
    """How the hub's processes see this Python: None when every account can run it as it is; otherwise the
    folder to replace ("hidden"), the installation to keep in it ("python") and the empty folder that stands in
    for it ("view"). Raises when the environment, the hub's state or the exchange are in such a folder."""
    for what, p in (("the Python environment", Path(sys.prefix)), ("the hub's state", settings.state),
                    ("the exchange", settings.exchange)):
        blocked = unreachable(p)
        if blocked is not None:
            raise HubSetupError(f"{what} ({p}) is under {blocked}, which other accounts cannot enter: "
                                "put it where they can (e.g. under /srv or /opt)")
    real = Path(os.path.realpath(sys.base_prefix))
    hidden = unreachable(real)
    if hidden is None:
        return None
    top = hidden / real.relative_to(hidden).parts[0]
    return {"hidden": str(hidden), "python": str(top), "view": str(settings.state / "python-view")}


def _accounts(settings: HubSettings, create: bool, out: Prepared) -> None:
    wanted = [(a, "course") for a in settings.course_accounts] + [(p, "person") for p in settings.people]
    missing = [name for name, _ in wanted if not accounts.exists(name)]
    if missing and not create:
        raise HubSetupError(f"no such account(s): {', '.join(missing)}; make them (useradd), or pass "
                            "--create-accounts to have jaxpath hub make them with random passwords")
    settings.state.mkdir(parents=True, exist_ok=True)
    os.chmod(settings.state, 0o755)
    for name, kind in wanted:
        if name in missing:
            accounts.create(settings.state, name, kind)
            out.created.append(name)
            out.changes.append(f"made account {name} ({kind})")
    for course in settings.courses:
        group = accounts.primary_group(course.account)
        for person in course.staff:
            if accounts.add_to_group(person, group):
                out.changes.append(f"added {person} to {group} (staff of {course.id})")
    out.passwords = {n: e["password"] for n, e in accounts.record(settings.state).items() if e.get("password")}


def _own(path: Path, account: str, dir_mode: int, file_or: int, file_and: int = 0o7777) -> None:
    """Give `path` (a tree) to the account and its group; directories get `dir_mode`, files their mode
    | file_or & file_and."""
    import pwd

    entry = pwd.getpwnam(account)
    for p in [path, *path.rglob("*")]:
        if p.is_symlink():
            continue
        os.chown(p, entry.pw_uid, entry.pw_gid)
        if p.is_dir():
            os.chmod(p, dir_mode)
        else:
            os.chmod(p, (p.stat().st_mode | file_or) & file_and & 0o777)


def _copy_course(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.copying")
    shutil.rmtree(tmp, ignore_errors=True)
    if (src / ".git").exists():
        r = subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(src), str(tmp)], capture_output=True, text=True)
        if r.returncode != 0:
            raise HubSetupError(f"cloning {src}: {r.stderr.strip()}")
        shutil.rmtree(tmp / ".git")  # the course copy is not a checkout: staff change it, the repository stays
    else:
        shutil.copytree(src, tmp, ignore=shutil.ignore_patterns(".venv", "build", "exchange", "__pycache__",
                                                                 ".ipynb_checkpoints", "*.db", ".nbgrader.log"))
    os.replace(tmp, dest)


def _gradebook(course_dir: Path, course_id: str) -> Path | None:
    """Make the course's SQLite gradebook (nbgrader's own schema) if it is not there; its path, or None
    for a gradebook that is not a SQLite file (a PostgreSQL one is the database's business)."""
    from nbgrader.api import Gradebook

    from ...config import nbgrader_config
    from ...gradebooks import prepare_nbgrader

    url = str(nbgrader_config(course_dir).CourseDirectory.get("db_url", "") or f"sqlite:///{course_dir}/gradebook.db")
    if not url.startswith("sqlite:///"):
        return None
    path = Path(url.removeprefix("sqlite:///"))
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        prepare_nbgrader()
        with Gradebook(url, course_id):
            pass
    return path


def _courses(settings: HubSettings, out: Prepared) -> None:
    for course in settings.courses:
        dest = settings.course_dir(course.id)
        fresh = not dest.exists()
        if fresh:
            _copy_course(course.directory, dest)
            out.changes.append(f"copied {course.directory} into {dest}")
        db = _gradebook(dest, course.id)
        if fresh:
            # staff read and write everything (2770 folders, set-group-id so new files get the course's group);
            # nobody else enters. Later runs leave the copy as the staff keep it.
            _own(dest, course.account, 0o2770, 0o660, 0o770)
        if db is not None:
            import pwd

            entry = pwd.getpwnam(course.account)
            if db.stat().st_uid == 0:
                os.chown(db, entry.pw_uid, entry.pw_gid)
            os.chmod(db, 0o660)
    os.chmod(settings.state / "courses", 0o755)


def _exchange(settings: HubSettings) -> None:
    root = settings.exchange
    root.mkdir(parents=True, exist_ok=True)
    os.chown(root, 0, 0)
    os.chmod(root, 0o1777)  # nbgrader requires 0777 (o+rwx) at the root; sticky: nobody removes another's folder
    import pwd

    for course in settings.courses:
        d = root / course.id
        d.mkdir(exist_ok=True)
        entry = pwd.getpwnam(course.account)
        os.chown(d, entry.pw_uid, entry.pw_gid)
        os.chmod(d, 0o2775)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, 0o644)


def _jupyter_config(settings: HubSettings) -> dict[str, str]:
    titles = {c.id: c.title for c in settings.courses}
    base = ("# Written by `jaxpath hub` (jaxpath/classroom/hub/setup.py) for every server of the hub: nbgrader on JupyterHub.\n"
            "from nbgrader.auth import JupyterHubAuthPlugin\n\n"
            "c = get_config()  # noqa: F821\n"
            f"c.Exchange.root = {str(settings.exchange)!r}\n"
            "c.Exchange.path_includes_course = True  # several courses share the exchange\n"
            "c.Authenticator.plugin_class = JupyterHubAuthPlugin  # who takes which course: the hub's groups\n"
            f"c.NbGrader.course_titles = {titles!r}\n")
    shared = "c.CourseDirectory.groupshared = True  # the course's staff share its directory and exchange folders\n"
    bash = shutil.which("bash") or "/bin/sh"
    dirs = {}
    for kind, off in (("students", STUDENT_OFF), ("staff", STAFF_OFF), ("service", SERVICE_OFF)):
        d = settings.state / "jupyter" / kind
        _write(d / "nbgrader_config.py", base + ("" if kind == "students" else shared))
        server = {"ServerApp": {
            "jpserver_extensions": {f"nbgrader.server_extensions.{name}": on
                                    for name, on in SERVER_EXTENSIONS[kind].items()},
            # a terminal that keeps the server's PATH (the venv first): a login shell would read /etc/profile
            "terminado_settings": {"shell_command": [bash]}}}
        _write(d / "jupyter_server_config.json", json.dumps(server, indent=1))
        _write(d / "labconfig" / "page_config.json",
               json.dumps({"disabledExtensions": {f"@jupyter/nbgrader:{p}": True for p in off}}, indent=1))
        dirs[kind] = str(d)
    return dirs


def hub_data(settings: HubSettings, ports: dict[str, int], jupyter: dict[str, str], view: dict | None) -> dict:
    """What `<state>/hub.json` holds: what deploy/jupyterhub_config.py reads (ports, paths, courses, people, [lti])."""
    bindir = Path(sys.prefix) / "bin"
    return {
        "url": settings.url,
        "state": str(settings.state),
        "exchange": str(settings.exchange),
        "ports": ports,
        "proxy": [shutil.which("node") or "node", str(PROXY.resolve())],
        "singleuser": str(bindir / "jupyterhub-singleuser"),
        "path": f"{bindir}:/usr/local/bin:/usr/bin:/bin",
        "jupyter_config": jupyter,
        "python_view": view,
        "courses": [{"id": c.id, "title": c.title, "directory": str(settings.course_dir(c.id)), "account": c.account,
                     "staff": list(c.staff), "instructors": list(c.instructors), "graders": list(c.graders),
                     "students": list(c.students), "service_url": f"http://127.0.0.1:{ports[f'service:{c.id}']}",
                     "lti_context": c.lti_context}
                    for c in settings.courses],
        "people": list(settings.people),
        # with an [lti] table, people arrive from the LMS (deploy/jupyterhub_config.py, jaxpath/classroom/hub/lti.py)
        "lti": None if settings.lti is None else {
            "issuer": settings.lti.issuer, "client_id": settings.lti.client_id,
            "deployment_ids": list(settings.lti.deployment_ids), "jwks_url": settings.lti.jwks_url,
            "auth_url": settings.lti.auth_url, "users": settings.lti.users},
    }


def prepare(settings: HubSettings, *, create_accounts: bool = False) -> Prepared:
    check_host(settings)
    view = python_view(settings)  # before anything is made: says why accounts could not run Python here
    out = Prepared(settings, settings.state / HUB_JSON)
    _accounts(settings, create_accounts, out)
    _courses(settings, out)
    _exchange(settings)
    jupyter = _jupyter_config(settings)
    old = json.loads(out.hub_json.read_text()) if out.hub_json.exists() else {}
    # the ports of the last run when they are still free (a bookmark of a service keeps working), else new ones
    keys = ["hub", "proxy_api", *(f"service:{c.id}" for c in settings.courses)]
    ports = {k: p if (p := old.get("ports", {}).get(k)) and port_free(p) else free_port() for k in keys}
    data = hub_data(settings, ports, jupyter, view)
    _write(out.hub_json, json.dumps(data, indent=1))
    return out
