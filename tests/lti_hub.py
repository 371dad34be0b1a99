"""The hub's LTI launch without accounts or a browser: deploy/jupyterhub_config.py with an [lti] table, run by a
real `jupyterhub` (tests/lti_hub_config.py: no formgrader services, no proxy), and a launch driven as a browser
drives it, with requests: the platform's login initiation form posted to the hub, the hub's redirect to the
platform's /auth followed, the auto-submitted form of id_token and state posted back. Fast: no server is started."""
from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from html import unescape
from pathlib import Path

from jupyterhub.proxy import Proxy

from jaxpath.classroom.hub import load_settings
from jaxpath.classroom.hub.setup import free_port, hub_data
from jaxpath.files import private_temp_dir

HERE = Path(__file__).resolve().parent
READY_S = 120
"""A guard against a hang, not a measure: the hub answers in a few seconds."""


class NullProxy(Proxy):
    """A proxy that routes nothing: the tests talk to the hub on its own port."""
    should_start = False

    async def add_route(self, routespec, target, data):
        pass

    async def delete_route(self, routespec):
        pass

    async def get_all_routes(self):
        return {}


def settings_text(state: Path, course: Path, platform, port: int, users: dict[str, str]) -> str:
    mapped = "\n".join(f'"{sub}" = "{account}"' for sub, account in users.items())
    return f"""
[hub]
url = "http://127.0.0.1:{port}"
state = "{state}"

{platform.lti_table()}
[lti.users]
{mapped}

[[course]]
id = "demo"
directory = "{course}"
account = "jxl-demo"
instructors = ["jxl-ins"]
graders = ["jxl-grader"]
students = ["jxl-s1", "jxl-s2"]
lti_context = "ctx-demo"
lti_lineitems = "{platform.lineitems_url('ctx-demo')}"

[[course]]
id = "warmup"
directory = "{course.parent / 'warmup'}"
account = "jxl-warmup"
instructors = ["jxl-ins"]
students = ["jxl-s2"]
lti_context = "ctx-warmup"
"""


USERS = {"sub-s1": "jxl-s1", "sub-s2": "jxl-s2", "sub-ins": "jxl-ins", "sub-grader": "jxl-grader"}


@dataclass
class LaunchResult:
    status: int
    text: str
    location: str
    cookies: dict


@dataclass
class RunningHub:
    url: str
    state: Path
    log: Path
    platform: object

    @property
    def login_url(self) -> str:
        return f"{self.url}/hub/lti13/oauth_login"

    @property
    def launch_url(self) -> str:
        return f"{self.url}/hub/lti13/oauth_callback"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def authenticate(self, **launch) -> tuple[object, dict]:
        """The login initiation and the platform's authentication: (the browser's session, the form of id_token and
        state that the platform's page would post to the hub)."""
        import requests

        s = requests.Session()
        r = s.post(self.login_url, data=self.platform.launch_form(self.login_url, f"{self.url}/hub/", **launch),
                   allow_redirects=False)
        assert r.status_code == 302, (r.status_code, r.text[:2000])
        page = s.get(r.headers["Location"], allow_redirects=False)
        assert page.status_code == 200, (page.status_code, page.text[:2000])
        fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', page.text))
        return s, {k: unescape(v) for k, v in fields.items()}

    def post_launch(self, session, form: dict, cookies: dict | None = None) -> LaunchResult:
        if cookies is not None:
            session.cookies.clear()
            for k, v in cookies.items():
                session.cookies.set(k, v)
        r = session.post(self.launch_url, data=form, allow_redirects=False)
        return LaunchResult(r.status_code, r.text, r.headers.get("Location", ""), session.cookies.get_dict())

    def launch(self, **launch) -> LaunchResult:
        session, form = self.authenticate(**launch)
        return self.post_launch(session, form)


@contextlib.contextmanager
def lti_hub(tmp_path: Path, platform):
    """The hub of two courses (demo: an instructor, a grader, two students; warmup: the instructor and the second
    student), with [lti] pointing at `platform`, running until the block ends."""
    state = private_temp_dir("ltihub")
    course = tmp_path / "courses" / "demo"
    for c in (course, course.parent / "warmup"):
        c.mkdir(parents=True)
        (c / "nbgrader_config.py").write_text("c = get_config()\n")
    port = free_port()
    settings_file = tmp_path / "deploy" / "hub.toml"
    settings_file.parent.mkdir()
    settings_file.write_text(settings_text(state, course, platform, port, USERS))
    settings = load_settings(settings_file)
    ports = {"hub": free_port(), "proxy_api": free_port(), "service:demo": free_port(), "service:warmup": free_port()}
    data = hub_data(settings, ports, {"students": "/s", "staff": "/t", "service": "/v"}, None)
    (state / "hub.json").write_text(json.dumps(data))
    hub_url = f"http://127.0.0.1:{ports['hub']}"
    platform.tool_launch_url = f"{hub_url}/hub/lti13/oauth_callback"
    log = state / "jupyterhub.log"
    proc = None
    try:
        with open(log, "w") as out:
            proc = subprocess.Popen([str(Path(sys.executable).parent / "jupyterhub"), "-f", str(HERE / "lti_hub_config.py"),
                                     "--JupyterHub.log_level=INFO"],
                                    cwd=state, env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
                                                    "JAXPATH_HUB_STATE": str(state), "LANG": "C.UTF-8", "HOME": str(state)},
                                    stdout=out, stderr=subprocess.STDOUT)
        _wait(hub_url, proc, log)
        yield RunningHub(hub_url, state, log, platform)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            shutil.copy(log, tmp_path / "jupyterhub.log")
        shutil.rmtree(state, ignore_errors=True)


def _wait(url: str, proc, log: Path) -> None:
    """Until the hub's API answers (the hub binds its port once it is ready), or the hub has exited."""
    import requests

    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"jupyterhub exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            if requests.get(f"{url}/hub/api/", timeout=5).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"the hub did not answer within {READY_S} s:\n{log.read_text()[-4000:]}")
