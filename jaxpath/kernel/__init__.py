"""Code that runs inside a kernel, kept as real modules (linted, importable by tests). The grader's side
sends a module's source to the kernel with `source(name)`, so the kernel needs no jaxpath installed."""
from __future__ import annotations

from importlib.resources import files


def source(name: str) -> str:
    """The text of jaxpath/kernel/<name>.py, to run as a cell."""
    return files(__package__).joinpath(f"{name}.py").read_text(encoding="utf-8")
