"""The hub as a process: `jupyterhub -f deploy/jupyterhub_config.py` as root, which starts the proxy
(configurable-http-proxy), one server per person who logs in (as that person) and the formgrader services
(as the course accounts), all on loopback; ready when its API answers and every formgrader service does.

Where this Python lives under a folder other accounts cannot enter (pyenv in root's home, mode 0700, as on the
machine this course is built on), nobody's server could start. Rather than opening that folder, the hub then
runs in a private mount namespace in which that folder is replaced by one that holds only the Python
installation (as tests/as_user.py does for one command): every process the hub starts inherits it, and
nothing else of the folder is visible to anyone. Whether it must, and which folder, `setup.python_view` decides
before anything is made (it is in hub.json); `hub_command` builds the namespace from it."""
from __future__ import annotations

import http.client
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

from .setup import HUB_CONFIG, HubSetupError, Prepared


def hub_command(data: dict) -> list[str]:
    argv = [str(Path(sys.prefix) / "bin" / "jupyterhub"), "-f", str(HUB_CONFIG)]
    view = data.get("python_view")
    if not view:
        return argv
    return in_view(argv, Path(view["view"]), Path(view["hidden"]), Path(view["python"]), "hub")


def in_view(argv: list[str], stand_in: Path, hidden: Path, python: Path, name: str) -> list[str]:
    """argv run in a private mount namespace where `hidden` (a folder other accounts cannot enter) is replaced by
    `stand_in`, an empty folder that holds only a bind of `python` (the installation under `hidden`)."""
    inner = stand_in / python.relative_to(hidden)
    inner.mkdir(parents=True, exist_ok=True)
    d = inner
    while True:
        os.chmod(d, 0o755)
        if d == stand_in:
            break
        d = d.parent
    script = 'set -e; mount --bind "$1" "$2"; mount --rbind "$3" "$4"; shift 4; exec "$@"'
    return [shutil.which("unshare"), "--mount", "--propagation", "private", "--", shutil.which("sh"), "-c", script,
            name, str(python), str(inner), str(stand_in), str(hidden), *argv]


def _get(url: str, timeout: float = 5) -> tuple[int, dict]:
    """(status, headers) of a GET that follows no redirect; (0, {}) when nothing answers."""
    u = urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=timeout)
    try:
        conn.request("GET", u.path + (f"?{u.query}" if u.query else ""))
        r = conn.getresponse()
        r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}
    except OSError:
        return 0, {}
    finally:
        conn.close()


class Hub:
    """The running hub. `start()` returns once it serves logins and every course's formgrader answers."""

    def __init__(self, prepared: Prepared, log: Path | None = None):
        self.prepared = prepared
        self.data = prepared.hub_data()
        self.url = self.data["url"]
        self.state = Path(self.data["state"])
        self.log_path = log or self.state / "jupyterhub.log"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 300) -> "Hub":
        env = {"PATH": f"{self.data['path']}:/usr/sbin:/sbin", "LANG": "C.UTF-8", "HOME": "/root",
               "JAXPATH_HUB_STATE": str(self.state)}
        self._log = open(self.log_path, "a")
        # SIGINT back to its default: a parent that ignored it (a shell's background job) would pass that on to
        # every server, and JupyterHub stops servers with SIGINT first
        self.proc = subprocess.Popen(hub_command(self.data), cwd=self.state, env=env, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _waiting_for(self) -> list[str]:
        """What does not answer yet: the hub's API, then each course's formgrader service."""
        status, _ = _get(f"{self.url}/hub/api/")
        if status != 200:
            return ["the hub"]
        missing = []
        for c in self.data["courses"]:
            # the service's Jupyter server answers its version to anyone (the hub would say 404 or 503)
            status, headers = _get(f"{self.url}/services/{c['id']}/api")
            if status != 200 or "json" not in headers.get("content-type", ""):
                missing.append(f"the formgrader of {c['id']}")
        return missing

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        waiting = ["the hub"]
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise HubSetupError(f"jupyterhub exited with {self.proc.returncode}: {self.log_tail()}")
            waiting = self._waiting_for()
            if not waiting:
                return
            time.sleep(0.25)
        raise HubSetupError(f"{', '.join(waiting)} did not answer within {timeout:.0f} s: {self.log_tail()}")

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM: the hub stops every server, the services and the proxy; what is left after `timeout`
        (a hub killed hard leaves its proxy and servers) is killed."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
        for pid in self.leftovers():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        (self.state / "proxy.pid").unlink(missing_ok=True)
        if getattr(self, "_log", None):
            self._log.close()

    def leftovers(self) -> list[int]:
        """Processes this hub started that outlived it (only after a hub killed hard): the proxy, and every
        server and service, which carry this hub's API address in their environment."""
        api = f"JUPYTERHUB_API_URL=http://127.0.0.1:{self.data['ports']['hub']}/hub/api".encode()
        proxy = str(self.data["ports"]["proxy_api"]).encode()
        found = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit() or int(d.name) == os.getpid():
                continue
            try:
                cmd = (d / "cmdline").read_bytes()
                if (b"configurable-http-proxy" in cmd and b"--api-port\0" + proxy + b"\0" in cmd + b"\0") or \
                        api in (d / "environ").read_bytes().split(b"\0"):
                    found.append(int(d.name))
            except OSError:
                continue
        return found

    def __enter__(self) -> "Hub":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def describe(prepared: Prepared) -> list[str]:
    """What a person needs to know: the URL, who is who, and the passwords of the accounts jaxpath hub made."""
    data = prepared.hub_data()
    lti = data.get("lti")
    how = "log in with your account's password" if not lti else f"people arrive from the LMS: {lti['issuer']}"
    lines = [f"the hub: {data['url']}  ({how})"]
    if lti:
        hub = f"{data['url']}/hub/lti13"
        lines.append(f"  for the LMS's tool registration: login initiation URL {hub}/oauth_login, redirect (launch) URL "
                     f"{hub}/oauth_callback, target link URI {data['url']}/hub/; the tool's public key: `jaxpath lti key`")
        unlinked = [p for p in data["people"] if p not in lti["users"].values()]
        if unlinked:
            lines.append(f"  no LMS user yet ([lti.users]), so they cannot arrive: {', '.join(unlinked)}")
    for c in data["courses"]:
        lines.append(f"course {c['id']} ({c['title']}): {c['directory']}, owned by {c['account']}")
        lines.append(f"  formgrader: {data['url']}/services/{c['id']}/formgrader  (instructors and graders)")
        if c.get("lti_context"):
            lines.append(f"  the LMS course: {c['lti_context']}")
        for role in ("instructors", "graders", "students"):
            if c[role]:
                lines.append(f"  {role}: " + ", ".join(f"{n} (password {prepared.passwords[n]})"
                                                        if n in prepared.passwords and not lti else n for n in c[role]))
    lines.append(f"exchange: {data['exchange']}; the hub's log: {Path(data['state']) / 'jupyterhub.log'}")
    return lines


__all__ = ["Hub", "describe", "hub_command", "in_view"]
