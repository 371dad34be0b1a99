"""LTI 1.3 (issue 54): the hub's launch from an LMS and the grades pushed back, against tests/lti_platform.py, a
small platform that speaks the protocol on loopback (its own keys and JWKS, the OIDC launch, a token endpoint that
verifies the tool's client assertion, AGS line items and scores that it records).

- the settings: hub.toml's [lti] and each course's lti_context, every mistake named by file and key;
- the launch, through a real `jupyterhub` running deploy/jupyterhub_config.py with [lti] (tests/lti_hub.py: no
  accounts, no proxy, no server started): a student and an instructor are let in; a bad signature, an expired
  token, an unknown deployment, a replayed nonce, an LMS user or course the hub does not know, a role the roster
  contradicts: each refused with a page that says why and a line in the hub's log;
- the push: the sample class that `make` graded (build/sample-class, copied), every sendable score equal to what
  `export` counts, a second push sends nothing, a push killed at its `lti-score-sent` checkpoint completes on the
  rerun with no score sent twice, the dry run sends nothing, the key's permissions."""
from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from hub_factory import can_run_in_browser
from lti_platform import INSTRUCTOR, LEARNER, TA, Platform

from jaxpath.classroom.hub import HubSettingsError, load_settings

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "build" / "sample-class"


# -- settings ----------------------------------------------------------------------------------------------------

def _settings(tmp_path: Path, text: str) -> Path:
    (tmp_path / "course").mkdir(exist_ok=True)
    (tmp_path / "course" / "nbgrader_config.py").write_text("c = get_config()\n")
    path = tmp_path / "deploy" / "hub.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


GOOD = """
    [hub]
    url = "https://hub.example.edu"
    [lti]
    issuer = "https://canvas.instructure.com"
    client_id = "10000000000042"
    deployment_ids = ["1:abc"]
    jwks_url = "https://sso.canvaslms.com/api/lti/security/jwks"
    auth_url = "https://sso.canvaslms.com/api/lti/authorize_redirect"
    token_url = "https://sso.canvaslms.com/login/oauth2/token"
    private_key = "/etc/jaxpath/lti-tool.pem"
    [lti.users]
    "sub-ada" = "ada"
    "sub-ines" = "ines"
    [[course]]
    id = "demo"
    directory = "course"
    account = "demo-course"
    instructors = ["ines"]
    students = ["ada", "bo"]
    lti_context = "ctx-1"
    lti_lineitems = "https://canvas.example.edu/api/lti/courses/1/line_items"
    """


def test_lti_settings_load(tmp_path):
    s = load_settings(_settings(tmp_path, GOOD))
    assert s.lti.issuer == "https://canvas.instructure.com" and s.lti.deployment_ids == ("1:abc",)
    assert s.lti.private_key == Path("/etc/jaxpath/lti-tool.pem") and s.lti.sub_of("ada") == "sub-ada"
    c = s.course("demo")
    assert c.lti_context == "ctx-1" and c.role_of("ines") == "instructor" and c.role_of("bo") == "student"
    assert load_settings(REPO / "deploy" / "hub.toml").lti is None, "the shipped hub logs in with PAM"


@pytest.mark.parametrize("change, message", [
    (('client_id = "10000000000042"\n', ""), "[lti]: `client_id` is missing"),
    (('deployment_ids = ["1:abc"]', "deployment_ids = []"), "`deployment_ids` is a non-empty list"),
    (('jwks_url = "https://sso', 'jwks_url = "http://sso'),
     "`jwks_url` = 'http://sso.canvaslms.com/api/lti/security/jwks' is not an https:// address"),
    (('[lti.users]', 'secret = "x"\n    [lti.users]'), "[lti]: unknown key(s) ['secret']"),
    (('"sub-ada" = "ada"', '"sub-ada" = "zed"'), "[lti.users] 'sub-ada' = 'zed': no course names that account"),
    (('"sub-ines" = "ines"', '"sub-ines" = "ada"'), "['ada'] are named for more than one LMS user"),
    (('lti_context = "ctx-1"\n', ""), "course(s) ['demo']: `lti_context` is missing"),
    (('lti_lineitems = "https://canvas', 'lti_lineitems = "ftp://canvas'), "course 'demo': `lti_lineitems` = 'ftp:"),
])
def test_lti_settings_mistakes_are_named(tmp_path, change, message):
    path = _settings(tmp_path, GOOD.replace(*change))
    with pytest.raises(HubSettingsError, match=re.escape(message)) as e:
        load_settings(path)
    assert str(path) in str(e.value), "the error names the file"


