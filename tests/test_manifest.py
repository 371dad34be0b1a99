import nbformat
import pytest
from course_factory import write_chapter

from jaxpath import Config, load_manifest
from jaxpath.manifest import ManifestError, check_layout

SEED_CHAPTERS = [
    "basics/01_introduction", "basics/02_jit", "basics/03_grad", "basics/04_vmap", "basics/05_pmap",
    "basics/06_state", "basics/07_practical_topics", "advanced/01_transformations_control_flow",
    "advanced/02_performance", "advanced/03_distributed", "advanced/04_advanced_autodiff",
    "advanced/05_interop_custom_ops", "advanced/06_large_scale_training", "advanced/07_pallas",
    "advanced/08_debugging", "advanced/09_export_deploy", "advanced/10_random_sharding",
    "advanced/11_scientific_computing"]


def test_real_manifest_has_the_seed_chapters_in_four_stages(real_config):
    m = load_manifest(real_config)
    assert sorted(m.chapters) == sorted(SEED_CHAPTERS)
    assert len(m.stages) == 4
    assert [c for c in m.stages[1].chapters] == ["advanced/08_debugging", "advanced/10_random_sharding"]
    assert [t.number for t in m.track] == list(range(1, 13))
    assert {t.part for t in m.track} == {"i", "ii"}


def test_real_layout_matches_manifest(real_config):
    assert check_layout(real_config, load_manifest(real_config)) == []


def test_notebook_missing_from_manifest(course):
    write_chapter(course, nbformat.v4.new_notebook(), "demo/03_stray")
    problems = check_layout(Config.load(course), load_manifest(Config.load(course)))
    assert any("demo/03_stray is not in course.toml" in str(p) and "source/demo/03_stray.ipynb" in str(p)
               for p in problems)


def test_listed_chapter_without_notebook(course):
    (course / "source" / "demo" / "01_demo.ipynb").unlink()
    problems = check_layout(Config.load(course), load_manifest(Config.load(course)))
    assert any("lists demo/01_demo, but the notebook does not exist" in str(p) for p in problems)


def test_planned_chapter_with_notebook(course):
    write_chapter(course, nbformat.v4.new_notebook(), "demo/02_later")
    problems = check_layout(Config.load(course), load_manifest(Config.load(course)))
    assert any("marks demo/02_later as planned" in str(p) for p in problems)


def test_bad_manifest_is_a_clear_error(course):
    (course / "course.toml").write_text("[course\n")
    with pytest.raises(ManifestError, match="course.toml: not valid TOML"):
        load_manifest(Config.load(course))


def test_unknown_track_chapter(course):
    text = (course / "course.toml").read_text().replace("carries = [1]", "carries = [7]")
    (course / "course.toml").write_text(text)
    with pytest.raises(ManifestError, match="carries track chapter 7"):
        load_manifest(Config.load(course))


def test_section_mapping_is_checked(course):
    from jaxpath.authoring.validate import validate_one

    text = (course / "course.toml").read_text().replace(
        'carries = [1]\n', 'carries = [1]\n\n[chapters."demo/01_demo".sections]\n"No such heading" = [1]\n', 1)
    (course / "course.toml").write_text(text)
    r = validate_one(Config.load(course), "demo/01_demo", execute=False)
    assert any("maps the section 'No such heading' to the track" in str(p) for p in r.problems)
    bad = text.replace('"No such heading" = [1]', '"No such heading" = [5]')
    (course / "course.toml").write_text(bad)
    with pytest.raises(ManifestError, match="does not list"):
        load_manifest(Config.load(course))


def test_real_sections_map_to_headings(real_config):
    from jaxpath.authoring.validate import validate_one

    m = load_manifest(real_config)
    for c in m.written():
        if c.sections:
            r = validate_one(real_config, c.id, execute=False)
            assert not [p for p in r.problems if "maps the section" in str(p)], c.id
