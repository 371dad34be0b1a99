"""Read or replace one cell's source in a source notebook, keeping the file's formatting (for authors and scripts).

    python scripts/cell.py get source/basics/05_pmap.ipynb 60 > /tmp/cell.py
    python scripts/cell.py set source/basics/05_pmap.ipynb 60 < /tmp/cell.py
    python scripts/cell.py find source/basics/05_pmap.ipynb global_mean   # index of each cell of an exercise

Indices count from 0, as in the notebook's JSON (Jupyter's cell list and jaxpath's messages count from 1)."""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from jaxpath.files import write_atomic  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in ("get", "set", "find"):
        print(__doc__, file=sys.stderr)
        return 2
    verb, path, which = argv
    nb = nbformat.read(path, as_version=4)
    if verb == "find":
        for i, c in enumerate(nb.cells):
            gid = c.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
            first = c.source.strip().splitlines()[0] if c.source.strip() else ""
            if gid.startswith(which + "-") or (first.startswith("###") and which in first):
                print(i, c.cell_type, gid or first)
        return 0
    i = int(which)
    if verb == "get":
        sys.stdout.write(nb.cells[i].source + "\n")
        return 0
    nb.cells[i].source = sys.stdin.read().rstrip("\n")
    write_atomic(Path(path), nbformat.writes(nb) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
