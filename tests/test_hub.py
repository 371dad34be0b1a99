"""The course on a real JupyterHub (deploy/, `jaxpath hub`): its settings and configuration, then the whole
loop across real accounts in a browser, with the privacy checks.

The browser test makes an instructor, a grader and two students (PAM accounts with passwords) and two course
accounts, starts the hub as `jaxpath hub` does (JupyterHub, configurable-http-proxy from deploy/node_modules,
each course's formgrader as a hub service, every server as its person, all on loopback), and then: the
instructor releases both courses from a terminal of their JupyterLab; each student logs in, fetches in the
Assignments tab, answers, runs Validate and submits there; the grader collects, grades with `jaxpath grade`
as itself (the isolation level an ordinary account gets) and releases feedback; each student fetches their own
feedback in the Assignments tab and reads its per-exercise summary. Then, as the students: the inbound and
feedback folders cannot be listed, another student's fetched copy and home cannot be read, the formgrader
cannot be opened, and only their own course is listed (the second course is another student's); and the
grader of one course cannot open the other's formgrader. Screenshots: build/screenshots/<test>/."""
from __future__ import annotations

import contextlib
import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
from hub_factory import can_run_in_browser

from jaxpath.classroom.hub import HubSettingsError, HubSetupError, load_settings
from jaxpath.classroom.hub.process import hub_command
from jaxpath.classroom.hub.setup import python_view, unreachable

REPO = Path(__file__).resolve().parent.parent


# -- settings: every mistake named before anything changes ----------------------------------------------------

def _settings(tmp_path: Path, text: str) -> Path:
    (tmp_path / "course").mkdir(exist_ok=True)
    (tmp_path / "course" / "nbgrader_config.py").write_text("c = get_config()\n")
    path = tmp_path / "deploy" / "hub.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


GOOD = """
    [hub]
    url = "http://127.0.0.1:8000"
    [[course]]
    id = "demo"
    directory = "course"
    account = "demo-course"
    instructors = ["ines"]
    graders = ["gus"]
    students = ["ada", "bo"]
    """


def test_the_deploy_settings_load():
    s = load_settings(REPO / "deploy" / "hub.toml")
    assert [c.id for c in s.courses] == ["jax-path", "warmup"]
    assert s.course("jax-path").directory == REPO
    assert s.state == REPO / "build" / "hub" and s.exchange == REPO / "build" / "hub" / "exchange"
    assert "jxp-student1" not in s.course("warmup").students and "jxp-student2" in s.course("warmup").students


def test_settings_relative_paths_and_roles(tmp_path):
    s = load_settings(_settings(tmp_path, GOOD))
    c = s.course("demo")
    assert c.directory == tmp_path / "course" and s.state == tmp_path / "build" / "hub"
    assert c.staff == ("ines", "gus") and s.people == ("ines", "gus", "ada", "bo")


@pytest.mark.parametrize("change, message", [
    (("url = \"http://127.0.0.1:8000\"", "url = \"127.0.0.1:8000\""), "is not an http(s) address"),
    (("[hub]", "[hub]\nport = 1"), "[hub] takes url, state and exchange, not ['port']"),
    (("id = \"demo\"", "id = \"Demo Course\""), "is not a course id"),
    (("directory = \"course\"", "directory = \"nowhere\""), "is not an nbgrader course"),
    (("account = \"demo-course\"", "account = \"Demo\""), "is not an account name"),
    (("students = [\"ada\", \"bo\"]", "students = [\"ada\", \"gus\"]"), "['gus'] both teach and take the course"),
    (("instructors = [\"ines\"]\n    graders = [\"gus\"]", ""), "no instructors or graders"),
    (("students = [\"ada\", \"bo\"]", "students = [\"ada\", \"demo-course\"]"), "is a service account"),
    (("students = [\"ada\", \"bo\"]", "students = \"ada\""), "`students` is a list of account names"),
    (("graders = [\"gus\"]", "graders = [\"gus\"]\n    graders_extra = 1"), "unknown key(s) ['graders_extra']"),
])
def test_settings_mistakes_are_named(tmp_path, change, message):
    with pytest.raises(HubSettingsError, match=re.escape(message)):
        load_settings(_settings(tmp_path, GOOD.replace(*change)))


