"""`jaxpath site --for-class`: the site a graded class may see. No solutions page or download, no self-study
edition, no word of where solutions are, and a launch button that pulls a branch holding release/ alone
(scripts/class-branch.sh), never source/."""
from __future__ import annotations

import subprocess
from urllib.parse import parse_qs, urlsplit

import pytest
from site_factory import HUB, ROOT, hrefs, text_of

from jaxpath import Config
from jaxpath.learner.site import build_site, site_pages
from jaxpath.manifest import load_manifest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def class_site(tmp_path_factory):
    config = Config.load(ROOT)
    manifest = load_manifest(config)
    if not all((config.build / "self-study" / f"{c.id}.ipynb").exists() for c in manifest.written()):
        pytest.fail("build/ lacks the executed chapters: run `make` before the site tests")
    base = tmp_path_factory.mktemp("site-class")   # pytest's own temp folders: nothing left in /tmp/jaxpath-*
    report = build_site(config, out=base / "site", src=base / "src", for_class=True, class_branch="class", **HUB)
    return manifest, report


class TestClassSite:
    """Both tests read one class site: one unit of work for `make test`'s scheduler (tests/conftest.py), so the
    site is built once, not once per test worker."""

    def test_the_class_site_builds_and_shows_no_solutions(self, class_site):
        manifest, r = class_site
        assert r.ok, (r.warnings, [str(p) for p in r.problems])
        pages = site_pages(r.out)
        assert not (r.out / "solutions").exists() and not list(r.out.rglob("*-solutions.ipynb"))
        for page in pages:
            text = text_of(page).lower()
            assert "reference solution" not in text and "self-study" not in text, page
            for href in hrefs(page):
                assert "solutions/" not in href and "-solutions.ipynb" not in href, (page, href)
        for c in manifest.written():
            downloads = {p.name for p in r.out.rglob(f"{c.stem}*.ipynb")}
            assert downloads == {f"{c.stem}-student.ipynb"}, (c.id, downloads)


    def test_the_class_launch_pulls_only_the_release_branch(self, class_site, tmp_path):
        manifest, r = class_site
        for c in manifest.written():
            page = r.out / "release" / f"{c.id}.html"
            [link] = [v for v in hrefs(page) if v.startswith(HUB["hub_url"])]
            q = parse_qs(urlsplit(link).query)
            assert q["branch"] == ["class"] and q["urlpath"] == [f"lab/tree/jax-path/release/{c.id}.ipynb"], q
        # the branch that link pulls, made from this repository's HEAD as the script makes it: release/ and nothing else
        clone = tmp_path / "repo"
        subprocess.run(["git", "clone", "--quiet", "--no-local", str(ROOT), str(clone)], check=True)
        subprocess.run(["sh", str(ROOT / "scripts/class-branch.sh"), "class"], cwd=clone, check=True, capture_output=True)
        files = subprocess.run(["git", "ls-tree", "-r", "--name-only", "class"], cwd=clone, check=True,
                               capture_output=True, text=True).stdout.split()
        assert files and all(f.startswith("release/") for f in files), [f for f in files if not f.startswith("release/")]
        assert {f"release/{c.id}.ipynb" for c in manifest.written()} <= set(files)
        # run again on the same commit: nothing moves
        again = subprocess.run(["sh", str(ROOT / "scripts/class-branch.sh"), "class"], cwd=clone, check=True,
                               capture_output=True, text=True).stdout
        assert "already holds" in again


def test_without_a_class_branch_the_class_site_has_no_launch_button():
    from jaxpath.learner.site.data import SiteSettings

    assert not SiteSettings(hub_url="https://h", repository="https://r", for_class=True).launch
    assert SiteSettings(hub_url="https://h", repository="https://r", for_class=True, class_branch="class").launch
    assert SiteSettings(hub_url="https://h", repository="https://r").launch
