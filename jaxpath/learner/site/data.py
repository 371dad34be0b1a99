"""What the site is made from besides the chapters: the reading map (site-data/reading-map.toml), the pointers
below the course (site-data/pointers.toml) and the site's own settings and words (`[site]` of course.toml)."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field

from ...config import Config
from ...manifest import Manifest
from ...problems import Problem

READING_MAP, POINTERS = "site-data/reading-map.toml", "site-data/pointers.toml"


@dataclass(frozen=True)
class Series:
    id: str
    title: str
    url: str


@dataclass(frozen=True)
class Reading:
    series: str
    title: str
    url: str
    chapter: str
    section: str = ""
    note: str = ""
    also: tuple[tuple[str, str], ...] = ()
    """(chapter id, heading) of the other sections the page is worth reading with (`[[reading.also]]`): a page
    assigned to one chapter that another chapter builds on too (the vmap half of "grad and vmap")."""

    def chapters(self) -> list[tuple[str, str]]:
        """(chapter id, heading or "") of every place the page is read with: its own chapter first."""
        return [(self.chapter, self.section), *self.also]


@dataclass(frozen=True)
class Pointer:
    topic: str
    line: str
    url: str
    chapter: str = ""
    section: str = ""


@dataclass(frozen=True)
class Topic:
    """One place where the course goes beyond the official docs (the landing page names each)."""
    title: str
    text: str
    sections: tuple[tuple[str, str], ...]
    """(chapter id, heading) of the sections that teach it."""


@dataclass(frozen=True)
class SiteSettings:
    """`[site]` of course.toml: launch settings and the words of the landing page."""
    hub_url: str = ""
    """A JupyterHub with nbgitpuller: chapter pages get the theme's JupyterHub launch button."""
    repository: str = ""
    """The course's git repository (https URL) that nbgitpuller clones; the button opens release/<chapter>."""
    branch: str = "main"
    class_branch: str = ""
    """A branch of `repository` whose tree is only release/ (scripts/class-branch.sh makes it): what the launch
    button of the class site (`jaxpath site --for-class`) pulls, so no source/ file reaches a student's home."""
    for_class: bool = False
    """The site a graded class may see: no solutions pages or downloads, no self-study edition, and a launch
    button only onto `class_branch`."""
    intro: str = ""
    progress_help: str = ""
    parts: dict[str, dict] = field(default_factory=dict)
    """Track part id -> {"title", "blurb"}."""
    beyond: tuple[Topic, ...] = ()

    @property
    def launch(self) -> bool:
        return bool(self.hub_url and self.repository and (self.class_branch or not self.for_class))

    @property
    def launch_branch(self) -> str:
        return self.class_branch if self.for_class else self.branch


def _read_toml(config: Config, rel: str) -> tuple[dict, list[Problem]]:
    path = config.root / rel
    try:
        return tomllib.loads(path.read_text(encoding="utf-8")), []
    except FileNotFoundError:
        return {}, [Problem(rel, "not found")]
    except tomllib.TOMLDecodeError as e:
        return {}, [Problem(rel, f"not valid TOML ({e})")]


def load_site_settings(config: Config, **overrides) -> tuple[SiteSettings, list[Problem]]:
    """The `[site]` table of course.toml; `overrides` replace single fields (a test sets a hub URL)."""
    data, problems = _read_toml(config, config.manifest_file)
    site = data.get("site", {})
    where = f"{config.manifest_file} [site]"
    topics = []
    for n, t in enumerate(site.get("beyond", []), start=1):
        secs = tuple((str(s.get("chapter", "")), str(s.get("section", ""))) for s in t.get("sections", []))
        if not t.get("title") or not secs or not all(c and h for c, h in secs):
            problems.append(Problem(where, f"[[site.beyond]] number {n} needs a title and sections, each with "
                                           "chapter and section"))
            continue
        topics.append(Topic(t["title"], t.get("text", ""), secs))
    settings = SiteSettings(
        hub_url=str(site.get("hub_url", "")).rstrip("/"), repository=str(site.get("repository", "")),
        branch=str(site.get("branch", "main")), class_branch=str(site.get("class_branch", "")), intro=site.get("intro", ""),
        progress_help=site.get("progress_help", ""), parts=dict(site.get("parts", {})), beyond=tuple(topics))
    if overrides:
        settings = SiteSettings(**{**settings.__dict__, **overrides})
    if bool(settings.hub_url) != bool(settings.repository):
        problems.append(Problem(where, "hub_url and repository go together (the JupyterHub launch link needs both)"))
    for key, value in (("hub_url", settings.hub_url), ("repository", settings.repository)):
        if value and not value.startswith("https://"):
            problems.append(Problem(where, f"{key} {value!r} is not an https:// URL"))
    return settings, problems


