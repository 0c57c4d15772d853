"""Letting the model-backed scorers of a run use a model that is already loaded, instead of a second copy."""

from __future__ import annotations

from typing import Any

from ..evaluation.scoring.scorer import Scorer


def share_model(scorer: Scorer, model: Any, tokenizer: Any, name: str) -> int:
    """Let every model-backed scorer inside ``scorer`` that would load ``name`` use ``model``.

    Walks ``scorer`` and its ``components`` (composite, calibrated); a scorer with
    ``use_model`` whose ``config.model`` names the same model as ``name`` (aliases
    resolved) gets the loaded model instead of loading its own copy. Its cache key
    keeps the configured name. Returns how many scorers now share the model.
    """
    from ..decoding.models import ALIASES

    def same(a: str) -> bool:
        return ALIASES.get(a, a) == ALIASES.get(name, name)

    shared = 0
    configured = getattr(scorer.config, "model", None)
    use_model = getattr(scorer, "use_model", None)
    if callable(use_model) and isinstance(configured, str) and same(configured):
        use_model(model, tokenizer, configured)
        shared += 1
    for component in getattr(scorer, "components", {}).values():
        shared += share_model(component, model, tokenizer, name)
    return shared
