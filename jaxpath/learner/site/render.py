"""The site's page text comes from Jinja templates (jaxpath/learner/site/templates/*.md.j2, MyST Markdown); the
helpers here spell MyST cross-references, so a broken one is a Sphinx warning and fails the build."""
from __future__ import annotations

import functools
from importlib import resources

import jinja2


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("jaxpath.learner.site", "templates"), autoescape=False,
                             keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["doc"] = doc
    env.filters["ref"] = ref
    env.filters["table_cell"] = lambda s: str(s).replace("|", "\\|")
    env.filters["attr"] = lambda s: jinja2.utils.markupsafe.escape(str(s))
    return env


def render(template: str, **context) -> str:
    return environment().get_template(template).render(**context)


def ref(label: str, text: str | None = None) -> str:
    """A MyST reference to a section label."""
    return f"{{ref}}`{_plain(text)} <{label}>`" if text else f"{{ref}}`{label}`"


def doc(docname: str, text: str | None = None) -> str:
    """A MyST reference to a page, by its absolute docname."""
    return f"{{doc}}`{_plain(text)} </{docname}>`" if text else f"{{doc}}`/{docname}`"


def _plain(text: str | None) -> str:
    return (text or "").replace("`", "").replace("<", "‹").replace(">", "›")


def static_files() -> list:
    """The site's own static files (CSS, JavaScript, favicon), as package resources."""
    return sorted((f for f in resources.files("jaxpath.learner.site").joinpath("static").iterdir() if f.is_file()),
                  key=lambda f: f.name)
