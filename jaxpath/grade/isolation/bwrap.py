"""The bubblewrap command a kernel starts under, at the root or the rootless level, and the end of a rootless
sandbox's processes.

Both levels: new mount, pid, network, ipc and uts namespaces; only /usr, the Python prefix and the virtual
environment (read-only), the private work folder and the kernel's socket folder are visible; a cleared
environment; a size-limited tmpfs /tmp and /dev/shm; rlimits set by prlimit inside.
- root: setpriv then drops to the slot's spare uid (no capabilities, no new privileges).
- rootless: bwrap itself is unprivileged and enters a user namespace (--unshare-user) where the kernel runs
  as UNPRIVILEGED_ID, which is the grader's uid outside; bwrap drops every capability (bounding set
  included), sets no-new-privileges, and --disable-userns stops the kernel from making namespaces of its own.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from .rlimits import prlimit_args

WORKDIR = "/submission"
JAX_CACHE = "/jaxcache"
MPLCONFIGDIR = "/tmp/.matplotlib"
"""matplotlib's folder in the sandbox (its settings and caches: the font list)."""
UNPRIVILEGED_ID = 61000
"""The uid and gid a rootless kernel has inside its user namespace (the grader's ids outside); at the root level,
the first of the spare uids the kernels run as (sandbox.UID_BASE), one per parallel slot."""


def python_prefixes() -> list[str]:
    """Read-only binds the kernel's Python needs: the interpreter's prefix and the virtual environment."""
    return sorted({os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix)})


def _parents(path: str) -> list[str]:
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def bwrap_command(workdir: Path, sockdir: Path, uid: int, limits, env: dict[str, str], jax_cache: str | None = None,
                  *, level, bwrap: str = "bwrap", font_list: str | None = None) -> list[str]:
    """The command prefix (the kernel's own command follows). `uid` is the spare uid at the root level;
    `font_list`, matplotlib's font list made for sandboxes on this host (grade/fontlist.py)."""
    rootless = level.rootless
    cmd = [bwrap, "--die-with-parent", "--new-session"]
    if rootless:
        cmd += ["--unshare-user", "--disable-userns", "--uid", str(UNPRIVILEGED_ID), "--gid", str(UNPRIVILEGED_ID)]
    cmd += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "sandbox",
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
    for prefix in python_prefixes() + [str(sockdir)]:
        for parent in _parents(prefix + "/x"):
            if parent not in made and parent not in ("/usr", "/tmp"):
                cmd += ["--perms", "0755", "--dir", parent]
                made.add(parent)
    for prefix in python_prefixes():
        cmd += ["--ro-bind", prefix, prefix]
    cmd += ["--bind", str(sockdir), str(sockdir), "--bind", str(workdir), WORKDIR, "--chdir", WORKDIR]
    if jax_cache:
        # The compilation cache the coordinator warmed with the reference solutions: read-only, so no
        # submission can plant a compiled program that another student's notebook would load.
        cmd += ["--ro-bind", jax_cache, JAX_CACHE]
    if font_list:
        # Read-only, so that no notebook changes the fonts another one finds; in a folder anyone may write,
        # since matplotlib keeps its caches only in a writable one (else it makes another and warns). If the
        # file went away since (a cache folder cleared mid-batch), the kernel builds its own list, as before.
        cmd += ["--perms", "1777", "--dir", MPLCONFIGDIR,
                "--ro-bind-try", font_list, f"{MPLCONFIGDIR}/{Path(font_list).name}"]
    # The sandbox's own root (a tmpfs bwrap made, with /etc and the folders above) read-only: in a user namespace
    # the kernel would own it and could write /etc/... there. /tmp, /dev/shm and the work folder stay writable.
    cmd += ["--remount-ro", "/"]
    for k, v in env.items():
        cmd += ["--setenv", k, v]
    cmd += ["--", *prlimit_args(limits, level)]
    if not rootless:
        cmd += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs",
                "--inh-caps=-all", "--bounding-set=-all", "--"]
    return cmd


def sandbox_env(extra: dict[str, str] | None = None, *, level) -> dict[str, str]:
    bindir = str(Path(sys.executable).parent)
    # Tools' caches and settings (matplotlib's font list, XDG folders) go to /tmp, not into the work folder,
    # whose new files come back to autograded/ as the notebook's own. matplotlib draws with the inline backend,
    # as an IPython kernel under nbgrader does: a student's figure is an image output of its cell, which the
    # feedback page shows (under Agg, plt.show() showed nothing). It needs no display.
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": WORKDIR, "LANG": "C.UTF-8",
           "MPLBACKEND": "module://matplotlib_inline.backend_inline",
           "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "JAX_PLATFORMS": "cpu",
           "OMP_NUM_THREADS": "1", "MPLCONFIGDIR": MPLCONFIGDIR, "XDG_CACHE_HOME": "/tmp/.cache",
           "XDG_CONFIG_HOME": "/tmp/.config", "XDG_DATA_HOME": "/tmp/.local/share"}
    if level.rlimits_only:
        # Under an address-space limit, glibc's per-thread malloc arenas (64 MB of address space each, and
        # JAX starts dozens of threads) would use it up long before memory is used.
        env["MALLOC_ARENA_MAX"] = "2"
    env.update(extra or {})
    return env


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(ppid, state, start time) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), fields[0], int(fields[19])


class PidNamespace:
    """A rootless sandbox's pid namespace, known by its init (the child of the outer bwrap process).

    When a pid namespace's init dies, the kernel kills every process in the namespace and the init only
    becomes a zombie (or disappears) once they are all gone: so "init gone" means "nothing of the notebook
    is left", whatever it forked, and however its outer bwrap ended."""

    def __init__(self):
        self.init: tuple[int, int] | None = None

    def found(self, outer: int, deadline: float = 30.0) -> bool:
        """Find the namespace's init once bwrap (pid `outer`) has cloned it."""
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            if _stat(outer) is None:
                return False
            for d in Path("/proc").iterdir():
                if d.name.isdigit():
                    st = _stat(int(d.name))
                    if st and st[0] == outer:
                        self.init = (int(d.name), st[2])
                        return True
            time.sleep(0.01)
        return False

    def kill(self, deadline: float = 60.0) -> bool:
        """Kill the namespace (through its init) and wait until every process in it is gone."""
        if self.init is None:
            return True
        pid, start = self.init
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            st = _stat(pid)
            if st is None or st[2] != start or st[1] in ("Z", "X"):
                return True
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            time.sleep(0.02)
        return False
