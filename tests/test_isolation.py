"""The isolation layers without a kernel: reading the host (mountinfo, /proc/self/cgroup), choosing the level
from facts, the cgroup v2 code path against a temporary directory laid out like a v2 subtree (files
written, their order, memory.events, cgroup.kill and the procs-list fallback with a real process), the
cgroup v1 files, the rlimits, the rootless bwrap command, and the end of a rootless pid namespace."""
from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from jaxpath.grade.isolation import Level, SandboxUnavailable, choose, improvements
from jaxpath.grade.isolation.bwrap import UNPRIVILEGED_ID, PidNamespace, bwrap_command, sandbox_env
from jaxpath.grade.isolation.cgfs import CgroupFS
from jaxpath.grade.isolation.cgroup_v1 import CgroupV1
from jaxpath.grade.isolation.cgroup_v2 import GRADER_LEAF, CgroupV2, events
from jaxpath.grade.isolation.probe import HostFacts, parse_mountinfo, parse_proc_cgroup, probe_cgroups
from jaxpath.grade.isolation.rlimits import MIN_ADDRESS_SPACE_MB, prlimit_args
from jaxpath.grade.limits import Limits

LIMITS = Limits(memory_mb=1024, pids=128)

# /proc/self/mountinfo of this machine's kind (v1 controllers, v2 without them) and of a v2-only host.
HYBRID = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
UNIFIED = """\
25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
33 25 0:28 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
"""


def test_mountinfo_and_proc_cgroup_are_read():
    mounts = {str(m.path): m for m in parse_mountinfo(HYBRID)}
    assert mounts["/sys/fs/cgroup/memory"].controllers == ("memory",)
    assert mounts["/sys/fs/cgroup/systemd"].controllers == ()  # a named hierarchy, no controller
    assert mounts["/sys/fs/cgroup/unified"].fstype == "cgroup2"
    assert "/sys/fs/cgroup" not in mounts  # the tmpfs holding them is not a cgroup
    assert [m.fstype for m in parse_mountinfo(UNIFIED)] == ["cgroup2"]
    scope = "/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope"
    own = parse_proc_cgroup(f"4:memory:/process_api/abc\n8:pids:/\n0::{scope}\n")
    assert own == {"memory": "/process_api/abc", "pids": "/", "": scope}


def _v2_tree(root: Path, controllers="cpuset cpu io memory pids", subtree="", procs="") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (root / "cgroup.subtree_control").write_text(subtree + "\n")
    (root / "cgroup.procs").write_text(procs)
    return root


def test_cgroup_facts_of_a_v2_only_host_as_root_and_in_a_delegated_scope(tmp_path):
    mountinfo = UNIFIED.replace("/sys/fs/cgroup", str(tmp_path))
    _v2_tree(tmp_path)
    f = probe_cgroups(mountinfo, "0::/\n", euid=0, try_write=lambda p: True)
    assert f["v1"] == {} and not f["v1_writable"]
    assert f["v2_base"] == str(tmp_path) and "memory" in f["v2_controllers"] and f["v2_writable"]
    scope = _v2_tree(tmp_path / "user.slice/user@1000.service/app.slice/grader.scope", procs="4242\n")
    f = probe_cgroups(mountinfo, "0::/user.slice/user@1000.service/app.slice/grader.scope\n", euid=1000,
                      try_write=lambda p: True)
    assert f["v2_base"] == str(scope) and f["v2_writable"]  # this test's user owns the files: "delegated"
    facts = _facts(euid=1000, **f)
    assert choose(facts).name == "rootless+cgroup-v2"
    f = probe_cgroups(mountinfo, "0::/user.slice/user@1000.service/app.slice/grader.scope\n", euid=1000,
                      try_write=lambda p: False)  # not delegated
    assert choose(_facts(euid=1000, **f)).name == "rootless+rlimits"


def _facts(**kw) -> HostFacts:
    base = dict(platform="linux", euid=0, user="u", python=sys.executable, python_prefixes=(sys.prefix,),
                bwrap="/usr/bin/bwrap", bwrap_version="bubblewrap 0.8.0", setpriv="/usr/bin/setpriv",
                prlimit="/usr/bin/prlimit", userns_max=1000)
    return HostFacts(**{**base, **kw})