def load_reading_map(config: Config) -> tuple[list[Series], list[Reading], list[Problem]]:
    """The official tutorial pages and the chapter each is assigned to (site-data/reading-map.toml)."""
    data, problems = _read_toml(config, READING_MAP)
    series = [Series(str(s.get("id", "")), s.get("title", ""), s.get("url", "")) for s in data.get("series", [])]
    readings = []
    for n, r in enumerate(data.get("reading", []), start=1):
        missing = [k for k in ("series", "title", "url") if not r.get(k)]
        if missing:
            problems.append(Problem(READING_MAP, f"[[reading]] number {n} has no {', '.join(missing)}"))
            continue
        also = tuple((str(a.get("chapter", "")), str(a.get("section", ""))) for a in r.get("also", []))
        readings.append(Reading(str(r["series"]), r["title"], r["url"], r.get("chapter", ""),
                                r.get("section", ""), r.get("note", ""), also))
    return series, readings, problems


def load_pointers(config: Config) -> tuple[list[Pointer], list[Problem]]:
    data, problems = _read_toml(config, POINTERS)
    pointers = []
    for n, p in enumerate(data.get("pointer", []), start=1):
        missing = [k for k in ("topic", "line", "url") if not p.get(k)]
        if missing:
            problems.append(Problem(POINTERS, f"[[pointer]] number {n} has no {', '.join(missing)}"))
            continue
        pointers.append(Pointer(p["topic"], p["line"], p["url"], p.get("chapter", ""), p.get("section", "")))
    return pointers, problems


def check_reading_map(manifest: Manifest, series: list[Series], readings: list[Reading],
                      headings: dict[str, set[str]] | None = None) -> list[Problem]:
    """Every listed tutorial page is assigned to a written chapter of the manifest (and to a heading the
    chapter has, when a section is named); every page has a known series and a docs.jax.dev URL."""
    problems = []
    known = {s.id for s in series}
    seen: dict[str, str] = {}
    for r in readings:
        where = f"[[reading]] {r.title!r}"
        if r.series not in known:
            problems.append(Problem(READING_MAP, f"{where}: series {r.series!r} is not a [[series]] of the file"))
        if not r.url.startswith("https://docs.jax.dev/"):
            problems.append(Problem(READING_MAP, f"{where}: the URL {r.url!r} is not a page of https://docs.jax.dev/"))
        if r.url in seen:
            problems.append(Problem(READING_MAP, f"{where}: the URL is listed twice (also for {seen[r.url]!r})"))
        seen[r.url] = r.title
        if not r.chapter:
            problems.append(Problem(READING_MAP, f"{where}: assigned to no chapter (add `chapter = \"<part>/<name>\"`)"))
            continue
        entry = manifest.chapters.get(r.chapter)
        if entry is None:
            problems.append(Problem(READING_MAP, f"{where}: chapter {r.chapter!r} is not in course.toml"))
        elif entry.planned:
            problems.append(Problem(READING_MAP, f"{where}: chapter {r.chapter} is planned, not written"))
        elif r.section and headings is not None and r.section not in headings.get(r.chapter, set()):
            problems.append(Problem(READING_MAP, f"{where}: {r.chapter} has no heading {r.section!r}"))
        for chapter, section in r.also:
            also = manifest.chapters.get(chapter)
            if also is None or also.planned or chapter == r.chapter:
                problems.append(Problem(READING_MAP, f"{where}: [[reading.also]] chapter {chapter!r} is not a written "
                                                     "chapter of course.toml other than the page's own"))
            elif not section:
                problems.append(Problem(READING_MAP, f"{where}: [[reading.also]] {chapter} names no section"))
            elif headings is not None and section not in headings.get(chapter, set()):
                problems.append(Problem(READING_MAP, f"{where}: [[reading.also]] {chapter} has no heading {section!r}"))
    return problems
