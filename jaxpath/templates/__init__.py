"""The HTML templates of the reports and pages jaxpath writes (Jinja2, HTML-escaped): one environment for all."""
from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=None)
def _environment():
    import jinja2

    return jinja2.Environment(loader=jinja2.PackageLoader("jaxpath", "templates"),
                              autoescape=jinja2.select_autoescape(["html", "j2"]), trim_blocks=True,
                              lstrip_blocks=True)


def template(name: str):
    """templates/<name>, e.g. "report.html.j2"."""
    return _environment().get_template(name)
