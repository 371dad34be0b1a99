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
    lock = {_name(r): r.split("==", 1)[1] for r in _reqs(ROOT / "requirements.txt")}
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