def test_a_course_names_an_lms_course_without_lti(tmp_path):
    text = GOOD.split("    [lti]")[0] + "    [[course]]" + GOOD.split("    [[course]]")[1]
    message = "name an LMS course (lti_context, lti_lineitems) but the file has no [lti]"
    with pytest.raises(HubSettingsError, match=re.escape(message)):
        load_settings(_settings(tmp_path, text))


def test_the_jupyterhub_config_uses_the_lti_authenticator(tmp_path, monkeypatch):
    """hub.json with [lti] (as `jaxpath hub` writes it): the LTI authenticator instead of PAM, its settings from it."""
    from traitlets.config.loader import PyFileConfigLoader

    from jaxpath.classroom.hub.setup import hub_data

    s = load_settings(_settings(tmp_path, GOOD))
    ports = {"hub": 1, "proxy_api": 2, "service:demo": 3}
    (tmp_path / "hub.json").write_text(json.dumps(hub_data(s, ports, {"students": "/s", "staff": "/t", "service": "/v"}, None)))
    monkeypatch.setenv("JAXPATH_HUB_STATE", str(tmp_path))
    cfg = PyFileConfigLoader("jupyterhub_config.py", path=str(REPO / "deploy")).load_config()
    assert cfg.JupyterHub.authenticator_class == "jaxpath.classroom.hub.lti.JaxpathLTIAuthenticator"
    a = cfg.JaxpathLTIAuthenticator
    assert a.issuer == "https://canvas.instructure.com" and a.client_id == {"10000000000042"}
    assert a.deployment_ids == {"1:abc"} and a.users == {"sub-ada": "ada", "sub-ines": "ines"}
    assert a.courses == {"ctx-1": {"id": "demo", "instructors": ["ines"], "graders": [], "students": ["ada", "bo"]}}
    assert a.uri_scheme == "https" and cfg.Authenticator.allowed_users == {"ines", "ada", "bo"}
    assert cfg.JupyterHub.load_groups["nbgrader-demo"] == {"users": ["ada", "bo"]}, "the groups PAM's setup has"


def test_jaxpath_hub_prints_what_the_lms_registration_needs(tmp_path):
    from jaxpath.classroom.hub import Prepared, describe
    from jaxpath.classroom.hub.setup import hub_data

    s = load_settings(_settings(tmp_path, GOOD))
    hub_json = tmp_path / "hub.json"
    hub_json.write_text(json.dumps(hub_data(s, {"hub": 1, "proxy_api": 2, "service:demo": 3}, {}, None)))
    text = "\n".join(describe(Prepared(s, hub_json, passwords={"ada": "secret"})))
    for url in ("https://hub.example.edu/hub/lti13/oauth_login", "https://hub.example.edu/hub/lti13/oauth_callback"):
        assert url in text
    assert "cannot arrive: bo" in text and "the LMS course: ctx-1" in text and "secret" not in text


def test_lms_roles_map_to_course_roles():
    from jaxpath.classroom.hub.lti import role_of

    inst = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor"
    assert role_of([LEARNER]) == "student" and role_of([INSTRUCTOR]) == "instructor"
    assert role_of([INSTRUCTOR, TA]) == "grader", "a teaching assistant is also sent as an instructor"
    assert role_of([inst]) is None, "an institution role says nothing about the course"


