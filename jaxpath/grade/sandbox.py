"""Run a notebook's kernel where student code can reach nothing but a private copy of its own folder.

The layers (namespaces, resources) are chosen by what the host gives: see jaxpath/grade/isolation/ and the
manual's security page (docs/security.md). At every level:
- bubblewrap: new mount, pid, network, ipc and uts namespaces; only /usr, the Python prefix and the
  virtual environment (read-only), the private work folder and the kernel's socket folder are visible;
- the kernel runs without capabilities or new privileges: as a spare uid of its own per parallel slot
  (root level, setpriv), or as the grader's uid mapped to an unprivileged id in a user namespace (rootless);
- memory and processes: a cgroup (v1 or v2) where one can be had, else rlimits alone (the weaker level);
- rlimits (prlimit): CPU seconds, file size, processes, no core files; every process is killed at the end.
The kernel talks ZeroMQ over ipc sockets in its socket folder, so it needs no network at all.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager

from ..files import private_temp_dir, write_into
from .cachepack import reader_env
from .isolation import Level, SandboxUnavailable, host_level, resource_layer
from .isolation.bwrap import JAX_CACHE, UNPRIVILEGED_ID, WORKDIR, PidNamespace, bwrap_command, sandbox_env
from .isolation.cgfs import kill_until_gone
from .limits import Limits

UID_BASE = UNPRIVILEGED_ID
"""The root level's kernels run as UID_BASE + slot: uids nobody else has."""
UID_SLOTS = 64
MAX_WRITTEN_FILES = 1000
"""Files a notebook writes that come back to autograded/ (with the file size limit, Limits.file_mb, for all)."""

__all__ = ["Sandbox", "SandboxUnavailable", "SandboxedKernelManager", "Written", "sandbox_problem",
           "written_files", "JAX_CACHE", "WORKDIR", "bwrap_command", "sandbox_env"]


def sandbox_problem(want: str | None = None) -> str | None:
    """Why no isolated sandbox can be built here (one sentence saying what to install or enable), or None."""
    try:
        host_level(want)
        return None
    except SandboxUnavailable as e:
        return str(e)


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
    return kill_until_gone(lambda: uid_processes(uid), deadline)


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


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel starts inside bwrap, as an unprivileged uid, in a cgroup."""

    sandbox_prefix: list[str] = []
    sandbox_uid: int = -1
    on_launch = None
    """Called with the pid of the process the kernel manager started (the outer bwrap, rootless)."""

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

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        # What the kernel process writes to its own stdout and stderr is nobody's output: the notebook's output
        # comes over the kernel's channels. Inherited, it landed in the grader's terminal, through its progress
        # bar: ipykernel prints its connection banner when it has no parent to watch (bwrap clears
        # JPY_PARENT_PID, rightly: that pid is outside the sandbox's pid namespace), fontconfig its warnings,
        # and a student whatever they write to fd 2.
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", subprocess.DEVNULL)
        await super()._async_launch_kernel(kernel_cmd, **kw)
        process = getattr(self.provisioner, "process", None)
        if self.on_launch is not None and process is not None:
            self.on_launch(process.pid)


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

    with Sandbox(files, limits, level=Level.parse("root+cgroup-v1")) as sb:
        km = sb.kernel_manager("python3")
    """

    def __init__(self, files: dict[str, bytes], limits: Limits, env: dict[str, str] | None = None,
                 jax_cache: str | None = None, level: Level | None = None, font_list: str | None = None):
        self.files, self.limits, self.env = files, limits, dict(env or {})
        self.font_list = font_list  # mounted if it is there when the kernel starts (isolation/bwrap.py)
        self.level = level or host_level()
        if not self.level.isolated:
            raise SandboxUnavailable("a sandbox needs an isolation level (not 'none')")
        self.written = Written({}, [], [])
        self.jax_cache = jax_cache if jax_cache and os.path.isdir(jax_cache) else None
        if self.jax_cache:
            self.env.update(reader_env(JAX_CACHE))

    @property
    def rootless(self) -> bool:
        return self.level.rootless

    def __enter__(self) -> "Sandbox":
        self.slot = None if self.rootless else UidSlot()
        uid = os.getuid() if self.slot is None else self.slot.uid
        self.pidns = PidNamespace()
        # With a cgroup, the work folder lives in memory and its files are charged to the notebook's memory;
        # without one (rlimits), on disk, bounded per file by RLIMIT_FSIZE.
        shm = Path("/dev/shm")
        base = shm if self.level.cgroup and shm.is_dir() else Path(tempfile.gettempdir())
        self.root = private_temp_dir("sbx", dir=base)
        try:
            os.chmod(self.root, 0o711)
            self.workdir, self.sockdir = self.root / "work", self.root / "sock"
            for d in (self.workdir, self.sockdir):
                d.mkdir()
                if self.slot is not None:
                    os.chown(d, uid, uid)
                os.chmod(d, 0o700)
            write_into(self.workdir, self.files)  # a path that climbs out of the folder is never written
            if self.slot is not None:
                for p in [self.workdir, *self.workdir.rglob("*")]:
                    os.chown(p, uid, uid, follow_symlinks=False)
            self.cgroup = resource_layer(self.level, self.root.name, self.limits)
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            if self.slot is not None:
                self.slot.release()
            raise
        self.uid = uid
        return self

    def command(self, argv: list[str] = ()) -> list[str]:
        """`argv` run in this sandbox: in its cgroup, under bwrap. With no `argv`, the prefix alone."""
        inner = bwrap_command(self.workdir, self.sockdir, self.uid, self.limits,
                              sandbox_env(self.env, level=self.level), self.jax_cache, level=self.level,
                              bwrap=shutil.which("bwrap") or "bwrap", font_list=self.font_list)
        enter = self.cgroup.enter_command()
        return (["sh", "-c", enter + '; exec "$@"', "jaxpath-sandbox"] if enter else []) + inner + list(argv)

    def kernel_manager(self, kernel_name: str) -> SandboxedKernelManager:
        km = SandboxedKernelManager(kernel_name=kernel_name, transport="ipc", ip=str(self.sockdir / "k"))
        km.connection_file = str(self.sockdir / "kernel.json")
        km.sandbox_prefix = self.command()
        km.sandbox_uid = -1 if self.rootless else self.uid
        if self.rootless:
            km.on_launch = self.pidns.found
        return km

    def __exit__(self, *exc) -> None:
        try:
            self.cgroup.kill_all()
            if self.slot is not None:
                clear_uid(self.slot.uid)  # and anything of its uid that escaped the cgroup's accounting
            self.pidns.kill()  # rootless: the namespace's init, and with it every process the notebook started
            # Every process of the notebook is gone: nothing can swap a file for a link while it is read.
            self.written = written_files(self.workdir, self.files, self.limits.file_mb * 1024 * 1024)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
            if self.slot is not None:
                self.slot.release()
