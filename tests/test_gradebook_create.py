"""A new gradebook, created the way jaxpath creates one (after `prepare_nbgrader`), is stamped with the revision
stock nbgrader stamps it with, and without the `alembic heads` subprocess nbgrader starts for it."""
import subprocess
import sys
from pathlib import Path

import pytest

from jaxpath.gradebooks import alembic_head, prepare_nbgrader

BIN = Path(sys.executable).parent


def _stamped(db: Path) -> list[str]:
    import sqlite3

    with sqlite3.connect(db) as c:
        return [row[0] for row in c.execute("SELECT version_num FROM alembic_version")]


def test_the_head_is_what_alembic_heads_prints(tmp_path):
    from nbgrader.dbutil import _temp_alembic_ini

    with _temp_alembic_ini(f"sqlite:///{tmp_path / 'x.db'}") as ini:
        printed = subprocess.run([str(BIN / "alembic"), "-c", ini, "heads"], capture_output=True, text=True,
                                 check=True).stdout
    assert printed.split()[0] == alembic_head()
    assert len(alembic_head()) == 12 and int(alembic_head(), 16) >= 0


def test_a_new_gradebook_starts_no_subprocess_and_is_stamped_as_nbgrader_stamps_it(tmp_path, monkeypatch):
    import nbgrader.api

    monkeypatch.setattr(nbgrader.api, "get_alembic_version", nbgrader.api.get_alembic_version)  # undone after
    prepare_nbgrader()

    def no_subprocess(*a, **k):
        raise AssertionError(f"a subprocess was started: {a}")

    monkeypatch.setattr(nbgrader.api.sp, "check_output", no_subprocess)
    db = tmp_path / "gradebook.db"
    with nbgrader.api.Gradebook(f"sqlite:///{db}", "course") as gb:
        gb.add_student("s1")
    assert _stamped(db) == [alembic_head()]


def test_stock_nbgrader_stamps_the_same_revision(tmp_path):
    """What an nbgrader command of its own (no jaxpath in its process) writes into a new gradebook."""
    db = tmp_path / "gradebook.db"
    code = f"from nbgrader.api import Gradebook\nwith Gradebook('sqlite:///{db}', 'course'): pass\n"
    env = {"PATH": f"{BIN}:/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=tmp_path, timeout=120)
    if not db.exists():
        pytest.fail("stock nbgrader created no gradebook")
    assert _stamped(db) == [alembic_head()]
