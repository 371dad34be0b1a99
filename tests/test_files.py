"""jaxpath/files.py: the one home of atomic writes and of writing files into a folder."""
import os

import pytest

from jaxpath.files import inside, write_atomic, write_into


def test_write_atomic_leaves_the_old_file_when_the_write_fails(tmp_path, monkeypatch):
    path = tmp_path / "sub" / "f.json"
    write_atomic(path, "one")
    assert path.read_text() == "one"

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError):
        write_atomic(path, "two")
    assert path.read_text() == "one" and sorted(p.name for p in path.parent.iterdir()) == ["f.json"]


def test_write_into_never_writes_outside_the_folder(tmp_path):
    folder = tmp_path / "work"
    folder.mkdir()
    (tmp_path / "outside").mkdir()
    (folder / "link").symlink_to(tmp_path / "outside")
    refused = write_into(folder, {"a/b.txt": b"ok", "../escape.txt": b"no", "/tmp/abs.txt": b"no",
                                  "link/through.txt": b"no"}, atomic=True)
    assert sorted(refused) == ["../escape.txt", "/tmp/abs.txt", "link/through.txt"]
    assert (folder / "a" / "b.txt").read_bytes() == b"ok"
    assert not (tmp_path / "escape.txt").exists() and not any((tmp_path / "outside").iterdir())
    assert inside(folder, "a/b.txt") == (folder / "a" / "b.txt").resolve() and inside(folder, "..") is None
