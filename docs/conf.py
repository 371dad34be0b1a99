"""The manual's Sphinx configuration (`make docs`: build/docs/index.html).

The same stack as the course site (jaxpath/learner/site/sphinx_config.py): MyST, sphinx-book-theme, nothing
loaded from the network; plus sphinx-argparse, which writes the command reference from jaxpath's own parsers
(`jaxpath.cli.parser`). Built with -W: a broken cross-reference or a page outside the table of contents fails."""

from jaxpath.learner.site.sphinx_config import BOOK_THEME_OPTIONS

project = "The JAX path: the manual"
author = "the JAX path"
copyright = "the JAX path authors"
language = "en"

extensions = ["myst_parser", "sphinxarg.ext"]
root_doc = "index"
# the logs are records kept beside the pages, not pages of the manual
exclude_patterns = ["_build", "requirements-log/**", "review-log/**"]

myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3                     # [text](page.md#a-heading) is checked like any reference

html_theme = "sphinx_book_theme"
html_title = "The JAX path: the manual"
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
html_context = {"default_mode": "auto"}      # as the course site: an empty mode makes the theme log a console error
html_theme_options = {**BOOK_THEME_OPTIONS, "search_bar_text": "Search the manual"}
