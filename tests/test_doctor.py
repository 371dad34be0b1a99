"""`jaxpath doctor` on this machine as root, as an ordinary account, and with bubblewrap hidden from PATH: the
level it names is the one `jaxpath grade` would use, and its exit status says whether grading can run isolated."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import as_user
import pytest

from jaxpath.grade.doctor import doctor
from jaxpath.grade.isolation import probe

pytestmark = [pytest.mark.skipif(sys.platform != "linux", reason="isolation is Linux's"),
              pytest.mark.slow]  # each starts the CLI (imports jaxpath and nbgrader: seconds each)
JAXPATH = str(Path(sys.executable).with_name("jaxpath"))
BWRAP = shutil.which("bwrap")
# What this machine is, read independently of the probe: root; cgroup v1 memory and pids directories.
V1_HERE = all(Path(f"/sys/fs/cgroup/{c}/cgroup.procs").exists() for c in ("memory", "pids"))


def _doctor_json(result: subprocess.CompletedProcess) -> dict:
    start = result.stdout.index("{")
    return json.loads(result.stdout[start:])


def _no_bwrap_path(tmp_path: Path) -> str:
    """A PATH with everything doctor looks for except bubblewrap."""
    bindir = tmp_path / "bin"
    bindir.mkdir(parents=True)
    os.chmod(tmp_path, 0o755)
    os.chmod(bindir, 0o755)
    for tool in ("prlimit", "setpriv", "sh"):
        found = shutil.which(tool)
        if found:
            (bindir / tool).symlink_to(found)
    return f"{Path(sys.executable).parent}:{bindir}"


@pytest.mark.skipif(os.geteuid() != 0 or BWRAP is None, reason="needs root and bubblewrap")
def test_doctor_as_root(tmp_path):
    r = doctor()
    assert r.ok and r.level.namespaces == "root"
    assert r.level.resources == ("cgroup-v1" if V1_HERE else r.level.resources)
    names = {c.name: c for c in r.checks}
    assert names["user"].ok and "root" in names["user"].detail
    assert names["namespaces"].ok and names["cgroup v1"].ok == V1_HERE
    cli = subprocess.run([JAXPATH, "doctor"], capture_output=True, text=True, cwd=tmp_path)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert f"isolation level: {r.level.name}" in cli.stdout
    # Withholding cgroups: the level is still isolated, and named as the weaker one it is.
    withheld = subprocess.run([JAXPATH, "doctor", "--json", "--isolation", "root+rlimits"], capture_output=True,
                              text=True, cwd=tmp_path)
    data = _doctor_json(withheld)
    assert withheld.returncode == 0 and data["level"] == "root+rlimits" and "weaker" in data["description"]
    if V1_HERE:  # the cgroups were withheld, not missing: the way up is to stop withholding them
        assert data["raise_by"][0].startswith("this host gives root+cgroup-v1"), data["raise_by"]


@pytest.mark.skipif(os.geteuid() != 0 or BWRAP is None, reason="needs root and bubblewrap")
def test_doctor_with_bwrap_hidden_from_path(tmp_path):
    cli = subprocess.run([JAXPATH, "doctor", "--json"], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PATH": _no_bwrap_path(tmp_path)})
    assert cli.returncode == 1, cli.stdout + cli.stderr
    data = _doctor_json(cli)
    assert data["level"] is None and not data["ok"]
    assert "bubblewrap is not installed" in data["problem"] and "apt-get install bubblewrap" in data["problem"]
    checks = {c["name"]: c for c in data["checks"]}
    assert not checks["bubblewrap"]["ok"] and checks["util-linux"]["ok"]
    plain = subprocess.run([JAXPATH, "doctor"], capture_output=True, text=True, cwd=tmp_path,
                           env={**os.environ, "PATH": _no_bwrap_path(tmp_path / "again")})
    assert plain.returncode == 1 and "no isolation" in plain.stdout and "--no-sandbox" in plain.stdout


@pytest.mark.skipif(as_user.can_run() is not None or BWRAP is None, reason=f"{as_user.can_run()}")
def test_doctor_as_an_ordinary_user(tmp_path):
    os.chmod(tmp_path, 0o755)
    with as_user.ordinary_user() as user:
        cli = user.run([JAXPATH, "doctor", "--json"], cwd=user.home)
        hidden = user.run([JAXPATH, "doctor", "--json"], cwd=user.home, env={"PATH": _no_bwrap_path(tmp_path)})
    assert cli.returncode in (0, 1), cli.stderr
    data = _doctor_json(cli)
    checks = {c["name"]: c for c in data["checks"]}
    assert "not root" in checks["user"]["detail"]
    userns = Path("/proc/sys/user/max_user_namespaces").read_text().strip() != "0"
    if userns and probe().bwrap_works:  # this machine: unprivileged user namespaces work
        assert cli.returncode == 0 and data["level"] == "rootless+rlimits", data
        assert checks["namespaces"]["ok"]
        assert not checks["cgroup v1"]["ok"] and "not writable" in checks["cgroup v1"]["detail"]
        assert any("as root" in h for h in data["raise_by"]) and any("Delegate=yes" in h for h in data["raise_by"])
    assert hidden.returncode == 1 and _doctor_json(hidden)["level"] is None


def test_the_report_serializes():
    r = doctor()
    data = json.loads(json.dumps(r.to_dict()))
    assert data["ok"] == r.ok and data["level"] == (r.level.name if r.level else None)
    assert {c["name"] for c in data["checks"]} >= {"user", "bubblewrap", "cgroup v1", "cgroup v2", "python"}