# -- the launch into a running hub ---------------------------------------------------------------------------

@pytest.fixture(scope="class")
def hub(tmp_path_factory):
    from lti_hub import lti_hub

    with Platform() as platform, lti_hub(tmp_path_factory.mktemp("ltihub"), platform) as running:
        yield running


@pytest.mark.slow
class TestLaunch:
    """One hub for these tests (it starts in about 5 s); each launch a fresh browser session."""

    def test_a_student_and_an_instructor_are_let_in(self, hub):
        for sub, account, roles, role in (("sub-s1", "jxl-s1", [LEARNER], "student"),
                                          ("sub-ins", "jxl-ins", [INSTRUCTOR], "instructor"),
                                          ("sub-grader", "jxl-grader", [INSTRUCTOR, TA], "grader")):
            r = hub.launch(sub=sub, context="ctx-demo", roles=roles)
            assert r.status == 302 and r.location == "/hub/", (r.status, r.text[:2000])
            assert any(k.startswith("jupyterhub-hub-login") for k in r.cookies), r.cookies
            assert f"LTI launch: {account} as {role} of demo" in hub.log_text()
        r = hub.launch(sub="sub-s2", context="ctx-warmup", roles=[LEARNER])
        assert r.status == 302, "the second student takes the second course too"
        assert "jxl-s2 as student of warmup" in hub.log_text()

    @pytest.mark.parametrize("launch, status, why, words", [
        ({"fault": "bad-signature"}, 401, "signature", "not signed by the LMS this hub trusts"),
        ({"fault": "expired"}, 400, "expired", "has expired"),
        ({"deployment": "deployment-9"}, 403, "deployment", "deployment of the tool is not one the hub accepts"),
        ({"sub": "sub-stranger"}, 403, "unknown-user", "not linked to an account of this hub"),
        ({"context": "ctx-other"}, 403, "unknown-course", "This LMS course is not a course of this hub"),
        ({"context": "ctx-warmup"}, 403, "not-enrolled", "is not in the roster of warmup"),
        ({"roles": [INSTRUCTOR]}, 403, "role",
         "In this course the LMS has you as instructor; the hub's roster has you as student."),
        ({"roles": ["http://purl.imsglobal.org/vocab/lis/v2/system/person#User"]}, 403, "no-role", "gives you no role"),
    ], ids=["bad-signature", "expired", "unknown-deployment", "unknown-user", "unknown-course", "not-enrolled",
            "role-contradicts-roster", "no-role"])
    def test_a_refused_launch_gets_a_page_and_a_log_line(self, hub, launch, status, why, words):
        r = hub.launch(**{"sub": "sub-s1", "context": "ctx-demo", "roles": [LEARNER], **launch})
        assert r.status == status and words in r.text.replace("&#39;", "'"), (r.status, r.text[:3000])
        assert "The course hub did not let you in" in r.text and 'id="lti-todo"' in r.text
        assert not any(k.startswith("jupyterhub-hub-login") for k in r.cookies), "nobody is logged in"
        assert re.search(rf"LTI launch refused \({re.escape(why)}\): ", hub.log_text()), hub.log_text()[-3000:]

    def test_someone_who_opens_the_hub_directly_is_sent_to_the_lms(self, hub):
        import requests

        r = requests.get(f"{hub.url}/hub/login")  # follows the hub's redirect to the login initiation
        assert r.status_code == 400 and "This hub is entered from the LMS." in r.text, (r.status_code, r.text[:2000])
        assert "LTI launch refused (not-from-the-lms)" in hub.log_text()

    def test_a_replayed_launch_is_refused(self, hub):
        """The same id_token, state and cookies posted twice (what a copy of the browser's request would do):
        the library's cookie checks pass the second time; the nonce seen before does not."""
        session, form = hub.authenticate(sub="sub-s1", context="ctx-demo", roles=[LEARNER])
        cookies = session.cookies.get_dict()
        first = hub.post_launch(session, form)
        assert first.status == 302, first.text[:2000]
        again = hub.post_launch(session, form, cookies=cookies)
        assert again.status == 403 and "This launch message was used before." in again.text, again.text[:2000]
        assert "LTI launch refused (replay)" in hub.log_text()


