"""Built-in scorers; importing this package registers them (heavy imports stay inside)."""

from evenhand.rerank.scorers import (  # noqa: F401
    alignscore,
    calibrated,
    composite,
    equal_coverage,
    llm_judge,
    lm_likelihood,
    rouge,
)
