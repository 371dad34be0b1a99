"""The generated pages of the site (landing page and track, learning path, reading map, below the course) and
the context of each chapter page's box, from the manifest, site-data/ and the chapter pages. The words are in the
templates (jaxpath/learner/site/templates/) and in course.toml's `[site]`; this module only gathers and links."""
from __future__ import annotations

from datetime import datetime, timezone

from ...authoring.path import chapter_heading
from ...config import Config
from ...manifest import Manifest
from ...problems import Problem
from .chapters import ChapterPage, _slug
from .data import POINTERS, READING_MAP, Pointer, Reading, Series, SiteSettings
from .render import doc, ref, render


def section_link(pages: dict[str, ChapterPage], cid: str, heading: str, where: str, problems: list[Problem],
                 text: str | None = None) -> str | None:
    page = pages.get(cid)
    if page is None:
        return None
    label = page.labels.get(heading)
    if label is None:
        problems.append(Problem(where, f"{cid} has no heading {heading!r} (the page has no section to link to)"))
        return None
    return ref(label, text)


def stamp_summary(pages: list[ChapterPage]) -> str:
    stamps = [p.stamp for p in pages if p.stamp]
    if not stamps:
        return "The chapters carry no execution stamp."

    def values(key):
        return sorted({str(s[key]) for s in stamps if key in s})

    pkgs = ", ".join(f"{k} {'/'.join(values(k))}" for k in ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint")
                     if values(k))
    dates = sorted(s["date"] for s in stamps if "date" in s)
    devices: dict = {}
    for p in pages:
        devices.setdefault(p.stamp.get("devices"), []).append(p.entry.id)
    dev_txt = "; ".join(f"{n} device{'s' if n != 1 else ''} ({len(ids)} chapter{'s' if len(ids) != 1 else ''})"
                        for n, ids in sorted(devices.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)))
    backends = "/".join(v.upper() for v in values("backend")) or "an unknown backend"
    systems = "/".join(sorted({" ".join(x for x in (str(s.get("platform", "")).split("-", 1)[0], s.get("machine", ""))
                                        if x) for s in stamps})) or "an unknown system"
    span = dates[0][:10] if dates and dates[0][:10] == dates[-1][:10] else (
        f"{dates[0][:10]} to {dates[-1][:10]}" if dates else "an unknown date")
    return render("stamp-summary.md.j2", pkgs=pkgs, python="/".join(values("python")), backends=backends,
                  devices=dev_txt, systems=systems, span=span).strip()


def _versions() -> str:
    from importlib.metadata import version

    return ", ".join(f"{n} {version(n)}" for n in ("sphinx", "myst-nb", "sphinx-book-theme"))


def track_label(number: int) -> str:
    return f"track-{number:02d}"


def index_page(config: Config, manifest: Manifest, settings: SiteSettings, pages: dict[str, ChapterPage],
               problems: list[Problem]) -> str:
    carriers: dict[int, list] = {}
    for c in manifest.written():
        for n in c.carries:
            carriers.setdefault(n, []).append(c)
    parts: dict[str, dict] = {}
    for t in manifest.track:
        words = settings.parts.get(t.part, {})
        part = parts.setdefault(t.part, {"title": words.get("title", f"Part {t.part}"), "blurb": words.get("blurb", ""),
                                         "chapters": []})
        taught = []
        for c in carriers.get(t.number, []):
            page = pages.get(c.id)
            if page is None:
                continue
            secs = [h for h, ns in c.sections.items() if t.number in ns]
            if secs:
                links = [section_link(pages, c.id, h, "course.toml", problems) for h in secs]
                taught.append(f"{doc(page.docname, page.title)}: " + "; ".join(x for x in links if x))
            else:
                taught.append(f"{doc(page.docname, page.title)} (the whole chapter)")
        if not taught:
            problems.append(Problem("course.toml", f"track chapter {t.number} ({t.title}) is carried by no "
                                                   "written chapter: the landing page has nothing to link"))
        part["chapters"].append({"number": t.number, "title": t.title, "thesis": t.thesis, "taught": taught})
    beyond = []
    for topic in settings.beyond:
        links = []
        for cid, heading in topic.sections:
            entry = manifest.chapters.get(cid)
            if entry is None or cid not in pages:
                problems.append(Problem(f"{config.manifest_file} [site]", f"topic {topic.title!r}: chapter {cid!r} has "
                                                                          "no page (not in the manifest, or not built)"))
                continue
            link = section_link(pages, cid, heading, f"{config.manifest_file} [site]", problems)
            if link:
                links.append(f"{pages[cid].label}, {link}")
        beyond.append({"title": topic.title, "text": topic.text, "links": links})
    others = [f"{doc(pages[c.id].docname, pages[c.id].title)}" for c in manifest.written()
              if not c.carries and c.id in pages]
    stages = [{"title": s.title, "docs": [pages[cid].docname for cid in s.chapters if cid in pages]}
              for s in manifest.stages]
    return render("index.md.j2", title=manifest.course_title, intro=settings.intro, course_id=config.course_id,
                  total=len(manifest.track), progress_help=settings.progress_help, beyond=beyond,
                  parts=list(parts.values()), others=others, stamp_summary=stamp_summary(list(pages.values())),
                  today=datetime.now(timezone.utc).date().isoformat(), versions=_versions(),
                  stages=[s for s in stages if s["docs"]])


