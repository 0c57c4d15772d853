"""Scoring: the scorer protocol, the registry of every scorer by name, and what runs on them.

- :mod:`.scorer`: ``Scorer``, ``score(sources, outputs) -> list[float]``, higher is better;
- :mod:`.registry`: ``@register("name")``, ``get_scorer(name)``; upper layers add their scorers
  through the ``evenhand.scorers`` entry point group;
- :mod:`.scorers`: the evaluation metrics as registered scorers (``mint``, ``fragments``, ``fairsumm``);
- :mod:`.calibration`: a combination of scorers fitted to human judgments;
- :mod:`.report`: per-summary and corpus tables of any registered scorers (``evenhand evaluate``).
"""
