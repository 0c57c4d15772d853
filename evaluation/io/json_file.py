"""One JSON document written atomically (manifests, summaries, reports)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .atomic import atomic_open


def write_json(path: str | Path, data: Any) -> Path:
    """Write one JSON document to ``path`` atomically, indented for people to read."""
    with atomic_open(path) as f:
        f.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    return Path(path)
