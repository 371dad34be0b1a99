"""Checks of the built site: no remote asset (it works offline), every internal link and anchor resolves, no
solution, hidden-test or variant line on a chapter page (no hidden-test line on a solutions page), and no
absolute path of the build machine on any page."""
from __future__ import annotations

import os
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ...config import Config
from ...problems import Problem
from .clean import find_machine_paths


def site_pages(out: Path) -> list[Path]:
    """The HTML pages of the built site (not the theme's template fragments under _static/)."""
    return sorted(p for p in out.rglob("*.html") if "_static" not in p.relative_to(out).parts)


_BLOCK_TAGS = {"p", "div", "pre", "li", "ul", "ol", "tr", "td", "th", "table", "br", "section", "blockquote",
               "h1", "h2", "h3", "h4", "h5", "h6", "dt", "dd", "details", "summary"}


class _Links(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.refs: list[tuple[str, str, str]] = []
        """(tag, attribute, value) of every href and src."""
        self.text: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        d = dict(attrs)
        if d.get("id"):
            self.ids.add(d["id"])
        if tag == "a" and d.get("name"):
            self.ids.add(d["name"])
        for attr in ("href", "src"):
            if d.get(attr) is not None:
                self.refs.append((tag, attr, d[attr]))
        if tag in ("script", "style"):
            self._skip += 1
        if tag in _BLOCK_TAGS:  # block boundaries end a line of text, as a reader sees the page
            self.text.append("\n")

    def handle_endtag(self, tag):
        if tag in ("script", "style") and self._skip:
            self._skip -= 1
        if tag in _BLOCK_TAGS:
            self.text.append("\n")

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)


_PARSED: dict[tuple[Path, float, int], _Links] = {}


def parse_html(path: Path) -> _Links:
    """The ids, links and visible text of a page (cached by path, mtime and size: each check reuses it)."""
    st = path.stat()
    key = (path.resolve(), st.st_mtime, st.st_size)
    if key not in _PARSED:
        if len(_PARSED) > 500:
            _PARSED.clear()
        p = _Links()
        p.feed(path.read_text(encoding="utf-8"))
        _PARSED[key] = p
    return _PARSED[key]


def check_assets(out: Path) -> list[Problem]:
    """No page loads anything from the network: no remote script, stylesheet, image, font or frame."""
    problems = []
    for page in site_pages(out):
        rel = str(page.relative_to(out))
        for tag, attr, value in parse_html(page).refs:
            remote = value.strip().lower().startswith(("http:", "https:", "//"))
            if remote and not (tag == "a" and attr == "href"):
                problems.append(Problem(f"site/{rel}", f"<{tag} {attr}=\"{value}\"> loads a remote asset: the site "
                                                       "must work offline"))
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"@import\s+url\((['\"]?)(https?:)", text):
            problems.append(Problem(f"site/{rel}", "a stylesheet imports a remote URL"))
    for css in sorted(out.rglob("*.css")):
        for m in re.finditer(r"url\((['\"]?)(https?:[^)'\"]*)", css.read_text(encoding="utf-8", errors="replace")):
            problems.append(Problem(f"site/{css.relative_to(out)}", f"a stylesheet loads {m.group(2)}"))
    return problems


def check_links(out: Path) -> list[Problem]:
    """Every internal href and src of every page names a file that exists, and an anchor that the target has."""
    problems = []
    parsed = parse_html
    for page in site_pages(out):
        rel = str(page.relative_to(out))
        for tag, attr, value in parsed(page).refs:
            v = value.strip()
            if not v or v.startswith(("http:", "https:", "//", "mailto:", "javascript:", "data:", "tel:")):
                continue
            parts = urlsplit(v)
            if parts.scheme:
                continue
            target = page if not parts.path else (page.parent / unquote(parts.path))
            target = Path(os.path.normpath(target))
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                shown = target.relative_to(out) if target.is_relative_to(out) else target
                problems.append(Problem(f"site/{rel}", f"<{tag} {attr}=\"{value}\">: {shown} does not exist"))
                continue
            if parts.fragment and target.suffix == ".html":
                frag = unquote(parts.fragment)
                if frag not in parsed(target).ids:
                    problems.append(Problem(f"site/{rel}", f"<{tag} {attr}=\"{value}\">: "
                                                           f"{target.relative_to(out)} has no anchor #{frag}"))
    return problems


def check_leaks(config: Config, out: Path, chapter_pages: list[str], solution_pages: list[str]) -> list[Problem]:
    """No line of a reference solution, a hidden test or a variant on a chapter page; no hidden-test line on
    a solutions page. Pages are compared by their text, line by line, as a reader sees it."""
    from ...authoring.release import course_secrets
    from ...cells import MARKERS

    secrets = course_secrets(config)
    problems = []
    on_chapters = {**{l: f"{o} (a solution or variant)" for l, o in secrets.solution.items()}, **secrets.hidden}
    for docs, forbidden, what in ((chapter_pages, on_chapters, "chapter page"),
                                  (solution_pages, secrets.hidden, "solutions page")):
        for doc in docs:
            path = out / f"{doc}.html"
            if not path.exists():
                problems.append(Problem(f"site/{doc}.html", f"the {what} was not built"))
                continue
            text = "".join(parse_html(path).text)
            for line in text.split("\n"):
                s = line.strip()
                if any(m in s for m in MARKERS):
                    problems.append(Problem(f"site/{doc}.html", f"an nbgrader marker is on the {what}: {s!r}"))
                elif s in forbidden:
                    problems.append(Problem(f"site/{doc}.html", f"the {what} shows a line from {forbidden[s]}: {s!r}"))
    return problems


def check_machine_paths(out: Path, roots: tuple[Path, ...] = ()) -> list[Problem]:
    """No page shows an absolute path of the machine that built it (site-packages, the Python installation,
    temp folders, kernel files, the course checkout, the home folder): not in its text, nor in its markup."""
    problems = []
    for page in site_pages(out):
        found = find_machine_paths(page.read_text(encoding="utf-8"), roots)
        if found:
            problems.append(Problem(f"site/{page.relative_to(out)}", "shows a path of the build machine: "
                                    + ", ".join(repr(f) for f in found[:5])))
    return problems