def test_the_course_id_is_the_directorys_own(tmp_path):
    path = _settings(tmp_path, GOOD)
    (tmp_path / "course" / "nbgrader_config.py").write_text("c = get_config()\nc.CourseDirectory.course_id = 'other'\n")
    with pytest.raises(HubSettingsError, match="course_id = 'other': the two must be the same"):
        load_settings(path)


def test_settings_file_problems(tmp_path):
    with pytest.raises(HubSettingsError, match="no such settings file"):
        load_settings(tmp_path / "none.toml")
    with pytest.raises(HubSettingsError, match="not valid TOML"):
        load_settings(_settings(tmp_path, "[hub\n"))
    with pytest.raises(HubSettingsError, match="no \\[\\[course\\]\\]"):
        load_settings(_settings(tmp_path, "[hub]\n"))
    twice = GOOD + GOOD.split("[[course]]")[1].join(["[[course]]", ""])
    with pytest.raises(HubSettingsError, match="listed twice"):
        load_settings(_settings(tmp_path, twice))


def test_the_cli_reports_a_bad_settings_file(tmp_path, capsys):
    from jaxpath.cli import main

    assert main(["hub", "--settings", str(tmp_path / "none.toml")]) == 2
    assert "no such settings file" in capsys.readouterr().out


# -- where the accounts can run Python -------------------------------------------------------------------------

@pytest.fixture
def open_tmp():
    """A folder every account may enter (pytest's own tmp_path is under root's 0700 folder)."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="jaxpath-hubtest-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_unreachable_finds_the_first_closed_folder(open_tmp):
    closed = open_tmp / "closed"
    (closed / "inner").mkdir(parents=True)
    closed.chmod(0o700)
    assert unreachable(closed / "inner") == closed
    assert unreachable(closed) == closed
    closed.chmod(0o711)
    assert unreachable(closed / "inner") is None


def test_the_hub_runs_in_a_view_of_a_hidden_python(open_tmp):
    """Where this Python is under a folder others cannot enter (pyenv in /root here), the hub's command binds
    only the Python installation into an empty stand-in for that folder, in a private mount namespace."""
    s = load_settings(_settings(open_tmp, GOOD))
    real = Path(sys.base_prefix).resolve()
    if unreachable(Path(sys.prefix)) is not None:
        with pytest.raises(HubSetupError, match="which other accounts cannot enter"):
            python_view(s)
        return
    view = python_view(s)
    if unreachable(real) is None:
        assert view is None
        pytest.skip(f"this Python ({real}) is where every account can run it: no view needed")
    assert view["hidden"] == str(unreachable(real)) and real.is_relative_to(view["python"])
    argv = hub_command({"python_view": view})
    assert argv[:4] == [argv[0], "--mount", "--propagation", "private"] and argv[0].endswith("unshare")
    assert argv[-3:] == [str(Path(sys.prefix) / "bin" / "jupyterhub"), "-f", str(REPO / "deploy" / "jupyterhub_config.py")]
    assert Path(view["view"]).stat().st_mode & 0o777 == 0o755


def test_state_where_accounts_cannot_enter_is_refused(tmp_path):
    """pytest's tmp_path is in root's 0700 folder: a hub there could start nobody's server."""
    s = load_settings(_settings(tmp_path, GOOD))
    with pytest.raises(HubSetupError, match="the hub's state .* which other accounts cannot enter"):
        python_view(s)


def test_the_hub_needs_root_and_its_proxy(tmp_path, monkeypatch):
    import jaxpath.classroom.hub.setup as setup

    s = load_settings(_settings(tmp_path, GOOD))
    monkeypatch.setattr(setup.os, "geteuid", lambda: 1000)
    with pytest.raises(HubSetupError, match="the hub runs as root"):
        setup.prepare(s)
    monkeypatch.setattr(setup.os, "geteuid", lambda: 0)
    monkeypatch.setattr(setup, "PROXY", tmp_path / "none" / "configurable-http-proxy")
    with pytest.raises(HubSetupError, match="npm ci --prefix deploy"):
        setup.prepare(s)
    assert not s.state.exists(), "nothing was made"