V1 = dict(v1={"memory": "/sys/fs/cgroup/memory", "pids": "/sys/fs/cgroup/pids"}, v1_writable=True)
V2 = dict(v2_mount="/sys/fs/cgroup", v2_base="/sys/fs/cgroup", v2_controllers=("memory", "pids"), v2_writable=True)


@pytest.mark.parametrize("kw, name", [
    (dict(**V1), "root+cgroup-v1"),
    (dict(**V2), "root+cgroup-v2"),
    (dict(**V1, **V2), "root+cgroup-v1"),
    (dict(), "root+rlimits"),
    (dict(v1={"memory": "/m"}, v1_writable=True), "root+rlimits"),  # pids is missing
    (dict(euid=1000), "rootless+rlimits"),
    (dict(euid=1000, v1=V1["v1"], v1_writable=False), "rootless+rlimits"),
    (dict(euid=1000, **V2), "rootless+cgroup-v2"),
])
def test_the_level_is_the_best_the_facts_give(kw, name):
    level = choose(_facts(**kw))
    assert level.name == name and Level.parse(name) == level
    assert level.describe()
    assert ("weaker" in level.describe()) == level.rlimits_only


@pytest.mark.parametrize("kw, words", [
    (dict(bwrap=None), ["apt-get install bubblewrap"]),
    (dict(platform="darwin"), ["Linux"]),
    (dict(euid=1000, bwrap_error="setting up uid map: Permission denied", userns_max=0), ["max_user_namespaces"]),
    (dict(euid=1000, bwrap_error="No permissions to creating new namespace", userns_clone=0),
     ["unprivileged_userns_clone=1"]),
    (dict(euid=1000, bwrap_error="setting up uid map: Permission denied", apparmor_userns=1), ["AppArmor"]),
    (dict(bwrap_error="Creating new namespace failed: Operation not permitted"), ["CAP_SYS_ADMIN"]),
    (dict(prlimit=None), ["util-linux"]),
])
def test_no_namespace_layer_refuses_in_one_sentence_saying_what_to_do(kw, words):
    with pytest.raises(SandboxUnavailable) as e:
        choose(_facts(**kw))
    text = str(e.value)
    assert text.count(". ") == 0 and all(w in text for w in words), text
    assert improvements(_facts(**kw), None)


def test_a_wanted_level_is_given_only_where_the_host_gives_it():
    assert choose(_facts(**V1), "root+rlimits").name == "root+rlimits"  # cgroups withheld
    assert choose(_facts(**V1), "none").name == "none"
    for facts, want in ((_facts(), "root+cgroup-v1"), (_facts(**V1), "rootless+rlimits"),
                        (_facts(euid=1000), "root+rlimits"), (_facts(), "root+cgroup-v3")):
        with pytest.raises(SandboxUnavailable):
            choose(facts, want)
    assert improvements(_facts(**V1), choose(_facts(**V1))) == []  # the top
    hints = " ".join(improvements(_facts(euid=1000), choose(_facts(euid=1000))))
    assert "Delegate=yes" in hints and "as root" in hints


class Recording(CgroupFS):
    """The real file operations on a temporary directory, recorded in order, with the two things the cgroup
    file system does by itself: a new cgroup has its interface files, and cgroup.kill empties cgroup.procs."""

    def __init__(self, root: Path, kill_file: bool = True):
        self.root, self.ops, self.kill_file = root, [], kill_file

    def _rel(self, p: Path) -> str:
        return str(p.relative_to(self.root))

    def mkdir(self, path):
        self.ops.append(("mkdir", self._rel(path)))
        fresh = not path.exists()
        super().mkdir(path)
        if fresh:
            names = ["cgroup.procs", "cgroup.subtree_control", "memory.max", "memory.swap.max", "memory.oom.group",
                     "pids.max", "memory.events", "pids.events"] + (["cgroup.kill"] if self.kill_file else [])
            for name in names:
                (path / name).write_text("")
            # what the parent enabled for its children is what a new cgroup offers, and has the files of
            parent = path.parent / "cgroup.subtree_control"
            enabled = parent.read_text().split() if parent.exists() else []
            (path / "cgroup.controllers").write_text(" ".join(enabled))
            if "cpu" in enabled:
                (path / "cpu.max").write_text("")

    def rmdir(self, path):
        self.ops.append(("rmdir", self._rel(path)))
        for f in path.iterdir():  # the kernel's interface files are not "contents"
            f.unlink()
        super().rmdir(path)

    def write(self, path, text):
        self.ops.append(("write", self._rel(path), text))
        if path.name == "cgroup.procs":  # a pid moves: append, as the kernel lists it
            with open(path, "a") as f:
                f.write(text + "\n")
            return
        if path.name == "cgroup.subtree_control":
            have = set(path.read_text().split())
            have |= {t[1:] for t in text.split() if t.startswith("+")}
            path.write_text(" ".join(sorted(have)))
            return
        super().write(path, text)
        if path.name == "cgroup.kill" and text == "1":
            (path.parent / "cgroup.procs").write_text("")


