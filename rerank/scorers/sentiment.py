"""Sentiment agreement: how far a summary's overall sentiment lies from its source's (VADER).

``sentiment-agreement`` scores ``-|c(summary) - mean_d c(d)|``, where ``c`` is VADER's
compound score (Hutto & Gilbert 2014, the ``vaderSentiment`` package: a rated lexicon of
~7,500 words with rules for negation, intensifiers, "but" and capitals, normalized to
[-1, 1]) and ``d`` runs over the source's documents. The score lies in [-2, 0]; 0 when the
summary carries the source's mean sentiment.

Why it is a faithfulness feature: a summary that turns the source's praise into complaint, or
its criticism into approval, moves away from the source's sentiment even when it reuses the
source's words, which lm-pmi, ROUGE and the MiniLM fallback do not see; and a summary that
speaks only for the majority's mood moves away from the mean of a mixed source. On the
controlled summaries' dev half it adds ~0.045 of cross-validated ρ to the faithfulness
calibration (docs/reranking.md). It reads no facts: a summary that invents a neutral detail
scores as well as a faithful one.

Reporting verbs (:data:`REPORTING`: "argues", "contends", "highlights", "stresses") are taken
out of the lexicon (VADER rates "argues" −1.6, as in quarrel): in a summary they frame who
said what, not what was said. ``reporting_verbs=True`` keeps VADER's lexicon as released.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import version
from typing import Any

from ...evaluation.data.schema import Example
from ...evaluation.scoring.registry import register
from ...evaluation.scoring.scorer import Scorer, ScorerConfig

#: Words VADER rates that summaries use to attribute, not to judge; dropped from its lexicon.
REPORTING = ("argue", "argues", "argued", "arguing", "contend", "contends", "contended",
             "highlight", "highlights", "highlighted", "stress", "stresses", "stressed")


@lru_cache(maxsize=2)
def _analyzer(reporting_verbs: bool) -> Any:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    analyzer = SentimentIntensityAnalyzer()
    if not reporting_verbs:
        for word in REPORTING:
            analyzer.lexicon.pop(word, None)
    return analyzer


def compound(text: str, reporting_verbs: bool = False) -> float:
    """VADER's compound sentiment of ``text`` in [-1, 1] (:data:`REPORTING` left out unless asked).

    >>> compound("The battery is great.")  # 3.1 / sqrt(3.1² + 15)
    0.6249
    >>> compound("The article argues that the plan works.")  # "argues" dropped: no rated word
    0.0
    """
    return float(_analyzer(reporting_verbs).polarity_scores(text)["compound"])


def sentiment_gap(documents: list[str], summary: str, reporting_verbs: bool = False) -> float:
    """``|compound(summary) - mean compound(document)|``: 0 when the summary carries the source's mood."""
    mean = sum(compound(d, reporting_verbs) for d in documents) / len(documents)
    return abs(compound(summary, reporting_verbs) - mean)


@dataclass
class SentimentConfig(ScorerConfig):
    """Settings of ``sentiment-agreement``."""

    reporting_verbs: bool = field(default=False, metadata={
        "help": "Keep reporting verbs (argues, contends, highlights, stresses) in VADER's lexicon."})
    batch_size: int = field(default=256, metadata={"help": "Outputs per batch (no model involved)."})


@register("sentiment-agreement")
class SentimentAgreement(Scorer[SentimentConfig]):
    """Minus the distance between the summary's VADER compound and its documents' mean (0 is best)."""

    Config = SentimentConfig
    cacheable = False

    @property
    def model_id(self) -> str:
        return f"vaderSentiment-{version('vaderSentiment')}"

    def _score_batch(self, sources: list[Example], outputs: list[str]) -> list[dict[str, Any]]:
        return [{"score": -sentiment_gap([d.text for d in ex.documents], out, self.config.reporting_verbs)}
                for ex, out in zip(sources, outputs)]
