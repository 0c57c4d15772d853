"""``fairsumm-bertscore`` and ``fairsumm-bartscore``: FairSumm's model-based value distributions.

FairSumm (Zhang et al. 2024, psunlpgroup/FairSumm ``metrics/eval.py``) measures
fairness with three target distributions; ``fairsumm`` (evaluation/) is the
N-gram one. In all three the *source* distribution s is the N-gram one (content
tokens per value); only the *target* t changes, then the cutoff, UER, the unfair
test (τ = 0.8), AUC and the corpus BUR/UER/SOF are exactly ``fairsumm``'s
(:class:`evenhand.evaluation.scoring.scorers.fairsumm.ValueDistributionMetric`).

``fairsumm-bertscore`` (``metrics/score/bert.py``, method ``summary_combine``):
for each value v, P_v = BERTScore *precision* with the summary as candidate and
v's text (its documents joined by " || ") as reference: mean over the summary's
tokens (special tokens dropped) of the best cosine with a token of v's text
(special tokens kept, as bert_score does), hidden states of ``layer``; then
t = softmax(P / T) over values. The code uses ``BERTScorer(lang='en',
rescale_with_baseline=True)`` = roberta-large, layer 17, P rescaled as
(P − b)/(1 − b) with bert_score's baseline b = 0.83150584 (its
``rescale_baseline/en/roberta-large.tsv``, layer 17, column P). With
``rescale`` on (default) an encoder named ``roberta-large`` (an HF id or a
folder of that name) at layer 17 gets that b, as the code does; ``baseline=b``
sets any b. The offline default is the embedded MiniLM (``minilm-fallback``),
last layer, raw cosine precision, no rescale (bert_score has no baseline for
it) — named so in every row.
``method="sentence"`` is the code's per-sentence variant: one softmax per
summary sentence, averaged.

``fairsumm-bartscore`` (``metrics/score/bart.py``): for each value v, the score
is BARTScore(v's text → summary) = mean token log p(summary | v's text), then
t = softmax(scores / T). The code uses facebook/bart-large-cnn; the default
here is the embedded SmolLM2 (``smollm2-135m-instruct``, a causal chat LM read
through ``lm-likelihood``'s prompt: v's documents, the instruction, then the
summary); any seq2seq LM (``model=facebook/bart-large-cnn``) reads v's
documents in its encoder exactly as BARTScore does. Differences from the code:
v's documents are separated by blank lines, not " || "; the summary's end token
is not scored; a v text longer than ``max_source_tokens`` is chunked
(AlignScore) instead of truncated at 1024 tokens.

T: the code's 2 (default) or the paper's 0.1 (``temperature``).

``text`` (``--fairsumm-text``): the source side's pipeline, as for ``fairsumm``
— ``"authors"`` (default: the released word processing and float cutoff, empty
summaries skipped in the corpus) or ``"evenhand"`` (the earlier pipeline).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...evaluation.data.schema import Document, Example
from ...evaluation.metrics.fairsumm import DEFAULT_TEMPERATURE
from ...evaluation.scoring.registry import register
from ...evaluation.scoring.scorer import Scorer, ScorerConfig
from ...evaluation.scoring.scorers.fairsumm import (
    TEXT_HELP,
    ValueDistributionMetric,
    check_text,
    distribution_row,
    source_profile,
)
from .lm_likelihood import LmConfig, LmScorer

#: How the authors' data joins one value's documents into its text.
VALUE_SEPARATOR = " || "


def _check_temperature(value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"`temperature` must be a non-negative float (code 2, paper 0.1), got {value!r}")


def value_texts(example: Example, metric: str, text: str = "authors") -> tuple[dict[str, int], dict[str, str]]:
    """(N-gram source counts under the ``text`` pipeline, per value its documents joined by " || ")."""
    counts, _ = source_profile(example, metric, text)
    return counts, example.group_texts(VALUE_SEPARATOR)


class _ModelMetric(ValueDistributionMetric):
    """Records are JSON-able (the score cache keeps them); columns are ``detail_fields``,
    named after the subclass's ``prefix``: uer, unfair, auc, groups, backend."""

    detail_fields: tuple[str, ...]
    prefix: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.detail_fields = tuple(f"{cls.prefix}_{c}" for c in ("uer", "unfair", "auc", "groups", "backend"))

    def columns(self, record: dict[str, Any]) -> dict[str, Any]:
        return {k: record[k] for k in self.detail_fields}

    @property
    def text(self) -> str:
        """The source side's text pipeline (``config.text``: "authors" or "evenhand")."""
        return getattr(getattr(self, "config", None), "text", "authors")


