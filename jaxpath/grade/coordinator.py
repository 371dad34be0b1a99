"""The coordinator: find submissions, prepare each with nbgrader's own autograde steps, send the
execution to Dask workers, and record what comes back. It is the only writer of autograded/ and the
gradebook."""
from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import nbformat

from .. import texts
from ..cells import grade_id
from ..config import Config
from ..errors import GradeError
from ..files import write_atomic
from ..gradebooks import prepare_nbgrader
from . import integrity, record
from .isolation import NONE, host_level
from .jobs import Job
from .limits import Limits
from .pipeline import prepare_steps, record_steps
from .record import Status, StatusStore
from .reference import ReferenceRuns, run_reference, saved_reference
from .sandbox import SandboxUnavailable, sandbox_problem
from .statuses import FINAL, GradeStatus
from .tasks import IntegritySpec, Result, Task

GRADER_VERSION = "jaxpath-grade-3"
MAX_EXTRA_BYTES = 50 * 1024 * 1024
log = logging.getLogger("jaxpath.grade")


@dataclass
class GradeReport:
    part: str
    results: list[Status] = field(default_factory=list)
    skipped: list[Status] = field(default_factory=list)
    seconds: float = 0.0
    isolation: str = ""
    """The isolation level the batch ran at (jaxpath.grade.isolation.Level.name)."""
    times: dict[str, float] = field(default_factory=dict)
    """Where the batch's seconds went on the coordinator: cluster start, prepare, reference run, grading
    (dispatch to the last result), record. Cluster start and the reference run overlap the others."""
    worker_times: list[dict[str, float]] = field(default_factory=list)
    """Per executed notebook, where the worker's seconds went (sandbox, kernel start, import jax, ...)."""
    cache_hits: list[int | None] = field(default_factory=list)
    """Per executed notebook, the compilations it read from the warmed cache (None: it ran without one)."""
    cache_entries: int | None = None
    """With --scheduler: the entries of the cache pack sent to the workers."""

    @property
    def served_by_cache(self) -> int:
        """Executed notebooks that read at least one compiled program from the warmed cache."""
        return sum(1 for h in self.cache_hits if h)

    def by_status(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.results:
            out[s.status] = out.get(s.status, 0) + 1
        return out


class Coordinator:
    def __init__(self, config: Config, part: str, *, db_url: str | None = None, sandbox: bool = True,
                 limits: Limits = Limits(), force: bool = False, jax_cache: Path | None = None,
                 isolation: str | None = None):
        self.config, self.part, self.force, self.sandbox, self.limits = config, part, force, sandbox, limits
        self.jax_cache = jax_cache
        if sandbox:
            why = sandbox_problem(isolation)
            if why:
                raise SandboxUnavailable(f"{why}. Pass --no-sandbox to grade without "
                                         "isolation (student code then runs as you, with the course in reach).")
        # Chosen once, here, from what this host gives (or `isolation`, a level name); every task carries it.
        self.level = host_level(isolation) if sandbox else NONE
        prepare_nbgrader()
        self.nbcfg = config.nbgrader(db_url)
        self.coursedir = config.coursedir(db_url)
        self.db_url = self.coursedir.db_url
        self.course_id = self.coursedir.course_id
        if self.db_url.startswith("sqlite:///"):
            Path(self.db_url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        self.store = StatusStore(self.db_url)
        self._ensure_assignment()

    # -- the gradebook knows the assignment, as source/ has it ---------------------------------------
    def _ensure_assignment(self) -> None:
        """The gradebook's notebooks, grade cells, points and checksums of this part, kept in step with
        source/: created when missing (also when `nbgrader db assignment add` made the assignment first, with no
        notebooks), updated when a point value or a cell changed since. Nothing else changes: due date, students
        and submissions stay as the gradebook has them."""
        stale = self._gradebook_differs()
        if stale:
            self._remember_points()  # the points students of the earlier release have in their notebooks
            self._sync_gradebook(stale)
        self._read_assignment()
        self.earlier_points = self._remember_points()

    def _remember_points(self) -> dict[tuple[str, str], set[float]]:
        """Adds the gradebook's point values of this part to those remembered; returns all remembered."""
        from nbgrader.api import Gradebook, MissingEntry

        with Gradebook(self.db_url, self.course_id) as gb:
            try:
                points = {(n.name, c.name): c.max_score for n in gb.find_assignment(self.part).notebooks
                          for c in n.grade_cells}
            except MissingEntry:
                points = {}
        self.store.remember_points(self.part, points)
        return self.store.released_points(self.part)

    def _source_notebooks(self) -> dict[str, nbformat.NotebookNode]:
        src = Path(self.coursedir.root) / self.coursedir.source_directory / self.part
        return {p.stem: nbformat.read(p, as_version=4) for p in sorted(src.glob("*.ipynb"))} if src.is_dir() else {}

    def _released_cells(self, name: str, nb: nbformat.NotebookNode) -> dict[str, str]:
        """grade id -> checksum, as nbgrader's generate_assignment records them: its own steps up to the first
        ComputeChecksums (stubs in place of solutions, hidden tests kept), on a copy of the source notebook."""
        import copy

        from nbgrader.converters import GenerateAssignment

        resources = {"nbgrader": {"notebook": name, "assignment": self.part, "db_url": self.db_url,
                                  "course_id": self.course_id}}
        nb = copy.deepcopy(nb)
        steps = list(GenerateAssignment(config=self.nbcfg).preprocessors)   # the course's own list, if it set one
        for step in steps[:[s.__name__ for s in steps].index("SaveCells")]:
            nb, resources = step(config=self.nbcfg).preprocess(nb, resources)
        return {c.metadata.nbgrader["grade_id"]: c.metadata.nbgrader.get("checksum", "")
                for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")}

    def _gradebook_differs(self) -> str:
        """Why the gradebook's copy of the part differs from source/ (empty when it does not)."""
        from nbgrader.api import Gradebook, MissingEntry

        sources = self._source_notebooks()
        with Gradebook(self.db_url, self.course_id) as gb:
            try:
                a = gb.find_assignment(self.part)
            except MissingEntry:
                if not sources:
                    raise GradeError(f"no assignment {self.part!r} in the gradebook and no source/{self.part} to "
                                     "create it from") from None
                return "not in the gradebook"
            if not sources:
                return ""  # graded from the gradebook alone (no source/ here): nothing to compare
            have = {n.name: n for n in a.notebooks}
            if set(have) != set(sources):
                return (f"its notebooks are {', '.join(sorted(have)) or 'none'}; source/{self.part} has "
                        f"{', '.join(sorted(sources))}")
            for name, nb in sources.items():
                try:
                    released = self._released_cells(name, nb)
                except Exception as e:  # nbgrader's own refusal is clearer: let the sync say it
                    return f"{name}: {(str(e).strip().splitlines() or [type(e).__name__])[0]}"
                recorded = {c.name: c.checksum for c in have[name].source_cells}
                for gid in sorted(set(released) | set(recorded)):
                    if released.get(gid) != recorded.get(gid):
                        return f"{name}: {gid} changed in source/ since the gradebook recorded it"
        return ""

    def _sync_gradebook(self, why: str) -> None:
        """nbgrader's own generate_assignment writes the cells into the gradebook; its student version goes to a
        scratch folder (release/ is `jaxpath release`'s, leak-checked)."""
        import copy
        import tempfile

        from nbgrader.apps import NbGraderAPI

        log.info("the gradebook's %s differs from source/ (%s): updating it with nbgrader generate_assignment",
                 self.part, why)
        with tempfile.TemporaryDirectory(prefix="jaxpath-gradebook-") as scratch:
            cfg = copy.deepcopy(self.nbcfg)
            cfg.CourseDirectory.release_directory = scratch
            result = NbGraderAPI(config=cfg).generate_assignment(self.part, force=True, create=True)
        if not result.get("success"):
            err = (result.get("error") or "").strip()
            hint = ("; nbgrader refuses to add or remove grade cells once submissions exist: keep the cells, or "
                    "start a new assignment" if "submissions associated" in err else "")
            raise GradeError(f"could not update the gradebook's {self.part} from source/ ({why}): "
                             f"{err.splitlines()[-1] if err else 'nbgrader generate_assignment failed'}{hint}")

    def _read_assignment(self) -> None:
        from nbgrader.api import Gradebook

        with Gradebook(self.db_url, self.course_id) as gb:
            a = gb.find_assignment(self.part)
            self.notebooks = sorted(n.name for n in a.notebooks)
            self.duedate = a.duedate.isoformat() if a.duedate else ""
            # What a notebook's grades depend on besides the submission: its cells and points in the
            # gradebook, the due date and the late-penalty rule, and the limits it runs under.
            penalties = self.nbcfg.get("AssignLatePenalties", {})
            plugin = str(penalties.get("plugin_class", "LateSubmissionPlugin")).rsplit(".", 1)[-1]
            policy = json.dumps([self.duedate, repr(penalties), repr(self.nbcfg.get(plugin, {})),
                                 sorted(vars(self.limits).items())], default=str)
            self.source_version = {
                n.name: hashlib.sha256(json.dumps([policy, sorted((c.name, c.checksum or "") for c in n.source_cells),
                                                   sorted((c.name, c.max_score) for c in n.grade_cells)],
                                                  default=str).encode()).hexdigest()
                for n in a.notebooks}

    # -- what is there to grade -----------------------------------------------------------------------
    def submissions(self, students: Iterable[str] | None = None, notebooks: Iterable[str] | None = None) -> list[Job]:
        sub_root = Path(self.coursedir.root) / self.coursedir.submitted_directory
        wanted_students = set(students or [])
        wanted_nbs = {n.removesuffix(".ipynb") for n in notebooks or []}
        jobs = []
        if not sub_root.is_dir():
            return jobs
        for sdir in sorted(p for p in sub_root.iterdir() if p.is_dir()):
            if wanted_students and sdir.name not in wanted_students:
                continue
            pdir = sdir / self.part
            if not pdir.is_dir():
                continue
            present = {p.stem: p for p in pdir.glob("*.ipynb") if p.is_file()}
            for name in self.notebooks:
                if wanted_nbs and name not in wanted_nbs:
                    continue
                jobs.append(Job(sdir.name, name, present.get(name)))
            for name in sorted(set(present) - set(self.notebooks)):
                if wanted_nbs and name not in wanted_nbs:
                    continue
                jobs.append(Job(sdir.name, name, present[name]))
        return jobs

    def _extra_files(self, pdir: Path) -> dict[str, bytes]:
        """The files nbgrader's autograde puts beside the notebook: the submission's other files, then the
        source's own files over them, except those `c.Autograde.exclude_overwriting` names for this
        assignment; `c.CourseDirectory.ignore` (checkpoints, __pycache__, feedback) and notebooks are left
        out, as nbgrader leaves them out. Links are never followed."""
        from nbgrader.utils import find_all_files

        files, total = {}, 0
        src = Path(self.coursedir.root) / self.coursedir.source_directory / self.part
        exclude = set(self._exclude_overwriting())
        for base, own in ((pdir, True), (src, False)):
            if not base.is_dir():
                continue
            for name in sorted(find_all_files(str(base), list(self.coursedir.ignore) + ["*.ipynb"])):
                p = Path(name)
                rel = str(p.relative_to(base))
                if p.is_symlink() or not p.is_file():
                    continue
                if not own and os.path.normpath(rel) in exclude:
                    continue
                size = p.stat().st_size
                if own and total + size > MAX_EXTRA_BYTES:
                    continue
                total += size
                files[rel] = p.read_bytes()
        return files

    def _exclude_overwriting(self) -> list[str]:
        value = self.nbcfg.get("Autograde", {}).get("exclude_overwriting", {})
        try:
            return [os.path.normpath(x) for x in dict(value).get(self.part, [])]
        except (TypeError, ValueError):
            return []

    def _extensions(self) -> dict[str, str]:
        """Student -> the extension the gradebook grants their submission of this part (`jaxpath extend`)."""
        from nbgrader.api import Gradebook

        with Gradebook(self.db_url, self.course_id) as gb:
            return {s.student.id: str(s.extension) for s in gb.assignment_submissions(self.part) if s.extension}

    def _hash(self, job: Job, extension: str = "") -> str:
        h = hashlib.sha256(GRADER_VERSION.encode())
        h.update(self.source_version.get(job.notebook, "").encode())
        h.update(extension.encode())  # a new extension changes the late penalty: regraded
        if job.path is not None:
            h.update(job.path.read_bytes())
            ts = job.path.parent / "timestamp.txt"
            if ts.exists():
                h.update(ts.read_bytes())
        return h.hexdigest()

    def plan(self, jobs: list[Job]) -> tuple[list[Job], list[Status]]:
        """Jobs whose content changed (or all with force), and the statuses of those skipped."""
        todo, skipped = [], []
        extensions = self._extensions()
        for job in jobs:
            job.content_hash = self._hash(job, extensions.get(job.student, ""))
            old = self.store.get(self.part, job.student, job.notebook)
            if not self.force and old and old.content_hash == job.content_hash and old.status in FINAL:
                skipped.append(old)
            else:
                todo.append(job)
        return todo, skipped

    # -- prepare with nbgrader's sanitize steps ------------------------------------------------------
    def _resources(self, job: Job) -> dict:
        return {"nbgrader": {"notebook": job.notebook, "assignment": self.part, "student": job.student,
                             "db_url": self.db_url, "course_id": self.course_id}}

    def prepare(self, job: Job) -> None:
        """Prepare one submission as nbgrader's autograde does: its submission recorded, the notebook read and
        restored by nbgrader's sanitize steps into `job.task`; or `job.status` set where it cannot run (missing,
        not a notebook of the assignment, unreadable), every grade cell then scoring zero."""
        pdir = Path(self.coursedir.root) / self.coursedir.submitted_directory / job.student / self.part
        if job.path is None and not any(pdir.glob("*.ipynb")):
            # nbgrader's autograde finds no notebook to grade and records no submission: neither does jaxpath
            job.status = self._status(job, GradeStatus.MISSING, f"no {job.notebook}.ipynb was submitted (the folder has no "
                                                    "notebook: no submission is recorded, as under nbgrader)")
            return
        self._record_submission(job, pdir)
        if job.notebook not in self.notebooks:
            job.status = self._status(job, GradeStatus.INVALID, f"{job.notebook}.ipynb is not a notebook of {self.part} "
                                                    f"(expected {', '.join(n + '.ipynb' for n in self.notebooks)}): "
                                                    "renamed?")
            return
        if job.path is None:
            others = sorted(p.name for p in pdir.glob("*.ipynb")) if pdir.is_dir() else []
            self._cannot_run(job, GradeStatus.MISSING, f"no {job.notebook}.ipynb was submitted"
                             + (f" (the folder has {', '.join(others)})" if others else ""))
            return
        try:
            nb = nbformat.reads(job.path.read_bytes().decode("utf-8"), as_version=4)
            nbformat.validate(nb)
        except Exception as e:
            self._cannot_run(job, GradeStatus.INVALID, f"cannot be read as a notebook: {_first_line(e)}")
            return
        nb = self._restore(job, nb)
        if nb is None:
            return
        job.files = self._extra_files(pdir)
        job.task = Task(f"{self.part}/{job.student}/{job.notebook}", nbformat.writes(nb), files=job.files,
                        limits=self.limits, sandbox=self.sandbox, isolation=self.level.name,
                        kernel_name=self.config.kernel_name, jax_cache=str(self.jax_cache) if self.jax_cache else None)

    def _record_submission(self, job: Job, pdir: Path) -> None:
        """The student and the submission in nbgrader's gradebook, with its timestamp (as autograde records them)."""
        from nbgrader.api import Gradebook

        try:
            timestamp = self.coursedir.get_existing_timestamp(str(pdir))
        except Exception:
            timestamp = None
        with Gradebook(self.db_url, self.course_id) as gb:
            gb.update_or_create_student(job.student)
            if timestamp:
                gb.update_or_create_submission(self.part, job.student, timestamp=timestamp)
            else:
                gb.update_or_create_submission(self.part, job.student)

    def _cannot_run(self, job: Job, status: GradeStatus, why: str) -> None:
        self._zero(job)
        job.status = self._status(job, status, why, *self._scores(job))

    def _restore(self, job: Job, nb: nbformat.NotebookNode) -> nbformat.NotebookNode | None:
        """The notebook after nbgrader's sanitize steps (cells restored as released, what changed noted on the
        job); None, with the job settled as invalid, where nbgrader cannot restore it."""
        from nbgrader.api import Gradebook

        submitted_ids = {grade_id(c) for c in nb.cells}
        seen: dict[str, int] = {}
        for c in nb.cells:
            gid = grade_id(c)
            if gid:
                seen[gid] = seen.get(gid, 0) + 1
        for gid, n in sorted(seen.items()):
            if n > 1:  # a copied cell (JupyterLab copies metadata): nbgrader keeps the last one
                job.notes.append(f"{gid} appears {n} times; the last copy was graded, the others ran as plain cells")
        resources = self._resources(job)
        try:
            for pp in prepare_steps(self.nbcfg, job.changes, job.notes, self.earlier_points):
                nb, resources = pp.preprocess(nb, resources)
        except Exception as e:
            self._cannot_run(job, GradeStatus.INVALID, f"nbgrader could not restore it: {_first_line(e)}")
            return None
        with Gradebook(self.db_url, self.course_id) as gb:
            graded = {c.name for c in gb.find_notebook(job.notebook, self.part).grade_cells}
        missing = sorted(graded - submitted_ids)
        if missing:
            job.changes.append(f"restored deleted grade cells {', '.join(missing)}")
        return nb

    def _zero(self, job: Job) -> None:
        """A notebook that cannot run scores zero in every grade cell (as nbgrader does for a missing one)."""
        from nbgrader.api import Gradebook

        with Gradebook(self.db_url, self.course_id) as gb:
            sub = gb.find_submission_notebook(job.notebook, self.part, job.student)
            for grade in sub.grades:
                grade.auto_score = 0
                grade.needs_manual_grade = False
            gb.db.commit()
        (self._autograded_dir(job) / f"{job.notebook}.ipynb").unlink(missing_ok=True)

    def _scores(self, job: Job) -> tuple[float | None, float | None]:
        from nbgrader.api import Gradebook, MissingEntry

        with Gradebook(self.db_url, self.course_id) as gb:
            try:
                sub = gb.find_submission_notebook(job.notebook, self.part, job.student)
                return float(sub.score), float(sub.max_score)
            except MissingEntry:
                return None, None

    def _status(self, job: Job, status: str, reason: str, score=None, max_score=None, seconds=None) -> Status:
        reason = " ".join(reason.split())
        reason = reason if len(reason) <= 240 else reason[:237] + "..."
        return Status(self.part, job.student, job.notebook, job.content_hash, status, reason, score, max_score, seconds)

    def _autograded_dir(self, job: Job) -> Path:
        return Path(self.coursedir.root) / self.coursedir.autograded_directory / job.student / self.part

    # -- the reference run: calibrate the integrity checks, warm the compilation cache ----------------
    def reference_runs(self, notebooks: set[str], *, workers: int = 1, on_done=None) -> ReferenceRuns:
        """The reference run of each notebook that has a source (jaxpath.grade.reference), kept in build/grading/:
        those saved and current are done at once, the others start `workers` at a time."""
        src = Path(self.coursedir.root) / self.coursedir.source_directory / self.part
        store = self.config.build / "grading" / self.part

        def one(name: str, on_cell) -> integrity.Reference:
            return run_reference(src / f"{name}.ipynb", store=store, grader_version=GRADER_VERSION,
                                 cell_timeout=self.limits.cell_timeout, jax_cache=self.jax_cache, on_cell=on_cell)

        notebooks = {name for name in notebooks if (src / f"{name}.ipynb").exists()}  # a renamed file has none
        saved = {}
        for name in notebooks:
            ref = saved_reference(src / f"{name}.ipynb", store=store, grader_version=GRADER_VERSION,
                                  jax_cache=self.jax_cache)
            if ref is not None:
                saved[name] = ref
        running = min(workers, max(1, len(notebooks) - len(saved)))
        return ReferenceRuns(one, notebooks, workers=running, saved=saved, jax_cache=self.jax_cache, on_done=on_done,
                             spare_cores=workers - running)

    def static_spec(self, name: str) -> IntegritySpec:
        """The integrity checks a task can run before the reference run of its notebook is done: the prelude
        (the notebook's imports) and the names each test's probe fingerprints, judged later."""
        path = Path(self.coursedir.root) / self.coursedir.source_directory / self.part / f"{name}.ipynb"
        nb = nbformat.read(path, as_version=4)
        ref = integrity.Reference(imports=integrity.notebook_imports(c.source for c in nb.cells if c.cell_type == "code"))
        names = {gid: dict.fromkeys(ns, "") for gid, ns in integrity.static_names(nb).items()}
        return IntegritySpec(names, [], ref.imports, ref.roots, deferred=True)

    # -- record what a worker returned ----------------------------------------------------------------
    def record(self, job: Job, result: Result, ref: integrity.Reference | None = None) -> Status:
        nb = nbformat.reads(result.notebook, as_version=4)
        if result.probes:  # sent before the reference run was done: its probes are judged now
            result.tampering = integrity.settle_probes(nb, result.probes, result.tampering, ref or integrity.Reference())
        resources = self._resources(job)
        try:
            for pp in record_steps(self.nbcfg):
                nb, resources = pp.preprocess(nb, resources)
        except ValueError:
            refused = _refused_score(nb)
            if refused is None:
                raise
            st = self._status(job, GradeStatus.INVALID, refused, *self._scores(job), seconds=result.seconds)
            st.isolation = result.isolation
            self.store.put(st)
            return st
        out_dir = self._autograded_dir(job)
        record.copy_files(job.files, out_dir)
        ts = job.path.parent / "timestamp.txt" if job.path else None
        if ts and ts.exists():
            write_atomic(out_dir / "timestamp.txt", ts.read_bytes())
        # What the notebook wrote in its folder lands where nbgrader's run in autograded/ leaves it: over the
        # files copied in (the notebook ran after them), and the executed notebook over everything.
        record.remove_files(result.removed, out_dir)
        record.copy_files(result.written, out_dir)
        write_atomic(out_dir / f"{job.notebook}.ipynb", nbformat.writes(nb).encode("utf-8"))
        status, reason = result.status, result.reason
        if result.tampering:
            found = "; ".join(result.tampering[:3]) + (f" (+{len(result.tampering) - 3} more)"
                                                       if len(result.tampering) > 3 else "")
            reason = (reason + "; " if reason else "") + "flagged for review: " + found
            if status == GradeStatus.GRADED:
                status = GradeStatus.TAMPERED
        if status == GradeStatus.GRADED and job.changes:
            status = GradeStatus.TAMPERED
            reason = "graded with nbgrader's originals restored: " + "; ".join(sorted(set(job.changes)))
        elif job.changes:
            reason += "; also restored: " + "; ".join(sorted(set(job.changes)))
        if job.notes:
            reason = (reason + "; " if reason else "") + "; ".join(job.notes)
        st = self._status(job, status, reason, *self._scores(job), seconds=result.seconds)
        st.isolation = result.isolation
        self.store.put(st)
        return st

    def settle(self, job: Job) -> Status:
        self.store.put(job.status)
        return job.status


def _refused_score(nb) -> str | None:
    """Why nbgrader's SaveAutoGrades refused the notebook's scores, if it did: a test cell whose value is above its
    points (nbgrader.utils.determine_grade raises, and stock autograde drops the submission)."""
    from nbgrader.utils import determine_grade, is_grade

    for n, cell in enumerate(nb.cells, start=1):
        if not is_grade(cell):
            continue
        try:
            determine_grade(cell)
        except ValueError:
            value = next((o.get("data", {}).get("text/plain", "") for o in cell.get("outputs", [])
                          if o.get("output_type") == "execute_result"), "")
            value = "".join(value) if isinstance(value, list) else value
            return texts.reason_score_refused(n, cell.metadata.nbgrader.get("grade_id", "?"), value[:40],
                                              float(cell.metadata.nbgrader.get("points", 0)))
    return None


def _first_line(e: BaseException) -> str:
    """An error's first line, for a status reason (its type where it says nothing)."""
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