def learning_path_page(config: Config, pages: dict[str, ChapterPage], problems: list[Problem],
                       for_class: bool = False) -> str:
    from ...authoring.path import HOW_TO_USE, HOW_TO_USE_IN_CLASS, learning_path_data

    data = learning_path_data(config)
    stages = []
    for stage, chapters in data.stages:
        rows = []
        for c in chapters:
            cid = c.entry.id
            page = pages.get(cid)
            must = []
            for s in c.must:
                link = section_link(pages, cid, s.title, "LEARNING_PATH.md", problems) if page else None
                must.append(link or s.title)
            rows.append({"heading": chapter_heading(c.entry), "planned": c.entry.planned,
                         "link": doc(page.docname, cid) if page else f"`{cid}`", "must": must,
                         "must_count": len(c.must), "optional_count": len(c.optional)})
        stages.append({"title": stage.title, "chapters": rows})
    return render("learning-path.md.j2", summary=data.summary(), how_to_use=HOW_TO_USE_IN_CLASS if for_class else HOW_TO_USE,
                  stages=stages)


def reading_label(cid: str) -> str:
    return _slug(f"reading {cid}")


def reading_map_page(manifest: Manifest, series: list[Series], readings: list[Reading],
                     pages: dict[str, ChapterPage], problems: list[Problem]) -> str:
    out_series = []
    for s in series:
        rows = []
        for r in (r for r in readings if r.series == s.id):
            page = pages.get(r.chapter)
            where = doc(page.docname, page.label) if page else f"`{r.chapter}`"
            if r.section and page:  # a missing heading is reported by check_reading_map
                link = section_link(pages, r.chapter, r.section, READING_MAP, [])
                if link:
                    where += f", {link}"
            for chapter, section in r.also:
                if chapter in pages:
                    link = section_link(pages, chapter, section, READING_MAP, [])
                    where += f"; also {doc(pages[chapter].docname, pages[chapter].label)}" + (f", {link}" if link else "")
            rows.append({"title": r.title, "url": r.url, "where": where, "note": r.note})
        out_series.append({"title": s.title, "url": s.url, "rows": rows})
    by_chapter = []
    for c in manifest.written():
        rs = [r for r in readings if c.id in dict(r.chapters())]
        if rs and c.id in pages:
            by_chapter.append({"label": reading_label(c.id), "heading": pages[c.id].title,
                               "link": doc(pages[c.id].docname, c.id), "readings": rs})
    return render("reading-map.md.j2", n_readings=len(readings), n_series=len(series), series=out_series,
                  by_chapter=by_chapter)


def pointers_page(pointers: list[Pointer], pages: dict[str, ChapterPage], problems: list[Problem]) -> str:
    rows = []
    for p in pointers:
        where = ""
        if p.chapter:
            page = pages.get(p.chapter)
            if page is None:
                problems.append(Problem(POINTERS, f"pointer {p.topic!r}: chapter {p.chapter!r} has no page "
                                                  "(not in course.toml, or not built)"))
            else:
                where = doc(page.docname, page.label)
                if p.section:
                    link = section_link(pages, p.chapter, p.section, POINTERS, problems)
                    if link:
                        where += f", {link}"
        rows.append({"topic": p.topic, "line": p.line, "url": p.url, "where": where})
    return render("below-the-course.md.j2", pointers=rows)


def chapter_box(manifest: Manifest, settings: SiteSettings, page: ChapterPage, readings: list[Reading],
                pages: dict[str, ChapterPage], problems: list[Problem]) -> dict:
    """The context of the chapter page's box: the track chapters it carries (linked to the landing page),
    the official pages assigned to it (linked to the section they go with, and to the reading map)."""
    track = {t.number: t for t in manifest.track}
    carries = [{"label": track_label(n), "text": f"Track {n:02d} · {track[n].title}"}
               for n in page.entry.carries if n in track]
    mine = []
    for r in readings:
        section = dict(r.chapters()).get(page.entry.id)
        if section is None:
            continue
        # a missing heading is reported once, by the reading map page
        link = section_link(pages, page.entry.id, section, READING_MAP, []) if section else None
        mine.append({"title": r.title, "url": r.url, "section_ref": link})
    return {"carries": carries, "readings": mine, "reading_label": reading_label(page.entry.id),
            "launch": settings.launch, "for_class": settings.for_class, "due": due_context(manifest, page.entry.part)}


def due_context(manifest: Manifest, part: str) -> dict | None:
    """The part's due date for the class site's chapter box ([due] of course.toml): the instant in UTC, for the
    reader's browser to show in their own time zone (static/jaxpath-due.js), and the words without script."""
    import datetime as dt

    from ...manifest import describe_due

    when = manifest.due.get(part)
    if when is None:
        return None
    return {"utc": when.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "text": describe_due(when)}
