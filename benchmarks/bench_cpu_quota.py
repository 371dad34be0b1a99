"""What a fork bomb in a sandboxed kernel leaves of the machine, with the CPU quota and without it.

One kernel, graded as `jaxpath grade` runs it (worker.run_task, at this host's best level), runs the hostile
corpus's fork bomb for one cell limit. Meanwhile a probe process (an ordinary program of the grader's side)
spins for the same time and reports the CPU time it got, and the machine's run queue (`procs_running` of
/proc/stat) is sampled. Two rounds, side by side in one run: the quota as `course.toml` sets it (`cpu_cores`
= 1), and no cpu cgroup at all (the kernel's cgroup made without the cpu controller: what every kernel got
before the quota, and what it gets on a host without a writable cpu controller). A benchmark, not a test:
the numbers depend on the machine. On a cgroup v2 host whose subtree already enables `cpu`, the second
round cannot drop it and measures the quota again.

The kernel's autogroup matters as much as the cgroup: bubblewrap starts each kernel in a new session, and
where the kernel's `sched_autogroup_enabled` is 1 a session is one scheduling group, so even without a quota
a bomb competes as one group, not as 500 processes. Servers often run with autogroup off (or the grader in a
cgroup of its own, where autogroup does not apply). As root the bench runs both settings, autogroup as found
and off, and puts the setting back at the end.

    .venv/bin/python benchmarks/bench_cpu_quota.py [--seconds 20] [--rounds 2]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time

import nbformat

from jaxpath.grade import Limits, isolation, sandbox_problem
from jaxpath.grade.isolation import host_level
from jaxpath.grade.tasks import Task
from jaxpath.grade.worker import run_task

FORK_BOMB = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
PROBE = """import os, sys, time
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    pass
t = os.times()
print(t.user + t.system)
"""


def run_queue() -> int:
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("procs_running"):
                return int(line.split()[1])
    return 0


def without_cpu_controller():
    """The host's cgroup facts with the cpu controller taken out (v1: not mounted for jaxpath; v2: not offered)."""
    real = isolation.cgroups

    def facts():
        f = dict(real())
        f["v1_cpu"] = None
        f["v2_controllers"] = [c for c in f.get("v2_controllers") or [] if c != "cpu"]
        return f
    return facts


def one_round(quota: bool, seconds: int) -> dict:
    """The probe's share of a core and the run queue while the bomb runs, its kernel under a one-core quota or
    in no cpu cgroup."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell(FORK_BOMB)])
    limits = Limits(cell_timeout=seconds, notebook_timeout=seconds * 4, cpu_cores=1.0, pids=512)
    task = Task("bench/s/fork_bomb", nbformat.writes(nb), limits=limits, isolation=host_level().name)
    queue, done = [], threading.Event()
    result = {}

    def grade():
        result["r"] = run_task(task)
        done.set()

    real = isolation.cgroups
    if not quota:
        isolation.cgroups = without_cpu_controller()
    try:
        threading.Thread(target=grade, daemon=True).start()
        return _measure(done, queue, result, seconds, quota)
    finally:
        isolation.cgroups = real


def _measure(done, queue, result, seconds, quota) -> dict:
    # The kernel starts (seconds of Python); the bomb then runs for `seconds`: the probe starts once the run queue
    # shows it (more runnable processes than cores), so it measures the bomb and not the kernel's start.
    while not done.is_set() and run_queue() <= (os.cpu_count() or 1):
        time.sleep(0.2)
    window = max(1, seconds // 2)
    probe = subprocess.Popen([sys.executable, "-c", PROBE, str(window)], stdout=subprocess.PIPE, text=True)
    while probe.poll() is None:
        queue.append(run_queue())
        time.sleep(0.5)
    cpu = float(probe.stdout.read().strip() or 0)
    done.wait()
    r = result["r"]
    return {"quota": quota, "probe share": cpu / window, "run queue max": max(queue or [0]),
            "run queue mean": sum(queue) / max(1, len(queue)), "status": str(r.status), "reason": r.reason,
            "isolation": r.isolation}


AUTOGROUP = "/proc/sys/kernel/sched_autogroup_enabled"


def autogroup_settings() -> list[str]:
    """The autogroup settings to measure: as found, and off too where this process may set it."""
    try:
        found = open(AUTOGROUP).read().strip()
    except OSError:
        return ["n/a"]
    return [found, "0"] if found != "0" and os.access(AUTOGROUP, os.W_OK) else [found]


def set_autogroup(value: str) -> None:
    if value != "n/a":
        with open(AUTOGROUP, "w") as f:
            f.write(value)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=20, help="the bomb's cell limit")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    if sandbox_problem():
        sys.exit(f"no sandbox here: {sandbox_problem()}")
    ncpu = os.cpu_count() or 1
    print(f"{ncpu} cores, level {host_level().name}; probe: a busy loop for half the bomb's cell limit")
    settings = autogroup_settings()
    try:
        for setting in settings:
            set_autogroup(setting)
            print(f"autogroup {'on' if setting == '1' else 'off' if setting == '0' else setting}:")
            measure(args)
    finally:
        set_autogroup(settings[0])


def measure(args) -> None:
    rows = []
    for k in range(args.rounds):  # interleaved, so a change in the machine's load falls on both sides
        for quota in (True, False):
            row = one_round(quota, args.seconds)
            rows.append(row)
            side = "one-core quota" if quota else "no cpu cgroup"
            print(f"  round {k + 1}, {side}: the probe got {row['probe share']:.2f} of a core; run queue "
                  f"max {row['run queue max']}, mean {row['run queue mean']:.1f}; {row['status']} ({row['reason']})")
    quota = [r["probe share"] for r in rows if r["quota"]]
    lifted = [r["probe share"] for r in rows if not r["quota"]]
    ratio = (sum(quota) / len(quota)) / max(1e-9, sum(lifted) / len(lifted))
    print(f"  probe's share of a core: with the quota {min(quota):.2f}-{max(quota):.2f}, without "
          f"{min(lifted):.2f}-{max(lifted):.2f}; ratio of means {ratio:.1f}x")


if __name__ == "__main__":
    main()
