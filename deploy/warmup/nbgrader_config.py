# nbgrader configuration of the warm-up course, the second course of the demo hub (deploy/hub.toml): a plain
# nbgrader course directory, graded with nbgrader's own commands or `jaxpath grade`.
import os

c = get_config()  # noqa: F821 (provided by nbgrader/traitlets when this file is loaded)
_root = os.path.dirname(os.path.abspath(__file__))

c.CourseDirectory.root = _root
c.CourseDirectory.course_id = "warmup"
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(_root, "gradebook", "gradebook.db")
c.Exchange.root = os.environ.get("JAXPATH_EXCHANGE") or os.path.join(_root, "exchange")
