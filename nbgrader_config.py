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
# Course-local exchange by default; on a JupyterHub set it to the shared one (/usr/local/share/nbgrader/exchange).
c.Exchange.root = os.path.join(_root, "exchange")
# Executing a chapter imports JAX and compiles: allow more than nbgrader's default 30 s per cell.
c.Execute.timeout = 120