# -- grades back: the push ---------------------------------------------------------------------------------

def _why_no_sample() -> str | None:
    if not (SAMPLE / "autograded").is_dir():
        return "build/sample-class is missing or not graded: `make` (or `jaxpath sample`) grades it"
    return None


@pytest.fixture
def sample(tmp_path):
    """A copy of the graded sample class, a platform that knows the tool's key, and hub settings that map every
    student of the class to an LMS user: (config, settings file, platform)."""
    from jaxpath.classroom.lti.push import make_key, public_jwk
    from jaxpath.config import Config

    if _why_no_sample():
        pytest.skip(_why_no_sample())
    course = tmp_path / "class"
    shutil.copytree(SAMPLE, course, symlinks=True, ignore=shutil.ignore_patterns("feedback", "build"))
    key = make_key(tmp_path / "secrets" / "lti-tool.pem")
    config = Config.load(course)
    students = sorted(p.name for p in (course / "submitted").iterdir())
    platform = Platform(tool_jwk=public_jwk(key)).start()
    settings = tmp_path / "deploy" / "hub.toml"
    settings.parent.mkdir()
    users = "\n".join(f'"lms-{s}" = "{s}"' for s in students)
    settings.write_text(f"""
[hub]
state = "{tmp_path / 'state'}"
{platform.lti_table(private_key=tmp_path / 'secrets' / 'lti-tool.pem')}[lti.users]
{users}
[[course]]
id = "jax-path"
directory = "{course}"
account = "jxp-jax-path"
instructors = ["jxp-instructor"]
students = {json.dumps(students)}
lti_context = "ctx-jax"
lti_lineitems = "{platform.lineitems_url('ctx-jax')}"
""")
    yield config, settings, platform
    platform.stop()


def _late(config, student: str, notebook: str, penalty: float) -> None:
    """A late penalty on a notebook, as nbgrader's AssignLatePenalties records it (never above its score)."""
    from nbgrader.api import Gradebook

    cd = config.coursedir()
    with Gradebook(cd.db_url, cd.course_id) as gb:
        nb = gb.find_submission_notebook(notebook, "basics", student)
        assert nb.score >= penalty
        nb.late_submission_penalty = penalty
        gb.db.commit()


def _export(config) -> dict[str, dict]:
    from jaxpath.classroom.export import export

    r = export(config, "basics")
    return {row["student_id"]: row for row in csv.DictReader(r.csv_path.open())}


def _recorded(platform) -> dict[tuple[str, str], float]:
    """(notebook, LMS user) -> the score the platform recorded; asserts none came twice."""
    by_item = {li["id"]: li["resourceId"].split("/", 1)[1] for li in platform.lineitems}
    keys = [(by_item[s["lineitem"]], s["userId"]) for s in platform.scores]
    assert not [k for k, n in Counter(keys).items() if n > 1], "a score was sent twice"
    return {(by_item[s["lineitem"]], s["userId"]): s["scoreGiven"] for s in platform.scores}


