"""The storm's students as real accounts of this machine (the hub's account making: `hub.accounts`, recorded in
`<state>/accounts.json` before each is made, so that a storm that failed or was killed still has them removed),
and commands run as them: `setpriv` to the account's uid and gid, no groups, no capabilities.

Where this Python lives under a folder other accounts cannot enter (pyenv under /root, mode 0700), the storm runs
in a private mount namespace in which that folder is replaced by one that holds only the Python installation,
as the hub does (`hub.process`); every process it starts inherits the namespace."""
from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..hub import accounts
from ..hub.process import in_view
from ..hub.setup import unreachable

IN_VIEW = "JAXPATH_STORM_VIEW"


def view_command(argv: list[str], stand_in: Path) -> list[str] | None:
    """argv run in a mount namespace where this Python is visible to every account; None when it already is."""
    if os.environ.get(IN_VIEW):
        return None
    real = Path(os.path.realpath(sys.base_prefix))
    hidden = unreachable(real)
    if hidden is None:
        return None
    return in_view(argv, stand_in, hidden, hidden / real.relative_to(hidden).parts[0], "storm")


@dataclass(frozen=True)
class Person:
    name: str
    uid: int
    gid: int
    home: Path

    def env(self, **extra) -> dict[str, str]:
        return {"HOME": str(self.home), "USER": self.name, "LOGNAME": self.name, "LANG": "C.UTF-8",
                "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", **extra}

    def argv(self, argv: list[str]) -> list[str]:
        return [shutil.which("setpriv"), f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--", *map(str, argv)]

    def popen(self, argv: list[str], cwd: Path | None = None) -> subprocess.Popen:
        return subprocess.Popen(self.argv(argv), env=self.env(), cwd=cwd or self.home, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)

    def run(self, argv: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(argv), env=self.env(), cwd=self.home, capture_output=True, text=True)


def make_students(state: Path, names: list[str], course_id: str, exchange: Path) -> list[Person]:
    """Accounts `names` (homes `<state>/homes/<name>`, mode 0700), each with a Jupyter config naming the course
    and the exchange, as a hub's administrator writes it; nbgrader takes the student id from the account."""
    people = []
    for name in names:
        accounts.create(state, name, "student")
        e = pwd.getpwnam(name)
        home = Path(e.pw_dir)
        for d in (home / ".jupyter", home / "work"):
            d.mkdir(parents=True, exist_ok=True)
        (home / ".jupyter" / "nbgrader_config.py").write_text(
            f"c = get_config()\nc.CourseDirectory.course_id = {course_id!r}\nc.Exchange.root = {str(exchange)!r}\n")
        for p in [home, *home.rglob("*")]:
            os.chown(p, e.pw_uid, e.pw_gid, follow_symlinks=False)
        people.append(Person(name, e.pw_uid, e.pw_gid, home))
    return people


def remove_students(state: Path) -> list[str]:
    """Every account this storm made, with its home and processes."""
    return accounts.remove_created(state)
