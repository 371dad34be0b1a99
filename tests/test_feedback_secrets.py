"""What a feedback page treats as a secret: hidden-test lines, except those a line of the released notebook shows
anyway (basics/07 as released got no page: its hidden `atol=1e-5)` sits inside a visible assert)."""
import nbformat
from course_factory import CHECK_META, code

from jaxpath.classroom.feedback import hide_secrets, page_leaks

TEST = ("# 🧪 Self-check\nassert close(1.0, 1.0, atol=1e-5)\n### BEGIN HIDDEN TESTS\nassert close(2.0, 2.0,\n"
        "             atol=1e-5)\nassert close(3.0, 3.0, rtol=0.5)\n### END HIDDEN TESTS")


def _notebooks():
    graded = nbformat.v4.new_notebook()
    graded.cells = [code(TEST, nbgrader={**CHECK_META, "grade_id": "f-check"})]
    released = nbformat.v4.new_notebook()
    released.cells = [code("# 🧪 Self-check\nassert close(1.0, 1.0, atol=1e-5)")]
    return graded, released


def test_a_hidden_line_inside_a_released_line_is_no_secret():
    graded, released = _notebooks()
    secret = hide_secrets(graded, released)
    assert "atol=1e-5)" not in secret and "assert close(3.0, 3.0, rtol=0.5)" in secret
    page = "<pre>assert close(1.0, 1.0, atol=1e-5)</pre>"   # the visible assert, as the page shows it
    assert page_leaks(page, secret) == []
    assert "close(3.0" not in graded.cells[0].source, "the hidden tests are still cut out"


def test_without_the_release_every_hidden_line_stays_secret():
    graded, _ = _notebooks()
    secret = hide_secrets(graded)
    assert "atol=1e-5)" in secret
    assert page_leaks("<pre>assert close(3.0, 3.0, rtol=0.5)</pre>", secret) == ["assert close(3.0, 3.0, rtol=0.5)"]


def test_a_gradebook_only_stock_nbgrader_graded_gets_no_status_table(tmp_path):
    """`jaxpath feedback` on a course stock nbgrader graded reads no statuses and adds no table to its gradebook."""
    import sqlalchemy as sa

    from jaxpath.grade.record import StatusStore

    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    engine = sa.create_engine(url)
    with engine.begin() as c:
        c.execute(sa.text("CREATE TABLE assignment (id TEXT)"))  # a gradebook of someone else's
    assert StatusStore.existing(url) is None
    assert sa.inspect(engine).get_table_names() == ["assignment"]
    StatusStore(url).dispose()  # a grader's store makes the table ...
    store = StatusStore.existing(url)  # ... which a reader then finds
    assert store is not None and store.all("demo") == []
    store.dispose()


def test_two_graders_remembering_the_same_points_at_once_both_go_on(tmp_path, monkeypatch):
    """The race of two batches sharing a gradebook: each read the remembered points before the other wrote them,
    then both insert the same rows. The second must skip them, not fail (PostgreSQL raised a unique violation)."""
    from jaxpath.grade.record import StatusStore

    store = StatusStore(f"sqlite:///{tmp_path / 'gradebook.db'}")
    points = {("01_demo", "double-check"): 2.0, ("01_demo", "halve-check"): 1.0}
    store.remember_points("demo", points)
    monkeypatch.setattr(store, "released_points", lambda assignment: {})  # read before the other grader wrote
    store.remember_points("demo", {**points, ("02_later", "double-check"): 2.0})
    monkeypatch.undo()
    assert store.released_points("demo") == {("01_demo", "double-check"): {2.0}, ("01_demo", "halve-check"): {1.0},
                                             ("02_later", "double-check"): {2.0}}
    store.dispose()
