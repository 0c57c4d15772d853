"""Resumable outputs shared by generate, rerank and meta-eval: the manifest and opening the file.

The flags (``--no-resume``, ``--force-resume``) are ``evenhand.args.COMMON_OPTIONS``.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def check_results_path(out: str, flag: str = "--out", extra: tuple[Path, ...] = ()) -> None:
    """Before any work: ``out``, its manifest, their ``.bak`` files and ``extra`` must be regular files (or absent)."""
    from evenhand.evaluation.io.locks import lock_path
    from evenhand.evaluation.io.output_checks import check_output_path
    from evenhand.evaluation.io.resumable import ResumableJsonl

    for path in (*ResumableJsonl.siblings(out), *extra, lock_path(out)):
        check_output_path(path, flag, append=Path(path) == Path(out))


@contextmanager
def locked(out: str | Path, flag: str = "--out") -> Iterator[None]:
    """Hold ``out``'s advisory lock for the block: a second writer exits 2 naming this process."""
    from evenhand.evaluation.io.locks import output_lock

    with output_lock(out, flag):
        yield


def open_results(args: argparse.Namespace, command: str, options: dict[str, Any], key: str = "id") -> Any:
    """The ``ResumableJsonl`` of ``args.out``, its manifest built from what changes results.

    The manifest holds the command, the model's identity (when the command has
    ``--model``), ``options`` and the SHA-256 of ``--data`` (a list of them for several files); resuming with any of
    them changed is refused (``--force-resume`` overrides).
    """
    from evenhand.evaluation.io.digests import file_sha256
    from evenhand.evaluation.io.resumable import ResumableJsonl

    manifest: dict[str, Any] = {"command": command}
    if getattr(args, "model", None):
        from evenhand.decoding.models import model_identity

        manifest["model"] = model_identity(args.model)
    manifest["options"] = options
    data = args.data  # one file, or several (meta-eval's labelled files): one digest each
    digests = file_sha256(data) if isinstance(data, (str, Path)) else [file_sha256(p) for p in data]
    manifest["data"] = {"sha256": digests}
    return ResumableJsonl(
        args.out, key=key, resume=args.resume, manifest=manifest, force_resume=args.force_resume
    )
