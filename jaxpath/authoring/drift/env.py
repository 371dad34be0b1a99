"""The side environment: the course's lock with some pins changed, built once into a cache folder outside the
repository (keyed by the hash of its requirements), or an existing Python given with `--python`.

A kernel runs there through a kernelspec of its own (argv: that Python and `ipykernel_launcher`), written
into the environment's folder; `kernel_dirs` is put on JUPYTER_PATH by the process that starts kernels."""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ...errors import JaxpathError

STACK = ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "numpy", "scipy", "ipykernel")


class DriftError(JaxpathError):
    """A side environment that cannot be built or used (a pin that conflicts, a Python without ipykernel)."""


@dataclass(frozen=True)
class SideEnv:
    python: Path
    """The side environment's interpreter: its kernels run with it."""
    folder: Path
    """Where its kernelspec (and, for a built environment, the venv and pip's log) live."""
    key: str
    """Short hash naming the environment (of its requirements, or of the interpreter's path)."""
    versions: dict = field(default_factory=dict)
    """Installed versions of the stack (jax, jaxlib, flax, optax, orbax-checkpoint, numpy, ipykernel)."""
    pins: tuple[str, ...] = ()
    built: bool = False
    """True when this call built the environment (False: it came from the cache, or from --python)."""
    env: dict = field(default_factory=dict)
    """Extra variables of the kernel's environment (the tests put a fake stack on PYTHONPATH this way)."""

    @property
    def label(self) -> str:
        """'jax-0.11.2': what the reports are named after."""
        return f"jax-{self.versions.get('jax', 'unknown')}"

    @property
    def kernel_name(self) -> str:
        return f"jaxpath-drift-{self.key}"

    @property
    def kernel_dirs(self) -> Path:
        """The folder to put on JUPYTER_PATH so that `kernel_name` is found (it holds kernels/<name>/)."""
        return self.folder / "jupyter"