#: bert_score's precision baselines (``rescale_baseline/en/<model>.tsv``, column P) by
#: (encoder name, layer): the ones FairSumm's code uses.
BERT_SCORE_BASELINES: dict[tuple[str, int], float] = {("roberta-large", 17): 0.83150584}


def bert_score_baseline(encoder: str, layer: int | None) -> float | None:
    """bert_score's precision baseline for an encoder (HF id or folder, matched by its last
    path part) at a layer (None: bert_score's default layer, the one ``TextEncoder`` uses);
    None when it ships none."""
    from ...decoding.beam.embeddings import default_layer

    name = encoder.rstrip("/").split("/")[-1]
    layer = default_layer(encoder) if layer is None else layer
    return BERT_SCORE_BASELINES.get((name, layer)) if layer is not None else None


@dataclass
class BertScoreConfig(ScorerConfig):
    """Settings of ``fairsumm-bertscore`` (see the module docstring)."""

    encoder: str = field(default="minilm", metadata={"help": "Encoder folder/HF id (roberta-large as in FairSumm) or 'minilm' (embedded fallback)."})
    layer: int | None = field(default=None, metadata={"help": "Hidden layer (None: bert_score's default, 17 for roberta-large; MiniLM: last)."})
    baseline: float | None = field(default=None, metadata={"help": "bert_score precision baseline b for rescaling (P-b)/(1-b) (None: bert_score's own b where it has one, see `rescale`)."})
    rescale: bool = field(default=True, metadata={"help": "Rescale with bert_score's baseline when it has one for the encoder (roberta-large layer 17, as FairSumm's code); off: raw P unless `baseline` is set."})
    temperature: float = field(default=DEFAULT_TEMPERATURE, metadata={"help": "Softmax temperature T (code 2, paper 0.1)."})
    method: str = field(default="summary", metadata={"help": "'summary' (code default summary_combine) or 'sentence' (softmax per summary sentence, averaged)."})
    max_length: int | None = field(default=None, metadata={"help": "Tokens per text (None: the encoder's positions, 512 for roberta/MiniLM)."})
    device: str | None = field(default=None, metadata={"help": "cpu, cuda... (default: auto)."})
    target_only: bool = field(default=False, metadata={"help": "Restrict to the target group's documents (off: fairness compares values)."})
    text: str = field(default="authors", metadata={"help": "Source side: " + TEXT_HELP})

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_temperature(self.temperature)
        check_text(self.text)
        if self.method not in ("summary", "sentence"):
            raise ValueError(f"`method` must be 'summary' or 'sentence', got {self.method!r}")
        if self.baseline is not None and not self.baseline < 1:
            raise ValueError(f"`baseline` must be a float below 1 or None, got {self.baseline!r}")
        if not isinstance(self.encoder, str) or not self.encoder.strip():
            raise ValueError(f"`encoder` must be 'minilm' or an encoder folder/HF id, got {self.encoder!r}")