def test_missing_accounts_are_named_unless_they_may_be_made(open_tmp, monkeypatch):
    import jaxpath.classroom.hub.setup as setup

    s = load_settings(_settings(open_tmp, GOOD.replace('"ines"', '"jxh-nobody-ines"')))
    monkeypatch.setattr(setup, "PROXY", Path(sys.executable))  # stands in for an installed proxy
    with pytest.raises(HubSetupError, match="no such account.*jxh-nobody-ines.*--create-accounts"):
        setup.prepare(s)
    assert not (s.state / "accounts.json").exists()


# -- the JupyterHub configuration, read as JupyterHub reads it ---------------------------------------------

def test_the_jupyterhub_config_gives_each_course_its_groups_roles_and_formgrader(tmp_path, monkeypatch):
    from traitlets.config.loader import PyFileConfigLoader

    hub = {"url": "http://127.0.0.1:8000", "state": str(tmp_path), "exchange": "/srv/x",
           "ports": {"hub": 1, "proxy_api": 2}, "proxy": ["node", "chp"], "singleuser": "/venv/bin/jupyterhub-singleuser",
           "path": "/venv/bin:/usr/bin", "jupyter_config": {"students": "/s", "staff": "/t", "service": "/v"},
           "python_view": None, "people": ["ines", "ada", "bo"],
           "courses": [{"id": "a", "title": "A", "directory": "/c/a", "account": "ca", "staff": ["ines"],
                        "instructors": ["ines"], "graders": [], "students": ["ada"], "service_url": "http://127.0.0.1:3"},
                       {"id": "b", "title": "B", "directory": "/c/b", "account": "cb", "staff": ["ines"],
                        "instructors": ["ines"], "graders": [], "students": ["bo"], "service_url": "http://127.0.0.1:4"}]}
    (tmp_path / "hub.json").write_text(json.dumps(hub))
    monkeypatch.setenv("JAXPATH_HUB_STATE", str(tmp_path))
    cfg = PyFileConfigLoader("jupyterhub_config.py", path=str(REPO / "deploy")).load_config()
    assert cfg.JupyterHub.authenticator_class == "pam" and cfg.Authenticator.allowed_users == {"ines", "ada", "bo"}
    assert cfg.JupyterHub.load_groups == {"formgrade-a": {"users": ["ines", "ca"]}, "nbgrader-a": {"users": ["ada"]},
                                          "formgrade-b": {"users": ["ines", "cb"]}, "nbgrader-b": {"users": ["bo"]}}
    assert "ca" not in cfg.Authenticator.allowed_users, "a course account never logs in"
    roles = {r["name"]: r for r in cfg.JupyterHub.load_roles}
    assert roles["formgrade-a"]["scopes"][0] == "access:services!service=a" and roles["formgrade-a"]["groups"] == ["formgrade-a"]
    assert not any("access:services" in s for s in roles["nbgrader-a"]["scopes"]), "students never reach a formgrader"
    services = {s["name"]: s for s in cfg.JupyterHub.services}
    assert services["b"]["user"] == "cb" and services["b"]["cwd"] == "/c/b" and services["b"]["url"] == "http://127.0.0.1:4"
    assert services["a"]["environment"]["JUPYTER_CONFIG_PATH"] == "/v"


# -- the loop across real accounts, in a browser -----------------------------------------------------------

@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.full
@pytest.mark.skipif(can_run_in_browser() is not None, reason=str(can_run_in_browser()))
def test_the_course_loop_on_a_real_hub(tmp_path, request, chromium):
    from hub_factory import TIMEOUT_MS, Person, Shots, Steps, course_hub
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    shots, steps = Shots(tmp_path, request.node.name), Steps(tmp_path)
    with course_hub(tmp_path) as hut, contextlib.ExitStack() as browsers:  # each person's browser closed before the hub
        steps("accounts made, hub started")
        _loop(hut, chromium, shots, steps, lambda *a: browsers.enter_context(Person(*a)), expect)


ANSWERS = {"s1": {"double": "return 2 * x", "square": "return x * x", "halve": "return x / 2"},
           "s2": {"double": "return 2 * x", "square": "return 2 * x", "halve": "return x / 2"}}
"""s1 answers every exercise right; s2 gets square wrong (2 of its 5 points)."""


def _answer(page, expect, name: str, body: str) -> None:
    cell = page.locator(".jp-Notebook .jp-CodeCell").filter(has_text="# ✍️ Your answer").filter(has_text=f"def {name}")
    expect(cell).to_have_count(1)
    editor = cell.locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(f"# ✍️ Your answer\ndef {name}(x):\n    {body}")
    expect(editor).to_contain_text(body)


