"""What a successful `jaxpath validate` of a chapter leaves behind: its proof, `build/validated/<chapter>.json`
(its validation key, counts and the known mistakes: every wrong answer as the checks judged it). `validate`
writes it; `requirements` (the known mistakes), the class-wide views and the sample class read it."""
from __future__ import annotations

import json
from pathlib import Path

from ..config import Config


def proof_path(config: Config, chapter_id: str) -> Path:
    """Where a successful validation leaves its proof: its key, counts and the known mistakes (every wrong answer
    as the checks judged it; `every_wrong`: true says so, a proof without it holds only those with a hint)."""
    return config.build / "validated" / f"{chapter_id}.json"


def read_proof(config: Config, chapter_id: str) -> dict:
    """The chapter's proof as written; {} when the chapter was not validated here (or the file is unreadable)."""
    try:
        data = json.loads(proof_path(config, chapter_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
