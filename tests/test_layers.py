"""The layering of jaxpath/ holds: the import-linter contracts of pyproject.toml ([tool.importlinter]: flows in
layers, the learner's side apart from the grader, no import circles) are kept, and the top of jaxpath/ holds only
the shared leaves and the flow packages."""
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import ROOT

FLOWS = {"cli", "classroom", "learner", "authoring", "grade"}
"""The packages a person works in: the command line, running a class, the learner's side, writing the course,
grading."""
LEAVES = {"config", "gradebooks", "cells", "files", "texts", "errors", "manifest", "problems", "startup", "execute", "kernel",
          "templates", "faults"}
"""What several flows share, at the top of jaxpath/ (kernel/ and templates/ are packages of code and data)."""


def _top_level() -> set[str]:
    names = set()
    for p in (ROOT / "jaxpath").iterdir():
        if p.name.startswith((".", "__")):  # __init__.py, __pycache__
            continue
        if p.is_dir() and (p / "__init__.py").exists():
            names.add(p.name)
        elif p.suffix == ".py":
            names.add(p.stem)
        else:
            names.add(p.name)  # anything else at the top is reported by name
    return names


def test_import_contracts_are_kept():
    """`lint-imports` (pyproject.toml [tool.importlinter]) passes: its output names every import that breaks a
    contract and how to make the packages acyclic."""
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint, f"lint-imports is not installed beside {sys.executable}: run `make install` (it is in the lock)"
    r = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    report = r.stdout[r.stdout.find("Contracts"):]  # after import-linter's banner
    assert r.returncode == 0, "import-linter contracts broken:\n" + report[-6000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout


def test_the_top_of_jaxpath_holds_only_the_shared_leaves_and_the_flow_packages():
    found = _top_level()
    assert found - FLOWS - LEAVES == set(), (
        f"jaxpath/ holds {sorted(found - FLOWS - LEAVES)}: a module belongs in the flow that uses it "
        "(authoring/, grade/, classroom/, learner/, cli/) or, when several flows share it, among the leaves "
        "(here and in pyproject.toml's layers contract)")
    assert FLOWS | LEAVES <= found, f"missing from jaxpath/: {sorted((FLOWS | LEAVES) - found)}"


def test_the_layers_contract_names_exactly_these_packages_and_leaves():
    """The contract's layers and this test's lists are one list: neither can place a module the other does not."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["type"] == "layers" and c.get("containers") == ["jaxpath"])
    named = {name.strip() for layer in layers["layers"] for name in layer.replace("|", ":").split(":")}
    assert named == FLOWS | LEAVES
    assert {name.strip() for name in layers["layers"][-1].split(":")} == LEAVES  # the leaves are the lowest layer
    assert layers.get("exhaustive") is True  # a module missing from the layers breaks the contract
