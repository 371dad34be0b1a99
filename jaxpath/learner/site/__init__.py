"""`jaxpath site`: the course site, a static HTML book made from the executed chapters.

The generator is Sphinx with MyST-NB (`nb_execution_mode = "off"`: the notebooks are rendered as the
build executed them) and sphinx-book-theme, the stack of Jupyter Book 1. It needs no network, and the site
it makes loads nothing remote and opens from the file system: formulas are typeset by a copy of MathJax 3
served from the site itself (the pinned `sphinx-mathjax-offline` package; without it, TeX is shown as text),
intersphinx is off.

The package, one module per concern:

- `data`: what the site is made from besides the chapters: the reading map (site-data/reading-map.toml), the
  pointers below the course (site-data/pointers.toml) and `[site]` of course.toml (launch settings, the landing
  page's words, the topics where the course goes beyond the docs);
- `chapters`: a page per chapter as a student gets it (<release dir>/<part>/<chapter>: stubs, visible
  self-checks, real outputs with the build machine's paths taken out, labelled "Basics 01"…), with a box of
  its provenance, its downloads (student version, self-study edition, solutions), the track chapters it
  carries and the official pages to read with it; its reference solutions on a page of their own
  (solutions/<part>/<chapter>), outside prev/next and the sidebar, reached by an "after you tried" link;
- `pages`: the landing page (the 12-chapter track in two parts, each linked to the exact sections that
  carry it, the four topics beyond the docs, progress), the learning path, the reading map, below the course;
  their words are Jinja templates (`templates/`) and course.toml;
- `sphinx_config`: the Sphinx settings, passed through Sphinx's API (no conf.py), and the site's extension;
- `checks`: no Sphinx warning, no remote asset, every internal link and anchor resolves, no solution,
  hidden-test or variant line on a chapter page (no hidden test on a solutions page), no build-machine path;
- `build`: the orchestration (`build_site`), writing files only when they change.

The learner's earned progress (`jaxpath check` records, `jaxpath progress`, `jaxpath serve`) is in
`jaxpath.learner.progress` and `jaxpath.learner.serve`.
"""
from .build import SITE_OUT, SITE_SRC, SiteReport, build_site, generate_source, run_sphinx
from .chapters import ChapterPage, heading_lines, label_headings, readable_stamp
from .checks import check_assets, check_leaks, check_links, check_machine_paths, parse_html, site_pages
from .clean import find_machine_paths, scrub_notebook, scrub_text
from .data import Pointer, Reading, Series, SiteSettings, check_reading_map, load_pointers, load_reading_map, load_site_settings

__all__ = [
    "SITE_OUT", "SITE_SRC", "ChapterPage", "Pointer", "Reading", "Series", "SiteReport", "SiteSettings",
    "build_site", "check_assets", "check_leaks", "check_links", "check_machine_paths", "check_reading_map",
    "find_machine_paths", "generate_source", "heading_lines", "label_headings", "load_pointers",
    "load_reading_map", "load_site_settings", "parse_html", "readable_stamp", "run_sphinx", "scrub_notebook",
    "scrub_text", "site_pages",
]