@pytest.mark.slow
def test_push_sends_what_export_counts_then_nothing(sample):
    from jaxpath.classroom.export import notebook_scores
    from jaxpath.classroom.hub import load_settings
    from jaxpath.classroom.lti import push

    config, settings_file, platform = sample
    # a late penalty on one graded notebook (whichever the sample's grading finished: it depends on no timing)
    late = next(s for s in notebook_scores(config, "basics") if s.status == "graded" and s.score > 0)
    _late(config, late.student, late.notebook, late.score / 2)
    settings = load_settings(settings_file)
    report = push(config, "basics", settings)
    assert report.created == ["01_introduction", "02_jit"] and len(platform.lineitems) == 2
    assert {li["resourceId"]: li["scoreMaximum"] for li in platform.lineitems} == \
        {"basics/01_introduction": 7.0, "basics/02_jit": 8.0}
    recorded = _recorded(platform)
    scores = notebook_scores(config, "basics")
    sendable = {(s.notebook, f"lms-{s.student}"): s.score for s in scores
                if s.status in ("graded", "missing", "not submitted")}
    assert recorded == sendable and sendable, "every final score, and only those"
    held = {(i.notebook, i.student) for i in report.plan.items if i.state == "held"}
    assert held == {(s.notebook, s.student) for s in scores if s.status not in ("graded", "missing", "not submitted")}
    assert recorded[(late.notebook, f"lms-{late.student}")] == late.score / 2, "the late penalty is taken off"
    # per student: what the LMS got adds up to export's score, for every student whose notebooks were all sent
    rows = _export(config)
    complete = {s.student for s in scores} - {student for _, student in held}
    assert complete, "the sample class has students graded in full"
    for student in complete:
        got = sum(v for (nb, user), v in recorded.items() if user == f"lms-{student}")
        assert got == pytest.approx(float(rows[student]["score"])), (student, got, rows[student])
    assert all(s["gradingProgress"] == "FullyGraded" and s["activityProgress"] == "Completed" for s in platform.scores)

    # a second push: nothing new to send, nothing contacted
    tokens = len(platform.tokens)
    again = push(config, "basics", settings)
    assert again.sent == [] and again.created == [] and len(platform.tokens) == tokens
    assert len(platform.scores) == len(recorded) and platform.refused == []


def _cli(config, settings_file, *args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "jaxpath"), "--root", str(config.root), "lti", "push",
                           "basics", "--settings", str(settings_file), *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1", **(env or {})}, timeout=600)


