"""``ResumableJsonl``: an append-only JSONL results file that is safe to kill and resume.

It appends one record per line, flushed and fsync'ed per batch; on reopening it
keeps the complete lines, drops a half-written last line left by a kill, stops
at a corrupt line in the middle, refuses an output whose manifest
(``<out>.manifest.json``: model, options, data hash) differs, and reports which
keys are done. See ``docs/reliability.md``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import DataError
from .json_file import write_json
from .jsonl import write_jsonl
from .output_checks import check_output_path, write_errors
from .parsing import parse_json
from .utf8 import read_utf8


def manifest_path(path: str | Path) -> Path:
    """The manifest beside a resumable output: ``<out>.manifest.json``."""
    path = Path(path)
    return path.with_name(path.name + ".manifest.json")


def backup_path(path: str | Path) -> Path:
    """Where ``--no-resume`` moves the previous output once the first new result is ready."""
    path = Path(path)
    return path.with_name(path.name + ".bak")


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def manifest_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """``key old -> new`` for every (dotted) setting that differs between two manifests."""
    a = _flatten(json.loads(json.dumps(old)))
    b = _flatten(json.loads(json.dumps(new)))
    a.pop("force_resumed", None)
    return [f"{k} {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


class ResumableJsonl:
    """An append-only JSONL results file keyed by one field, safe to kill and resume.

    Guarantees (``docs/reliability.md``):

    * appends are flushed and fsync'ed per call; a kill loses at most the line
      being written, whose torn tail the next run drops;
    * a *complete* line that is not a JSON record with ``key`` is corruption,
      not an interrupted write: resuming stops naming its line;
    * with a ``manifest`` (model identity, the options that change results, data
      hash) stored beside the file as ``<out>.manifest.json``, resuming refuses a
      file written with other settings (or without a manifest), naming what
      differs, unless ``force_resume``;
    * with ``resume=False`` the previous file (and manifest) stay untouched until
      the first new record is ready, and are then moved aside to ``<out>.bak``;
    * nothing is created before the first record.

    Args:
        path: the results file.
        key: the record field identifying a finished item (default ``id``).
        resume: keep existing records (True) or start afresh (False).
        manifest: what the results depend on; None skips the check (API use).
        force_resume: keep the records even when the manifest differs.
    """

    def __init__(
        self, path: str | Path, key: str = "id", resume: bool = True,
        manifest: Mapping[str, Any] | None = None, force_resume: bool = False,
    ) -> None:
        self.path = Path(path)
        for sibling in self.siblings(self.path):  # regular files only, before anything is read
            check_output_path(sibling, append=sibling == self.path)
        self.key = key
        self.manifest = json.loads(json.dumps(manifest)) if manifest is not None else None
        self.records: dict[Any, dict[str, Any]] = {}
        self._fresh = not (resume and self.path.exists())  # write the manifest (and move aside) first
        if not self._fresh:
            self._check_manifest(force_resume)
            self._recover()

    @staticmethod
    def siblings(path: str | Path) -> list[Path]:
        """Every file a resumable output may write, replace or remove: itself, its manifest, their backups."""
        path = Path(path)
        return [path, manifest_path(path), backup_path(path), backup_path(manifest_path(path))]

    def _check_manifest(self, force: bool) -> None:
        if self.manifest is None:
            return
        sidecar = manifest_path(self.path)
        hint = (
            "pass --no-resume to start afresh (the old file is kept as "
            f"{backup_path(self.path).name}) or --force-resume to keep its records anyway"
        )
        if not sidecar.is_file():
            if self.path.stat().st_size == 0:
                self._fresh = True
                return
            if not force:
                raise DataError(
                    f"{self.path}: has no manifest ({sidecar.name}), so its settings are unknown; {hint}"
                )
            stored: dict[str, Any] = {}
        else:
            try:
                stored = parse_json(read_utf8(sidecar), str(sidecar))
            except DataError as err:
                raise DataError(f"{err}; {hint}") from None
            if not isinstance(stored, dict):
                raise DataError(f"{sidecar}: must hold a JSON object of settings, got {type(stored).__name__}; {hint}")
        diff = manifest_diff(stored, self.manifest)
        if diff and not force:
            raise DataError(
                f"{self.path}: was written with other settings ({'; '.join(diff[:6])}"
                + (f"; and {len(diff) - 6} more" if len(diff) > 6 else "") + f"); {hint}"
            )
        if diff:
            stored.setdefault("force_resumed", []).append(self.manifest)
            write_json(sidecar, stored)

    def _recover(self) -> None:
        raw = self.path.read_bytes()
        *complete, tail = raw.split(b"\n")  # tail: b"" or a line torn by a kill
        good: list[dict[str, Any]] = []
        for lineno, line in enumerate(complete, start=1):
            if not line.strip():
                continue
            where = f"{self.path}:{lineno}"
            fix = "fix or delete that line, or pass --no-resume to start afresh"
            try:
                row = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as err:
                reason = getattr(err, "msg", "not UTF-8")
                raise DataError(f"{where}: corrupt line ({reason}) in the middle of the results; {fix}") from None
            if not isinstance(row, dict) or self.key not in row:
                raise DataError(f"{where}: record has no `{self.key}` field; {fix}")
            good.append(row)
        for row in good:
            self.records[row[self.key]] = row
        if tail:
            write_jsonl(self.path, good)  # drop the torn tail

    def done(self, key: Any) -> bool:
        """Whether a record with this key is already stored."""
        return key in self.records

    def _start(self) -> None:
        """Before the first new record: move a previous file aside, write the manifest."""
        if self.path.exists() and self.path.stat().st_size == 0:
            self.path.unlink()  # nothing to keep: do not let it replace an older backup
        if self.path.exists():
            os.replace(self.path, backup_path(self.path))
            if manifest_path(self.path).exists():
                os.replace(manifest_path(self.path), backup_path(manifest_path(self.path)))
        elif manifest_path(self.path).exists():
            manifest_path(self.path).unlink()  # a manifest without results describes nothing
        if self.manifest is not None:
            write_json(manifest_path(self.path), self.manifest)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fresh = False

    def append(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Append rows and fsync, so a kill after this call loses none of them."""
        rows = [dict(r) for r in rows]
        if self._fresh:
            self._start()
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")
        with write_errors(self.path, "the records written before are kept"):
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            try:
                size = os.fstat(fd).st_size
                try:
                    view = memoryview(text)
                    while view:
                        view = view[os.write(fd, view):]
                    os.fsync(fd)
                except BaseException:  # a write error, or Ctrl-C / kill (evenhand.interrupts) mid-batch
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, size)  # no torn batch: the file ends at its last complete record
                    raise
            finally:
                os.close(fd)
        for row in rows:
            self.records[row[self.key]] = row