def _assignments_tab(person, expect):
    page = person.page
    page.get_by_role("menuitem", name="Nbgrader").click()
    page.get_by_role("menuitem", name="Assignment List").click()
    expect(page.locator("#released_assignments_list")).to_be_visible()
    return page


def _pick(page, expect, course: str) -> None:
    """Choose the course whose assignments the Assignments tab lists."""
    page.locator("#course_list_dropdown").click()
    page.locator("#course_list li", has_text=course).click()
    expect(page.locator("#course_list_default")).to_have_text(course)


def _loop(hut, chromium, shots, steps, Person, expect):
    people = {role: Person(chromium, hut, role) for role in ("ins", "grader", "s1", "s2")}
    for p in people.values():  # the hub starts the four servers side by side
        p.log_in()
    for p in people.values():
        p.wait_for_lab()
    steps("four people logged in, their servers started")
    ins, grader, s1, s2 = people["ins"], people["grader"], people["s1"], people["s2"]
    demo, warmup = hut.course_dir("demo"), hut.course_dir("warmup")
    exchange = hut.settings.exchange

    # 1. the instructor releases both courses, from a terminal of their JupyterLab, as themself
    ins.ok(f"cd {demo} && nbgrader generate_assignment demo --force && nbgrader release_assignment demo --force")
    ins.ok(f"cd {warmup} && nbgrader generate_assignment arrays --force && nbgrader release_assignment arrays --force")
    assert (exchange / "demo/outbound/demo/01_demo.ipynb").exists() and (exchange / "warmup/outbound/arrays").is_dir()
    steps("instructor released both courses")

    # 2. each student: the Assignments tab lists their own courses only; fetch, answer, Validate, submit
    for role, person in (("s1", s1), ("s2", s2)):
        page = _assignments_tab(person, expect)
        courses = page.locator("#course_list li")
        expect(courses).to_have_count(1 if role == "s1" else 2)  # s2 takes both courses, s1 only demo
        assert courses.all_inner_texts() == (["demo"] if role == "s1" else ["demo", "warmup"])
        released = page.locator("#released_assignments_list")
        if role == "s2":  # the other course's assignment, in its own list
            _pick(page, expect, "warmup")
            expect(released.locator(".list_item", has_text="arrays")).to_have_count(1)
            shots(page, "s2-assignments-of-the-other-course")
        _pick(page, expect, "demo")
        expect(released.locator(".list_item", has_text="demo")).to_have_count(1)
        expect(released).not_to_contain_text("arrays")  # warmup's assignment is not in demo's list
        shots(page, f"{role}-assignments-tab")
        released.locator(".list_item", has_text="demo").get_by_role("button", name="Fetch").click()
        expect(page.locator("#fetched_assignments_list")).to_contain_text("demo")
        fetched = person.home / "demo/demo/01_demo.ipynb"
        assert fetched.exists() and "BEGIN HIDDEN" not in fetched.read_text()

        page.goto(f"{person.url}/lab/tree/demo/demo/01_demo.ipynb")
        expect(page.locator(".jp-NotebookPanel-toolbar .validate-button")).to_be_visible()
        for name, body in ANSWERS[role].items():
            _answer(page, expect, name, body)
        page.locator(".jp-NotebookPanel-toolbar .validate-button").click()
        dialog = page.locator(".jp-Dialog")
        if role == "s1":
            expect(dialog).to_contain_text("Success! Your notebook passes all the tests.")
        else:
            expect(dialog).to_contain_text("square(3) should be 9")
        shots(page, f"{role}-validate")
        dialog.get_by_role("button").last.click()
        expect(dialog).to_have_count(0)
        assert ANSWERS[role]["square"] in fetched.read_text(), "Validate saved the notebook"

        page = _assignments_tab(person, expect)
        page.locator("#fetched_assignments_list .list_item", has_text="demo").get_by_role("button", name="Submit").click()
        expect(page.locator("#submitted_assignments_list")).to_contain_text("demo")
        steps(f"{role} fetched, answered, validated, submitted")
    inbound = sorted(p.name.split("+")[0] for p in (exchange / "demo/inbound").iterdir())
    assert inbound == [s1.name, s2.name], inbound

    # 3. the grader collects, grades with jaxpath as itself, writes and releases feedback
    doctor = grader.ok("jaxpath doctor")
    assert "rootless" in doctor, doctor  # an ordinary account's level
    grader.ok(f"cd {demo} && nbgrader collect demo")
    graded = grader.ok(f"cd {demo} && jaxpath grade demo --cell-timeout 60", timeout=900)
    assert "2 graded" in graded, graded
    grader.ok(f"cd {demo} && jaxpath feedback demo && nbgrader release_feedback demo")
    grader.ok(f"cd {demo} && jaxpath export demo")
    rows = {r.split(",")[3]: r for r in (demo / "build/grades/grades-demo.csv").read_text().splitlines()[1:]}
    assert rows[s1.name].split(",")[9] == "5.0" and rows[s2.name].split(",")[9] == "3.0", rows
    assert all("rootless" in r for r in rows.values()), rows  # graded at the grader account's own level
    steps("grader collected, graded, released feedback, exported")

    # the formgrader: the grader opens their course's, not the other course's
    gp = grader.page
    gp.goto(f"{hut.hub.url}/services/demo/formgrader/manage_submissions/demo")
    api = gp.request.get(f"{hut.hub.url}/services/demo/formgrader/api/submissions/demo")
    assert api.status == 200, (api.status, api.text()[:2000])
    for name, score in ((s1.name, "5 / 5"), (s2.name, "3 / 5")):
        expect(gp.locator("tbody tr", has_text=name)).to_contain_text(score)
    shots(gp, "grader-formgrader-of-their-course")
    r = gp.goto(f"{hut.hub.url}/services/warmup/formgrader")
    assert r.status == 403, r.status
    shots(gp, "grader-refused-the-other-course")
    steps("grader's formgraders")

    # 4. each student fetches their own feedback in the Assignments tab and reads the per-exercise summary
    for role, person, total in (("s1", s1, "5.0 / 5.0"), ("s2", s2, "3.0 / 5.0")):
        page = _assignments_tab(person, expect)
        page.locator("#submitted_assignments_list .list_item", has_text="demo").get_by_role(
            "button", name="Fetch Feedback").click()
        feedback = person.home / "demo/demo/feedback"
        expect(page.locator("#submitted_assignments_list")).to_contain_text("(view feedback)")
        pages = list(feedback.glob("*/01_demo.html"))
        assert len(pages) == 1, pages
        page.goto(f"{person.url}/files/demo/demo/feedback/{pages[0].parent.name}/01_demo.html")
        table = page.locator("table.jp-results")
        expect(table).to_be_visible()
        for cell in ("double-check", "square-check", "halve-check"):
            expect(table.locator("tr", has_text=cell)).to_have_count(1)
        expect(page.locator("body")).to_contain_text(f"Score: {total}")
        if role == "s2":
            expect(table.locator("tr", has_text="square-check")).to_contain_text("square(3) should be 9")
        for hidden in ("square(-2)", "double(-1.5)", "BEGIN HIDDEN"):
            assert hidden not in page.content()
        shots(page, f"{role}-feedback-summary")
        steps(f"{role} fetched and read feedback")

    # 5. privacy, as the students (the probes of one student in one terminal line, each reporting its status)
    for person, other in ((s1, s2), (s2, s1)):
        probes = [f"ls {exchange}/demo/inbound", f"ls {exchange}/demo/feedback", f"ls {other.home}",
                  f"cat {other.home}/demo/demo/01_demo.ipynb", f"ls {demo}"]
        _, out = person.sh("; ".join(f'{p}; echo "== $?"' for p in probes))
        results = out.split("== ")
        assert len(results) == len(probes) + 1, out
        for probe, before, status in zip(probes, results, results[1:]):
            assert not status.startswith("0") and "Permission denied" in before, (person.name, probe, out)
        steps(f"{person.role}: the exchange's inbound and feedback folders, another's home and copy, the course")
        r = person.page.goto(f"{hut.hub.url}/services/demo/formgrader")
        assert r.status == 403, (person.name, r.status)
    shots(s1.page, "student-refused-the-formgrader")
    rc, out = s1.sh("nbgrader fetch_assignment arrays --course warmup")
    assert rc != 0 and not (s1.home / "warmup").exists(), out  # not enrolled: nbgrader's JupyterHub check refuses
    assert "You do not have access to this course." in out, out
    steps("privacy checks")
