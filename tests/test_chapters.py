"""Every written chapter of the course validates, proven from scratch (in `make test-all`, once per chapter: `make`
reuses the committed proofs and `make test` proves no real chapter): it runs, its reference passes its tests, its
stub and wrong answers fail them, and its alternatives pass. What it proves is what the committed proof
(proofs/<chapter>.json) says: the same key, counts, and requirements each wrong answer breaks. It proves into a
scratch build and proofs folder: the repository's build/ and proofs/ are left as they are.

The proof's kernel reads, and never writes, the compilation cache this test run's grading fills (tests/conftest.py:
`shared_compile_cache`), as a graded submission's kernel does: a program the grader's reference run of the chapter
compiled is the same executable (JAX keys an entry by the program, the backend, the compile options and the XLA
flags), loaded instead of compiled. What the proof establishes does not change; it costs a fifth to a third less
(measured on basics/04, basics/06 and advanced/06 after their reference runs; nothing where none ran yet)."""
import json

import pytest
from conftest import ROOT

from jaxpath import Config, load_manifest
from jaxpath.authoring.proofs import read_proof
from jaxpath.authoring.validate import validate_one
from jaxpath.grade.cachepack import reader_env

CHAPTERS = [c.id for c in load_manifest(Config.load(ROOT)).written()]


def claims(proof: dict) -> dict:
    """What a proof establishes, its messages left out (they may quote numbers a platform prints otherwise)."""
    return {"key": proof.get("key"), "exercises": proof.get("exercises"), "variants": proof.get("variants"),
            "mistakes": sorted((m["exercise"], m["number"], sorted(m["failed"])) for m in proof.get("mistakes", []))}


@pytest.mark.slow
@pytest.mark.chapters
@pytest.mark.full
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_validates(chapter, real_config, tmp_path, shared_compile_cache, monkeypatch):
    for name, value in reader_env(str(real_config.compile_cache(chapter.split("/")[0]))).items():
        monkeypatch.setenv(name, value)  # the kernel's environment is this process's (jaxpath.execute.kernel_env)
    scratch = Config.load(ROOT, build_dir=str(tmp_path / "build"), proofs_dir=str(tmp_path / "proofs"))
    report = validate_one(scratch, chapter)
    assert report.ok, "\n".join(str(p) for p in report.problems)
    assert report.exercises >= 3 and not report.reused
    proved = json.loads(report.proof.read_text(encoding="utf-8"))
    assert claims(proved) == claims(read_proof(real_config, chapter)), (
        f"proofs/{chapter}.json differs from what validating it proves now: run `jaxpath validate {chapter}` and "
        "commit proofs/")
