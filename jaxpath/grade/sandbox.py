"""Run a notebook's kernel where student code can reach nothing but a private copy of its own folder.

Built from what holds on these machines (see the project notes on isolation):
- bubblewrap: new mount, pid, network, ipc and uts namespaces; only /usr, the Python prefix and the
  virtual environment (read-only), the private work folder and the kernel's socket folder are visible;
- setpriv: the kernel runs as an unprivileged uid of its own (one per parallel slot), no capabilities,
  no new privileges;
- cgroup v1 memory and pids controllers: memory (files written to the tmpfs work folder included) and
  the number of processes and threads; every process left in the cgroup is killed at the end;
- rlimits (prlimit): CPU seconds, file size, processes of the uid, no core files.
The kernel talks ZeroMQ over ipc sockets in its socket folder, so it needs no network at all.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager

from ..errors import JaxpathError

CGROUP_ROOT = Path("/sys/fs/cgroup")
UID_BASE = 61000
UID_SLOTS = 64
WORKDIR = "/submission"
MAX_WRITTEN_FILES = 1000
"""Files a notebook writes that come back to autograded/ (with the file size limit, Limits.file_mb, for all)."""


class SandboxUnavailable(JaxpathError, RuntimeError):
    """Isolation cannot be built here; grading refuses unless the grader opts out explicitly."""


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 3072
    """Memory of everything the notebook starts, files in its work folder included (cgroup)."""
    pids: int = 512
    """Processes and threads together (JAX alone starts a few dozen threads)."""
    cpu_seconds: int = 600
    file_mb: int = 64
    tmp_mb: int = 256
    cell_timeout: int = 120
    notebook_timeout: int = 900


def sandbox_problem() -> str | None:
    """Why a sandbox cannot be built here, or None when it can."""
    if sys.platform != "linux":
        return "the sandbox needs Linux namespaces"
    if shutil.which("bwrap") is None:
        return "bubblewrap (`bwrap`) is not installed (Debian: apt-get install bubblewrap)"
    if shutil.which("setpriv") is None or shutil.which("prlimit") is None:
        return "util-linux's setpriv and prlimit are needed"
    if os.geteuid() != 0:
        return ("the grader is not root, so it cannot run student code as a separate user or set cgroup limits "
                "(run it as root, e.g. in its container)")
    for ctl in ("memory", "pids"):
        if not (CGROUP_ROOT / ctl).is_dir():
            return f"the cgroup v1 {ctl} controller is not mounted at {CGROUP_ROOT / ctl}"
    try:
        subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "true"],
                       check=True, capture_output=True, timeout=20)
    except (subprocess.SubprocessError, OSError) as e:
        detail = getattr(e, "stderr", b"") or b""
        return f"bwrap cannot create namespaces here ({detail.decode(errors='replace').strip() or e})"
    return None


def uid_processes(uid: int) -> list[int]:
    """Processes (zombies included) whose real or effective uid is `uid`."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            for line in (d / "status").read_text().splitlines():
                if line.startswith("Uid:"):
                    real, effective = line.split()[1:3]
                    if uid in (int(real), int(effective)):
                        out.append(int(d.name))
                    break
        except (OSError, ValueError):
            continue
    return out