@register("fairsumm-bertscore")
class FairSummBertScore(_ModelMetric, Scorer[BertScoreConfig]):
    """FairSumm with the BERTScore target (−UER; higher is fairer)."""

    Config = BertScoreConfig
    prefix = "fairsumm_bertscore"
    cli_options = {"embed_model": "encoder", "device": "device", "fairsumm_text": "text"}

    #: A ready ``TextEncoder`` to use instead of loading ``config.encoder`` (None: load it).
    _encoder: Any = None

    @property
    def encoder(self) -> Any:
        """The ``TextEncoder``, loaded on first use (once per process: ``load_encoder`` keeps it)."""
        from ...decoding.beam.embeddings import load_encoder

        c = self.config
        return self._encoder or load_encoder(c.encoder, c.layer, c.device, c.max_length)

    @property
    def model_id(self) -> str:
        from ...decoding.beam.embeddings import MINILM_ALIASES, MINILM_NAME

        c = self.config
        name = MINILM_NAME if c.encoder in MINILM_ALIASES else c.encoder
        b = self.baseline
        return f"{name}|layer={c.layer}|" + ("raw" if b is None else f"rescaled:{b}")

    @property
    def baseline(self) -> float | None:
        """The b of the rescale: ``baseline`` when set, else bert_score's own for the encoder
        (when ``rescale``), else None (raw P)."""
        c = self.config
        if c.baseline is not None or not c.rescale:
            return c.baseline
        return bert_score_baseline(c.encoder, c.layer)

    def precisions(self, candidates: list[str], references: list[str]) -> list[list[float]]:
        """BERTScore precision (rescaled when ``baseline`` is set) of every candidate against every
        reference; each text is encoded once."""
        from ...evaluation.metrics.fairsumm import greedy_precision, rescale

        unique = list(dict.fromkeys([*candidates, *references]))
        states = dict(zip(unique, self.encoder.token_states(unique, self.config.batch_size)))
        out = []
        for cand in candidates:
            h, special = states[cand]
            content = h[~special]
            row = [
                rescale(greedy_precision(content.numpy(), states[ref][0].numpy()), self.baseline)
                if len(content) else 0.0
                for ref in references
            ]
            out.append(row)
        return out

    def _score_batch(self, sources: list[Example], outputs: list[str]) -> list[dict[str, Any]]:
        from ...evaluation.metrics.fairsumm import similarity_target
        from ...evaluation.text.sentences import split_sentences

        results = []
        for example, summary in zip(sources, outputs):
            counts, texts = value_texts(example, self.name, self.text)
            values = [v for v, t in texts.items() if t]
            units = [summary] if self.config.method == "summary" else (split_sentences(summary) or [summary])
            grid = self.precisions(units, [texts[v] for v in values])
            targets = [
                similarity_target(texts, unit, dict(zip(values, row)), self.config.temperature)
                for unit, row in zip(units, grid)
            ]
            target = {v: sum(t[v] for t in targets) / len(targets) for v in texts}
            row = distribution_row(self.prefix, counts, target, self.text, summary)
            row.update(score=-row[f"{self.prefix}_uer"], fairsumm_bertscore_backend=self.model_id)
            results.append(row)
        return results


@dataclass
class BartScoreConfig(LmConfig):
    """Settings of ``fairsumm-bartscore``: ``lm-likelihood``'s, plus the temperature."""

    temperature: float = field(default=DEFAULT_TEMPERATURE, metadata={"help": "Softmax temperature T (code 2, paper 0.1)."})
    target_only: bool = field(default=False, metadata={"help": "Restrict to the target group's documents (off: fairness compares values)."})
    score_end: bool = field(default=True, metadata={"help": "Also score the token that ends the summary (BARTScore's code scores </s>)."})
    text: str = field(default="authors", metadata={"help": "Source side: " + TEXT_HELP})

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_temperature(self.temperature)
        check_text(self.text)


@register("fairsumm-bartscore")
class FairSummBartScore(_ModelMetric, LmScorer[BartScoreConfig]):
    """FairSumm with the BARTScore target: softmax over values of mean log p(summary | value) / T."""

    Config = BartScoreConfig
    prefix = "fairsumm_bartscore"
    cli_options = {**LmScorer.cli_options, "fairsumm_text": "text"}

    def value_scores(self, sources: list[Example], outputs: list[str]) -> list[dict[str, float]]:
        """Per output, per value with documents: mean token log p(summary | that value's documents).

        All (value, summary) pairs of the batch go to one ``conditional`` call, so
        each value's prompt runs once for every summary of its example.
        """
        pairs: list[tuple[int, str, Example]] = []
        for i, ex in enumerate(sources):
            source_profile(ex, self.name, self.text)
            for value in ex.groups:
                docs = [Document(d.text, d.group) for d in ex.documents if d.group == value]
                if docs:
                    pairs.append((i, value, Example(id=f"{ex.id}:{value}", documents=docs)))
        means = self.conditional([p[2] for p in pairs], [outputs[p[0]] for p in pairs])
        out: list[dict[str, float]] = [{} for _ in outputs]
        for (i, value, _), mean in zip(pairs, means):
            out[i][value] = mean.mean
        return out

    def _score_batch(self, sources: list[Example], outputs: list[str]) -> list[dict[str, Any]]:
        from ...evaluation.metrics.fairsumm import similarity_target

        results = []
        for example, summary, scores in zip(sources, outputs, self.value_scores(sources, outputs)):
            counts, texts = value_texts(example, self.name, self.text)
            target = similarity_target(texts, summary, scores, self.config.temperature)
            row = distribution_row(self.prefix, counts, target, self.text, summary)
            row.update(score=-row[f"{self.prefix}_uer"], fairsumm_bartscore_backend=self.model_id)
            results.append(row)
        return results
