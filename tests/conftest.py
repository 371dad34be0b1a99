import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from course_factory import make_course  # noqa: E402

from jaxpath import Config  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


SHARED_UNITS = {"graded_sample": ("tests/test_sample_class.py::", "tests/test_similar.py::TestSampleClass::",
                                   "tests/test_clusters.py::TestSampleClass::")}
"""Session fixtures that several modules read and that cost minutes to build (the graded sample class: about 280 s
on a loaded machine): every test that uses one goes into one unit of work, so one worker builds it once. (The
scheduler runs in pytest-xdist's controller, which sees node ids, not fixtures: `pytest_collection_modifyitems`
stops the run when a test uses such a fixture from outside these prefixes.)"""


DURATIONS = Path(__file__).with_name("durations.json")
"""Seconds each test took (setup, call and teardown) in one whole `make test-all` on 2 cores
(`JAXPATH_RECORD_DURATIONS=tests/durations.json make test-all` writes it again). Only the order the workers
take the tests in reads it, so a stale or missing entry makes a run slower, never wrong: a test it does not
know counts as 30 s when marked `slow`, 0.5 s otherwise."""


def unit_of(nodeid: str) -> str:
    """The unit of work a test goes in: itself, except that the tests of a test class go together, one unit per
    parameter (`tests/test_hostile.py::TestCorpus::test_x[host]` is in the unit `TestCorpus[host]`), and the
    tests of a SHARED_UNITS fixture go together. A class is how a module here says "these tests share one
    expensive module fixture" (a graded class, a graded corpus per isolation level): each unit runs on one
    worker, so that fixture is built once."""
    for fixture, prefixes in SHARED_UNITS.items():
        if nodeid.startswith(prefixes):
            return fixture
    path, *names = nodeid.split("::")
    if len(names) < 2:  # a function of a module: a unit of its own
        return nodeid
    test = names[-1]
    return f"{path}::{names[0]}{test[test.index('['):] if '[' in test else ''}"


