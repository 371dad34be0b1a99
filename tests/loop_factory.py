"""The course loop for tests: an instructor's course directory with its own exchange, and students who each
have a home and a work folder of their own.

nbgrader 0.9.6 takes the student id of `submit` and `fetch_feedback` from the OS user running it
(`nbgrader.utils.get_username()`: `pwd.getpwuid(os.getuid())`, or `$JUPYTERHUB_USER` when that user is
`jovyan`); `$USER` and `$LOGNAME` are never read. `CourseDirectory.student_id` (the `--student` flag)
overrides it. The tests run as one OS user, so each simulated student gets a Jupyter config folder whose
`nbgrader_config.py` sets that student id (and the course id and exchange, as a JupyterHub admin would),
and a `JUPYTER_DATA_DIR` of its own: `nbgrader submit` keeps a copy of each submission, with its secret,
in `$JUPYTER_DATA_DIR/nbgrader_cache`, which is where `fetch_feedback` looks.
"""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from course_factory import make_course

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parent.parent


def run(cmd: list, cwd: Path, env: dict, ok: bool = True, timeout: int = 300) -> subprocess.CompletedProcess:
    """Run a command; when `ok`, fail with its output unless it exits 0."""
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if ok and p.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} (in {cwd}) exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def base_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "JAXPATH_"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update({k: str(v) for k, v in extra.items()})
    return env


@dataclass
class Instructor:
    root: Path
    exchange: Path
    home: Path

    @property
    def env(self) -> dict:
        return base_env(HOME=self.home, JUPYTER_CONFIG_DIR=self.home / ".jupyter",
                        JUPYTER_DATA_DIR=self.home / ".local/share/jupyter",
                        JUPYTER_RUNTIME_DIR=self.home / ".local/share/jupyter/runtime",
                        JAXPATH_EXCHANGE=self.exchange)

    def nbgrader(self, *args, ok=True):
        return run([BIN / "nbgrader", *args], self.root, self.env, ok=ok)

    def jaxpath(self, *args, ok=True):
        return run([BIN / "jaxpath", "--root", self.root, *args], self.root, self.env, ok=ok)


@dataclass
class Student:
    id: str
    home: Path
    exchange: Path
    course_id: str = "demo"

    @property
    def work(self) -> Path:
        return self.home / "work"

    @property
    def env(self) -> dict:
        return base_env(HOME=self.home, JUPYTER_CONFIG_DIR=self.home / ".jupyter",
                        JUPYTER_DATA_DIR=self.home / ".local/share/jupyter",
                        JUPYTER_RUNTIME_DIR=self.home / ".local/share/jupyter/runtime")

    def setup(self) -> "Student":
        self.work.mkdir(parents=True, exist_ok=True)
        cfg = self.home / ".jupyter"
        cfg.mkdir(parents=True, exist_ok=True)
        (cfg / "nbgrader_config.py").write_text(
            "c = get_config()\n"
            f"c.CourseDirectory.course_id = {self.course_id!r}\n"
            f"c.Exchange.root = {str(self.exchange)!r}\n"
            f"# stands in for the OS user name nbgrader would use (see tests/loop_factory.py)\n"
            f"c.CourseDirectory.student_id = {self.id!r}\n")
        return self

    def nbgrader(self, *args, ok=True):
        return run([BIN / "nbgrader", *args], self.work, self.env, ok=ok)

    def jaxpath(self, *args, ok=True):
        return run([BIN / "jaxpath", *args], self.work, self.env, ok=ok)


def instructor_course(tmp: Path) -> Instructor:
    """The fixture course (course_factory: demo/01_demo, three exercises) with the repository's own
    nbgrader_config.py (course id "demo"), its exchange at `tmp/exchange` through JAXPATH_EXCHANGE."""
    root = make_course(tmp / "course")
    text = (REPO / "nbgrader_config.py").read_text()
    assert 'course_id = "jax-path"' in text and "JAXPATH_EXCHANGE" in text, "the course config changed: update me"
    (root / "nbgrader_config.py").write_text(text.replace('course_id = "jax-path"', 'course_id = "demo"'))
    (root / "gradebook").mkdir()  # committed in the course (with its README); the gradebook goes there
    return Instructor(root, tmp / "exchange", (tmp / "instructor-home"))


def release(ins: Instructor) -> None:
    """What the instructor does: generate the student version (into the gradebook too), then release it."""
    ins.nbgrader("generate_assignment", "demo", "--force")
    ins.nbgrader("release_assignment", "demo", "--force")