def cache_root() -> Path:
    """$JAXPATH_DRIFT_CACHE, else $XDG_CACHE_HOME/jaxpath/drift (~/.cache/jaxpath/drift)."""
    if os.environ.get("JAXPATH_DRIFT_CACHE"):
        return Path(os.environ["JAXPATH_DRIFT_CACHE"]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "jaxpath" / "drift"


def parse_pins(text: str | None) -> list[Requirement]:
    """`--with 'jax==0.11.2 jaxlib==0.11.2'` (spaces or commas between them) as requirements."""
    out = []
    for word in re.split(r"[\s,]+", (text or "").strip()):
        if not word:
            continue
        try:
            req = Requirement(word)
        except InvalidRequirement as e:
            raise DriftError(f"--with: {word!r} is not a requirement (write name==version): {e}") from None
        if not req.specifier:
            raise DriftError(f"--with: {word!r} names no version (write {word}==VERSION)")
        out.append(req)
    return out


def side_requirements(lock: str, pins: list[Requirement]) -> str:
    """The lock with each pinned package's line replaced by its pin; pins of packages the lock lacks are
    added at the end. Comments are dropped (they do not change what is installed)."""
    by_name = {canonicalize_name(p.name): p for p in pins}
    used: set[str] = set()
    lines = []
    for raw in lock.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            name = canonicalize_name(Requirement(line).name)
        except InvalidRequirement:
            lines.append(line)  # an option line (-e, --index-url): kept as it is
            continue
        if name in by_name:
            lines.append(str(by_name[name]))
            used.add(name)
        else:
            lines.append(line)
    lines += [str(p) for n, p in by_name.items() if n not in used]
    return "\n".join(lines) + "\n"


def _versions(python: Path) -> dict:
    code = ("import importlib.metadata as m, json\nout = {}\n"
            f"for p in {STACK!r}:\n"
            "    try: out[p] = m.version(p)\n"
            "    except m.PackageNotFoundError: pass\n"
            "print(json.dumps(out))")
    try:
        done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=120)
    except OSError as e:
        raise DriftError(f"cannot run {python}: {e.strerror}") from None
    if done.returncode != 0:
        raise DriftError(f"{python} does not run: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def write_kernelspec(env: SideEnv) -> None:
    spec = {"argv": [str(env.python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": f"Python ({env.label}, jaxpath drift)", "language": "python",
            # the side environment's bin first, as kernel_env puts the course's first
            "env": {"PATH": str(env.python.parent) + os.pathsep + "${PATH}", **env.env}}
    path = env.kernel_dirs / "kernels" / env.kernel_name / "kernel.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(spec, indent=1), encoding="utf-8")


def conflict_message(log: str, pins: list[Requirement]) -> str:
    """pip's own explanation of why it cannot install the requirements (its ERROR lines and the block after
    'The conflict is caused by:'), in a few lines."""
    lines = [l.rstrip() for l in log.splitlines()]
    errors = [l.removeprefix("ERROR:").strip() for l in lines
              if l.startswith("ERROR:") and "ResolutionImpossible" not in l]
    cause: list[str] = []
    for i, line in enumerate(lines):
        if line.strip().startswith("The conflict is caused by"):
            for l in lines[i + 1:]:
                if not l.strip():
                    break
                cause.append(l.strip())
            break
    pinned = " ".join(str(p) for p in pins) or "(no pins)"
    text = f"the side environment with {pinned} cannot be installed: " + ("; ".join(errors[:3]) or "pip failed")
    if cause:
        text += "\n  the conflict is caused by: " + "; ".join(cause[:8])
    return text + "\n  move the conflicting pins together, e.g. --with 'jax==X jaxlib==X flax==Y'"


def existing_python(python: str | os.PathLike) -> SideEnv:
    """An environment that exists (`--python PATH`): it needs ipykernel; nothing is installed into it."""
    py = Path(python).expanduser()
    if not py.exists():
        raise DriftError(f"--python {python}: no such file")
    py = py.absolute()
    versions = _versions(py)
    for need in ("ipykernel", "jax"):
        if need not in versions:
            raise DriftError(f"--python {python}: {need} is not installed there (a drift kernel needs "
                             f"ipykernel and the course's stack: {py} -m pip install {need})")
    key = "py-" + hashlib.sha256(str(py).encode()).hexdigest()[:12]
    env = SideEnv(py, cache_root() / key, key, versions)
    write_kernelspec(env)
    return env


def side_env(lock_path: Path, pins: list[Requirement], *, log=print) -> SideEnv:
    """The side environment of the lock at `lock_path` with `pins`, built on first use (a few minutes, mostly
    downloads) into cache_root()/<hash>; later calls with the same requirements return it at once."""
    reqs = side_requirements(Path(lock_path).read_text(encoding="utf-8"), pins)
    py_tag = f"{sys.version_info.major}.{sys.version_info.minor}"
    key = hashlib.sha256((py_tag + "\n" + reqs).encode()).hexdigest()[:16]
    folder = cache_root() / key
    folder.mkdir(parents=True, exist_ok=True)
    python = folder / "venv" / "bin" / "python"
    done = folder / "complete.json"
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two drift runs for the same pins build it once
        built = False
        if not (done.exists() and python.exists()):
            shutil.rmtree(folder / "venv", ignore_errors=True)
            (folder / "requirements.txt").write_text(reqs, encoding="utf-8")
            log(f"building the side environment {folder} ({' '.join(map(str, pins)) or 'the lock as it is'})")
            base = getattr(sys, "_base_executable", sys.executable)
            subprocess.run([base, "-m", "venv", str(folder / "venv")], check=True)
            with open(folder / "pip.log", "w", encoding="utf-8") as out:
                rc = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check",
                                     "--no-input", "-r", str(folder / "requirements.txt")],
                                    stdout=out, stderr=subprocess.STDOUT).returncode
            if rc != 0:
                text = (folder / "pip.log").read_text(encoding="utf-8", errors="replace")
                shutil.rmtree(folder / "venv", ignore_errors=True)
                raise DriftError(conflict_message(text, pins) + f"\n  pip's full log: {folder / 'pip.log'}")
            built = True
        versions = _versions(python)
        env = SideEnv(python, folder, key, versions, tuple(map(str, pins)), built)
        write_kernelspec(env)
        if built:
            done.write_text(json.dumps({"pins": list(env.pins), "versions": versions}, indent=1), encoding="utf-8")
    return env
