"""The course hub for tests: `jaxpath hub`'s own setup and process with accounts made for the test, and the
people of a course in a browser (headless chromium through Playwright), each with a terminal of their own
server for what they do on the command line.

Accounts are named `jxh<pid>-<role>` (one set per test process: concurrent runs never touch each other's),
made by `prepare(..., create_accounts=True)` and removed by `remove_created`, also when the test fails. The
hub's state (course copies, exchange, homes) is a private temporary folder opened to the accounts (0755): the
test's own tmp_path is in root's 0700 pytest folder, which no account could enter."""
from __future__ import annotations

import contextlib
import functools
import os
import pwd
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from loop_factory import REPO, instructor_course
from site_factory import SCREENSHOTS

from jaxpath.classroom.hub import Hub, load_settings, prepare, remove_created
from jaxpath.classroom.hub.setup import PROXY, free_port
from jaxpath.files import private_temp_dir

TIMEOUT_MS = 180_000
"""A guard against a hang, not a measure (a server's first start on two loaded cores takes 10-40 s)."""


def can_run() -> str | None:
    """Why the hub cannot be run here, or None."""
    if os.geteuid() != 0:
        return "the hub test makes accounts and runs the hub as root"
    for tool in ("useradd", "userdel", "gpasswd", "chpasswd", "unshare", "mount", "node"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not PROXY.exists():
        return f"{PROXY.relative_to(REPO)} is missing: `make test-all` installs it (npm ci --prefix deploy)"
    return None


@dataclass
class HubUnderTest:
    hub: Hub
    state: Path
    prefix: str
    passwords: dict[str, str]
    settings: object

    def name(self, role: str) -> str:
        return f"{self.prefix}-{role}"

    def home(self, role: str) -> Path:
        return Path(pwd.getpwnam(self.name(role)).pw_dir)

    def course_dir(self, course_id: str) -> Path:
        return self.settings.course_dir(course_id)


@functools.cache
def can_run_in_browser() -> str | None:
    """Why the hub cannot be run here and driven in chromium, or None (probed once per process: the tests
    skip on it at collection)."""
    from site_factory import CHROMIUM

    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (Debian: apt-get install chromium)"
    return can_run()


def _lti_text(prefix: str, platform) -> str:
    """hub.toml's [lti] for the test platform: each person's LMS user is `sub-<role>`."""
    users = "\n".join(f'"sub-{role}" = "{prefix}-{role}"' for role in ("ins", "grader", "s1", "s2"))
    return f"""
{platform.lti_table()}
[lti.users]
{users}
"""


def _settings_text(state: Path, prefix: str, course: Path, port: int, platform=None) -> str:
    text = f"""
[hub]
url = "http://127.0.0.1:{port}"
state = "{state}"

[[course]]
id = "demo"
title = "Demo course"
directory = "{course}"
account = "{prefix}-demo"
instructors = ["{prefix}-ins"]
graders = ["{prefix}-grader"]
students = ["{prefix}-s1", "{prefix}-s2"]

[[course]]
id = "warmup"
title = "NumPy warm-up"
directory = "{REPO / 'deploy' / 'warmup'}"
account = "{prefix}-warmup"
instructors = ["{prefix}-ins"]
students = ["{prefix}-s2"]
"""
    if platform is None:
        return text
    text = text.replace('students = ["{prefix}-s1", "{prefix}-s2"]'.format(prefix=prefix),
                        f'students = ["{prefix}-s1", "{prefix}-s2"]\nlti_context = "ctx-demo"')
    text = text.replace(f'students = ["{prefix}-s2"]\n', f'students = ["{prefix}-s2"]\nlti_context = "ctx-warmup"\n')
    return _lti_text(prefix, platform) + text


@contextlib.contextmanager
def course_hub(tmp_path: Path, platform=None):
    """Two courses on one running hub: `demo` (tests/course_factory.py's chapter, with this repository's
    nbgrader_config.py) taught by an instructor and a grader to two students, and deploy/warmup, taught by the
    same instructor to the second student only. With `platform` (tests/lti_platform.py), people arrive from it
    (hub.toml's [lti]: the LMS courses `ctx-demo` and `ctx-warmup`, each person's LMS user `sub-<role>`)."""
    prefix = f"jxh{os.getpid()}"
    state = private_temp_dir("hub")
    os.chmod(state, 0o755)
    settings_file = tmp_path / "deploy" / "hub.toml"
    settings_file.parent.mkdir()
    course = instructor_course(tmp_path).root
    port = free_port()
    settings_file.write_text(_settings_text(state, prefix, course, port, platform))
    settings = load_settings(settings_file)
    if platform is not None:
        hub = f"http://127.0.0.1:{port}/hub"
        platform.tool_login_url, platform.tool_launch_url = f"{hub}/lti13/oauth_login", f"{hub}/lti13/oauth_callback"
        platform.tool_target = f"{hub}/"
    _remove_leftovers(prefix)
    hub = None
    try:
        prepared = prepare(settings, create_accounts=True)
        hub = Hub(prepared).start()
        yield HubUnderTest(hub, state, prefix, prepared.passwords, settings)
    finally:
        if hub is not None:
            hub.stop()
            shutil.copy(hub.log_path, tmp_path / "jupyterhub.log")  # for a person to read when the test failed
        remove_created(state)
        shutil.rmtree(state, ignore_errors=True)


def _remove_leftovers(prefix: str) -> None:
    """Accounts of this prefix that a killed run of the same pid left (their record went with its folder)."""
    import subprocess

    from jaxpath.grade.sandbox import clear_uid

    for entry in pwd.getpwall():
        if entry.pw_name.startswith(f"{prefix}-"):
            clear_uid(entry.pw_uid)
            subprocess.run(["userdel", "--force", "--remove", entry.pw_name], capture_output=True)
            subprocess.run(["groupdel", entry.pw_name], capture_output=True)


class Steps:
    """steps("what"): how long each part of the loop took, printed (pytest -s) and kept in tmp_path/steps.txt."""

    def __init__(self, tmp_path: Path):
        self.path = tmp_path / "steps.txt"
        self.t0 = self.last = time.monotonic()

    def __call__(self, what: str) -> None:
        now = time.monotonic()
        line = f"{now - self.t0:7.1f} s  (+{now - self.last:5.1f} s)  {what}"
        self.last = now
        print(line, flush=True)
        with open(self.path, "a") as f:
            f.write(line + "\n")


class Shots:
    """shots(page, name): a screenshot into tmp_path/screenshots, copied to build/screenshots/<test>/."""

    def __init__(self, tmp_path: Path, test_name: str):
        self.out = tmp_path / "screenshots"
        self.keep = SCREENSHOTS / re.sub(r"[^\w.-]", "_", test_name)
        shutil.rmtree(self.keep, ignore_errors=True)
        self.n = 0

    def __call__(self, page, name: str) -> Path:
        self.out.mkdir(exist_ok=True)
        self.keep.mkdir(parents=True, exist_ok=True)
        self.n += 1
        path = self.out / f"{self.n:02d}-{name}.png"
        page.screenshot(path=path, full_page=False)
        shutil.copy(path, self.keep / path.name)
        return path


class Person:
    """Someone of a course in their own browser context: logs in through the hub's PAM login page, lands in
    their JupyterLab, and runs shell commands in a terminal of their own server."""

    def __init__(self, browser, hut: HubUnderTest, role: str):
        self.hut, self.role = hut, role
        self.name = hut.name(role)
        self.home = hut.home(role)
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.context.set_default_timeout(TIMEOUT_MS)
        self.page = self.context.new_page()
        self.url = f"{hut.hub.url}/user/{self.name}"
        self._terminal = None
        self._n = 0

    def log_in(self) -> "Person":
        """Submit the login form; the hub starts the server (`wait_for_lab` waits for it): several people can
        be logging in at once."""
        self.page.goto(f"{self.hut.hub.url}/hub/login")
        self.page.fill("#username_input", self.name)
        self.page.fill("#password_input", self.hut.passwords[self.name])
        self.page.click("#login_submit")
        return self

    def launch(self, platform, context: str, roles: list[str]) -> "Person":
        """Arrive from the LMS: open its link (tests/lti_platform.py); the platform and the hub pass the browser
        between them (login initiation, authentication, the launch's form post), and the hub starts the server."""
        self.page.goto(platform.link(sub=f"sub-{self.role}", context=context, roles=roles))
        return self

    def wait_for_lab(self) -> "Person":
        from playwright.sync_api import expect

        self.page.wait_for_url(re.compile(rf".*/user/{re.escape(self.name)}/lab.*"), timeout=TIMEOUT_MS)
        expect(self.page.locator("#jp-main-statusbar")).to_be_visible()
        return self

    def sh(self, command: str, timeout: float = 600) -> tuple[int, str]:
        """Type `command` into a terminal of this person's server and wait until its exit status is written
        (the terminal writes it to a file in their home, which the test, as root, reads): (status, output)."""
        if self._terminal is None:
            self._terminal = self.context.new_page()
            with self._terminal.expect_websocket(lambda ws: "/terminals/websocket/" in ws.url) as ws_info:
                self._terminal.goto(f"{self.url}/terminals/{self.role}")
            # the shell is ready once it has written its first prompt
            ws_info.value.wait_for_event("framereceived", predicate=lambda f: '"stdout"' in str(f))
        self._n += 1
        out, rc = self.home / f".hubtest-{self._n}.out", self.home / f".hubtest-{self._n}.rc"
        self._terminal.locator(".xterm").click()
        self._terminal.keyboard.type(f"( {command} ) > {out} 2>&1; echo $? > {rc}.tmp; mv {rc}.tmp {rc}\n")
        deadline = time.monotonic() + timeout
        while not rc.exists():
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: `{command}` did not finish within {timeout} s:\n"
                                     f"{out.read_text(errors='replace')[-3000:] if out.exists() else ''}")
            time.sleep(0.1)
        return int(rc.read_text().strip()), out.read_text(errors="replace")

    def ok(self, command: str, timeout: float = 600) -> str:
        rc, output = self.sh(command, timeout)
        assert rc == 0, f"{self.name}: `{command}` exited {rc}:\n{output[-4000:]}"
        return output

    def close(self) -> None:
        self.context.close()

    def __enter__(self) -> "Person":
        return self

    def __exit__(self, *exc) -> None:
        """Close the browser context: a JupyterLab page left open keeps polling its server, and once the hub is
        gone, retrying and redrawing, a few percent of a core each until the test process ends."""
        self.close()


