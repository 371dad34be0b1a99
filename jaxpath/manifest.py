"""The course manifest (`course.toml`): parts, stages, chapters in order, the 12-chapter track, and when each
part is due."""
from __future__ import annotations

import datetime as dt
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .config import Config
from .errors import JaxpathError
from .problems import Problem


@dataclass(frozen=True)
class ChapterEntry:
    id: str
    """'<part>/<notebook stem>', e.g. 'basics/02_jit'."""
    title: str
    stage: int
    """1-based index of the stage that lists the chapter."""
    carries: tuple[int, ...] = ()
    planned: bool = False
    sections: dict = field(default_factory=dict)

    @property
    def part(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def stem(self) -> str:
        return self.id.split("/", 1)[1]


@dataclass(frozen=True)
class Stage:
    title: str
    chapters: tuple[str, ...]


@dataclass(frozen=True)
class TrackChapter:
    number: int
    part: str
    title: str
    thesis: str


@dataclass(frozen=True)
class Manifest:
    course_title: str
    parts: tuple[str, ...]
    stages: tuple[Stage, ...]
    chapters: dict[str, ChapterEntry]
    """All chapters, in course order (stage by stage)."""
    track: tuple[TrackChapter, ...]
    due: dict[str, dt.datetime] = field(default_factory=dict)
    """Part -> when it is due (`[due]` of course.toml), a time-zone-aware datetime in the zone it was given in."""

    def written(self) -> list[ChapterEntry]:
        return [c for c in self.chapters.values() if not c.planned]

    def in_part(self, part: str) -> list[ChapterEntry]:
        return [c for c in self.chapters.values() if c.part == part]


class ManifestError(JaxpathError):
    pass


_DUE = re.compile(r"^(?P<date>\d{4}-\d{2}-\d{2})[ T](?P<time>\d{2}:\d{2}(?::\d{2})?)\s+(?P<zone>\S+)$")


def parse_due(text: str, where: str = "due") -> dt.datetime:
    """A due date as course.toml writes it: a local time and the IANA zone it is in ("2026-10-01 23:59
    Europe/Berlin"), or ISO 8601 with an offset ("2026-10-01T23:59:00+02:00", "...Z"). Never a time without a
    zone: nbgrader keeps UTC, and a bare time would be the server's."""
    if isinstance(text, dt.datetime) and text.tzinfo is not None:  # TOML's own offset date-time
        return text
    if not isinstance(text, str):
        raise ManifestError(f"{where}: a date and time with its zone, like \"2026-10-01 23:59 Europe/Berlin\"")
    m = _DUE.match(text.strip())
    if m:
        try:
            zone = ZoneInfo(m["zone"])
        except (ZoneInfoNotFoundError, ValueError):
            raise ManifestError(f"{where}: {m['zone']!r} is not a time zone (an IANA name like Europe/Berlin, "
                                "America/New_York or UTC)") from None
        try:
            return dt.datetime.fromisoformat(f"{m['date']}T{m['time']}").replace(tzinfo=zone)
        except ValueError as e:
            raise ManifestError(f"{where}: {text!r}: {e}") from None
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise ManifestError(f"{where}: {text!r} is not a date and time with its zone, like "
                            "\"2026-10-01 23:59 Europe/Berlin\" or \"2026-10-01T23:59:00+02:00\"")
    return when


def due_utc(when: dt.datetime) -> dt.datetime:
    """The due date as nbgrader's gradebook keeps it: UTC, without a zone."""
    return when.astimezone(dt.timezone.utc).replace(tzinfo=None)


def describe_due(when: dt.datetime) -> str:
    """The due date as a student reads it: in the zone the course gave it in, and in UTC."""
    utc = when.astimezone(dt.timezone.utc)
    local = f"{when:%A} {when.day} {when:%B %Y}, {when:%H:%M}"
    zone = getattr(when.tzinfo, "key", None) or ("UTC" if when.utcoffset() == dt.timedelta(0) else when.strftime("UTC%:z"))
    if zone in ("UTC", "Etc/UTC"):
        return f"{local} UTC"
    same_day = utc.date() == when.date()
    return f"{local} ({zone}), {utc:%H:%M} UTC" + ("" if same_day else f" on {utc:%A} {utc.day} {utc:%B}")


def _due_table(path: Path, data: dict, parts: tuple[str, ...]) -> dict[str, dt.datetime]:
    table = data.get("due", {})
    if not isinstance(table, dict):
        raise ManifestError(f"{path.name}: [due] is a table: part = \"2026-10-01 23:59 Europe/Berlin\"")
    for part in table:
        if part not in parts:
            raise ManifestError(f"{path.name}: [due] names {part!r}, which is not a part (parts: {list(parts)})")
    return {part: parse_due(table[part], f"{path.name}: [due] {part}") for part in parts if part in table}


def load_manifest(config: Config) -> Manifest:
    path = config.manifest_path
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(f"{path.name}: not found in {config.root}") from None
    except tomllib.TOMLDecodeError as e:
        raise ManifestError(f"{path.name}: not valid TOML ({e})") from None
    course = data.get("course", {})
    parts = tuple(course.get("parts", ()))
    info = data.get("chapters", {})
    stages, chapters, seen = [], {}, set()
    for n, st in enumerate(data.get("stage", []), start=1):
        ids = tuple(st.get("chapters", ()))
        stages.append(Stage(st.get("title", f"Stage {n}"), ids))
        for cid in ids:
            if cid in seen:
                raise ManifestError(f"{path.name}: chapter {cid} is listed in two stages")
            seen.add(cid)
            if "/" not in cid or cid.split("/", 1)[0] not in parts:
                raise ManifestError(f"{path.name}: chapter {cid} is not '<part>/<name>' with a part in {list(parts)}")
            meta = info.get(cid, {})
            chapters[cid] = ChapterEntry(
                id=cid, title=meta.get("title", cid), stage=n, carries=tuple(meta.get("carries", ())),
                planned=bool(meta.get("planned", False)), sections=dict(meta.get("sections", {})))
    for cid in info:
        if cid not in seen:
            raise ManifestError(f"{path.name}: [chapters.\"{cid}\"] is in no stage")
    track = tuple(TrackChapter(t["number"], t.get("part", ""), t["title"], t.get("thesis", ""))
                  for t in data.get("track", []))
    numbers = {t.number for t in track}
    for c in chapters.values():
        for n in c.carries:
            if n not in numbers:
                raise ManifestError(f"{path.name}: {c.id} carries track chapter {n}, which the track does not have")
        for heading, ns in c.sections.items():
            for n in ns:
                if n not in c.carries:
                    raise ManifestError(f"{path.name}: section {heading!r} of {c.id} carries track chapter {n}, "
                                        f"which the chapter's `carries` does not list")
    return Manifest(course.get("title", config.course_id), parts, tuple(stages), chapters, track,
                    _due_table(path, data, parts))


def notebook_path(config: Config, chapter_id: str) -> Path:
    return config.source / f"{chapter_id}.ipynb"


def variants_path(config: Config, chapter_id: str) -> Path:
    return config.variants / f"{chapter_id}.toml"


def check_layout(config: Config, manifest: Manifest) -> list[Problem]:
    """Source notebooks and manifest entries must match one to one."""
    problems = []
    listed = set(manifest.chapters)
    for nb in sorted(config.source.glob("*/*.ipynb")):
        if ".ipynb_checkpoints" in nb.parts:
            continue
        cid = f"{nb.parent.name}/{nb.stem}"
        rel = str(nb.relative_to(config.root))
        if cid not in listed:
            problems.append(Problem(rel, f"chapter {cid} is not in {config.manifest_file}: add it to a stage "
                                         f"and a [chapters.\"{cid}\"] table"))
        elif manifest.chapters[cid].planned:
            problems.append(Problem(rel, f"{config.manifest_file} marks {cid} as planned, but its notebook exists: "
                                         "remove `planned = true`"))
    for c in manifest.written():
        p = notebook_path(config, c.id)
        if not p.exists():
            problems.append(Problem(str(p.relative_to(config.root)),
                                    f"{config.manifest_file} lists {c.id}, but the notebook does not exist "
                                    "(mark it `planned = true` until it is written)"))
    for v in sorted(config.variants.glob("*/*.toml")) if config.variants.exists() else []:
        cid = f"{v.parent.name}/{v.stem}"
        if cid not in listed or not notebook_path(config, cid).exists():
            problems.append(Problem(str(v.relative_to(config.root)), f"variants for {cid}, which has no source notebook"))
    return problems
