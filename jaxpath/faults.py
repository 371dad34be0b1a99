"""Named points where a test (or `jaxpath storm`) may stop a process to kill it there: the way a fault is
injected at a defined step instead of after a guessed number of seconds.

Off unless the environment asks: `JAXPATH_FAULT=<point>[:<n>]` names the point (and on which of its passes,
default the first), `JAXPATH_FAULT_FIFO` a named pipe. On that pass the process writes `<point> <pid>` into the
pipe (which blocks until the injector reads it) and then waits for a signal, so the injector kills it exactly
there, however fast or slow the machine is. Any other pass, or a process without these variables, goes on at
once."""
from __future__ import annotations

import os
import signal

_passes: dict[str, int] = {}


def checkpoint(point: str) -> None:
    """A step at which a fault may be injected (see the module's text)."""
    wanted = os.environ.get("JAXPATH_FAULT")
    if not wanted:
        return
    name, _, nth = wanted.partition(":")
    if name != point:
        return
    _passes[point] = _passes.get(point, 0) + 1
    if _passes[point] != int(nth or 1):
        return
    fifo = os.environ.get("JAXPATH_FAULT_FIFO")
    if not fifo:
        return
    with open(fifo, "w") as f:  # blocks until the injector opens it for reading
        f.write(f"{point} {os.getpid()}\n")
    while True:  # the injector kills us here
        signal.pause()


def readable(fds, timeout: float | None = None) -> list[int]:
    """Which of the descriptors `fds` are readable (or closed at the other end), waiting up to `timeout` seconds (None:
    until one is). `poll`, not `select`: select refuses a descriptor numbered 1024 or more, which a long process (a
    test worker, a grader) opens."""
    import select

    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN | select.POLLPRI)
    return [fd for fd, _ in poller.poll(None if timeout is None else int(timeout * 1000))]


def wait_for(fifo: str | os.PathLike, watch: tuple[int, ...] = ()) -> tuple[str, int]:
    """The injector's side: block until a process reaches its checkpoint; (point, pid). `watch`: pids of processes
    that should get there; one that ends first raises RuntimeError (else the wait would never end). Call it
    before the process may reach the point: the pipe is opened here for reading and writing, so that the
    process's own open never waits."""
    fd = os.open(fifo, os.O_RDWR)
    pidfds = {os.pidfd_open(p): p for p in watch}
    buf = b""
    try:
        while b"\n" not in buf:
            ready = readable([fd, *pidfds])
            if fd in ready:
                buf += os.read(fd, 4096)
                continue
            ended = pidfds[ready[0]]
            raise RuntimeError(f"process {ended} ended before it reached {os.environ.get('JAXPATH_FAULT', 'its checkpoint')}")
    finally:
        os.close(fd)
        for p in pidfds:
            os.close(p)
    point, pid = buf.split(b"\n")[0].decode().split()
    return point, int(pid)


__all__ = ["checkpoint", "readable", "wait_for"]
