"""The course's grading limits live in course.toml [grading], read by `jaxpath grade` and by nbgrader's own commands;
a second value for the same limit is refused, never silently dropped."""
import pytest
from course_factory import make_course

from jaxpath import Config
from jaxpath.cli import main
from jaxpath.errors import JaxpathError
from jaxpath.grade import Limits


def _course(tmp_path, grading="", nbgrader=""):
    root = make_course(tmp_path / "c")
    (root / "course.toml").write_text((root / "course.toml").read_text() + grading)
    (root / "nbgrader_config.py").write_text((root / "nbgrader_config.py").read_text() + nbgrader)
    return Config.load(root)


def test_limits_come_from_course_toml_then_the_command_line(tmp_path):
    cfg = _course(tmp_path, "\n[grading]\ncell_timeout = 30\nmemory_mb = 2048\n")
    assert Limits.for_course(cfg) == Limits(cell_timeout=30, memory_mb=2048)
    assert Limits.for_course(cfg, cell_timeout=5, memory_mb=None).cell_timeout == 5


def test_nbgraders_execute_timeout_is_the_cell_timeout_and_a_conflict_is_refused(tmp_path):
    cfg = _course(tmp_path, nbgrader="c.Execute.timeout = 45\n")
    assert Limits.for_course(cfg).cell_timeout == 45, "nbgrader's setting is read, not ignored"
    cfg = _course(tmp_path / "b", "\n[grading]\ncell_timeout = 30\n", "c.Execute.timeout = 45\n")
    with pytest.raises(JaxpathError, match=r"c.Execute.timeout = 45 but course.toml \[grading\] sets cell_timeout = 30"):
        Limits.for_course(cfg)


def test_unknown_or_bad_settings_are_refused(tmp_path, capsys):
    cfg = _course(tmp_path, "\n[grading]\ncell_timout = 30\n")
    with pytest.raises(JaxpathError, match="unknown key.*cell_timout"):
        Limits.for_course(cfg)
    cfg = _course(tmp_path / "b", "\n[grading]\nmemory_mb = -1\n")
    assert main(["--root", str(cfg.root), "grade", "demo"]) != 0
    assert "memory_mb: a positive whole number" in capsys.readouterr().out


def test_this_course_keeps_one_value():
    cfg = Config.load(".")
    assert cfg.nbgrader().Execute.timeout == Limits.for_course(cfg).cell_timeout
