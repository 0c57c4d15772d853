"""Sentiment agreement: how far a summary's overall sentiment lies from its source's (VADER).

``sentiment-agreement`` scores ``-max(0, |t(summary) - mean_d t(d)| - dead_zone)``, where
``t`` is VADER's tone, the share of its positive minus the share of its negative sentiment
(``pos - neg`` of ``polarity_scores``: Hutto & Gilbert 2014, the ``vaderSentiment`` package, a
rated lexicon of ~7,500 words with rules for negation, intensifiers, "but" and capitals), ``d``
runs over the source's documents, and ``dead_zone`` is 0.1. The score lies in [-2, 0]; 0 when
the summary's tone is within ``dead_zone`` of the documents' mean tone.

Why it is a faithfulness feature: a summary that turns the source's criticism into approval
(or back), or that carries the other side's case, moves away from the source's tone even when
it reuses the source's words, which lm-pmi, ROUGE and the MiniLM fallback do not see. It reads
no facts: a summary that invents a neutral detail scores as well as a faithful one.

Why shares and a dead zone: VADER's compound score grows with a text's length, so a
five-sentence summary of mildly positive short reviews reads far more positive than any of
them, and with the compound score one praise word turned into a complaint moved a summary
*towards* its source's mean; the shares do not grow with length. A fair summary of mixed
opinions differs a little from the mean tone by construction; the dead zone lets that pass
and counts only a clear shift. The form was chosen on the controlled summaries' dev half and
the hand-written contradiction pairs (benchmarks/sentiment_forms.py measures every form tried;
docs/reranking.md).

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


@lru_cache(maxsize=4096)  # a source's documents are read once for all its candidates
def tone(text: str, reporting_verbs: bool = False) -> float:
    """VADER's share of positive minus share of negative sentiment in ``text``, in [-1, 1].

    >>> tone("The battery is great.")  # "great" rated 3.1 counts 3.1 + 1, each neutral word 1: 4.1 / 7.1
    0.577
    >>> tone("The article argues that the plan works.")  # "argues" dropped: no rated word
    0.0
    >>> tone("The article argues that the plan works.", reporting_verbs=True)  # "argues" −1.6: −2.6 / 8.6
    -0.302
    """
    scores = _analyzer(reporting_verbs).polarity_scores(text)
    return round(float(scores["pos"]) - float(scores["neg"]), 3)


def sentiment_gap(documents: list[str], summary: str, dead_zone: float = 0.1,
                  reporting_verbs: bool = False) -> float:
    """How far the summary's :func:`tone` lies beyond ``dead_zone`` from its documents' mean tone.

    >>> # documents: 4.1 / 5.1 = 0.804 and −3 / 4 = −0.75, mean 0.027; the summary 0.577
    >>> sentiment_gap(["Great battery.", "Awful case."], "The battery is great.")  # 0.55 − 0.1
    0.45
    >>> sentiment_gap(["Great battery.", "Awful case."], "The battery is great and the case is awful.")
    0.0
    """
    mean = sum(tone(d, reporting_verbs) for d in documents) / len(documents)
    return round(max(0.0, abs(tone(summary, reporting_verbs) - mean) - dead_zone), 6)


@dataclass
class SentimentConfig(ScorerConfig):
    """Settings of ``sentiment-agreement``."""

    dead_zone: float = field(default=0.1, metadata={
        "help": "Tone differences up to this much are not counted (in [0, 2])."})
    reporting_verbs: bool = field(default=False, metadata={
        "help": "Keep reporting verbs (argues, contends, highlights, stresses) in VADER's lexicon."})
    batch_size: int = field(default=256, metadata={"help": "Outputs per batch (no model involved)."})

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.dead_zone, bool) or not isinstance(self.dead_zone, (int, float)) or not (
                0 <= self.dead_zone <= 2):  # NaN fails the comparison too
            raise ValueError(f"`dead_zone` must be a number in [0, 2], got {self.dead_zone!r}")
        if not isinstance(self.reporting_verbs, bool):
            raise ValueError(f"`reporting_verbs` must be true or false, got {self.reporting_verbs!r}")


@register("sentiment-agreement")
class SentimentAgreement(Scorer[SentimentConfig]):
    """Minus how far the summary's VADER tone lies beyond ``dead_zone`` from its documents' mean (0 is best)."""

    Config = SentimentConfig
    cacheable = False

    @property
    def model_id(self) -> str:
        return f"vaderSentiment-{version('vaderSentiment')}"

    def _score_batch(self, sources: list[Example], outputs: list[str]) -> list[dict[str, Any]]:
        return [{"score": -sentiment_gap([d.text for d in ex.documents], out, self.config.dead_zone,
                                         self.config.reporting_verbs)}
                for ex, out in zip(sources, outputs)]
