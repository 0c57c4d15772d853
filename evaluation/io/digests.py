"""Content digests: SHA-256 of a file, or of a model folder's weight and config files, cached.

:func:`content_digest` is the SHA-256 of a file's or a folder's weight files,
cached by path + size + mtime_ns, so that a model replaced in place (same
sizes) is never taken for the old one: resume manifests, the score cache and
the sweep store all key on it. :func:`file_sha256` hashes a file without the
cache (a data file named in a manifest).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes (hex), read in 1 MiB blocks."""
    import hashlib

    digest = hashlib.sha256()
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


#: Files whose content makes a model: weights and the configs that shape them.
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".ckpt", ".pt", ".pth", ".json", ".model", ".txt")


_DIGESTS: dict[tuple[str, int, int], str] = {}


def _digest_cache_file() -> Path:
    root = os.environ.get("EVENHAND_CACHE")
    if root:
        return Path(root).expanduser() / "digests.jsonl"
    import platformdirs

    return Path(platformdirs.user_cache_dir("evenhand")) / "digests.jsonl"


def _load_digests() -> None:
    if _DIGESTS:
        return
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for line in _digest_cache_file().read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                row = json.loads(line)
                _DIGESTS[(str(row["path"]), int(row["size"]), int(row["mtime_ns"]))] = str(row["sha256"])


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes, cached (in memory and on disk) by real path + size + mtime_ns."""
    path = Path(path).resolve()
    info = path.stat()
    key = (str(path), info.st_size, info.st_mtime_ns)
    _load_digests()
    if key in _DIGESTS:
        return _DIGESTS[key]
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    _DIGESTS[key] = value = digest.hexdigest()
    with contextlib.suppress(OSError):  # the on-disk cache only saves time
        cache = _digest_cache_file()
        cache.parent.mkdir(parents=True, exist_ok=True)
        with cache.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"path": key[0], "size": key[1], "mtime_ns": key[2], "sha256": value}) + "\n")
    return value


def content_digest(path: str | Path) -> str | None:
    """The content identity of a model file or folder: SHA-256 over its weight and config files.

    A folder hashes every file directly in it whose suffix is in
    :data:`WEIGHT_SUFFIXES`, by name and content; a file hashes its bytes. Each
    file's hash is cached by path + size + mtime_ns, so repeated calls cost a
    ``stat`` per file. None when ``path`` is neither (an HF id, a URL).
    """
    path = Path(path)
    if path.is_file():
        return file_digest(path)
    if not path.is_dir():
        return None
    digest = hashlib.sha256()
    for item in sorted(path.iterdir()):
        if item.is_file() and item.suffix in WEIGHT_SUFFIXES:
            digest.update(f"{item.name}\0{file_digest(item)}\n".encode())
    return digest.hexdigest()


def describe(value: Any) -> str:
    """A short form of a digest or setting for messages (``ab12cd34``)."""
    text = str(value)
    return text[:12] if len(text) == 64 and all(c in "0123456789abcdef" for c in text) else text
