"""The storm, step by step: accounts and a course, the release, the minute (every student submitting at once
while the instructor collects in a loop), the due date, the late ones, the graders on one PostgreSQL gradebook,
the faults, the reruns, feedback fetched by every student, and the counts."""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import JaxpathError
from ...faults import readable, wait_for
from . import course
from .course import COURSE_ID, KINDS, NOTEBOOK, PART
from .people import Person, make_students, remove_students
from .postgres import Postgres

KIND_ORDER = ("right", "wrong", "crashing", "looping", "empty", "hostile")
BIN = Path(sys.executable).parent


class StormError(JaxpathError):
    """A step of the storm failed (the step and the student or file are named)."""


@dataclass(frozen=True)
class Plan:
    """What one student does, and what must come of it."""
    id: str
    kind: str
    on_time: tuple[str, ...]
    late: str | None = None
    forge: str | None = None

    @property
    def counts(self) -> tuple[str, bool]:
        """(the kind whose answers count, whether the counted submission is late), under the before-due rule."""
        if self.on_time:
            return self.on_time[-1], False
        return self.late, True


def plans(n: int, prefix: str, claim: str) -> list[Plan]:
    """n students: kinds in turn; every fifth submits twice (an empty notebook first), every tenth resubmits after
    the due date (an empty one: the on-time one must count), every twentieth submits only late, and the last
    submits only late with a forged claim of an on-time submission."""
    out = []
    for i in range(n):
        kind = KIND_ORDER[i % len(KIND_ORDER)]
        sid = f"{prefix}{i:02d}"
        if i == n - 1:
            out.append(Plan(sid, kind, (), kind, forge=claim))
        elif i % 20 == 7:
            out.append(Plan(sid, kind, (), kind))
        elif i % 10 == 3:
            out.append(Plan(sid, kind, (kind,), "empty"))
        elif i % 5 == 1:
            out.append(Plan(sid, kind, ("empty", kind)))
        else:
            out.append(Plan(sid, kind, (kind,)))
    return out


