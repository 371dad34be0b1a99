"""The course manifest (`course.toml`): parts, stages, chapters in order, and the 12-chapter track."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

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

    def written(self) -> list[ChapterEntry]:
        return [c for c in self.chapters.values() if not c.planned]

    def in_part(self, part: str) -> list[ChapterEntry]:
        return [c for c in self.chapters.values() if c.part == part]


class ManifestError(JaxpathError):
    pass


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
    return Manifest(course.get("title", config.course_id), parts, tuple(stages), chapters, track)


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