def pytest_xdist_make_scheduler(config, log):
    """How `make test` (pytest -n) hands tests to its workers: a unit (`unit_of`) at a time, in the order
    `pytest_collection_modifyitems` leaves them (pytest-xdist's own reordering, by the number of tests in a
    unit, is switched off). (pytest-xdist's `xdist_group` marks do nothing under pytest 9.2: its loadgroup
    renames `item._nodeid`, which pytest 9 no longer reads, so every worker graded each batch.)"""
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False

    class ClassUnits(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return ClassUnits(config, log)


def pytest_collection_modifyitems(session, config, items):
    """The longest units first (by tests/durations.json), so that the two workers finish together instead of one
    waiting out a long test that started last: the classic longest-processing-time-first rule. The sort is
    stable, so a class's tests stay together and in order."""
    import json

    known = json.loads(DURATIONS.read_text(encoding="utf-8")) if DURATIONS.exists() else {}
    weight: dict[str, float] = {}
    for item in items:
        guess = 30.0 if item.get_closest_marker("slow") is not None else 0.5
        unit = unit_of(item.nodeid)
        weight[unit] = weight.get(unit, 0.0) + known.get(item.nodeid, guess)
    items.sort(key=lambda item: (-weight[unit_of(item.nodeid)], unit_of(item.nodeid)))
    stray = [item.nodeid for item in items for fixture, prefixes in SHARED_UNITS.items()
             if fixture in getattr(item, "fixturenames", ()) and not item.nodeid.startswith(prefixes)]
    if stray:
        raise pytest.UsageError(f"these tests use a fixture of SHARED_UNITS (tests/conftest.py) but are not in its unit, "
                                f"so another worker would build it again: {stray}")


def pytest_runtest_logreport(report):
    """With `JAXPATH_RECORD_DURATIONS` set: each test's seconds, summed over its phases (see DURATIONS)."""
    if os.environ.get("JAXPATH_RECORD_DURATIONS"):
        _spent[report.nodeid] = _spent.get(report.nodeid, 0.0) + report.duration


_spent: dict[str, float] = {}


def run_compile_cache() -> Path | None:
    """The compilation cache the test processes of this run share (tests/conftest.py names the run), or None
    outside a test run. The controlling process removes it once its workers are gone."""
    token = os.environ.get("JAXPATH_TEST_RUN")
    return Path(tempfile.gettempdir()) / f"jaxpath-test-jax-cache-{token}" if token else None


@pytest.fixture(scope="session", autouse=True)
def shared_compile_cache(tmp_path_factory):
    """One compilation cache for every batch graded in this test run (`JAXPATH_COMPILE_CACHE`), as a grader
    who keeps it on a fast disk has: a test's course is a fresh copy, and without this each of them compiled
    every program of the same chapter again. Both test processes share it: the grader's reference runs are
    its only writers, and each publishes an entry whole, by a hard link from a private staging folder, never
    over one that is there (jaxpath.grade.reference: `_publish`), so two of them writing at once, or a kernel
    reading while they do, is safe by construction. Batches run as another user (tests/as_user.py) start from
    a clean environment and keep the course's own folder."""
    path = run_compile_cache()
    if path is None:
        path = tmp_path_factory.mktemp("jax-cache")
    path.mkdir(exist_ok=True)
    before = os.environ.get("JAXPATH_COMPILE_CACHE")
    os.environ["JAXPATH_COMPILE_CACHE"] = str(path)
    yield path
    if before is None:
        os.environ.pop("JAXPATH_COMPILE_CACHE", None)
    else:
        os.environ["JAXPATH_COMPILE_CACHE"] = before


@pytest.fixture(scope="session")
def chromium_browser():
    """Debian's chromium, headless, driven by Playwright: ONE per test process, which every browser test shares
    (each opens its own context or page). Playwright's sync API runs an event loop for as long as it is started,
    so a second `sync_playwright()` in the same process fails ("using Playwright Sync API inside the asyncio
    loop") whenever another test's is still open: with one started here, which test runs first on a worker no
    longer matters."""
    from site_factory import CHROMIUM, CHROMIUM_ARGS

    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed at /usr/bin/chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def chromium(chromium_browser):
    """The process's chromium, for one test, which must close every page and context it opens: a page left open
    keeps running in the shared browser until the test process ends (JupyterLab's pages poll their server and,
    once it is gone, retry and redraw; found when the hub tests' four JupyterLab pages kept chromium's GPU
    process at about a fifth of a core for the rest of a `make test-all`). What a test leaves is closed here,
    and the test errors, naming how many."""
    yield chromium_browser
    left = list(chromium_browser.contexts)
    for context in left:
        context.close()
    assert not left, (f"the test left {len(left)} browser context(s) open in the shared chromium: close each page and "
                      "context it opens (Person is a context manager; a page of browser.new_page() closes its context)")


@pytest.fixture(scope="session")
def graded_sample(tmp_path_factory):
    """The sample class graded by `jaxpath grade` and by stock nbgrader (tests/sample_factory.py), once per test
    process for every module that reads it: a `GradedSample` (sample, config, ours, theirs)."""
    from sample_factory import graded_sample_class

    return graded_sample_class(tmp_path_factory)


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


def _pg_bin():
    import glob

    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory):
    """A real PostgreSQL server on loopback for the session (Debian's postgresql package; .ci/run installs it)."""
    import os
    import pwd
    import socket
    import subprocess
    import time

    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="jaxpath-pg-"))  # pytest's own tmp is private to root
    os.chmod(base, 0o755)
    data, sock = base / "data", base / "sock"
    data.mkdir()
    sock.mkdir()
    run_as = []
    if os.geteuid() == 0:  # initdb refuses to run as root
        user = pwd.getpwnam("postgres")
        for d in (data, sock):
            os.chown(d, user.pw_uid, user.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run(run_as + [str(bindir / "initdb"), "-D", str(data), "-U", "grader", "--auth=trust"],
                   check=True, capture_output=True)
    subprocess.run(run_as + [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(data / "log"), "-w", "-o",
                             f"-p {port} -k {sock} -c listen_addresses=127.0.0.1", "start"],
                   check=True, capture_output=True)
    try:
        url = f"postgresql://grader@127.0.0.1:{port}/postgres"
        import sqlalchemy as sa

        for _ in range(50):
            try:
                sa.create_engine(url).connect().close()
                break
            except Exception:
                time.sleep(0.2)
        yield url
    finally:
        subprocess.run(run_as + [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


# -- nothing left behind: after the whole run, no private temporary folder and no server a test started -------
_SERVERS = re.compile(r"postgres|dask|jupyter-lab|jupyterlab|jupyter-server")


def _left_dirs(since: float) -> list[str]:
    """jaxpath's private folders whose process is gone (any user's: the rootless grader runs as another), and
    site builds made since `since`."""
    from jaxpath.files import orphaned_temp_dirs

    sites = [p for p in Path(tempfile.gettempdir()).glob("jaxpath-site-*") if p.lstat().st_mtime >= since]
    return sorted(str(p) for p in orphaned_temp_dirs(any_user=True) + sites)


def _servers(token: str) -> dict[int, str]:
    """pid -> command line of every PostgreSQL, Dask or Jupyter process started within this test run (its
    environment carries the run's token)."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            if not _SERVERS.search(cmd) or f"JAXPATH_TEST_RUN={token}".encode() not in (d / "environ").read_bytes():
                continue
        except OSError:
            continue
        out[int(d.name)] = cmd
    return out


def pytest_sessionstart(session):
    import uuid

    if not hasattr(session.config, "workerinput"):  # the controller (or a run without workers)
        os.environ["JAXPATH_TEST_RUN"] = uuid.uuid4().hex  # inherited by the workers and all they start
        session.config.stash[_RUN] = (time.time(), os.environ["JAXPATH_TEST_RUN"], set(_left_dirs(0)))


_RUN = pytest.StashKey[tuple]()


@pytest.hookimpl(trylast=True)  # after pytest-xdist's own, which ends the workers
def pytest_sessionfinish(session, exitstatus):
    """The whole run, checked once its workers are gone: a test that leaves a kernel's or a sandbox's folder, a
    site build or a running server behind fails the run, naming what it left. (A server still exiting is
    waited on for its own exit, up to 30 s.)"""
    import site_factory

    site_factory.remove_built_sites()  # this process's own (a worker's, or a run without workers)
    if hasattr(session.config, "workerinput"):
        return
    if os.environ.get("JAXPATH_RECORD_DURATIONS") and _spent:
        import json

        Path(os.environ["JAXPATH_RECORD_DURATIONS"]).write_text(
            json.dumps({k: round(v, 1) for k, v in sorted(_spent.items())}, indent=0) + "\n", encoding="utf-8")
    site_factory.remove_shared_site()  # the one the run's processes shared, once none of them is left
    if (cache := run_compile_cache()) is not None:
        shutil.rmtree(cache, ignore_errors=True)
    if _RUN not in session.config.stash or exitstatus not in (0, 1):
        return
    since, token, before = session.config.stash[_RUN]
    servers = _servers(token)
    deadline = time.monotonic() + 30
    while servers and time.monotonic() < deadline:
        time.sleep(0.2)
        servers = {p: c for p, c in _servers(token).items() if p in servers}
    dirs = [d for d in _left_dirs(since) if d not in before]
    if dirs or servers:
        lines = [f"\nleft behind by this test run: {len(dirs)} temporary folder(s), {len(servers)} server process(es)"]
        lines += [f"  {d}" for d in dirs[:20]] + [f"  pid {p}: {c[:150]}" for p, c in sorted(servers.items())[:20]]
        session.config.pluginmanager.get_plugin("terminalreporter").write_line("\n".join(lines), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