@pytest.mark.slow
def test_a_push_killed_halfway_completes_on_rerun(sample, tmp_path):
    """Killed right after the third score the LMS accepted (its checkpoint): the rerun sends the rest, and no score
    reaches the LMS twice."""
    from jaxpath.classroom.hub import load_settings
    from jaxpath.classroom.lti import plan, push
    from jaxpath.faults import wait_for

    config, settings_file, platform = sample
    total = len(plan(config, "basics", load_settings(settings_file)).pending)
    assert total > 3
    fifo = tmp_path / "fault.fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen([str(Path(sys.executable).parent / "jaxpath"), "--root", str(config.root), "lti", "push",
                             "basics", "--settings", str(settings_file)],
                            env={**os.environ, "JAXPATH_FAULT": "lti-score-sent:3", "JAXPATH_FAULT_FIFO": str(fifo)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        point, pid = wait_for(fifo, watch=(proc.pid,))
        assert point == "lti-score-sent" and pid == proc.pid
        os.kill(pid, 9)
    finally:
        proc.wait(timeout=60)
    assert len(platform.scores) == 3
    report = push(config, "basics", load_settings(settings_file))
    assert len(report.sent) == total - 3 and report.created == [], "the line items were found in the record"
    assert len(_recorded(platform)) == total


@pytest.mark.slow
def test_the_dry_run_shows_and_sends_nothing(sample):
    config, settings_file, platform = sample
    r = _cli(config, settings_file, "--dry-run")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "scores for the LMS" in r.stdout and "to send" in r.stdout, r.stdout
    assert "nothing was sent" in r.stdout and "line items to find or make: 01_introduction, 02_jit" in r.stdout
    assert platform.scores == [] and platform.lineitems == [] and platform.tokens == {}


@pytest.mark.slow
def test_line_items_are_found_again_on_any_page(sample):
    """With its record gone, a push finds the line items it made before (by resourceId and tag), also where the
    platform ignores the filter and pages the container: it makes none twice."""
    from jaxpath.classroom.hub import load_settings
    from jaxpath.classroom.lti import push
    from jaxpath.classroom.lti.push import record_path

    config, settings_file, platform = sample
    platform.lineitems.append({"id": f"{platform.lineitems_url('ctx-jax')}/900", "label": "another tool's",
                               "resourceId": "basics/01_introduction", "tag": "other", "scoreMaximum": 1})
    settings = load_settings(settings_file)
    first = push(config, "basics", settings)
    assert first.created == ["01_introduction", "02_jit"] and len(platform.lineitems) == 3
    record_path(config, "jax-path", "basics").unlink()
    platform.page_size, platform.ignore_filters = 1, True
    again = push(config, "basics", settings)
    assert again.created == [] and len(platform.lineitems) == 3
    assert len(again.sent) == len(first.sent), "without its record, every score is sent again (the same values)"


@pytest.mark.slow
def test_a_token_refused_stops_the_push_with_the_lms_answer(sample):
    """The platform verifies the client assertion against the key it was given: signed by another key, no token,
    and the push stops saying what the LMS answered, with nothing recorded."""
    from lti_platform import jwk_of, new_key

    from jaxpath.classroom.hub import load_settings
    from jaxpath.classroom.lti import LtiPushError, push
    from jaxpath.classroom.lti.push import record_path

    config, settings_file, platform = sample
    platform.tool_jwk = jwk_of(new_key(), platform.tool_jwk["kid"])
    with pytest.raises(LtiPushError, match=re.escape("the access token: the LMS answered 401")):
        push(config, "basics", load_settings(settings_file))
    assert platform.refused == ["token: Signature verification failed"] and platform.tokens == {}
    assert not record_path(config, "jax-path", "basics").exists() and platform.scores == []


def test_lti_key_makes_a_private_key_and_prints_its_public_half(sample, capsys):
    from jaxpath.classroom.hub import load_settings
    from jaxpath.classroom.lti import public_jwk, read_private_key
    from jaxpath.cli import main

    config, settings_file, _ = sample
    key_path = load_settings(settings_file).lti.private_key
    key_path.unlink()
    assert main(["--root", str(config.root), "lti", "key", "--settings", str(settings_file), "--create"]) == 0
    out = capsys.readouterr().out
    assert key_path.stat().st_mode & 0o777 == 0o600
    jwk = public_jwk(read_private_key(key_path, settings_file))
    assert f'"kid": "{jwk["kid"]}"' in out and "BEGIN PUBLIC KEY" in out and "PRIVATE" not in out


@pytest.mark.slow
def test_the_key_must_be_private_and_outside_the_course(sample, tmp_path):
    from jaxpath.classroom.hub import load_settings
    from jaxpath.classroom.lti import LtiPushError, push

    config, settings_file, platform = sample
    key = tmp_path / "secrets" / "lti-tool.pem"
    key.chmod(0o640)
    message = f"{key}: the tool's private key has mode 0640: group or others may read it"
    with pytest.raises(LtiPushError, match=re.escape(message)):
        push(config, "basics", load_settings(settings_file))
    inside = config.root / "lti-tool.pem"
    shutil.copy(key, inside)
    inside.chmod(0o600)
    settings_file.write_text(settings_file.read_text().replace(str(key), str(inside)))
    with pytest.raises(LtiPushError, match="is inside the course directory"):
        push(config, "basics", load_settings(settings_file))
    assert platform.scores == [] and platform.tokens == {}, "nothing was sent"
    r = _cli(config, settings_file)
    assert r.returncode == 2 and "inside the course directory" in r.stdout, r.stdout + r.stderr


def test_the_launch_cookies_cross_sites_on_https():
    """The state and nonce cookies of the launch are SameSite=None and Secure behind https (an LMS on another site
    posts the launch: a Lax cookie would not come with it); on plain http (loopback) as the browser's default."""
    from types import SimpleNamespace
    from urllib.parse import urlparse

    from jaxpath.classroom.hub.lti import cross_site

    https = SimpleNamespace(settings={"public_url": urlparse("https://hub.example.edu/")}, request=None)
    plain = SimpleNamespace(settings={}, request=SimpleNamespace(protocol="http"))
    assert cross_site(https) == {"samesite": "None", "secure": True} and cross_site(plain) == {}


# -- the launch in a browser, into a real hub ------------------------------------------------------------------

@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.full
@pytest.mark.skipif(can_run_in_browser() is not None, reason=str(can_run_in_browser()))
def test_a_student_and_an_instructor_arrive_from_the_lms(tmp_path, request, chromium):
    """The hub as `jaxpath hub` runs it, with [lti] (tests/hub_factory.py's two courses, real accounts): the
    instructor and a student open the LMS's link in chromium and land in their JupyterLab; the instructor opens the
    course's formgrader; with an assignment in each course, the student's Assignments tab lists their one course
    (the other is another student's) and the formgrader refuses them; a stranger gets the refusal page."""
    from hub_factory import TIMEOUT_MS, Person, Shots, Steps, course_hub
    from playwright.sync_api import expect
    from test_hub import _assignments_tab

    expect.set_options(timeout=TIMEOUT_MS)
    shots, steps = Shots(tmp_path, request.node.name), Steps(tmp_path)
    with Platform() as platform, course_hub(tmp_path, platform) as hut, contextlib.ExitStack() as browsers:
        steps("accounts made, hub started")
        ins = browsers.enter_context(Person(chromium, hut, "ins")).launch(platform, "ctx-demo", [INSTRUCTOR])
        s1 = browsers.enter_context(Person(chromium, hut, "s1")).launch(platform, "ctx-demo", [LEARNER])
        ins.wait_for_lab()
        s1.wait_for_lab()
        shots(s1.page, "student-arrived-from-the-lms")
        steps("instructor and student launched from the LMS, their servers started")
        # an assignment of each course in the exchange, where nbgrader's release puts it (releasing is not what
        # this test is about: tests/test_hub.py releases from the instructor's terminal)
        for course, assignment in (("demo", "demo"), ("warmup", "arrays")):
            outbound = hut.settings.exchange / course / "outbound" / assignment
            outbound.mkdir(parents=True)
            (outbound / f"{assignment}.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
            for p in (outbound.parent, outbound, outbound / f"{assignment}.ipynb"):
                p.chmod(0o755 if p.is_dir() else 0o644)
        r = ins.page.goto(f"{hut.hub.url}/services/demo/formgrader")
        assert r.status == 200, r.status
        expect(ins.page.locator("body")).to_contain_text("demo")
        shots(ins.page, "instructor-formgrader")
        steps("an assignment in each course; the instructor opened the formgrader")

        page = _assignments_tab(s1, expect)
        courses = page.locator("#course_list li")
        expect(courses).to_have_count(1)
        assert courses.all_inner_texts() == ["demo"]
        shots(page, "student-assignments-tab")
        r = s1.page.goto(f"{hut.hub.url}/services/demo/formgrader")
        assert r.status == 403, r.status
        log = hut.hub.log_tail(200_000)
        assert f"LTI launch: {s1.name} as student of demo" in log and f"LTI launch: {ins.name} as instructor of demo" in log

        stranger = chromium.new_context()
        try:
            page = stranger.new_page()
            page.goto(platform.link(sub="sub-nobody", context="ctx-demo", roles=[LEARNER]))
            expect(page.locator("#lti-reason")).to_have_text("Your LMS account is not linked to an account of this hub.")
            expect(page.locator("#lti-details")).to_contain_text("sub-nobody")
            shots(page, "stranger-refused")
        finally:
            stranger.close()
        assert "LTI launch refused (unknown-user)" in hut.hub.log_tail(200_000)
        steps("student's course list, the formgrader refused, a stranger refused")
