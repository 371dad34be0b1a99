"""A real Dask cluster on loopback, as a grader starts one for `jaxpath grade --scheduler`: a `dask scheduler`
and `dask worker` processes, everything listening on 127.0.0.1 (`--no-dashboard` alone still binds 8787).
Used by tests/test_grade.py and benchmarks/bench_grade.py."""
from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def loopback_cluster(workers: int, cwd: Path):
    """The address of a scheduler with `workers` single-threaded worker processes, once all of them have joined
    (Dask's `Client.wait_for_workers`); everything is stopped afterwards."""
    from distributed import Client

    address = f"tcp://127.0.0.1:{free_port()}"
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
    procs = [subprocess.Popen([BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                               "--no-dashboard", "--dashboard-address", "127.0.0.1:0"], **quiet)]
    try:
        procs.append(subprocess.Popen([BIN / "dask", "worker", address, "--nworkers", str(workers), "--nthreads", "1",
                                       "--host", "127.0.0.1", "--no-dashboard"], **quiet))
        with Client(address, timeout="60s") as client:
            client.wait_for_workers(workers, timeout=120)  # a guard against a worker that never comes, not a measure
        yield address
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=60)
