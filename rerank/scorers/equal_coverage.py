"""``equal-coverage``: −EC, the negated Equal Coverage of a summary (Li et al. 2024).

Each document is cut into blocks of consecutive sentences under ``block_words``
words (``text.word_blocks``, the authors' code); the summary into units
(sentences by default; ``units="acus"``: atomic content units listed one per
line by a generator, ``acu_model``, or its sentences when it lists none). For every unit s and document d,

    P[s, d] = max over blocks b of d of p(b supports s)

with p from the alignment backend (``evenhand.rerank.alignment``: NLI, AlignScore
checkpoint, or the MiniLM fallback). ``evenhand.evaluation.metrics.coverage.equal_coverage``
turns P and the documents' groups into EC; the score is −EC (higher = fairer).

Groups: the documents' ``group`` labels. A source without labels (a str or a
list of str) compares its documents with each other (each document its own
group); a single unlabelled document compares its blocks. The record says
which (``groups_from``). A summary without units, or whose units no document
covers at all, gets ``undefined_score`` (default −1, the worst) and
``undefined: true``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ...evaluation.data.schema import Document, Example
from ...evaluation.scoring.registry import register
from ...evaluation.scoring.scorer import Scorer
from ...evaluation.text.sentences import split_sentences, word_blocks
from ..alignment import AlignmentBackendMixin, AlignmentConfig


@dataclass
class EqualCoverageConfig(AlignmentConfig):
    """Settings of the ``equal-coverage`` scorer (``max_length``: tokens per (block, unit) pair)."""

    block_words: int = field(default=100, metadata={"help": "Document blocks stay under this many words."})
    units: str = field(default="sentences", metadata={"help": "Summary units: 'sentences' or 'acus' (atomic facts listed by `acu_model`)."})
    acu_model: str = field(default="smollm2-135m-instruct", metadata={"help": "Model that splits a summary into atomic content units (units='acus')."})
    exclude_uncovered_units: bool = field(default=True, metadata={"help": "Average over covered units only (authors' code)."})
    undefined_score: float = field(default=-1.0, metadata={"help": "Score when EC is undefined."})
    target_only: bool = field(default=False, metadata={"help": "Restrict to the target group's documents (off: EC compares groups)."})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.block_words < 1:
            raise ValueError(f"`block_words` must be a positive int, got {self.block_words}")
        if self.units not in ("sentences", "acus"):
            raise ValueError(f"`units` must be 'sentences' or 'acus', got {self.units!r}")


ACU_PROMPT = (
    "Break the summary below into its atomic facts: short, self-contained statements that each "
    "say one thing. Write one fact per line, starting with '- ', and nothing else.\n\n"
    "Summary: {summary}"
)
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s*")


def parse_units(reply: str, min_words: int = 3) -> list[str]:
    r"""Atomic units from a bulleted or numbered reply; lines under ``min_words`` words are dropped.

    >>> parse_units("- The tax rose.\n2. Critics objected to it.\nok")
    ['The tax rose.', 'Critics objected to it.']
    """
    units = []
    for line in reply.splitlines():
        text = _BULLET.sub("", line).strip()
        if len(text.split()) >= min_words:
            units.append(text)
    return units


def source_groups(example: Example, block_words: int) -> tuple[list[list[str]], list[str], str]:
    """(blocks per compared item, group per item, where the groups came from)."""
    docs = example.documents
    blocks = [word_blocks(split_sentences(d.text), block_words) for d in docs]
    if all(d.group is not None for d in docs) and len({d.group for d in docs}) >= 2:
        return blocks, [str(d.group) for d in docs], "labels"
    if len(docs) >= 2:
        return blocks, [f"doc{i}" for i in range(len(docs))], "documents"
    only = blocks[0]
    return [[b] for b in only], [f"block{i}" for i in range(len(only))], "blocks"


@register("equal-coverage")
class EqualCoverageScorer(AlignmentBackendMixin, Scorer[EqualCoverageConfig]):
    """Negated Equal Coverage: 0 when every group's documents cover the summary alike."""

    Config = EqualCoverageConfig
    detail_fields = ("ec", "group_diffs", "groups_from", "backend", "undefined")

    def __init__(self, config: EqualCoverageConfig | None = None, cache_dir: Any = None) -> None:
        super().__init__(config, cache_dir)
        self._backend: Any = None
        self._acu_model: Any = None
        self._acus: dict[str, list[str]] = {}

    def use_acu_model(self, model: Any, tokenizer: Any) -> EqualCoverageScorer:
        """Split summaries into ACUs with an already loaded model; returns self."""
        self._acu_model = (model, tokenizer)
        return self

    def units(self, summary: str) -> list[str]:
        """The summary's units: sentences, or ACUs from the judge (sentences when it lists none)."""
        sentences = split_sentences(summary)
        if self.config.units == "sentences" or not sentences:
            return sentences
        if summary not in self._acus:
            from ...decoding.config import GenerateConfig
            from ...decoding.generate import generate
            from ...decoding.models import load_generator

            if self._acu_model is None:
                self._acu_model = load_generator(self.config.acu_model, device=self.config.device)
            model, tok = self._acu_model
            request = Example("acu", [Document(summary)], prompt=ACU_PROMPT.format(summary=summary))
            config = GenerateConfig(max_new_tokens=128, num_beams=1)
            (reply,) = generate(model, tok, [request], config, progress=False)
            self._acus[summary] = parse_units(reply) or sentences
        return self._acus[summary]

    def coverage_matrix(self, example: Example, summary: str) -> tuple[Any, list[str], str]:
        """(P[s, d] as a nested list, groups, groups_from) for one pair."""
        return self._matrices([example], [summary])[0]

    def _matrices(self, sources: list[Example], outputs: list[str]) -> list[tuple[Any, list[str], str]]:
        plans = [
            (source_groups(ex, self.config.block_words), self.units(out)) for ex, out in zip(sources, outputs)
        ]
        grids = [([block for blocks in items for block in blocks], units) for (items, _, _), units in plans]
        out_list = []
        for ((items, groups, origin), units), grid in zip(plans, self.pair_grids(grids)):
            matrix = [[0.0] * len(items) for _ in units]
            rows = iter(grid)  # one row per block, item by item
            for d, blocks in enumerate(items):
                for _ in blocks:
                    for s, p in enumerate(next(rows)):
                        matrix[s][d] = max(matrix[s][d], p)
            out_list.append((matrix, groups, origin))
        return out_list

    def columns(self, record: dict[str, Any]) -> dict[str, Any]:
        """``<label>.ec``: the paper's EC (>= 0, 0 = every group covered alike, lower is fairer; NaN
        when undefined) and the backend. The score (-EC, higher is fairer) only ranks candidates."""
        ec = record.get("ec")
        return {f"{self.label}.ec": float("nan") if ec is None else float(ec),
                f"{self.label}_backend": self.backend_label}

    def aggregate(self, records: list[dict[str, Any]]) -> dict[str, float]:
        """The corpus mean EC over the summaries where it is defined (``<label>.ec``)."""
        values = [float(r["ec"]) for r in records if r.get("ec") is not None]
        return {f"{self.label}.ec": sum(values) / len(values) if values else float("nan")}

    def _score_batch(self, sources: list[Example], outputs: list[str]) -> list[dict[str, Any]]:
        from ...evaluation.metrics.coverage import equal_coverage

        results = []
        for matrix, groups, origin in self._matrices(sources, outputs):
            record: dict[str, Any] = {
                "groups_from": origin, "backend": self.backend.name, "undefined": False,
            }
            try:
                if not matrix or len(set(groups)) < 2:
                    raise ValueError("no summary units or fewer than two groups")
                ec = equal_coverage(matrix, groups, self.config.exclude_uncovered_units)
            except ValueError as err:
                record.update(score=self.config.undefined_score, ec=None, group_diffs={},
                              undefined=True, reason=str(err))
            else:
                record.update(score=-ec.ec, ec=ec.ec, group_diffs=ec.group_diffs)
            results.append(record)
        return results
