"""`jaxpath report PART`: one HTML page on how a class did, with plots: score distribution, pass rate
per test, the most common failure messages per exercise, time per notebook, and every submission that
did not grade cleanly with its reason."""
from __future__ import annotations

import base64
import io
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import nbformat

from ..cells import nbgrader_meta
from ..config import Config
from ..files import write_atomic
from ..grade.record import StatusStore
from ..grade.statuses import GradeStatus


@dataclass
class ClassReport:
    path: Path
    students: int
    notebooks: int


def _template():
    """The page (templates/report.html.j2), HTML-escaped by Jinja2."""
    from ..templates import template

    return template("report.html.j2")


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _failures(autograded: Path, part: str) -> dict[tuple[str, str], Counter]:
    """(notebook, test grade_id) -> Counter of first lines of the errors it raised, over the class."""
    out: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for nb_path in autograded.glob(f"*/{part}/*.ipynb"):
        try:
            nb = nbformat.read(nb_path, as_version=4)
        except Exception:
            continue
        for cell in nb.cells:
            meta = nbgrader_meta(cell)
            if cell.cell_type != "code" or not meta.get("grade"):
                continue
            for o in cell.get("outputs", []):
                if o.get("output_type") == "error":
                    first = ((o.get('evalue') or '').strip().splitlines() or [''])[0]
                    msg = f"{o.get('ename', '')}: {first}"
                    out[(nb_path.stem, meta.get("grade_id", "?"))][msg.strip(": ")[:200]] += 1
    return out


def report(config: Config, part: str, *, output: Path | None = None, db_url: str | None = None) -> ClassReport:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    from nbgrader.api import Gradebook

    from .export import net_score

    coursedir = config.coursedir(db_url)
    store = StatusStore(coursedir.db_url)
    statuses = store.all(part)
    store.dispose()
    cell_scores: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    totals = []
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        for sub in gb.assignment_submissions(part):
            # the score the export and the LMS carry: net of the late penalty, as nbgrader exports it
            totals.append((sub.student_id, float(net_score(sub)["score"]), float(sub.max_score)))
            for nb in sub.notebooks:
                for g in nb.grades:
                    if g.auto_score is not None or g.manual_score is not None:
                        cell_scores[(nb.name, g.name)].append((float(g.score), float(g.max_score)))
    failures = _failures(Path(coursedir.root) / coursedir.autograded_directory, part)
    figs = []
    if totals:
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.hist([s for _, s, _ in totals], bins=min(20, max(5, len(totals))), color="#3b6ea5", edgecolor="white")
        ax.set_xlabel(f"score (of {totals[0][2]:g})")
        ax.set_ylabel("students")
        ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_title(f"{part}: total score")
        figs.append(("Score distribution", _png(fig)))
    if cell_scores:
        keys = sorted(cell_scores)
        rates = [sum(1 for s, m in cell_scores[k] if m and s >= m) / len(cell_scores[k]) for k in keys]
        fig, ax = plt.subplots(figsize=(7, 0.35 * len(keys) + 1))
        ax.barh([f"{nb} · {gid}" for nb, gid in keys], rates, color="#4a9c6d")
        ax.set_xlim(0, 1)
        ax.invert_yaxis()
        ax.set_xlabel("share of submissions with full points")
        ax.set_title("Pass rate per test")
        figs.append(("Pass rate per test", _png(fig)))
        fig, ax = plt.subplots(figsize=(7, 0.35 * len(keys) + 1))
        ax.boxplot([[s for s, _ in cell_scores[k]] for k in keys], orientation="horizontal",
                   tick_labels=[f"{nb} · {gid}" for nb, gid in keys])
        ax.invert_yaxis()
        ax.set_xlabel("points")
        ax.set_title("Score distribution per exercise")
        figs.append(("Score distribution per exercise", _png(fig)))
    times = [s.seconds for s in statuses if s.seconds]
    if times:
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.hist(times, bins=min(20, max(5, len(times))), color="#a5673b", edgecolor="white")
        ax.set_xlabel("seconds to execute one notebook")
        ax.set_ylabel("notebooks")
        ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_title("Time per notebook")
        figs.append(("Time per notebook", _png(fig)))
    page = _template().render(
        part=part, students=len(totals), notebooks=len(statuses),
        status_counts=sorted(Counter(s.status for s in statuses).items()), figures=figs,
        isolation_counts=sorted(Counter(s.isolation or "not run" for s in statuses).items()),
        failures=[(key, counter.most_common(5)) for key, counter in sorted(failures.items())],
        bad=[s for s in statuses if s.status != GradeStatus.GRADED])
    out = output or config.build / "reports" / f"{part}.html"
    write_atomic(Path(out), page.encode("utf-8"))
    return ClassReport(Path(out), len(totals), len(statuses))
