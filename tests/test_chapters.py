"""Every written chapter of the course validates: it runs, its reference passes its tests, its stub and
wrong answers fail them, and its alternatives pass. A proof that `make` left for exactly this chapter,
variants, jaxpath, lock and Python (build/validated/) is reused rather than run again."""
import pytest
from conftest import ROOT

from jaxpath import Config, load_manifest
from jaxpath.authoring.validate import validate_one

CHAPTERS = [c.id for c in load_manifest(Config.load(ROOT)).written()]


@pytest.mark.chapters
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_validates(chapter, real_config):
    report = validate_one(real_config, chapter, reuse=True)
    assert report.ok, "\n".join(str(p) for p in report.problems)
    assert report.exercises >= 3
