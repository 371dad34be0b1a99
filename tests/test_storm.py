"""The deadline storm, small: 12 real accounts submit through the exchange in the same minute (some twice, some
late, one forging its time) while the instructor collects in a loop; two graders share one PostgreSQL gradebook;
the faults (the collector killed mid-copy, a grader killed mid-batch, PostgreSQL killed and restarted) and the
reruns; every student fetches their feedback. Each fault waits for its process to reach a named checkpoint
(jaxpath.faults: a named pipe), never for a time. The counts are exact (docs/storm.md)."""
import json
import os
import pwd
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.grade, pytest.mark.full]
BIN = Path(sys.executable).parent


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "the storm makes accounts: it needs root"
    for tool in ("useradd", "userdel", "setpriv", "runuser", "unshare"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "PostgreSQL is not installed (Debian: apt-get install postgresql)"
    return None


@pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))
def test_a_storm_of_twelve_with_faults_loses_nothing(tmp_path):
    t = time.time()
    p = subprocess.run([BIN / "jaxpath", "storm", "--students", "12", "--graders", "2", "--faults", "--out", tmp_path],
                       capture_output=True, text=True, timeout=900)
    seconds = time.time() - t
    assert p.returncode == 0, p.stdout[-6000:] + p.stderr[-3000:]
    n = json.loads((tmp_path / "report.json").read_text())
    # 12 students: 7 submit once, 2 twice, 1 on time and again late, 1 only late, 1 only late claiming on time
    assert n["submitted"] == 15 and n["on-time submits"] == 12 and n["late submits"] == 3
    assert n["exchange entries"] == 15
    assert n["collected"] == 12 and n["graded"] == 12 and n["fed back"] == 12
    assert n["lost"] == 0 and n["duplicated"] == 0 and n["mismatched"] == 0 and n["lateness wrong"] == 0
    assert n["late (counted)"] == 2, "the late one and the forger, not the on-time resubmitter"
    assert n["leftovers in submitted/"] == 0
    assert n["collector killed mid-copy"] is True
    assert n["graders ended by the faults"] >= 1
    assert n["graded before the faults"] + n["graded by the reruns"] == 12, "each notebook graded once"
    assert n["accounts removed"] == 12
    assert not [e.pw_name for e in pwd.getpwall() if "jaxpath-storm-" in e.pw_dir], "accounts left behind"
    assert (tmp_path / "storm.svg").read_text().startswith("<svg")
    print(f"the 12-student storm with faults took {seconds:.0f} s")
