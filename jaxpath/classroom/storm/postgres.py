"""The storm's PostgreSQL: a server of its own on loopback (Debian's postgresql package), as the tests start one;
it can be killed with SIGKILL and started again (crash recovery), as the storm's fault does."""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
from pathlib import Path

from ...errors import JaxpathError
from ...faults import readable


class PostgresError(JaxpathError):
    """PostgreSQL is not installed, or its server did not start (its log is named)."""


def _bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise PostgresError("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    return Path(found[-1]).parent


class Postgres:
    def __init__(self, base: Path):
        self.bin = _bindir()
        self.data, self.sock = base / "pg-data", base / "pg-sock"
        self.run_as = []
        for d in (self.data, self.sock):
            d.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:  # initdb refuses to run as root
            user = pwd.getpwnam("postgres")
            for d in (self.data, self.sock):
                os.chown(d, user.pw_uid, user.pw_gid)
            self.run_as = ["runuser", "-u", "postgres", "--"]
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"postgresql://grader@127.0.0.1:{self.port}/postgres"
        self._pg(["initdb", "-D", str(self.data), "-U", "grader", "--auth=trust"])

    def _pg(self, argv: list[str]) -> None:
        p = subprocess.run(self.run_as + [str(self.bin / argv[0]), *argv[1:]], capture_output=True, text=True)
        if p.returncode != 0:
            raise PostgresError(f"{argv[0]} exited {p.returncode}: {(p.stderr or p.stdout)[-2000:]} "
                                f"(log: {self.data / 'log'})")

    def start(self) -> "Postgres":
        """Start the server and return once it accepts connections (pg_ctl -w waits for that)."""
        self._pg(["pg_ctl", "-D", str(self.data), "-l", str(self.data / "log"), "-w", "-o",
                  f"-p {self.port} -k {self.sock} -c listen_addresses=127.0.0.1 -c max_connections=200", "start"])
        return self

    def pid(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def kill(self) -> None:
        """SIGKILL the postmaster and every backend, as a crash of the machine's database would; returns once they
        are gone (a pidfd for each becomes readable when its process ends)."""
        pid = self.pid()
        victims = [pid, *_children(pid)]
        fds = []
        for v in victims:
            try:
                fds.append(os.pidfd_open(v))
                os.kill(v, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for fd in fds:
            readable([fd])
            os.close(fd)
        # The postmaster is dead, but where nothing reaps orphans (a container's first process) it stays a zombie,
        # which PostgreSQL's stale-lock check takes for a live server: the lock file goes, as after a crash.
        (self.data / "postmaster.pid").unlink(missing_ok=True)
        for lock in self.sock.glob(".s.PGSQL.*.lock"):
            lock.unlink()

    def stop(self) -> None:
        subprocess.run(self.run_as + [str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"],
                       capture_output=True)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.data, ignore_errors=True)
        shutil.rmtree(self.sock, ignore_errors=True)


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d.name))
            except (OSError, IndexError, ValueError):
                continue
    return out
