# nbgrader configuration of the JAX path course. The repository root is the course directory.
import os

c = get_config()  # noqa: F821 (provided by nbgrader/traitlets when this file is loaded)
_root = os.path.dirname(os.path.abspath(__file__))

c.CourseDirectory.root = _root
c.CourseDirectory.course_id = "jax-path"
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "release"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"
# The default SQLite gradebook lives in gradebook/ (git-ignored but for its README).
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(_root, "gradebook", "gradebook.db")
# The exchange (release_assignment, fetch_assignment, submit, collect, release_feedback, fetch_feedback):
# course-local by default (exchange/, made by the first `nbgrader release_assignment`). On a JupyterHub set
# JAXPATH_EXCHANGE to the shared, world-writable one, e.g. JAXPATH_EXCHANGE=/srv/nbgrader/exchange.
c.Exchange.root = os.environ.get("JAXPATH_EXCHANGE") or os.path.join(_root, "exchange")
# Executing a chapter imports JAX and compiles: allow more than nbgrader's default 30 s per cell. The limit
# lives in course.toml ([grading] cell_timeout), which `jaxpath grade` reads too: one value for both.
with open(os.path.join(_root, "course.toml"), "rb") as _f:
    c.Execute.timeout = __import__("tomllib").load(_f).get("grading", {}).get("cell_timeout", 120)

# Formgrader's "Generate Feedback" button (and `nbgrader generate_feedback`) run these: nbgrader's own two steps
# with jaxpath's between them, which cuts the hidden tests out of every page as `jaxpath feedback` does.
try:
    from jaxpath.classroom.feedback import HideHiddenTests as _HideHiddenTests
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor as _CSS
    from nbgrader.preprocessors import GetGrades as _GetGrades

    c.GenerateFeedback.preprocessors = [_GetGrades, _HideHiddenTests, _CSS]
except ImportError:  # read where jaxpath is not installed (a student's machine): nothing to configure there
    pass