def clear_uid(uid: int, deadline: float = 60.0) -> bool:
    """Kill every process of `uid` and wait until none is left (RLIMIT_NPROC counts them, zombies too, so a
    fork bomb's leftovers would starve the next kernel on this uid). False if some are still there at the
    deadline."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        pids = uid_processes(uid)
        if not pids:
            return True
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)
    return not uid_processes(uid)


class UidSlot:
    """An unprivileged uid held for the life of one kernel (RLIMIT_NPROC counts per uid). A slot is handed out
    only once no process of its uid is left (a previous notebook's, killed but not yet gone)."""

    def __init__(self, lock_dir: Path = Path(tempfile.gettempdir()) / "jaxpath-uids"):
        lock_dir.mkdir(mode=0o700, exist_ok=True)
        for _ in range(600):
            for n in range(UID_SLOTS):
                fh = open(lock_dir / f"{n}.lock", "w")
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    fh.close()
                    continue
                if not clear_uid(UID_BASE + n, deadline=5.0):
                    fh.close()  # leftovers that will not die yet: try another uid
                    continue
                self._fh, self.uid = fh, UID_BASE + n
                return
            time.sleep(0.1)
        raise SandboxUnavailable("no free sandbox uid after 60 s")

    def release(self) -> None:
        self._fh.close()


class Cgroup:
    def __init__(self, name: str, limits: Limits):
        self.paths = [CGROUP_ROOT / "memory" / "jaxpath" / name, CGROUP_ROOT / "pids" / "jaxpath" / name]
        for p in self.paths:
            p.mkdir(parents=True, exist_ok=True)
        (self.paths[0] / "memory.limit_in_bytes").write_text(str(limits.memory_mb * 1024 * 1024))
        try:  # no swap beyond the memory limit, where the kernel accounts swap
            (self.paths[0] / "memory.memsw.limit_in_bytes").write_text(str(limits.memory_mb * 1024 * 1024))
        except OSError:
            pass
        (self.paths[1] / "pids.max").write_text(str(limits.pids))

    def enter_command(self) -> str:
        """Shell that moves itself into the cgroups before exec'ing the sandbox."""
        return "; ".join(f"echo $$ > {p / 'cgroup.procs'}" for p in self.paths)

    def oom_killed(self) -> bool:
        try:  # the kernel's OOM killer counts its kills here; failcnt stays 0 on some kernels
            control = dict(line.split() for line in (self.paths[0] / "memory.oom_control").read_text().splitlines()
                           if len(line.split()) == 2)
            if int(control.get("oom_kill", 0)) > 0:
                return True
        except (OSError, ValueError):
            pass
        try:
            return int((self.paths[0] / "memory.failcnt").read_text()) > 0
        except (OSError, ValueError):
            return False

    def pids_hit(self) -> bool:
        try:
            return "max" in (self.paths[1] / "pids.events").read_text() and \
                int((self.paths[1] / "pids.events").read_text().split()[-1]) > 0
        except (OSError, ValueError, IndexError):
            return False

    def kill_all(self, deadline: float = 60.0) -> None:
        """Kill every process in the cgroups until they are empty (a fork bomb keeps forking while it is
        killed, and a loaded machine is slow to reap: wait for empty, not for a number of rounds)."""
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            pids = set()
            for p in self.paths:
                try:
                    pids |= {int(x) for x in (p / "cgroup.procs").read_text().split()}
                except OSError:
                    pass
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        for p in self.paths:
            try:
                p.rmdir()
            except OSError:
                pass


def _python_prefixes() -> list[str]:
    """Read-only binds the kernel's Python needs: the interpreter's prefix and the virtual environment."""
    out = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)}
    return sorted(out)


def _parents(path: str) -> list[str]:
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


JAX_CACHE = "/jaxcache"


def bwrap_command(workdir: Path, sockdir: Path, uid: int, limits: Limits, env: dict[str, str],
                  jax_cache: str | None = None) -> list[str]:
    cmd = ["bwrap", "--die-with-parent", "--new-session",
           "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "sandbox",
           "--clearenv",
           "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
           "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
           "--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache",
           "--proc", "/proc", "--dev", "/dev",
           "--perms", "1777", "--size", str(limits.tmp_mb * 1024 * 1024), "--tmpfs", "/tmp",
           "--perms", "1777", "--size", str(limits.tmp_mb * 1024 * 1024), "--tmpfs", "/dev/shm"]
    for name in ("/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/localtime"):
        if os.path.exists(name):
            cmd += ["--ro-bind", name, name]
    made = set()
    for prefix in _python_prefixes() + [str(sockdir)]:
        for parent in _parents(prefix + "/x"):
            if parent not in made and parent not in ("/usr", "/tmp"):
                cmd += ["--perms", "0755", "--dir", parent]
                made.add(parent)
    for prefix in _python_prefixes():
        cmd += ["--ro-bind", prefix, prefix]
    cmd += ["--bind", str(sockdir), str(sockdir), "--bind", str(workdir), WORKDIR, "--chdir", WORKDIR]
    if jax_cache:
        # The compilation cache the coordinator warmed with the reference solutions: read-only, so no
        # submission can plant a compiled program that another student's notebook would load.
        cmd += ["--ro-bind", jax_cache, JAX_CACHE]
    for k, v in env.items():
        cmd += ["--setenv", k, v]
    cmd += ["--", "prlimit", f"--cpu={limits.cpu_seconds}", f"--fsize={limits.file_mb * 1024 * 1024}",
            f"--nproc={limits.pids}", "--core=0", "--",
            "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs",
            "--inh-caps=-all", "--bounding-set=-all", "--"]
    return cmd


