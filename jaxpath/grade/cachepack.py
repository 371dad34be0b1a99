"""The warmed compilation cache, packed for workers on other machines (`jaxpath grade --scheduler`).

The reference run fills a cache folder on the coordinator's machine. For a local cluster the workers
mount that folder read-only. Workers elsewhere get it packed: one tar, scattered to every worker once
(`client.scatter(..., broadcast=True)`), unpacked once per worker into its temporary folder and mounted
read-only like the local one. No shared filesystem is needed.

Programs compiled for one CPU must not run on another: JAX's cache key names the backend and jaxlib, but
the CPU's instruction set extensions are what XLA:CPU compiles for. A pack is therefore labelled with the
coordinator's `host_key()` (machine, jaxlib version, CPU flags), and a worker whose key differs ignores it
and compiles, as it would with no cache."""
from __future__ import annotations

import hashlib
import io
import os
import platform
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CachePack:
    host: str
    """host_key() of the machine that compiled the programs."""
    key: str
    """A hash of the content: the name of the folder it unpacks into."""
    data: bytes
    """An uncompressed tar of the cache folder (compiled programs barely compress)."""
    entries: int


def reader_env(path: str) -> dict[str, str]:
    """The environment of a kernel that reads the warmed cache at `path` and never writes to it. JAX writes
    every program it compiles (above a compile time) into its cache folder; a submission's kernel compiles
    what the reference run did not (another correct answer, a wrong one), and a write that fails on the
    read-only mount becomes a UserWarning on the cell's stderr, which nbgrader scores as a failed test. With
    the threshold out of reach JAX reads the cache and writes nothing (jax/_src/compiler.py, _cache_write)."""
    return {"JAX_COMPILATION_CACHE_DIR": path, "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "1e12"}


def writer_env(path: str) -> dict[str, str]:
    """The environment of the reference kernel, which fills the cache at `path` with every program it compiles."""
    return {"JAX_COMPILATION_CACHE_DIR": path, "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}


def host_key() -> str:
    """What compiled CPU programs depend on besides what JAX's own cache key holds."""
    import jaxlib

    flags = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                flags = " ".join(sorted(line.split(":", 1)[1].split()))
                break
    except OSError:
        flags = platform.processor()
    return hashlib.sha256(f"{platform.machine()}|{jaxlib.__version__}|{flags}".encode()).hexdigest()[:16]


def pack(folder: Path) -> CachePack | None:
    """The cache folder as one pack (None when it holds nothing)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".warmed-"))
    if not files:
        return None
    buf, h = io.BytesIO(), hashlib.sha256()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for p in files:
            rel = str(p.relative_to(folder))
            data = p.read_bytes()
            h.update(rel.encode() + b"\0" + data)
            info = tarfile.TarInfo(rel)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return CachePack(host_key(), h.hexdigest()[:16], buf.getvalue(), len(files))


def unpack(p: CachePack, base: Path | None = None) -> str | None:
    """The folder `p` unpacks into on this machine (unpacked the first time, then reused); None when the
    programs were compiled for another kind of machine."""
    if p.host != host_key():
        return None
    base = Path(base or tempfile.gettempdir())
    dest = base / f"jaxpath-jax-cache-{p.key}"
    base.mkdir(parents=True, exist_ok=True)
    if dest.is_dir():
        return str(dest)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=base))
    try:
        with tarfile.open(fileobj=io.BytesIO(p.data), mode="r") as tar:
            tar.extractall(tmp, filter="data")  # no absolute paths, no links out, no device files
        for d, _, fs in os.walk(tmp):
            os.chmod(d, 0o755)
            for f in fs:
                os.chmod(os.path.join(d, f), 0o644)
        os.rename(tmp, dest)
    except FileExistsError:  # another worker process on this machine unpacked it first
        shutil.rmtree(tmp, ignore_errors=True)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not dest.is_dir():
            raise
    return str(dest)
