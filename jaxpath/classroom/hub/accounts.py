"""The hub's OS accounts: people log in with PAM (their own passwords) and their servers run as them; each
course has a service account that owns its course directory and runs its formgrader, and whose group is the
course's staff (its instructors and graders are members, so they can release, collect and grade in it).

`jaxpath hub` uses existing accounts as they are. With `--create-accounts` it makes the missing ones (for a
demo, a test or a fresh server): homes under `<state>/homes/` (mode 0700), a random password each, recorded in
`<state>/accounts.json` (mode 0600, root only) so that `jaxpath hub --remove-accounts` removes exactly those."""
from __future__ import annotations

import grp
import json
import os
import pwd
import secrets
import shutil
import subprocess
from pathlib import Path

from ...errors import JaxpathError

RECORD = "accounts.json"


class AccountError(JaxpathError):
    """An account operation failed, or an account the settings name does not exist."""


def exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def _run(argv: list[str], what: str, stdin: str | None = None) -> None:
    r = subprocess.run(argv, input=stdin, capture_output=True, text=True)
    if r.returncode != 0:
        raise AccountError(f"{what}: {' '.join(argv[:1])} exited {r.returncode}: {(r.stderr or r.stdout).strip()}")


def record(state: Path) -> dict:
    """The accounts this hub made: name -> {"kind": "person" | "course", "password": ... (people only)}."""
    p = state / RECORD
    return json.loads(p.read_text()) if p.exists() else {}


def _write_record(state: Path, data: dict) -> None:
    p = state / RECORD
    tmp = p.with_name(f".{p.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, p)


def create(state: Path, name: str, kind: str) -> str | None:
    """Make account `name` (a person: a login shell and a password, returned; a course: a system account
    without a login shell). Its home is `<state>/homes/<name>`, mode 0700."""
    homes = state / "homes"
    homes.mkdir(parents=True, exist_ok=True)
    os.chmod(homes, 0o755)
    home = homes / name
    shell = (shutil.which("bash") or "/bin/sh") if kind == "person" else "/usr/sbin/nologin"
    argv = ["useradd", "--user-group", "--create-home", "--home-dir", str(home), "--shell", shell]
    if kind == "course":
        argv.append("--system")
    data = record(state)
    data[name] = {"kind": kind}  # recorded first: a failure half-way is still removed by --remove-accounts
    _write_record(state, data)
    _run([*argv, name], f"making account {name}")
    os.chmod(home, 0o700)
    password = None
    if kind == "person":
        password = secrets.token_urlsafe(12)
        _run(["chpasswd"], f"setting the password of {name}", stdin=f"{name}:{password}\n")
        data[name]["password"] = password
        _write_record(state, data)
    return password


def add_to_group(name: str, group: str) -> bool:
    """Make `name` a member of `group` (True when it was not one)."""
    entry = grp.getgrnam(group)
    if name in entry.gr_mem or pwd.getpwnam(name).pw_gid == entry.gr_gid:
        return False
    _run(["gpasswd", "--add", name, group], f"adding {name} to the group {group}")
    return True


def primary_group(name: str) -> str:
    return grp.getgrgid(pwd.getpwnam(name).pw_gid).gr_name


def remove_created(state: Path) -> list[str]:
    """Remove every account this hub made (people first, then course accounts and their groups), with their
    homes; their processes are ended first (userdel refuses while one runs). Returns the names removed."""
    from ...grade.sandbox import clear_uid

    data = record(state)
    removed = []
    for name in sorted(data, key=lambda n: data[n].get("kind") == "course"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            removed.append(name)
            continue
        clear_uid(entry.pw_uid)
        group = primary_group(name)
        _run(["userdel", "--force", "--remove", name], f"removing account {name}")
        try:
            grp.getgrnam(group)
            subprocess.run(["groupdel", group], capture_output=True)
        except KeyError:
            pass
        shutil.rmtree(entry.pw_dir, ignore_errors=True)
        removed.append(name)
    for name in removed:
        data.pop(name, None)
    if state.exists():
        _write_record(state, data)
    return removed