def sandbox_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    bindir = str(Path(sys.executable).parent)
    # Tools' caches and settings (matplotlib's font list, XDG folders) go to /tmp, not into the work folder,
    # whose new files come back to autograded/ as the notebook's own.
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": WORKDIR, "LANG": "C.UTF-8", "MPLBACKEND": "Agg",
           "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "JAX_PLATFORMS": "cpu",
           "OMP_NUM_THREADS": "1", "MPLCONFIGDIR": "/tmp/.matplotlib", "XDG_CACHE_HOME": "/tmp/.cache",
           "XDG_CONFIG_HOME": "/tmp/.config", "XDG_DATA_HOME": "/tmp/.local/share"}
    env.update(extra or {})
    return env


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel starts inside bwrap, as an unprivileged uid, in a cgroup."""

    sandbox_prefix: list[str] = []
    sandbox_uid: int = -1

    @property
    def kernel_spec(self):
        # SIGINT sent by the manager cannot cross into the sandbox's own session and pid namespace:
        # ask the kernel to interrupt itself with a control-channel message instead.
        spec = super().kernel_spec
        if spec is not None:
            spec.interrupt_mode = "message"
        return spec

    def format_kernel_cmd(self, extra_arguments=None):
        # Called right after the connection file is written: the kernel's uid must be able to read it.
        if self.sandbox_uid >= 0 and os.path.exists(self.connection_file):
            os.chown(self.connection_file, self.sandbox_uid, self.sandbox_uid)
        return list(self.sandbox_prefix) + super().format_kernel_cmd(extra_arguments)


@dataclass
class Written:
    """What a notebook left in its folder that was not there, or not so, when it started."""
    files: dict[str, bytes]
    removed: list[str]
    left_out: list[str]
    """Files not brought back: past the size limit, or not plain files (links, pipes)."""


def _read(fd: int, n: int, offset: int = 0) -> bytes:
    chunks, got = [], 0
    while got < n:
        b = os.pread(fd, min(n - got, 1 << 20), offset + got)
        if not b:
            break
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def written_files(root: Path, sent: dict[str, bytes], max_bytes: int) -> Written:
    """New and changed regular files under `root` (links are never followed, nor read), at most `max_bytes`
    in all; and which of the files sent in are gone."""
    import stat

    files, left_out, total, seen, extra = {}, [], 0, set(), 0
    root = Path(root)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            seen.add(rel)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                left_out.append(f"{rel} (not a plain file)")
                continue
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    left_out.append(f"{rel} (not a plain file)")
                    continue
                if rel in sent and st.st_size == len(sent[rel]) and _read(fd, st.st_size + 1) == sent[rel]:
                    continue
                data = _read(fd, max_bytes - total + 1, 0)
                if total + len(data) > max_bytes:
                    left_out.append(f"{rel} (past the {max_bytes // (1024 * 1024)} MB kept per notebook)")
                    continue
                if len(files) >= MAX_WRITTEN_FILES:
                    extra += 1
                    continue
                total += len(data)
                files[rel] = data
            finally:
                os.close(fd)
    if extra:
        left_out.append(f"{extra} more files (past the {MAX_WRITTEN_FILES} files kept per notebook)")
    return Written(files, sorted(set(sent) - seen), left_out[:20])


class Sandbox:
    """Everything one sandboxed kernel needs, created on enter and destroyed on exit.

    with Sandbox(files, limits) as sb:
        km = sb.kernel_manager("python3")
    """

    def __init__(self, files: dict[str, bytes], limits: Limits, env: dict[str, str] | None = None,
                 jax_cache: str | None = None):
        self.files, self.limits, self.env = files, limits, dict(env or {})
        self.written = Written({}, [], [])
        self.jax_cache = jax_cache if jax_cache and os.path.isdir(jax_cache) else None
        if self.jax_cache:
            self.env.update(JAX_COMPILATION_CACHE_DIR=JAX_CACHE, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")

    def __enter__(self) -> "Sandbox":
        self.slot = UidSlot()
        uid = self.slot.uid
        base = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
        self.root = Path(tempfile.mkdtemp(prefix="jaxpath-sbx-", dir=base))
        os.chmod(self.root, 0o711)
        self.workdir, self.sockdir = self.root / "work", self.root / "sock"
        for d in (self.workdir, self.sockdir):
            d.mkdir()
            os.chown(d, uid, uid)
            os.chmod(d, 0o700)
        for rel, data in self.files.items():
            target = (self.workdir / rel).resolve()
            if self.workdir.resolve() not in target.parents:
                continue  # a path that climbs out of the folder is never written
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        for p in [self.workdir, *self.workdir.rglob("*")]:
            os.chown(p, uid, uid, follow_symlinks=False)
        self.cgroup = Cgroup(self.root.name, self.limits)
        self.uid = uid
        return self

    def kernel_manager(self, kernel_name: str) -> SandboxedKernelManager:
        km = SandboxedKernelManager(kernel_name=kernel_name, transport="ipc", ip=str(self.sockdir / "k"))
        km.connection_file = str(self.sockdir / "kernel.json")
        inner = bwrap_command(self.workdir, self.sockdir, self.uid, self.limits, sandbox_env(self.env), self.jax_cache)
        km.sandbox_prefix = ["sh", "-c", self.cgroup.enter_command() + '; exec "$@"', "jaxpath-sandbox", *inner]
        km.sandbox_uid = self.uid
        return km

    def __exit__(self, *exc) -> None:
        try:
            self.cgroup.kill_all()
            clear_uid(self.slot.uid)  # and anything of its uid that escaped the cgroup's accounting
            # Every process of the notebook is gone: nothing can swap a file for a link while it is read.
            self.written = written_files(self.workdir, self.files, self.limits.file_mb * 1024 * 1024)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
            self.slot.release()
