"""The site's Sphinx configuration, given to Sphinx through its API (`confoverrides`, no conf.py), and the
Sphinx extension of the site (this module's `setup`): a local TeX renderer where MathJax is missing, and no
launch button on a solutions page (its notebook is not in the course repository)."""
from __future__ import annotations

import re
from pathlib import Path

from .data import SiteSettings

MATHJAX_PARTS = ("tex-chtml.js", "input/tex/extensions", "output/chtml/fonts/woff-v2", "ui", "a11y")
"""What of MathJax the site serves: the TeX-to-HTML bundle, the TeX packages it loads on demand, its fonts,
its menu and accessibility parts (not the 20 MB speech engine)."""


def mathjax_files() -> tuple[Path | None, list[Path]]:
    """The local MathJax 3 (from the sphinx-mathjax-offline package) and the files the site serves."""
    import importlib.util

    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or not spec.origin:
        return None, []
    base = Path(spec.origin).parent / "static" / "mathjax"
    files = []
    for part in MATHJAX_PARTS:
        p = base / part
        files += [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file())
    return base, files


BOOK_THEME_OPTIONS = {
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "navigation_with_keys": False,
}
"""sphinx-book-theme's options for the course site and the manual (docs/conf.py): one look for both."""


def mathjax_version(base: Path | None) -> str:
    if base is None:
        return ""
    m = re.search(r'VERSION="(3[^"]*)"', (base / "tex-chtml.js").read_text(errors="replace"))
    return f"MathJax {m.group(1)}" if m else "MathJax"


def sphinx_settings(title: str, site: SiteSettings, static: list[str], mathjax: bool) -> dict:
    """Every setting of the site's Sphinx build."""
    theme_options = {**BOOK_THEME_OPTIONS, "search_bar_text": "Search the course"}
    if site.launch:
        # sphinx-book-theme's own JupyterHub button: an nbgitpuller link that clones `repository` on the hub and
        # opens <path_to_docs><page>.ipynb; a chapter page's docname is the student notebook's path in the repository
        theme_options.update(repository_url=site.repository, repository_branch=site.launch_branch, path_to_docs="",
                             launch_buttons={"jupyterhub_url": site.hub_url, "notebook_interface": "jupyterlab"})
    return {
        "project": title,
        "author": "the JAX path",
        "copyright": "the JAX path authors",
        "extensions": ["myst_nb", "jaxpath.learner.site.sphinx_config"],
        "exclude_patterns": ["files/**", "_build", "**.ipynb_checkpoints"],
        "root_doc": "index",
        "language": "en",
        "nb_execution_mode": "off",          # render the notebooks exactly as the course build executed them
        "nb_merge_streams": True,
        "nb_ipywidgets_js": {},              # never load widget scripts from a CDN
        "myst_enable_extensions": ["dollarmath", "colon_fence"],
        "myst_heading_anchors": 0,
        "suppress_warnings": ["myst.header"],  # notebooks may step from # to ### on purpose
        "html_theme": "sphinx_book_theme",
        "html_title": title,
        "html_static_path": ["_static"],
        "html_css_files": [s for s in static if s.endswith(".css")],
        "html_js_files": [s for s in static if s.endswith(".js")],
        "html_copy_source": False,
        "html_favicon": "_static/favicon.svg",  # otherwise browsers ask for /favicon.ico, which is not there
        "html_show_sourcelink": False,
        "html_last_updated_fmt": None,
        "html_context": {"default_mode": "auto"},  # an empty mode makes the theme log a console error
        "html_theme_options": theme_options,
        # No CDN: MathJax is served from the site itself (sphinx-mathjax-offline's copy); where that package is
        # missing, TeX is shown as text by a local renderer
        "html_math_renderer": "mathjax" if mathjax else "jaxpath_tex",
        "mathjax_path": "mathjax/tex-chtml.js" if mathjax else "",
    }


def _visit_math(self, node):
    from docutils import nodes

    self.body.append(self.starttag(node, "span", "", CLASS="math jp-tex"))
    self.body.append(self.encode(node.astext()))
    self.body.append("</span>")
    raise nodes.SkipNode


def _visit_displaymath(self, node):
    from docutils import nodes

    self.body.append(self.starttag(node, "div", "", CLASS="math jp-tex"))
    self.body.append(self.encode(node.astext()))
    self.body.append("</div>\n")
    raise nodes.SkipNode


def _no_launch_on_solutions(app, pagename, templatename, context, doctree):
    if pagename.startswith("solutions/") and "header_buttons" in context:
        context["header_buttons"] = [b for b in context["header_buttons"] if b.get("label") != "launch-buttons"]


def setup(app) -> dict:
    app.add_html_math_renderer("jaxpath_tex", (_visit_math, None), (_visit_displaymath, None))
    app.connect("html-page-context", _no_launch_on_solutions, priority=502)  # after the theme's (501)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