def test_cgroup_v2_as_root_writes_its_limits_before_anything_enters_and_kills_with_cgroup_kill(tmp_path):
    fs = Recording(_v2_tree(tmp_path / "cg"))
    cg = CgroupV2("jaxpath-sbx-1", LIMITS, fs.root, root=True, fs=fs)
    assert fs.ops == [
        ("write", "cgroup.subtree_control", "+memory +pids +cpu"),   # the root's children may limit memory, pids, CPU
        ("mkdir", "jaxpath"),
        ("write", "jaxpath/cgroup.subtree_control", "+memory +pids +cpu"),
        ("mkdir", "jaxpath/jaxpath-sbx-1"),
        ("write", "jaxpath/jaxpath-sbx-1/memory.max", str(1024 * 1024 * 1024)),
        ("write", "jaxpath/jaxpath-sbx-1/memory.swap.max", "0"),
        ("write", "jaxpath/jaxpath-sbx-1/memory.oom.group", "1"),
        ("write", "jaxpath/jaxpath-sbx-1/pids.max", "128"),
        ("write", "jaxpath/jaxpath-sbx-1/cpu.max", "100000 100000"),   # one core's time per wall second
    ]
    assert cg.cpu_quota
    # The kernel's shell enters it (a real shell, writing its own pid).
    subprocess.run(["sh", "-c", cg.enter_command()], check=True)
    procs = (cg.path / "cgroup.procs").read_text().split()
    assert len(procs) == 1 and procs[0].isdigit()
    assert not cg.oom_killed() and not cg.pids_hit()
    (cg.path / "memory.events").write_text("low 0\nhigh 0\nmax 31\noom 2\noom_kill 1\noom_group_kill 1\n")
    (cg.path / "pids.events").write_text("max 7\n")
    assert cg.oom_killed() and cg.pids_hit()
    n = len(fs.ops)
    cg.kill_all(deadline=10)
    assert fs.ops[n:] == [("write", "jaxpath/jaxpath-sbx-1/cgroup.kill", "1"), ("rmdir", "jaxpath/jaxpath-sbx-1")]
    # A second kernel: the subtree is ready, nothing is enabled twice.
    n = len(fs.ops)
    CgroupV2("jaxpath-sbx-2", LIMITS, fs.root, root=True, fs=fs)
    assert [op for op in fs.ops[n:] if "subtree_control" in op[1]] == []


def test_memory_events_parsing():
    assert events("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n")["oom_kill"] == 0
    e = events("low 1\nhigh 2\nmax 3\noom 4\noom_kill 5\n")
    assert (e["max"], e["oom"], e["oom_kill"]) == (3, 4, 5) and "oom_group_kill" not in e
    assert events("") == {} and events("garbage\noom_kill x\n") == {}


def test_cgroup_v2_in_a_delegated_scope_moves_the_grader_to_a_leaf_first(tmp_path):
    scope = _v2_tree(tmp_path / "grader.scope", controllers="memory pids", procs="111\n222\n")
    fs = Recording(scope)
    cg = CgroupV2("jaxpath-sbx-1", LIMITS, scope, root=False, fs=fs)
    assert fs.ops[:4] == [("mkdir", GRADER_LEAF), ("write", f"{GRADER_LEAF}/cgroup.procs", "111"),
                          ("write", f"{GRADER_LEAF}/cgroup.procs", "222"),
                          ("write", "cgroup.subtree_control", "+memory +pids")]  # only once no process is left
    assert cg.path == scope / "jaxpath-sbx-1" and ("write", "jaxpath-sbx-1/pids.max", "128") in fs.ops
    assert not cg.cpu_quota, "a scope that offers no cpu controller: no quota, nothing enabled that is not there"


