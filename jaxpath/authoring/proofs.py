"""What a successful `jaxpath validate` of a chapter leaves behind: its proof, `proofs/<part>/<chapter>.json`,
committed like MUTANTS.md and release/ so that a fresh clone reuses it. A proof holds its counts, the known mistakes
(every wrong answer as the checks judged it), its key and the hash of each input the key is made of, so that a stale
proof names the input that changed. `validate` writes it; `build` reuses it when its key matches (the chapter is then
run reference-only); `requirements` (the known mistakes), the class-wide views and the sample class read it.

The key covers exactly what a validation's outcome depends on (`proof_inputs`): the notebook, its variants file, the
manifest's `[validate]` table and the chapter's own entry, requirements.txt (the pinned stack), Python's major.minor
version, and the jaxpath code a validation runs: the modules `jaxpath.authoring.validate` imports, directly or not
(read statically, `checking_code`), with their packages' `__init__.py`, and the modules of `jaxpath/kernel/` that
this code sends into the kernel by name. A change to the classroom, the learner's side, the grader or the CLI leaves
every proof current; a change to the checking code makes every proof stale."""
from __future__ import annotations

import ast
import hashlib
import json
import sys
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..config import Config
from ..files import write_atomic
from ..manifest import notebook_path, variants_path

PACKAGE = Path(__file__).resolve().parents[1]
"""jaxpath/ itself."""
ENTRY = "jaxpath.authoring.validate"
"""The module whose import closure is the checking code."""
KERNEL_READERS = {"source", "kernel_source"}
"""The names `jaxpath.kernel.source` is called by in the checking code: `source("stamp")` sends jaxpath/kernel/stamp.py."""


def proof_path(config: Config, chapter_id: str) -> Path:
    """Where a successful validation leaves its proof: its key and inputs, counts and the known mistakes (every wrong
    answer as the checks judged it; `every_wrong`: true says so, a proof without it holds only those with a hint)."""
    return config.proofs / f"{chapter_id}.json"


def read_proof(config: Config, chapter_id: str) -> dict:
    """The chapter's proof as written; {} when the chapter has none (or the file is unreadable)."""
    try:
        data = json.loads(proof_path(config, chapter_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def proof_text(proof: dict) -> str:
    """A proof as its file holds it: sorted keys, one indentation, Python's shortest float repr, a final newline, so
    that proving again on the same inputs writes the same bytes."""
    return json.dumps(proof, sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def write_proof(config: Config, chapter_id: str, proof: dict) -> Path:
    path = proof_path(config, chapter_id)
    write_atomic(path, proof_text(proof))
    return path


def _module_file(name: str) -> Path | None:
    """jaxpath/a/b.py or jaxpath/a/b/__init__.py for 'jaxpath.a.b'; None outside jaxpath or when missing."""
    parts = name.split(".")
    if parts[0] != PACKAGE.name:
        return None
    base = PACKAGE.joinpath(*parts[1:])
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.is_file():
            return p
    return None


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """The jaxpath modules a file imports (anywhere in it: in functions and under TYPE_CHECKING too, as import-linter
    sees them), and the kernel modules it sends by name (`source("stamp")`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    found, kernel = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}  # `from . import x` where x is a module
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in KERNEL_READERS
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            kernel.add(node.args[0].value)
    return {m for m in found if _module_file(m)}, kernel


def _with_packages(name: str) -> list[str]:
    """A module and the packages above it (importing it runs their __init__.py)."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


@cache
def checking_code() -> tuple[Path, ...]:
    """The jaxpath files a validation runs, sorted: the static import closure of `jaxpath.authoring.validate` (its
    packages' __init__.py included) and the jaxpath/kernel/ modules that code sends into the kernel by name."""
    seen: set[str] = set()
    todo = _with_packages(ENTRY)
    kernel: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        found, sent = _imports(_module_file(name))
        kernel |= sent
        todo += [m for f in found for m in _with_packages(f) if m not in seen]
    files = {_module_file(m) for m in seen}
    files |= {p for k in kernel if (p := PACKAGE / "kernel" / f"{k}.py").is_file()}
    return tuple(sorted(files))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_hash(path: Path) -> str:
    return _sha(path.read_bytes()) if path.is_file() else "missing"


def _manifest_part(config: Config, chapter_id: str) -> str:
    """The part of the manifest a validation reads: `[validate]` and the chapter's own entry (its sections)."""
    try:
        data = tomllib.loads(config.manifest_path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return "unreadable"
    part = {"validate": data.get("validate", {}), "chapter": data.get("chapters", {}).get(chapter_id, {})}
    return _sha(json.dumps(part, sort_keys=True, default=str).encode())


def proof_inputs(config: Config, chapter_id: str) -> dict[str, str]:
    """Each input of the chapter's proof and its hash (Python: its major.minor version): what the key is made of.
    The names are what a stale check prints: "notebook", "variants", "manifest", "requirements.txt", "python", and
    each checking-code file by its path in the repository (jaxpath/authoring/chapter.py)."""
    inputs = {
        "notebook": _file_hash(notebook_path(config, chapter_id)),
        "variants": _file_hash(variants_path(config, chapter_id)),
        "manifest": _manifest_part(config, chapter_id),
        "requirements.txt": _file_hash(config.root / "requirements.txt"),
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
    }
    for p in checking_code():
        inputs[p.relative_to(PACKAGE.parent).as_posix() if p.is_relative_to(PACKAGE.parent) else str(p)] = _file_hash(p)
    return inputs


def proof_key(inputs: dict[str, str]) -> str:
    return _sha(json.dumps(inputs, sort_keys=True).encode())


INPUT_NAMES = {"notebook": "the notebook", "variants": "the variants", "python": "Python's version",
               "manifest": "the manifest's [validate] or the chapter's entry"}


def describe(config: Config, chapter_id: str, name: str) -> str:
    """An input of the key in words: 'the notebook (source/basics/02_jit.ipynb)', 'jaxpath/execute.py'."""
    where = {"notebook": notebook_path(config, chapter_id), "variants": variants_path(config, chapter_id),
             "manifest": config.manifest_path}.get(name)
    text = INPUT_NAMES.get(name, name)
    if where is not None:
        rel = where.relative_to(config.root) if where.is_relative_to(config.root) else where
        text += f" ({rel.as_posix()})"
    return text


@dataclass
class ProofState:
    chapter: str
    current: bool
    changed: list[str]
    """What differs from the proof's inputs, in words ('the notebook (source/…)', 'jaxpath/execute.py', 'no proof')."""
    key: str
    """The key the chapter has now…"""
    inputs: dict[str, str]
    """…and the inputs it is made of (`proof_inputs`)."""


def proof_state(config: Config, chapter_id: str) -> ProofState:
    """Whether the chapter's committed proof is current, and if not, which of its inputs changed."""
    inputs = proof_inputs(config, chapter_id)
    key = proof_key(inputs)
    proof = read_proof(config, chapter_id)
    if not proof:
        return ProofState(chapter_id, False, ["no proof"], key, inputs)
    if proof.get("key") == key:
        return ProofState(chapter_id, True, [], key, inputs)
    was = proof.get("inputs") or {}
    changed = [describe(config, chapter_id, n) + (" (new)" if n not in was else "")
               for n in inputs if was.get(n) != inputs[n]]
    changed += [f"{n} (gone)" for n in was if n not in inputs]
    return ProofState(chapter_id, False, changed or ["the key (written by an older jaxpath)"], key, inputs)
