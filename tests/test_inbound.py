"""jaxpath's collect from nbgrader's exchange (jaxpath.classroom.inbound): whole submissions only, the time the
kernel gave (not the one the student wrote), the instructor's rule, atomic and resumable. No kernel, no account:
the entries are made here the way `nbgrader submit` makes them (docs/storm.md)."""
import datetime as dt
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from jaxpath.classroom.inbound import MARK, Entry, InboundError, choose, collect_inbound, collected_entry, read_entries
from jaxpath.faults import wait_for

PAST = dt.datetime(2000, 1, 1)
FUTURE = dt.datetime(2999, 1, 1)


def entry(exchange: Path, student: str, claimed: str, body: str = "{}", whole: bool = True) -> Path:
    """What `nbgrader submit` leaves in inbound/: the notebook, timestamp.txt, the secret, then mode 0777 (last)."""
    inbound = exchange / "course" / "inbound"
    inbound.mkdir(parents=True, exist_ok=True)
    e = inbound / f"{student}+part+{claimed}+{secrets.token_urlsafe(6)}"
    e.mkdir()
    (e / "01.ipynb").write_text(body)
    (e / "timestamp.txt").write_text(claimed)
    if whole:
        (e / "submission_secret.txt").write_text(secrets.token_hex(8))
        os.chmod(e, 0o777)
    return e


def collect(exchange, root, **kw):
    return collect_inbound(exchange, "course", "part", root, **kw)


def test_only_whole_submissions_are_collected(tmp_path):
    ex, root = tmp_path / "ex", tmp_path / "course"
    half = entry(ex, "ada", "2026-01-01 10:00:00.000000 UTC", whole=False)
    r = collect(ex, root)
    assert r.incomplete == [half] and not r.collected
    assert not (root / "submitted/ada/part").exists()


def test_each_submission_is_copied_once_and_whole(tmp_path):
    ex, root = tmp_path / "ex", tmp_path / "course"
    e = entry(ex, "ada", "2026-01-01 10:00:00.000000 UTC", body='{"a": 1}')
    r = collect(ex, root)
    assert [c.path for c in r.collected] == [e]
    place = root / "submitted/ada/part"
    assert (place / "01.ipynb").read_text() == '{"a": 1}'
    assert collected_entry(place) == e.name
    # the time written is the kernel's (ctime), not the one the entry claims
    trusted = dt.datetime.strptime((place / "timestamp.txt").read_text(), "%Y-%m-%d %H:%M:%S.%f UTC")
    assert trusted == r.collected[0].trusted and trusted.year >= 2026
    again = collect(ex, root)
    assert again.unchanged == ["ada"] and not again.collected
    assert not list(place.parent.glob(".jaxpath-*"))


def test_the_rule_decides_between_an_on_time_and_a_later_submission():
    def e(name, t):
        return Entry(Path(name), "ada", "part", "", t, True)

    early, late = e("a", dt.datetime(2026, 1, 1, 10)), e("b", dt.datetime(2026, 1, 1, 12))
    due = dt.datetime(2026, 1, 1, 11)
    assert choose([early, late], "before-due", due) is early  # nbgrader's --before-duedate (#1171, #1320)
    assert choose([early, late], "latest", due) is late       # nbgrader's collect
    assert choose([late], "before-due", due) is late          # nothing on time: the late one, marked late
    assert late.late(due) and not early.late(due)
    with pytest.raises(InboundError, match="unknown rule"):
        choose([early], "first", due)


def test_a_forged_timestamp_does_not_make_a_late_submission_on_time(tmp_path):
    ex, root = tmp_path / "ex", tmp_path / "course"
    entry(ex, "bo", "2001-01-01 00:00:00.000000 UTC")  # claims a time long before the due date
    r = collect(ex, root, due=PAST + dt.timedelta(days=400))
    assert [x.student for x in r.late] == ["bo"] and [x.student for x in r.forged] == ["bo"]
    assert "2001" not in (root / "submitted/bo/part/timestamp.txt").read_text()
    assert "claimed 2001-01-01" in (root / "submitted/bo/part" / MARK).read_text()