@dataclass
class Storm:
    students: int = 60
    graders: int = 2
    faults: bool = False
    rule: str = "before-due"
    cell_timeout: int = 5
    out: Path | None = None
    """Where the report goes (report.txt, report.json, storm.svg)."""
    log: callable = print
    # filled while it runs
    events: dict = field(default_factory=dict)
    numbers: dict = field(default_factory=dict)
    started: list = field(default_factory=list)
    """The graders this storm started (each its own process group): ended on the way out, whatever happened."""

    def run(self) -> dict:
        if os.geteuid() != 0:
            raise StormError("the storm makes accounts and runs as each of them: run it as root")
        for tool in ("useradd", "userdel", "setpriv", "runuser"):
            if shutil.which(tool) is None:
                raise StormError(f"{tool} is not installed (Debian: apt-get install passwd util-linux)")
        base = Path(tempfile.mkdtemp(prefix="jaxpath-storm-"))
        os.chmod(base, 0o755)
        self.base, self.state = base, base / "state"
        self.state.mkdir()
        pg, passed = None, False
        t_all = time.time()
        try:
            pg = Postgres(base)
            pg.start()
            self.pg = pg
            self._setup()
            self._the_minute()
            self._grade()
            self._feedback()
            self._check()
            passed = True
            return self.numbers
        finally:
            for p in self.started:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
            removed = remove_students(self.state)
            self.numbers["accounts removed"] = len(removed)
            if pg is not None:
                pg.remove()
            shutil.rmtree(base, ignore_errors=True)
            self.numbers["wall seconds"] = round(time.time() - t_all, 1)
            if passed and self.out is not None:
                from . import report

                report.write(self.out, self.numbers, self.events, self.events.get("due"), self.students,
                             self.graders, self.faults)

    # -- 1. accounts, the course, the release ---------------------------------------------------------------
    def _setup(self) -> None:
        self.exchange = self.base / "exchange"
        self.exchange.mkdir()
        os.chmod(self.exchange, 0o1777)  # nbgrader's exchange root: world-writable, sticky
        self.root = course.make_course(self.base / "course", self.exchange)
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "JAXPATH_FAULT"))},
                    "PATH": f"{BIN}:{os.environ.get('PATH', '')}", "HOME": str(self.base / "instructor")}
        (self.base / "instructor").mkdir()
        self._instructor("nbgrader", "generate_assignment", PART, "--force", f"--CourseDirectory.db_url={self.pg.url}")
        self._instructor("nbgrader", "release_assignment", PART, "--force")
        start = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        self.claim = start.strftime("%Y-%m-%d %H:%M:%S.%f UTC")
        prefix = f"jxs{os.getpid() % 100000}s"
        self.plans = plans(self.students, prefix, self.claim)
        t = time.time()
        self.people = make_students(self.state, [p.id for p in self.plans], COURSE_ID, self.exchange)
        self.numbers["accounts seconds"] = round(time.time() - t, 1)
        self.log(f"{len(self.people)} accounts made in {self.numbers['accounts seconds']} s; the part is released")

    def _instructor(self, tool: str, *args, env: dict | None = None, ok: bool = True) -> subprocess.CompletedProcess:
        argv = [str(BIN / tool), *(["--root", str(self.root)] if tool == "jaxpath" else []), *map(str, args)]
        p = subprocess.run(argv, cwd=self.root, env=env or self.env, capture_output=True, text=True)
        if ok and p.returncode != 0:
            raise StormError(f"{' '.join(argv[:3])} ... exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        return p

    # -- 2. the minute: everyone submits at once while the instructor collects -----------------------------
    def _fifo(self, name: str) -> tuple[Path, int]:
        p = self.state / name
        os.mkfifo(p, 0o666)
        os.chmod(p, 0o666)
        return p, os.open(p, os.O_RDWR)  # held open: students' opens never block, and reads wait for its close

    def _the_minute(self) -> None:
        go, go_fd = self._fifo("go")
        late_go, late_fd = self._fifo("late")
        ready, ready_fd = self._fifo("ready")
        procs: dict[str, tuple[Person, subprocess.Popen]] = {}
        for person, plan in zip(self.people, self.plans):
            f = person.home / "storm-plan.json"
            f.write_text(json.dumps({"id": plan.id, "part": PART, "notebook": NOTEBOOK, "answers": KINDS,
                                     "on_time": list(plan.on_time),
                                     "late": plan.late, "forge": plan.forge, "go": str(go), "late_go": str(late_go),
                                     "ready": str(ready), "nbgrader": str(BIN / "nbgrader")}))
            os.chown(f, person.uid, person.gid)
            procs[plan.id] = (person, person.popen([sys.executable, "-I", Path(__file__).with_name("student.py"), f]))
        lines = _Lines(ready_fd, procs)
        lines.wait_for("ready", len(procs))
        self.log(f"{len(procs)} students fetched and answered; the minute starts")
        collector = _Collector(self)
        collector.start()
        collector.wait_watching()
        t0 = time.time()
        os.close(go_fd)  # every student wakes at once
        lines.wait_for("done", len(procs))
        due = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        self.due = due
        from nbgrader.api import Gradebook

        with Gradebook(self.pg.url, COURSE_ID) as gb:
            gb.update_or_create_assignment(PART, duedate=due)
        self.events["due"] = time.time() - t0
        self.log(f"the due date passes ({due:%H:%M:%S.%f} UTC): the late ones submit")
        os.close(late_fd)
        lines.wait_for("exit", len(procs))
        outs = {}
        for sid, (person, p) in procs.items():
            out, _ = p.communicate()
            outs[sid] = out
        t_end = time.time()
        collector.finish()
        os.close(ready_fd)
        self.results = {}
        for sid, (person, p) in procs.items():
            r = json.loads((person.home / "storm-result.json").read_text())
            if r["error"] or any(s["rc"] != 0 for s in r["submits"]) or p.returncode != 0:
                raise StormError(f"student {sid} failed: {r['error']} "
                                 f"{[s['error'] for s in r['submits'] if s['rc']]} {outs[sid][-2000:]}")
            self.results[sid] = r
        submits = [s for r in self.results.values() for s in r["submits"]]
        on_time = [s for s in submits if not s.get("late")]
        span = max(s["end"] for s in on_time) - min(s["start"] for s in on_time)
        self.events.update(t0=t0, submits=[(s["start"] - t0, s["end"] - t0, bool(s.get("late"))) for s in submits],
                           collects=[(a - t0, b - t0, n) for a, b, n in collector.rounds])
        self.numbers.update({
            "submitted": len(submits),
            "on-time submits": len(on_time),
            "late submits": len(submits) - len(on_time),
            "on-time span seconds": round(span, 2),  # first start to last return: the minute, as it happened
            "on-time submissions per second": round(len(on_time) / span, 1) if span > 0 else None,
            "longest submit seconds": round(max(s["end"] - s["start"] for s in submits), 2),
            "median submit seconds": round(sorted(s["end"] - s["start"] for s in submits)[len(submits) // 2], 2),
            "collect rounds": len(collector.rounds),
            "collect round seconds (longest)": round(max(b - a for a, b, _ in collector.rounds), 2),
            "final collect seconds": round(collector.final_seconds, 2),
            "collector killed mid-copy": collector.killed,
            "entries copied twice": len(collector.entries) - len(set(collector.entries)),
            "minute seconds": round(t_end - t0, 1),
        })
        self._check_exchange()
        self.log(f"{len(submits)} submissions in {self.numbers['minute seconds']} s; {len(collector.rounds)} collect rounds")

    def _check_exchange(self) -> None:
        """Nothing half-written in the exchange; a student cannot list the inbound folder (nor another's home)."""
        from ..inbound import read_entries

        entries = read_entries(self.exchange / COURSE_ID / "inbound", PART)
        half = [str(e.path) for e in entries if not e.complete]
        if half:
            raise StormError(f"half-written in the exchange: {half}")
        someone, other = self.people[0], self.people[1]
        for probe in (["ls", self.exchange / COURSE_ID / "inbound"], ["ls", other.home]):
            if someone.run(probe).returncode == 0:
                raise StormError(f"{someone.name} could run `{' '.join(map(str, probe))}`")
        self.numbers["exchange entries"] = len(entries)

    # -- 3. graders on one gradebook, with the faults ---------------------------------------------------------
    def _grader(self, students: list[str], fault: str | None = None, fifo: Path | None = None) -> subprocess.Popen:
        from ...grade import sandbox_problem

        argv = [BIN / "jaxpath", "--root", self.root, "grade", PART, "--db", self.pg.url, "--workers", "1",
                "--cell-timeout", str(self.cell_timeout), "--memory-mb", "1024", "--student", *students]
        if sandbox_problem() is not None:
            argv.append("--no-sandbox")
        env = dict(self.env)
        if fault:
            env.update(JAXPATH_FAULT=fault, JAXPATH_FAULT_FIFO=str(fifo))
        p = subprocess.Popen([str(a) for a in argv], cwd=self.root, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.started.append(p)
        return p

    def _grade(self) -> None:
        from ...grade.record import StatusStore

        ids = [p.id for p in self.plans]
        shares = [ids[i::self.graders] for i in range(self.graders)]
        t = time.time()
        before_faults = 0
        if self.faults:
            fifo = self.state / "grade-fault"
            os.mkfifo(fifo, 0o600)
            procs = [self._grader(s, "grade-recorded:2" if i == 0 else None, fifo) for i, s in enumerate(shares)]
            point, pid = wait_for(fifo, (procs[0].pid,))  # grader 0 has recorded two notebooks and waits at its checkpoint
            self.pg.kill()                # PostgreSQL dies under the other graders
            self.pg.start()               # ... and comes back (crash recovery)
            os.killpg(procs[0].pid, signal.SIGKILL)  # grader 0 dies mid-batch, its workers with it
            outs = [p.communicate()[0] for p in procs]
            self.numbers["graders ended by the faults"] = sum(1 for p in procs if p.returncode != 0)
            before_faults = len(StatusStore(self.pg.url).all(PART))
            self.grader_outputs = outs
        procs = [self._grader(s) for s in shares]
        outs = [p.communicate()[0] for p in procs]
        for p, out in zip(procs, outs):
            if p.returncode != 0:
                raise StormError(f"a grader exited {p.returncode}:\n{out[-4000:]}")
        graded_now = sum(_graded_now(out) for out in outs)
        seconds = time.time() - t
        rows = StatusStore(self.pg.url).all(PART)
        self.rows = {r.student: r for r in rows}
        self.numbers.update({
            "graded": len(self.rows),
            "grading seconds": round(seconds, 1),
            "graded before the faults": before_faults,
            "graded by the reruns": graded_now,
            "grading seconds per notebook (storm)": _mean(r.seconds for r in rows),
        })
        self.duplicated = len(rows) - len(self.rows)  # a notebook with two status rows (the key forbids it)
        self.log(f"{len(rows)} notebooks graded by {self.graders} graders in {seconds:.0f} s")
        self._quiet_batch()

    def _quiet_batch(self) -> None:
        """One notebook of each kind, graded alone by one grader (SQLite): the scores the storm must match, and the
        time per notebook without a storm around it."""
        from ...grade.record import StatusStore

        quiet = course.make_course(self.base / "quiet", self.exchange)
        subprocess.run([str(BIN / "nbgrader"), "generate_assignment", PART, "--force"], cwd=quiet, env=self.env,
                       capture_output=True, check=True)
        rel = quiet / "release" / PART / f"{NOTEBOOK}.ipynb"
        for kind in KINDS:
            d = quiet / "submitted" / kind / PART
            d.mkdir(parents=True)
            shutil.copy(rel, d / f"{NOTEBOOK}.ipynb")
            course.answer(d / f"{NOTEBOOK}.ipynb", kind)
            (d / "timestamp.txt").write_text(self.claim)
        from ...grade import sandbox_problem

        argv = [BIN / "jaxpath", "--root", quiet, "grade", PART, "--workers", "1", "--cell-timeout",
                str(self.cell_timeout), "--memory-mb", "1024"]
        if sandbox_problem() is not None:
            argv.append("--no-sandbox")
        p = subprocess.run([str(a) for a in argv], cwd=quiet, env=self.env, capture_output=True, text=True)
        if p.returncode != 0:
            raise StormError(f"the quiet batch exited {p.returncode}:\n{p.stdout[-4000:]}")
        from ...config import Config

        rows = StatusStore(Config.load(quiet).db_url).all(PART)
        self.quiet = {r.student: r.score for r in rows}
        self.numbers["grading seconds per notebook (quiet)"] = _mean(r.seconds for r in rows)

    # -- 4. feedback, fetched by every student as themselves ----------------------------------------------------
    def _feedback(self) -> None:
        t = time.time()
        self._instructor("jaxpath", "feedback", PART, "--db", self.pg.url)
        self._instructor("nbgrader", "release_feedback", PART, f"--CourseDirectory.db_url={self.pg.url}")
        procs = {p.name: p.popen([BIN / "nbgrader", "fetch_feedback", PART], cwd=p.home / "work") for p in self.people}
        self.pages = {}
        for name, proc in procs.items():
            out, _ = proc.communicate()
            person = next(p for p in self.people if p.name == name)
            if proc.returncode != 0:
                raise StormError(f"{name}: nbgrader fetch_feedback exited {proc.returncode}: {out[-2000:]}")
            self.pages[name] = [x.read_text() for x in (person.home / "work" / PART / "feedback").glob(f"*/{NOTEBOOK}.html")]
        self.numbers["feedback seconds"] = round(time.time() - t, 1)

    # -- 5. the counts ---------------------------------------------------------------------------------------
    def _check(self) -> None:
        from ..inbound import MARK

        lost, mismatched, wrong_late, fed = [], [], [], 0
        with_late = {}
        from nbgrader.api import Gradebook

        with Gradebook(self.pg.url, COURSE_ID) as gb:
            for plan in self.plans:
                try:
                    sub = gb.find_submission(PART, plan.id)
                    with_late[plan.id] = (sub.score, sub.total_seconds_late > 0)
                except Exception:  # noqa: BLE001 - a submission the gradebook lacks is lost
                    lost.append(plan.id)
        collected = 0
        for plan in self.plans:
            place = self.root / "submitted" / plan.id / PART
            if (place / MARK).is_file():
                collected += 1
            kind, late = plan.counts if self.rule == "before-due" else self._latest(plan)
            row = self.rows.get(plan.id)
            if row is None:
                lost.append(plan.id)
                continue
            if row.score != self.quiet.get(kind) or row.score != course.POINTS[kind]:
                mismatched.append(f"{plan.id} ({kind}): {row.score} against {self.quiet.get(kind)}")
            if plan.id in with_late and with_late[plan.id][1] != late:
                wrong_late.append(f"{plan.id}: {'late' if with_late[plan.id][1] else 'on time'}, should be "
                                  f"{'late' if late else 'on time'}")
            pages = self.pages.get(plan.id, [])
            if len(pages) == 1 and f"{NOTEBOOK} (Score: {course.POINTS[kind]:.1f} / 5.0)" in pages[0]:
                fed += 1
        leftovers = [str(p) for p in (self.root / "submitted").rglob(".jaxpath-*") if p.name != MARK]
        self.numbers.update({"collected": collected, "fed back": fed, "lost": len(set(lost)),
                             "duplicated": self.numbers["entries copied twice"] + self.duplicated,
                             "mismatched": len(mismatched),
                             "lateness wrong": len(wrong_late),
                             "late (counted)": sum(1 for v in with_late.values() if v[1]),
                             "leftovers in submitted/": len(leftovers)})
        problems = lost + mismatched + wrong_late + leftovers
        if problems or collected != len(self.plans) or fed != len(self.plans) or self.numbers["duplicated"]:
            raise StormError("the storm's counts are off: " + json.dumps(self.numbers) + "\n" + "\n".join(problems))

    def _latest(self, plan: Plan) -> tuple[str, bool]:
        if plan.late:
            return plan.late, True
        return plan.on_time[-1], False


def _graded_now(out: str) -> int:
    import re

    m = re.search(r"(\d+) graded now", out)
    return int(m.group(1)) if m else 0


def _mean(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return round(sum(xs) / len(xs), 2) if xs else None


class _Lines:
    """The students' messages on the `ready` pipe ("ready ID", "done ID", "exit ID"), waited for; a student
    process that ended without its message is an error (the wait wakes on the pipe or on that process's end)."""

    def __init__(self, fd: int, procs: dict):
        self.fd, self.procs, self.buf, self.seen = fd, procs, b"", {}
        self.pidfds = {os.pidfd_open(p.pid): sid for sid, (_, p) in procs.items()}

    def wait_for(self, what: str, n: int) -> None:
        while len(self.seen.get(what, set())) < n:
            ready = readable([self.fd, *self.pidfds])
            if self.fd in ready:
                self.buf += os.read(self.fd, 65536)
                *lines, self.buf = self.buf.split(b"\n")
                for line in lines:
                    word, sid = line.decode().split()
                    self.seen.setdefault(word, set()).add(sid)
                continue
            for fd in ready:  # a student process ended: fine once it said "exit"
                sid = self.pidfds.pop(fd)
                os.close(fd)
                if sid not in self.seen.get("exit", set()):
                    # its last words may still be in the pipe
                    self.buf += _drain(self.fd)
                    *lines, self.buf = self.buf.split(b"\n")
                    for line in lines:
                        word, s = line.decode().split()
                        self.seen.setdefault(word, set()).add(s)
                    if sid not in self.seen.get("exit", set()):
                        out = self.procs[sid][1].stdout.read()
                        raise StormError(f"student {sid} ended without finishing: {out[-3000:]}")


def _drain(fd: int) -> bytes:
    out = b""
    while readable([fd], 0):
        out += os.read(fd, 65536)
    return out


class _Collector(threading.Thread):
    """The instructor's collect loop while the students submit: `jaxpath inbound --until STOP`, a round at every
    change in the inbound folder. With faults, its first round that copies anything is killed mid-copy (at the
    `collect-copying` checkpoint); it is started again, without the fault, and goes on."""

    def __init__(self, storm: Storm):
        super().__init__(daemon=True)
        self.storm = storm
        self.stop = storm.state / "collect-stop"
        self.rounds: list[tuple[float, float, int]] = []
        self.entries: list[str] = []
        """Every exchange entry copied into submitted/, once per copy."""
        self.killed = False
        self.final_seconds = 0.0
        self.error: str | None = None
        self.fifo = storm.state / "collect-fault"
        self.proc: subprocess.Popen | None = None
        self.watching = threading.Event()
        """Set once its first round is done, its inotify watch in place (or once it has ended, failed)."""
        if storm.faults:
            os.mkfifo(self.fifo, 0o600)

    def _inject(self) -> None:
        point, pid = wait_for(self.fifo)
        self.killed = True
        os.kill(pid, signal.SIGKILL)

    def _loop(self, fault: bool) -> int:
        s = self.storm
        env = dict(s.env)
        if fault:
            env.update(JAXPATH_FAULT="collect-copying", JAXPATH_FAULT_FIFO=str(self.fifo))
        self.proc = subprocess.Popen([str(BIN / "jaxpath"), "--root", str(s.root), "inbound", PART, "--db", s.pg.url,
                                      "--rule", s.rule, "--until", str(self.stop)], cwd=s.root, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for line in self.proc.stdout:
            if line.startswith("{"):
                r = json.loads(line)
                self.rounds.append((r["start"], r["end"], len(r["collected"])))
                self.entries += r["collected"]
                self.watching.set()
        err = self.proc.stderr.read()
        rc = self.proc.wait()
        if rc not in (0, -signal.SIGKILL):
            raise StormError(f"jaxpath inbound --until exited {rc}:\n{err[-3000:]}")
        return rc

    def run(self) -> None:
        try:
            if self.storm.faults:
                injector = threading.Thread(target=self._inject, daemon=True)
                injector.start()
                while self._loop(fault=True) != -signal.SIGKILL:
                    pass  # it ended without copying anything: not possible once a submission is in
            self._loop(fault=False)
        except StormError as e:
            self.error = str(e)
        finally:
            self.watching.set()

    def wait_watching(self) -> None:
        """Until the loop watches the inbound folder: the students are let go only then, so that it collects
        while they submit (a process starting takes seconds on a loaded machine; the submissions, under one)."""
        self.watching.wait()
        if self.error:
            raise StormError(self.error)

    def finish(self) -> None:
        """Every submission is in: the loop does its last round and ends."""
        self.stop.write_text("")
        self.join()
        if self.error:
            raise StormError(self.error)
        if self.rounds:
            self.final_seconds = self.rounds[-1][1] - self.rounds[-1][0]
