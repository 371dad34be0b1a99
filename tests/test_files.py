"""jaxpath/files.py: the one home of atomic writes, of writing files into a folder, and of private temp folders."""
import os
import subprocess
import sys

import pytest

from jaxpath.files import inside, private_temp_dir, remove_orphaned_temp_dirs, write_atomic, write_into


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


def test_a_killed_runs_private_folders_are_removed_and_a_live_ones_kept(tmp_path):
    """A SIGKILL reaches no cleanup code: the next run removes the folders of a process that is gone, and only
    those (a live process's, a folder of another name, a link are left alone)."""
    mine = private_temp_dir("kernel", dir=tmp_path)
    assert mine.name.startswith(f"jaxpath-kernel-{os.getpid()}-") and (mine.stat().st_mode & 0o777) == 0o700
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    # a process that is gone, for certain: the kernel gives out pids below pid_max only
    dead_pid = int(open("/proc/sys/kernel/pid_max").read())
    try:
        of_dead = tmp_path / f"jaxpath-sbx-{dead_pid}-abc"
        (of_dead / "work").mkdir(parents=True)
        (of_dead / "work" / "nb.ipynb").write_text("{}")
        of_live = tmp_path / f"jaxpath-ref-{live.pid}-abc"
        of_live.mkdir()
        other = tmp_path / "jaxpath-uids"
        other.mkdir()
        link = tmp_path / f"jaxpath-kernel-{dead_pid}-link"
        link.symlink_to(other)
        assert remove_orphaned_temp_dirs(tmp_path) == [of_dead]
        assert not of_dead.exists() and mine.is_dir() and of_live.is_dir() and other.is_dir() and link.is_symlink()
    finally:
        live.communicate(b"")
