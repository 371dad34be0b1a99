"""What a process needs before nbgrader creates a gradebook in it, or before it starts nbgrader's commands."""
from __future__ import annotations

import functools

from .config import ensure_venv_on_path


def prepare_nbgrader() -> None:
    """Ready this process to create gradebooks and to start nbgrader's commands.

    nbgrader stamps a new gradebook with alembic's head revision, which it asks a bare `alembic heads` for, run
    as a subprocess each time (`nbgrader.api.get_alembic_version`): about 2 s of CPU for a fixed answer, and a
    FileNotFoundError where this Python's bin is not on PATH. Here alembic is asked once, in this process, from
    the same migration scripts (`alembic_head`), and nbgrader's function is pointed at that answer. This
    Python's bin still goes first on PATH (`ensure_venv_on_path`), for the nbgrader commands this process
    starts."""
    import nbgrader.api

    nbgrader.api.get_alembic_version = alembic_head
    ensure_venv_on_path()


@functools.cache
def alembic_head() -> str:
    """The revision nbgrader stamps a new gradebook with: the head of its alembic migrations (what
    `alembic heads` prints first), read in this process."""
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    heads = ScriptDirectory(ALEMBIC_DIR).get_heads()
    if len(heads) != 1:
        raise RuntimeError(f"nbgrader's migrations ({ALEMBIC_DIR}) have {len(heads)} heads, not one: {heads}")
    return heads[0]
