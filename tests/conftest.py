import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from course_factory import make_course  # noqa: E402

from jaxpath import Config  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def course(tmp_path) -> Path:
    """A small, valid course directory with one chapter of three exercises (no JAX: fast kernels)."""
    return make_course(tmp_path / "course")


@pytest.fixture
def course_config(course) -> Config:
    return Config.load(course)


@pytest.fixture(scope="session")
def real_config() -> Config:
    return Config.load(ROOT)
