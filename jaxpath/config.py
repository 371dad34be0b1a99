"""One typed config object for every jaxpath command.

It is read from the course directory: `nbgrader_config.py` (course id, gradebook URL, nbgrader's own
folder names) and `course.toml` (the manifest). Defaults live here, in one place.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path


def nbgrader_config(root: Path, db_url: str | None = None):
    """The course's nbgrader configuration (its nbgrader_config.py), rooted at `root`."""
    from traitlets.config import Config as TConfig
    from traitlets.config.loader import PyFileConfigLoader

    cfg = TConfig()
    if (Path(root) / "nbgrader_config.py").exists():
        cfg.merge(PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config())
    cfg.CourseDirectory.root = str(root)
    if db_url:
        cfg.CourseDirectory.db_url = db_url
    return cfg


def ensure_venv_on_path() -> None:
    """nbgrader runs a bare `alembic` when it creates a gradebook: this Python's bin must be on PATH."""
    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


@dataclass(frozen=True)
class Config:
    root: Path
    """The course directory (the repository root): it holds nbgrader_config.py and course.toml."""
    course_id: str = "jax-path"
    source_dir: str = "source"
    release_dir: str = "release"
    variants_dir: str = "variants"
    build_dir: str = "build"
    proofs_dir: str = "proofs"
    """Where `jaxpath validate` writes each chapter's proof (committed: jaxpath.authoring.proofs)."""
    manifest_file: str = "course.toml"
    db_url: str = ""
    kernel_name: str = "python3"
    compile_cache_dir: str = ""
    """Where the grader keeps the compilation cache its reference runs warm, one folder per assignment (default:
    `build/jax-cache`). JAX keys every entry by the program, the backend and the compile options, so one folder
    can serve several courses (or copies of one), e.g. on a fast disk. Also read from `JAXPATH_COMPILE_CACHE`."""
    cell_timeout: int = 180
    """Seconds one cell may run during validation before it counts as a failure."""
    startup_timeout: int = 60
    mutant_timeout: float = 10.0
    """Seconds a mutant (its answer and every test cell) may run at least, in `jaxpath mutants`…"""
    mutant_timeout_factor: float = 5.0
    """…or this many times as long as the reference took, if that is longer."""
    min_exercises: int = 3
    min_wrong: int = 2
    min_alternative: int = 1
    require_requirements: bool = False
    """Whether `jaxpath validate` refuses an exercise without a requirement list (`[name.requirements]`); a
    course turns it on in its manifest (`[validate] require_requirements = true`, as this one does)."""
    require_points: bool = False
    """Whether it refuses an exercise whose requirements have no points (`[name.points]`): every test cell then
    gives partial credit per requirement (`[validate] require_points = true`)."""

    @property
    def source(self) -> Path:
        return self.root / self.source_dir

    @property
    def release(self) -> Path:
        return self.root / self.release_dir

    @property
    def variants(self) -> Path:
        return self.root / self.variants_dir

    @property
    def build(self) -> Path:
        return self.root / self.build_dir

    @property
    def proofs(self) -> Path:
        return self.root / self.proofs_dir

    @property
    def executed(self) -> Path:
        """Executed reference chapters written by `validate` and read by `appendix`."""
        return self.build / "executed"

    def compile_cache(self, part: str) -> Path:
        """The compilation cache the grader warms for assignment `part` (see `compile_cache_dir`)."""
        base = Path(self.compile_cache_dir) if self.compile_cache_dir else self.build / "jax-cache"
        return base / part

    @property
    def manifest_path(self) -> Path:
        return self.root / self.manifest_file

    def nbgrader(self, db_url: str | None = None):
        """nbgrader's configuration of this course (its nbgrader_config.py, rooted here), with the gradebook
        URL `db_url` when given, else the course's."""
        return nbgrader_config(self.root, db_url or self.db_url)

    def coursedir(self, db_url: str | None = None):
        """nbgrader's CourseDirectory of this course: its folders, ignore globs and gradebook URL."""
        from nbgrader.coursedir import CourseDirectory

        return CourseDirectory(config=self.nbgrader(db_url))

    @classmethod
    def load(cls, root: str | os.PathLike | None = None, **overrides) -> "Config":
        """Read the course directory at `root` (default: the current directory)."""
        root = Path(root or os.getcwd()).resolve()
        values: dict = {}
        if (root / "nbgrader_config.py").exists():
            cd = nbgrader_config(root).get("CourseDirectory", {})
            for key, attr in [("course_id", "course_id"), ("source_directory", "source_dir"),
                              ("release_directory", "release_dir"), ("db_url", "db_url")]:
                if key in cd:
                    values[attr] = cd[key]
        values.update(_manifest_validate(root / cls.manifest_file))
        if os.environ.get("JAXPATH_COMPILE_CACHE"):
            values["compile_cache_dir"] = os.environ["JAXPATH_COMPILE_CACHE"]
        values.update(overrides)
        if not values.get("db_url"):
            values["db_url"] = f"sqlite:///{root / 'gradebook.db'}"  # nbgrader's own default
        return cls(root=root, **values)


def _manifest_validate(path: Path) -> dict:
    """The `[validate]` settings of the manifest (only the keys that are fields of Config, each a bool)."""
    from .errors import JaxpathError

    table = manifest_table(path, "validate")

    known = {"require_requirements", "require_points"}
    bad = sorted(k for k in table if k not in known or not isinstance(table[k], bool))
    if bad:
        raise JaxpathError(f"{path.name} [validate]: {', '.join(bad)}: known keys are {', '.join(sorted(known))} "
                           "(true or false)")
    return dict(table)


def manifest_table(path: Path, name: str) -> dict:
    """One top-level table of the manifest at `path` ({} when it has none, or cannot be read: the manifest's
    own reader, jaxpath.manifest, says what is wrong with it). For the settings read before the manifest is."""
    import tomllib

    try:
        return tomllib.loads(path.read_text(encoding="utf-8")).get(name, {})
    except (OSError, tomllib.TOMLDecodeError):
        return {}