def test_cgroup_v2_without_cgroup_kill_kills_every_listed_process(tmp_path):
    fs = Recording(_v2_tree(tmp_path / "cg"), kill_file=False)
    cg = CgroupV2("k", LIMITS, fs.root, root=True, fs=fs)
    sleeper = subprocess.Popen(["sleep", "1000"])
    (cg.path / "cgroup.procs").write_text(f"{sleeper.pid}\n")

    def read(path, _read=fs.read):  # the kernel drops a pid from cgroup.procs once the process is gone
        if path.name == "cgroup.procs" and sleeper.poll() is not None:
            path.write_text("")
        return _read(path)

    fs.read = read
    cg.kill_all(deadline=30)
    assert sleeper.wait(timeout=30) == -signal.SIGKILL
    assert not any(op[1].endswith("cgroup.kill") for op in fs.ops) and fs.ops[-1] == ("rmdir", "jaxpath/k")


def test_cgroup_v1_files(tmp_path):
    mounts = {c: str(tmp_path / c) for c in ("memory", "pids")}
    for p in mounts.values():
        Path(p).mkdir()
    fs = Recording(tmp_path)
    cg = CgroupV1("k", LIMITS, mounts, fs=fs)
    written = [op for op in fs.ops if op[0] == "write"]
    assert written == [("write", "memory/jaxpath/k/memory.limit_in_bytes", str(1024 * 1024 * 1024)),
                       ("write", "memory/jaxpath/k/memory.memsw.limit_in_bytes", str(1024 * 1024 * 1024)),
                       ("write", "pids/jaxpath/k/pids.max", "128")]
    (tmp_path / "memory/jaxpath/k/memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    assert cg.oom_killed()
    assert "memory/jaxpath/k/cgroup.procs" in cg.enter_command()


def test_cgroup_v1_cpu_quota_where_the_cpu_controller_is_mounted(tmp_path):
    mounts = {c: str(tmp_path / c) for c in ("memory", "pids", "cpu")}
    for p in mounts.values():
        Path(p).mkdir()
    fs = Recording(tmp_path)
    cg = CgroupV1("k", dataclasses.replace(LIMITS, cpu_cores=0.5), mounts, fs=fs)
    written = [op for op in fs.ops if op[0] == "write"]
    assert written[-2:] == [("write", "cpu/jaxpath/k/cpu.cfs_period_us", "100000"),
                            ("write", "cpu/jaxpath/k/cpu.cfs_quota_us", "50000")]
    assert cg.cpu_quota and "cpu/jaxpath/k/cgroup.procs" in cg.enter_command()


@pytest.mark.skipif(not (os.geteuid() == 0 and Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists()),
                    reason="needs root and cgroup v1's cpu controller")
def test_a_kernels_cgroup_on_this_host_carries_the_cpu_quota():
    """On this host, as resource_layer builds it: the shell that starts a kernel enters a cpu cgroup whose quota
    is the limit (a fork bomb then gets one core's time, not the machine's)."""
    from jaxpath.grade.isolation import Resources, host_level, resource_layer

    level = host_level()
    if level.resources is not Resources.CGROUP_V1:
        pytest.skip(f"this host's level is {level.name}")
    cg = resource_layer(level, f"jaxpath-test-cpu-{os.getpid()}", LIMITS)
    try:
        assert cg.cpu_quota
        out = subprocess.run(["sh", "-c", f"{cg.enter_command()}; cat /proc/self/cgroup"], check=True,
                             capture_output=True, text=True).stdout
        line = next(l for l in out.splitlines() if ":cpu" in l.split(":")[1].split(",") or "cpu" in l.split(":")[1].split(","))
        assert line.endswith(f"/jaxpath/jaxpath-test-cpu-{os.getpid()}"), line
        assert (cg.paths[2] / "cpu.cfs_quota_us").read_text().strip() == "100000"
    finally:
        cg.kill_all(deadline=30)


def test_rlimits_and_the_rootless_command():
    assert "--as=" not in " ".join(prlimit_args(LIMITS, Level.parse("root+cgroup-v1")))
    assert f"--as={MIN_ADDRESS_SPACE_MB * 1024 * 1024}" in prlimit_args(LIMITS, Level.parse("root+rlimits"))  # JAX needs 2 GiB
    big = dataclasses.replace(LIMITS, memory_mb=4096)
    assert f"--as={4096 * 1024 * 1024}" in prlimit_args(big, Level.parse("root+rlimits"))
    assert "--nproc=128" in prlimit_args(LIMITS, Level.parse("root+rlimits"))
    work, sock = Path("/tmp/w"), Path("/tmp/s")
    rootless = bwrap_command(work, sock, -1, LIMITS, {}, level=Level.parse("rootless+rlimits"))
    assert {"--unshare-user", "--disable-userns"} <= set(rootless) and "setpriv" not in rootless
    assert rootless[rootless.index("--uid") + 1] == str(UNPRIVILEGED_ID)
    root = bwrap_command(work, sock, 61003, LIMITS, {}, level=Level.parse("root+cgroup-v1"))
    assert "--unshare-user" not in root and "--reuid=61003" in root
    assert sandbox_env(level=Level.parse("root+rlimits"))["MALLOC_ARENA_MAX"] == "2"
    assert "MALLOC_ARENA_MAX" not in sandbox_env(level=Level.parse("root+cgroup-v1"))


@pytest.mark.skipif(shutil.which("bwrap") is None or sys.platform != "linux", reason="needs bubblewrap")
def test_a_pid_namespace_dies_with_everything_in_it():
    """A real bwrap pid namespace with a double-forked, session-leading background process: killing its init
    ends all of it, and the wait is for that event (init gone), not for a time."""
    cmd = ["bwrap", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--unshare-pid", "--die-with-parent"]
    if os.geteuid() != 0:
        cmd += ["--unshare-user"]
    # "started" comes from the inner shell once it has forked both sleeps: every process exists when it is read
    outer = subprocess.Popen(cmd + ["sh", "-c", "setsid sh -c 'sleep 1000 & sleep 1000 & echo started; wait' & exec sleep 1000"],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert outer.stdout.readline().strip() == "started"
        ns = PidNamespace()
        assert ns.found(outer.pid)
        init = ns.init[0]
        inside = os.readlink(f"/proc/{init}/ns/pid")
        members = [int(d) for d in os.listdir("/proc") if d.isdigit() and _ns(d) == inside]
        assert len(members) >= 4  # init, the shell's sleep, the setsid shell and its sleeps
        assert ns.kill(deadline=60)
        # init itself stays a zombie until bwrap reaps it (when depends on the load): a zombie is dead, so only
        # live processes count
        assert not [d for d in os.listdir("/proc") if d.isdigit() and _ns(d) == inside and _alive(d)]
    finally:
        outer.kill()
        outer.wait()


def _alive(pid: str) -> bool:
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def _ns(pid: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def test_a_cache_pack_unpacks_once_and_only_on_the_same_kind_of_machine(tmp_path):
    from dataclasses import replace

    from jaxpath.grade import cachepack

    src = tmp_path / "cache"
    (src / "sub").mkdir(parents=True)
    (src / "a-cache").write_bytes(b"compiled program a")
    (src / "sub" / "b-cache").write_bytes(b"compiled program b")
    (src / ".warmed-01-abc").touch()  # the reference run's own marker is not part of the cache
    assert cachepack.pack(tmp_path / "missing") is None
    (tmp_path / "empty").mkdir()
    assert cachepack.pack(tmp_path / "empty") is None
    p = cachepack.pack(src)
    assert p.entries == 2 and p.host == cachepack.host_key()
    out = Path(cachepack.unpack(p, tmp_path / "w"))
    assert (out / "a-cache").read_bytes() == b"compiled program a"
    assert (out / "sub" / "b-cache").read_bytes() == b"compiled program b"
    assert not (out / ".warmed-01-abc").exists()
    assert oct((out / "a-cache").stat().st_mode & 0o777) == "0o644"
    (out / "a-cache").chmod(0o600)
    assert cachepack.unpack(p, tmp_path / "w") == str(out) and oct((out / "a-cache").stat().st_mode & 0o777) == "0o600"
    assert cachepack.unpack(replace(p, host="another-cpu"), tmp_path / "w2") is None
    assert not (tmp_path / "w2").exists()
    assert cachepack.pack(src).key == p.key  # the same content, the same folder
    (src / "a-cache").write_bytes(b"recompiled")
    assert cachepack.pack(src).key != p.key