def test_a_newer_submission_replaces_the_collected_one_in_place(tmp_path):
    ex, root = tmp_path / "ex", tmp_path / "course"
    entry(ex, "ada", "2026-01-01 10:00:00.000000 UTC", body="first")
    collect(ex, root)
    second = entry(ex, "ada", "2026-01-01 10:00:01.000000 UTC", body="second")
    entries = read_entries(ex / "course/inbound", "part")
    if entries[-1].path != second:  # both made in one tick of the kernel's clock: nothing to tell them apart
        pytest.skip("the two entries share a ctime")
    r = collect(ex, root, rule="latest", due=FUTURE)
    assert [c.path for c in r.collected] == [second]
    assert (root / "submitted/ada/part/01.ipynb").read_text() == "second"


def test_a_collect_killed_mid_copy_leaves_nothing_half_placed_and_a_rerun_completes(tmp_path):
    """The collector stops at its `collect-copying` checkpoint (a named pipe says it is there) and is killed."""
    ex, root = tmp_path / "ex", tmp_path / "course"
    for s in ("ada", "bo"):
        entry(ex, s, "2026-01-01 10:00:00.000000 UTC", body=f"{s}'s")
    fifo = tmp_path / "fault"
    os.mkfifo(fifo)
    code = ("import sys; from pathlib import Path; from jaxpath.classroom.inbound import collect_inbound; "
            "collect_inbound(Path(sys.argv[1]), 'course', 'part', Path(sys.argv[2]))")
    proc = subprocess.Popen([sys.executable, "-c", code, ex, root],
                            env={**os.environ, "JAXPATH_FAULT": "collect-copying", "JAXPATH_FAULT_FIFO": str(fifo)})
    try:
        point, pid = wait_for(fifo, (proc.pid,))
        assert (point, pid) == ("collect-copying", proc.pid)
    finally:  # killed there, or, when the wait failed, not left waiting at its checkpoint for ever
        proc.kill()
        proc.wait()
    assert not (root / "submitted/ada/part").exists(), "nothing is in place before it is whole"
    assert list((root / "submitted/ada").glob(".jaxpath-collecting-*")), "the copy was under way"
    r = collect(ex, root)
    assert sorted(c.student for c in r.collected) == ["ada", "bo"] and r.removed_leftovers
    assert (root / "submitted/ada/part/01.ipynb").read_text() == "ada's"
    assert not list((root / "submitted").rglob(".jaxpath-collecting-*"))


def test_an_unreadable_exchange_is_named(tmp_path):
    with pytest.raises(InboundError, match=str(tmp_path / "nowhere")):
        collect_inbound(tmp_path / "nowhere", "course", "part", tmp_path)


def test_collect_until_wakes_on_each_new_submission_and_ends_at_the_stop_file(tmp_path):
    """The instructor's loop: a round at every change in inbound/ (inotify), not a poll; ends when told."""
    import queue
    import threading

    from jaxpath.classroom.inbound import collect_until

    ex, root = tmp_path / "ex", tmp_path / "course"
    (ex / "course/inbound").mkdir(parents=True)
    stop = tmp_path / "stop"
    rounds: queue.Queue = queue.Queue()
    loop = threading.Thread(target=collect_until, args=(ex, "course", "part", root, stop), daemon=True,
                            kwargs={"due_of": lambda: None, "on_round": lambda a, b, r: rounds.put(r)})
    loop.start()
    try:
        assert not rounds.get(timeout=60).collected  # the first round: nothing yet
        entry(ex, "ada", "2026-01-01 10:00:00.000000 UTC", body="ada's")
        got = []
        while not got:  # each change wakes a round; the one after the entry became whole collects it
            got = rounds.get(timeout=60).collected
        assert [e.student for e in got] == ["ada"]
    finally:  # a failed assertion must not leave the loop waiting on inotify: it would hold pytest at exit
        stop.write_text("")
        loop.join(timeout=60)
    assert not loop.is_alive()
    assert (root / "submitted/ada/part/01.ipynb").read_text() == "ada's"


def test_readable_takes_a_descriptor_numbered_above_1024():
    """A long test worker or grader holds more than 1024 descriptors: select() refused those (a failure seen in
    `make test`), the waits of the collector, the storm and the fault injector use poll."""
    import resource

    from jaxpath.faults import readable

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 1200:
        pytest.skip(f"this process may not open descriptor 1200 (hard limit {hard})")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1300) if soft != resource.RLIM_INFINITY else soft, hard))
    r, w = os.pipe()
    high = os.dup2(r, 1200)
    try:
        assert readable([high], 0) == []
        os.write(w, b"x")
        assert readable([high], 0) == [high]
        assert readable([high]) == [high]  # no timeout: returns once one is readable, here at once
    finally:
        for fd in (r, w, high):
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
