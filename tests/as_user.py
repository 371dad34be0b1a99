"""Run a command as an ordinary (non-root) account on this machine, for the tests of the rootless level.

An account made for the test (`useradd`, removed afterwards) runs the command with no capabilities. The
grader's Python lives under a folder only root may enter (pyenv under /root, mode 0700 here): rather than
changing that folder, the command runs in a private mount namespace where /root is replaced by a
world-readable folder holding only a bind of the Python installation (nothing else of /root is visible)."""
from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

NAME = f"jxtest-{os.getpid()}"
"""One account per test process: tests run concurrently in one checkout (several pytest sessions at once)
must not delete each other's account, nor kill its processes."""


def can_run() -> str | None:
    """Why commands cannot be run as an ordinary account here, or None."""
    if os.geteuid() != 0:
        return "making a test account needs root"
    for tool in ("useradd", "userdel", "unshare", "setpriv", "mount"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


@contextlib.contextmanager
def ordinary_user(name: str = NAME):
    """A fresh system account (no home, no login shell), with a home folder of its own for the test; deleted
    afterwards with everything it owns under that home."""
    _remove(name)  # left over by a run that was killed
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True,
                   capture_output=True)
    home = Path(tempfile.mkdtemp(prefix="jaxpath-user-"))
    try:
        entry = pwd.getpwnam(name)
        os.chown(home, entry.pw_uid, entry.pw_gid)
        os.chmod(home, 0o755)
        yield User(name, entry.pw_uid, entry.pw_gid, home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        _remove(name)


def _remove(name: str) -> None:
    """Delete the account, once no process of it is left (userdel refuses while one runs: a grader's Dask
    workers may outlive it by a moment)."""
    from jaxpath.grade.sandbox import clear_uid

    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        return
    clear_uid(uid)
    subprocess.run(["userdel", "--force", name], check=True, capture_output=True)


class User:
    def __init__(self, name: str, uid: int, gid: int, home: Path):
        self.name, self.uid, self.gid, self.home = name, uid, gid, home

    def give(self, path: Path) -> None:
        """Make `path` and everything under it this account's."""
        for p in [path, *path.rglob("*")]:
            os.chown(p, self.uid, self.gid, follow_symlinks=False)

    def command(self, argv: list[str], view: Path | None) -> list[str]:
        """argv run as this account; `view`, an empty folder, becomes the stand-in for /root (see above)."""
        python_root = _python_root()
        script = "set -e; "
        if python_root is not None and view is not None:
            inner = view / python_root.relative_to("/root")
            inner.mkdir()
            for p in (view, inner):
                os.chmod(p, 0o755)
            mount = shutil.which("mount")
            script += f'{mount} --bind "{python_root}" "{inner}"; {mount} --rbind "{view}" /root; '
        script += (f'exec {shutil.which("setpriv")} --reuid={self.uid} --regid={self.gid} --clear-groups --inh-caps=-all '
                   '--bounding-set=-all -- "$@"')
        # Absolute paths: the command's own PATH (a test may hide tools from it) does not find these.
        return [shutil.which("unshare"), "--mount", "--propagation", "private", "--", shutil.which("sh"), "-c", script,
                "as-user", *argv]

    def run(self, argv: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float | None = None) -> subprocess.CompletedProcess:
        base = {"HOME": str(self.home), "USER": self.name, "LOGNAME": self.name, "LANG": "C.UTF-8",
                "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"}
        with tempfile.TemporaryDirectory(prefix="jaxpath-rootview-") as view:
            return subprocess.run(self.command(argv, Path(view)), env={**base, **(env or {})}, cwd=cwd,
                                  capture_output=True, text=True, timeout=timeout)


def _python_root() -> Path | None:
    """The top folder under /root that holds the interpreter, when the interpreter is under /root."""
    real = Path(os.path.realpath(sys.base_prefix))
    try:
        rel = real.relative_to("/root")
    except ValueError:
        return None
    return Path("/root") / rel.parts[0] if rel.parts else None
