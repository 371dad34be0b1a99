"""The course loop as people meet it, in JupyterLab with the nbgrader extension, driven in Debian's chromium.

Each test starts its own `jupyter lab` on a free loopback port with a random token and its own Jupyter
config, data and runtime folders (the nbgrader lab and server extensions are enabled in the venv's own
config, so they stay on), and stops it at the end. Screenshots of the key states go to the test's
tmp_path and are copied to build/screenshots/<test name>/.
"""
from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from loop_factory import BIN, REPO, Student, instructor_course, release
from playwright.sync_api import expect

from jaxpath import Config
from jaxpath.classroom.sample import answers_from_source, submission, submit
from jaxpath.grade import Limits, grade, sandbox_problem

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TIMEOUT_MS = 120_000
"""A guard against a hang, not a measure: JupyterLab opens a notebook when it opens it, in 1 s or, beside the
hostile corpus on two cores, in more than 5 s. It applies to actions (the page's default timeout) and to
every `expect` (Playwright's own default there is 5 s, which a fresh clone's `make test` once ran past)."""
expect.set_options(timeout=TIMEOUT_MS)


class JupyterLab:
    """`jupyter lab` from the venv on 127.0.0.1, a free port and a random token; stop() terminates, then kills."""

    def __init__(self, root_dir: Path, env: dict, log: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        cmd = [BIN / "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
               f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root_dir}",
               "--ServerApp.port_retries=0", "--LabApp.news_url=None",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
        if os.geteuid() == 0:  # CI containers run as root; jupyter refuses that without the flag
            cmd.append("--allow-root")
        # JupyterLab's own settings and workspaces, fresh: no news prompt, no update check (there is no network)
        lab_dir = log.with_suffix("")
        settings = lab_dir / "user-settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True)
        (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
        env = {**env, "JUPYTERLAB_SETTINGS_DIR": str(lab_dir / "user-settings"),
               "JUPYTERLAB_WORKSPACES_DIR": str(lab_dir / "workspaces")}
        self._log = open(log, "w")
        self.proc = subprocess.Popen([str(c) for c in cmd], cwd=root_dir, env=env, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def wait(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"jupyter lab exited with {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.25)
        raise AssertionError(f"jupyter lab did not answer within {timeout} s:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        self._log.close()


@pytest.fixture
def start_lab(tmp_path):
    labs = []

    def start(root_dir: Path, env: dict) -> JupyterLab:
        lab = JupyterLab(root_dir, env, tmp_path / f"jupyter-lab-{len(labs)}.log")
        labs.append(lab)
        lab.wait()
        return lab

    yield start
    for lab in labs:
        lab.stop()


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    try:
        context.set_default_timeout(TIMEOUT_MS)
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def shoot(request, tmp_path, page):
    """shoot(name): a full-page screenshot in tmp_path/screenshots, copied to build/screenshots/<test>/."""
    out = tmp_path / "screenshots"
    keep = REPO / "build" / "screenshots" / re.sub(r"[^\w.-]", "_", request.node.name)
    shutil.rmtree(keep, ignore_errors=True)
    taken = []

    def shoot(name: str) -> Path:
        out.mkdir(exist_ok=True)
        path = out / f"{len(taken) + 1:02d}-{name}.png"
        page.screenshot(path=path, full_page=True)
        taken.append(path)
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, keep / path.name)
        return path

    return shoot


# -- the student --------------------------------------------------------------------------------------------

def code_cell(page, *texts):
    """The one code cell whose text contains every one of `texts`."""
    loc = page.locator(".jp-Notebook .jp-CodeCell")
    for t in texts:
        loc = loc.filter(has_text=t)
    expect(loc).to_have_count(1)
    return loc


def set_source(page, cell, source: str) -> None:
    """Click into the cell's CodeMirror editor, select everything, type the new source."""
    editor = cell.locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(source)  # typed as text input: no auto-indent doubling the body's indentation
    expect(editor).to_contain_text(source.splitlines()[-1].strip())


def run_cell(page, cell) -> None:
    """Run one cell (Ctrl+Enter in it) and wait until its prompt shows a new execution count."""
    prompt = cell.locator(".jp-InputPrompt")
    before = prompt.inner_text().strip()
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+Enter")
    expect(prompt).not_to_have_text(before)
    expect(prompt).to_have_text(re.compile(r"\[\d+\]"))


def test_student_self_check_then_validate(tmp_path, start_lab, page, shoot):
    ins = instructor_course(tmp_path)
    release(ins)
    ada = Student("ada", tmp_path / "home-ada", ins.exchange).setup()
    ada.nbgrader("fetch_assignment", "demo")
    lab = start_lab(ada.work, ada.env)

    page.goto(f"{lab.url}/lab/tree/demo/01_demo.ipynb?token={lab.token}")
    expect(page.locator(".jp-Notebook .jp-Cell").first).to_be_visible()
    expect(page.locator(".jp-NotebookPanel-toolbar .validate-button")).to_be_visible()
    expect(page.locator("#jp-main-statusbar")).to_contain_text("Idle")
    shoot("fetched-chapter-opened")

    answer = code_cell(page, "# ✍️ Your answer", "def double")
    check = code_cell(page, "# 🧪 Self-check", "double(3)")
    # the untouched stub: the self-check stops at the stub's NotImplementedError
    run_cell(page, answer)
    run_cell(page, check)
    expect(check.locator(".jp-OutputArea")).to_contain_text("NotImplementedError")
    # a wrong answer: the self-check's message says what is wrong
    set_source(page, answer, "# ✍️ Your answer\ndef double(x):\n    return x + 2")
    run_cell(page, answer)
    run_cell(page, check)
    expect(check.locator(".jp-OutputArea")).to_contain_text("AssertionError: double(3) should be 6")
    check.scroll_into_view_if_needed()
    shoot("self-check-fails-with-its-message")
    # the fix: the self-check passes silently
    set_source(page, answer, "# ✍️ Your answer\ndef double(x):\n    return 2 * x")
    run_cell(page, answer)
    run_cell(page, check)
    expect(check.locator(".jp-OutputArea-output")).to_have_count(0)
    shoot("self-check-passes")

    for name, body, passes in (("square", "return x * x", "square(3)"), ("halve", "return x / 2", "halve(3)")):
        cell = code_cell(page, "# ✍️ Your answer", f"def {name}")
        set_source(page, cell, f"# ✍️ Your answer\ndef {name}(x):\n    {body}")
        run_cell(page, cell)
        run_cell(page, code_cell(page, "# 🧪 Self-check", passes))
        expect(code_cell(page, "# 🧪 Self-check", passes).locator(".jp-OutputArea-output")).to_have_count(0)

    page.locator(".jp-NotebookPanel-toolbar .validate-button").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Success! Your notebook passes all the tests.")
    shoot("validate-success")
    # Validate saved the notebook first: the answers are on disk, as `nbgrader submit` will send them
    saved = (ada.work / "demo/01_demo.ipynb").read_text()
    assert "return 2 * x" in saved and "return x / 2" in saved


# -- the instructor -----------------------------------------------------------------------------------------

def test_formgrader_lists_the_assignment_and_graded_submissions(tmp_path, start_lab, page, shoot):
    ins = instructor_course(tmp_path)
    release(ins)
    root = ins.root
    src = nbformat.read(root / "source/demo/01_demo.ipynb", as_version=4)
    rel = nbformat.read(root / "release/demo/01_demo.ipynb", as_version=4)
    ok = answers_from_source(src)
    submit(root, "ada", "demo", "01_demo", submission(rel, ok))
    submit(root, "bo", "demo", "01_demo", submission(rel, {**ok, "square-answer": "def square(x):\n    return 2 * x"}))
    report = grade(Config.load(root), "demo", workers=1, limits=Limits(cell_timeout=30, notebook_timeout=120),
                   sandbox=sandbox_problem() is None)
    assert sorted((s.student, s.status, s.score) for s in report.results) == [("ada", "graded", 5.0),
                                                                              ("bo", "graded", 3.0)]
    lab = start_lab(root, ins.env)

    page.goto(f"{lab.url}/formgrader/manage_assignments?token={lab.token}")
    table = page.locator("table")
    expect(table.locator("tr", has_text="demo")).to_be_visible()
    expect(table.locator("tr", has_text="demo")).to_contain_text("2")  # submissions
    shoot("formgrader-manage-assignments")

    page.goto(f"{lab.url}/formgrader/manage_submissions/demo?token={lab.token}")
    for student, score in (("ada", "5 / 5"), ("bo", "3 / 5")):
        row = page.locator("tbody tr").filter(has=page.locator("td", has_text=re.compile(f"^{student}$")))
        expect(row).to_have_count(1)
        expect(row).to_contain_text("graded")
        expect(row).to_contain_text(score)
    shoot("formgrader-manage-submissions")

    # formgrader's own "Generate Feedback" button runs nbgrader's generate_feedback with this course's
    # preprocessors (nbgrader_config.py): bo's page has the visible self-check and none of the hidden tests
    bo = page.locator("tbody tr").filter(has=page.locator("td", has_text=re.compile("^bo$")))
    bo.locator("td.generate-feedback a").click()
    expect(page.locator("#success-modal")).to_contain_text("Successfully generated feedback for 'demo' for student 'bo'")
    shoot("formgrader-generated-feedback")
    fb = (root / "feedback/bo/demo/01_demo.html").read_text()
    assert "square(3) should be 9" in fb  # the visible self-check and its failure
    for hidden in ("double(-1.5)", "negative floats too'", "square(-2)", "isinstance(halve(4), float)",
                   "BEGIN HIDDEN TESTS"):
        assert hidden not in fb, hidden

    # the grader opens bo's graded notebook: the failing self-check, its message and its score are there
    page.goto(f"{lab.url}/formgrader/gradebook/demo/01_demo?token={lab.token}")
    page.get_by_role("button", name="Show All Names").click()
    row = page.locator("tbody tr", has_text="bo")
    expect(row).to_contain_text("3 / 5")
    shoot("formgrader-notebook-submissions")
    row.get_by_role("link").first.click()
    expect(page.locator("body")).to_contain_text("AssertionError: square(3) should be 9")
    shoot("formgrader-bo-graded-notebook")
