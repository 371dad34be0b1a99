"""Appendix and self-study edition, made from the executed reference chapter."""
import json

import nbformat
import pytest

from jaxpath.authoring.appendix import appendix
from jaxpath.authoring.validate import validate

pytestmark = pytest.mark.slow


def test_appendix_and_self_study(course_config):
    assert appendix(course_config).problems  # nothing executed yet: a clear problem, no crash
    _, reports = validate(course_config)
    assert reports[0].ok
    r = appendix(course_config)
    assert r.problems == [] and len(r.written) == 2
    app = nbformat.read(course_config.build / "appendix/demo/01_demo.ipynb", as_version=4)
    text = json.dumps([c.source for c in app.cells])
    assert "return 2 * x" in text and "BEGIN SOLUTION" not in text
    assert "negative floats too" not in text, "hidden tests stay out of the appendix"
    assert "Executed with" in app.cells[1].source
    assert [c.source.splitlines()[0] for c in app.cells if c.source.startswith("### Exercise")] == [
        "### Exercise 1: double (solution)", "### Exercise 2: square (solution)", "### Exercise 3: halve (solution)"]
    study = nbformat.read(course_config.build / "self-study/demo/01_demo.ipynb", as_version=4)
    nbformat.validate(study)
    sources = [c.source for c in study.cells]
    appendix_at = next(i for i, s in enumerate(sources) if s.startswith("## Appendix: reference solutions"))
    assert all("return 2 * x" not in s for s in sources[:appendix_at]), "the stub comes first"
    assert any("raise NotImplementedError()" in s for s in sources[:appendix_at])
    assert any("return 2 * x" in s for s in sources[appendix_at:])
    main_outputs = [o for c in study.cells[:appendix_at] if c.cell_type == "code" for o in c.outputs]
    assert any("2.0" in o.get("text", "") for o in main_outputs), "main-text outputs are kept"
