"""The environment files agree with each other and with the pins the project promises."""
import re

import yaml
from conftest import ROOT

PROMISED = {"jax": "0.12.0.1", "jaxlib": "0.12.0.1", "flax": "0.12.12", "optax": "0.2.8",
            "orbax-checkpoint": "0.12.8", "nbgrader": "0.9.6"}


def _reqs(path):
    return [l.strip() for l in path.read_text().splitlines() if l.strip() and not l.strip().startswith("#")]


def _name(req):
    return re.split(r"[=<>!~\[ ]", req, maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_matches_requirements_in():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    assert "python=3.12" in deps
    pip = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    pip = [p for p in pip if not p.startswith("-e")]
    assert sorted(pip) == sorted(_reqs(ROOT / "requirements.in")), \
        "environment.yml's pip list differs from requirements.in: update one to match the other"


def test_lock_holds_every_direct_pin():
    # requirements-lti.txt: the LTI packages' part of the lock, kept out of requirements.txt (a chapter proof's key)
    lock = {_name(r): r.split("==", 1)[1] for f in ("requirements.txt", "requirements-lti.txt") for r in _reqs(ROOT / f)}
    for req in _reqs(ROOT / "requirements.in"):
        name = _name(req)
        assert name in lock, f"{name} is in requirements.in but not locked in requirements.txt"
        if "==" in req:
            assert lock[name] == req.split("==", 1)[1], f"{name}: requirements.in and requirements.txt disagree"
    for name, version in PROMISED.items():
        assert lock[name] == version


def test_python_version_file():
    assert (ROOT / ".python-version").read_text().strip() == "3.12"


def test_installed_stack_is_the_locked_one():
    from importlib.metadata import version
    for name, v in PROMISED.items():
        assert version(name) == v, f"installed {name} {version(name)}, locked {v}: run make"


def test_package_declares_what_it_imports_and_the_lock_satisfies_it():
    """`pip install .` gives a CLI that starts: every declared range holds the locked version, and every
    third-party module jaxpath imports at its top level is declared."""
    import ast
    import sys
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # requirements-lti.txt: the LTI packages' part of the lock, kept out of requirements.txt (a chapter proof's key)
    lock = {_name(r): r.split("==", 1)[1] for f in ("requirements.txt", "requirements-lti.txt") for r in _reqs(ROOT / f)}
    declared = set()
    for spec in project["dependencies"] + project["optional-dependencies"]["course"]:
        req = Requirement(spec)
        name = req.name.lower().replace("_", "-")
        declared.add(name)
        assert name in lock, f"{name} is declared in pyproject.toml but not locked in requirements.txt"
        assert req.specifier.contains(lock[name], prereleases=True), f"{spec} excludes the locked {lock[name]}"
    module_to_dist = {"jupyter_client": "jupyter-client", "yaml": "pyyaml", "sqlalchemy": "sqlalchemy",
                      "distributed": "distributed", "dask": "dask", "myst_nb": "myst-nb",
                      "sphinx_book_theme": "sphinx-book-theme", "jupyter_core": "jupyter-core",
                      "ltiauthenticator": "jupyterhub-ltiauthenticator"}
    imported = set()
    for path in (ROOT / "jaxpath").rglob("*.py"):
        for node in ast.parse(path.read_text()).body:  # top-level imports: what `import jaxpath.x` needs
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
            imported |= {n.split(".")[0] for n in names}
    third_party = {m for m in imported if m not in sys.stdlib_module_names and m != "jaxpath"}
    # jupyter_core and traitlets come with nbgrader and jupyter_client; packaging with every pip
    implied = {"jupyter_core", "traitlets", "packaging"}
    missing = sorted(m for m in third_party - implied if module_to_dist.get(m, m.replace("_", "-")) not in declared)
    assert not missing, f"jaxpath imports {missing} but pyproject.toml does not declare them"


def test_ruff_is_clean():
    """The lint configured in pyproject.toml ([tool.ruff]) holds for the tool and its tests."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "ruff", "check", "jaxpath", "tests"], cwd=ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-1000:]
