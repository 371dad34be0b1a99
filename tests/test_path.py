"""LEARNING_PATH.md is computed from the manifest and the section tags."""
from jaxpath.authoring.chapter import load_chapter
from jaxpath.authoring.path import learning_path, write_learning_path
from jaxpath.manifest import load_manifest, notebook_path


def test_fixture_learning_path(course_config):
    text = learning_path(course_config)
    assert "1 must-read extras in total; 1 optional sections can be skipped" in text
    assert "## Stage 1: Demo" in text
    assert ("### Demo 01 · Demo\n\n`demo/01_demo`: 1 must-read · 1 optional to skip\n\n- 🟢 Must-read: errors are shown"
            in text)
    assert "### Demo 02 · Later (planned: not written yet)" in text


def test_committed_learning_path_is_current(real_config):
    _, current = write_learning_path(real_config, check=True)
    assert current, "LEARNING_PATH.md is stale: run `make path` (or `jaxpath path`) and commit it"


def test_learning_path_counts_match_the_tags(real_config):
    text = learning_path(real_config)
    manifest = load_manifest(real_config)
    for c in manifest.written():
        ch = load_chapter(notebook_path(real_config, c.id), c.id, real_config.root)
        assert f"`{c.id}`: {len(ch.must_read())} must-read · {len(ch.optional())} optional to skip" in text
        for s in ch.must_read():
            assert f"- {s.title}" in text
