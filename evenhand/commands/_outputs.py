"""Resumable outputs shared by generate, rerank and meta-eval: the manifest and opening the file.

The flags (``--no-resume``, ``--force-resume``) are ``evenhand.args.COMMON_OPTIONS``.
"""

from __future__ import annotations

import argparse
from typing import Any


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
