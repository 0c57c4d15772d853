"""Built-in scorers: every module of this package is imported on the registry's first lookup.

The package is declared as the ``evenhand.scorers`` entry point ``rerank`` in
``pyproject.toml`` (:mod:`evenhand.evaluation.scoring.registry` names no layer
above it). A new built-in scorer is one module here with an ``@register("name")``
class; nothing else needs editing (heavy imports stay inside the scorers' methods).
"""
