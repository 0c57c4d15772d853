"""Resumable outputs shared by generate, rerank and meta-eval: flags, manifest, opening."""

from __future__ import annotations

import argparse
from typing import Any


def add_resume_options(parser: argparse.ArgumentParser, what: str = "examples") -> None:
    """``--no-resume`` and ``--force-resume``."""
    parser.add_argument(
        "--no-resume", dest="resume", action="store_false",
        help=f"Start afresh instead of skipping {what} already in --out; the old file is moved to "
        "<out>.bak once the first new result is ready.",
    )
    parser.add_argument(
        "--force-resume", action="store_true",
        help="Resume even though --out was written with other settings (its manifest differs).",
    )


def open_results(args: argparse.Namespace, command: str, options: dict[str, Any], key: str = "id") -> Any:
    """The ``ResumableJsonl`` of ``args.out``, its manifest built from what changes results.

    The manifest holds the command, the model's identity (when the command has
    ``--model``), ``options`` and the SHA-256 of ``--data``; resuming with any of
    them changed is refused (``--force-resume`` overrides).
    """
    from evenhand.evaluation.jsonl import ResumableJsonl, file_sha256

    manifest: dict[str, Any] = {"command": command}
    if getattr(args, "model", None):
        from evenhand.decoding.models import model_identity

        manifest["model"] = model_identity(args.model)
    manifest["options"] = options
    manifest["data"] = {"sha256": file_sha256(args.data)}
    return ResumableJsonl(
        args.out, key=key, resume=args.resume, manifest=manifest, force_resume=args.force_resume
    )
