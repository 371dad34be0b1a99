"""Outputs without the build machine in them: absolute paths of site-packages, the Python installation, temp
folders, kernel files and the course checkout are rewritten in every output the site shows or serves for
download, and `find_machine_paths` (the site check) finds any that is left."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import nbformat

_SEG = r"(?:/[\w.+@~-]+)+"
_RULES = [
    (re.compile(_SEG + r"/lib/(python3\.\d+)/site-packages/"), "site-packages/"),
    (re.compile(_SEG + r"/lib/(python3\.\d+)/"), r"\1/"),
    (re.compile(r"/tmp/ipykernel_\d+/\d+\.py"), "<cell>"),
    (re.compile(r"(?:/private)?/(?:var/folders/[\w/]+?|tmp)/(?:[\w.@-]+/)*"), "<tmp>/"),
]
PATTERNS = [
    re.compile(_SEG + r"/site-packages\b"),
    re.compile(_SEG + r"/lib/python3\.\d+/"),
    re.compile(r"\bipykernel_\d+"),
    re.compile(r"(?<![\w.<>-])/tmp/[\w.-]"),
]
"""What a page must not contain: an absolute path into an installation, a kernel file or a temp folder."""


def _machine_roots(extra: tuple[Path, ...] = ()) -> list[str]:
    roots = {str(Path(p).resolve()) for p in (*extra, sys.prefix, sys.base_prefix, Path.home())}
    return sorted((r for r in roots if r not in ("/", "")), key=len, reverse=True)


def scrub_text(text: str, roots: tuple[Path, ...] = ()) -> str:
    """`text` with the machine's absolute paths replaced by short, readable stand-ins."""
    for pattern, repl in _RULES:
        text = pattern.sub(repl, text)
    for root in _machine_roots(roots):
        text = text.replace(root + os.sep, "").replace(root, "~" if root == str(Path.home()) else ".")
    return text


def _scrub_value(value, roots):
    if isinstance(value, str):
        return scrub_text(value, roots)
    if isinstance(value, list):
        return [_scrub_value(v, roots) for v in value]
    return value


def scrub_notebook(nb: nbformat.NotebookNode, roots: tuple[Path, ...] = ()) -> nbformat.NotebookNode:
    """Rewrite the paths in every text output of `nb` in place (images and other binary data untouched)."""
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if "text" in out:
                out["text"] = _scrub_value(out["text"], roots)
            if "traceback" in out:
                out["traceback"] = _scrub_value(out["traceback"], roots)
            if "evalue" in out:
                out["evalue"] = _scrub_value(out["evalue"], roots)
            for mime, value in out.get("data", {}).items():
                if mime.startswith("text/"):
                    out["data"][mime] = _scrub_value(value, roots)
    return nb


def find_machine_paths(text: str, roots: tuple[Path, ...] = ()) -> list[str]:
    """The build-machine paths in `text` (each found once)."""
    found = [m.group(0) for p in PATTERNS for m in p.finditer(text)]
    for root in _machine_roots(roots):
        if root in text:
            found.append(root)
    return sorted(set(found))
