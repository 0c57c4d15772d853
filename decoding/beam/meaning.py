"""Meaning-level group coverage for fair beam search (``--fair-meaning W``).

The N-gram terms of fair decoding (α, β) steer *words*; readers judge *meaning*.
This module measures a partial summary's group coverage in meaning, with the
backend of Equal Coverage's offline fallback and ``fairsumm-bertscore``'s
(:mod:`evenhand.decoding.beam.embeddings`, default the embedded MiniLM):

* once per example: each document is cut into Equal Coverage's blocks
  (sentences joined under ``block_words`` words) and every block embedded
  (unit-norm mean-pooled states);
* per check (every ``every`` generated tokens): the generated text of all
  candidates of the batch is embedded in one call, e (B, P, h); per document
  d, its coverage c_d = max over d's blocks b of max(0, cos(e, b)) (the
  equal-coverage scorer's p(d, s) with the partial summary as one unit); per
  group g, its mean coverage m_g = mean over g's documents of c_d;
* penalty M ∈ [0, 1] (``measure``):
  - ``"ec"`` (default): Equal Coverage of the partial summary,
    (1/|G|) Σ_g |m_g − mean_d c_d|;
  - ``"uer"``: UER of the meaning distribution q = softmax_g(m_g / T) against
    the decoder's target t (FairSumm's embedding variant);
  - ``"both"``: their mean.

The search ranks candidates by log p + n^λ (β F − W M); between checks a
candidate keeps its parent beam's M. Finished hypotheses are re-ranked once
at the end by J − W · EC, EC the sentence-level Equal Coverage of the whole
summary (summary sentences as units, P[s, d] = max over blocks of
max(0, cos); ``evenhand.evaluation.metrics.coverage.equal_coverage``) — the final
rerank by Equal Coverage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...evaluation.data.schema import Example
from ...evaluation.metrics.fairsumm import unfair_error_rate
from ...evaluation.text.sentences import split_sentences, word_blocks

MEASURES = ("ec", "uer", "both")


@dataclass(frozen=True)
class MeaningCoverage:
    """Per batch: the block embeddings and maps, the encoder, and the weight W.

    Attributes:
        weight: W >= 0, weight of the meaning penalty M in the beam objective.
        encoder: a :class:`evenhand.decoding.beam.embeddings.TextEncoder`.
        tokenizer: the generator's tokenizer (decodes candidates).
        blocks: (B, K, h) unit-norm block embeddings (zeros on padding).
        block_doc: (B, K) document index of each block (0 on padding).
        block_mask: (B, K) real blocks.
        doc_group: (B, D, G) one-hot group of each document (zeros on padding).
        target: (B, G) the decoder's target distribution t; ``present``: (B, G) its groups.
        every: generated tokens between checks (>= 1).
        measure: ``ec``, ``uer`` or ``both``.
        temperature: T of the ``uer`` softmax.
        groups: per example its group names (GroupTables order).
    """

    weight: float
    encoder: Any
    tokenizer: Any
    blocks: Any
    block_doc: Any
    block_mask: Any
    doc_group: Any
    target: Any
    present: Any
    every: int = 8
    measure: str = "ec"
    temperature: float = 0.1
    groups: tuple[tuple[str, ...], ...] = ()

    @classmethod
    def build(
        cls, examples: Sequence[Example], tables: Any, encoder: Any, tokenizer: Any, weight: float,
        every: int = 8, measure: str = "ec", temperature: float = 0.1, block_words: int = 100,
    ) -> MeaningCoverage:
        """Embed every example's document blocks once (one encoder call for the batch)."""
        import torch

        if not weight >= 0:
            raise ValueError(f"`fair_meaning` must be a non-negative float, got {weight!r}")
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"`fair_meaning_every` must be a positive int, got {every!r}")
        if measure not in MEASURES:
            raise ValueError(f"`fair_meaning_measure` must be one of {MEASURES}, got {measure!r}")
        if not temperature > 0:
            raise ValueError(f"`temperature` must be a positive float, got {temperature!r}")
        per_ex = [[word_blocks(split_sentences(d.text), block_words) or [d.text] for d in ex.documents]
                  for ex in examples]
        texts = [b for docs in per_ex for blocks in docs for b in blocks]
        emb = encoder.sentence_embeddings(texts)
        b, k = len(examples), max(sum(len(x) for x in docs) for docs in per_ex)
        d_max, g_max = max(len(ex.documents) for ex in examples), tables.target.shape[1]
        blocks = torch.zeros(b, k, emb.shape[1])
        block_doc = torch.zeros(b, k, dtype=torch.long)
        block_mask = torch.zeros(b, k, dtype=torch.bool)
        doc_group = torch.zeros(b, d_max, g_max)
        pos = 0
        for i, (ex, docs) in enumerate(zip(examples, per_ex)):
            index = {g: j for j, g in enumerate(tables.groups[i])}
            n = sum(len(x) for x in docs)
            blocks[i, :n] = emb[pos : pos + n]
            block_doc[i, :n] = torch.tensor([d for d, x in enumerate(docs) for _ in x])
            block_mask[i, :n] = True
            for d, doc in enumerate(ex.documents):
                doc_group[i, d, index[doc.group]] = 1.0
            pos += n
        device = tables.target.device
        return cls(
            weight=float(weight), encoder=encoder, tokenizer=tokenizer, blocks=blocks.to(device),
            block_doc=block_doc.to(device), block_mask=block_mask.to(device),
            doc_group=doc_group.to(device), target=tables.target, present=tables.present,
            every=every, measure=measure, temperature=temperature, groups=tables.groups,
        )

    # -- the penalty, vectorized over the batch and the candidates --------------------------
    def document_coverage(self, emb: Any, rows: Any = slice(None)) -> Any:
        """c (B, P, D): per document, max over its blocks of max(0, cos) with each of the
        (B, P, h) unit-norm summary embeddings (``rows``: the examples they belong to)."""
        import torch

        blocks, mask, doc = self.blocks[rows], self.block_mask[rows], self.block_doc[rows]
        sims = torch.einsum("bph,bkh->bpk", emb, blocks).clamp(min=0.0)
        sims = sims.masked_fill(~mask[:, None, :], 0.0)
        b, p, _ = sims.shape
        out = sims.new_zeros(b, p, self.doc_group.shape[1])
        return out.scatter_reduce(2, doc[:, None, :].expand(-1, p, -1), sims, reduce="amax", include_self=True)

    def penalty_from_coverage(self, coverage: Any) -> Any:
        """M (B, P) from document coverage (B, P, D) (module docstring)."""
        has_docs = self.doc_group.sum(1)  # (B, G) documents per group
        groups = has_docs > 0
        n_docs = self.doc_group.sum((1, 2)).clamp(min=1)  # (B,)
        group_mean = coverage @ self.doc_group / has_docs.clamp(min=1)[:, None, :]  # (B, P, G)
        doc_mean = coverage.sum(-1) / n_docs[:, None]  # (B, P)
        gm = groups[:, None, :].to(coverage.dtype)
        ec = ((group_mean - doc_mean[..., None]).abs() * gm).sum(-1) / gm.sum(-1).clamp(min=1)
        if self.measure == "ec":
            return ec
        present = self.present[:, None, :]
        logits = (group_mean / self.temperature).masked_fill(~present, float("-inf"))
        q = logits.softmax(-1).nan_to_num(0.0)
        uer = unfair_error_rate(self.target[:, None, :], q, present.to(q.dtype))
        return uer if self.measure == "uer" else (ec + uer) / 2

    def penalty(self, generated: Any) -> Any:
        """M (B, P) of the generated token ids (B, P, n); 0 for a candidate with no text yet."""
        b, p, _ = generated.shape
        texts = self.tokenizer.batch_decode(generated.reshape(b * p, -1), skip_special_tokens=True)
        emb = self.encoder.sentence_embeddings([t.strip() or "." for t in texts])
        emb = emb.to(self.blocks.device).view(b, p, -1)
        m = self.penalty_from_coverage(self.document_coverage(emb))
        empty = self.blocks.new_tensor([not t.strip() for t in texts], dtype=bool).view(b, p)
        return m.masked_fill(empty, 0.0)

    def final_ec(self, generated: Any) -> Any:
        """Sentence-level Equal Coverage (B, k) of finished hypotheses (token ids (B, k, n)).

        Units are the summary's sentences (all of the batch embedded in one call);
        a summary without units or covered units gets EC 1 (the worst)."""
        import numpy as np
        import torch

        from ...evaluation.metrics.coverage import equal_coverage

        b, k, _ = generated.shape
        texts = self.tokenizer.batch_decode(generated.reshape(b * k, -1), skip_special_tokens=True)
        units = [split_sentences(t) for t in texts]
        flat = [u for us in units for u in us]
        emb = self.encoder.sentence_embeddings(flat).to(self.blocks.device) if flat else None
        out = torch.ones(b * k)
        pos = 0
        for row, us in enumerate(units):
            i = row // k
            if us:
                assert emb is not None  # some row has units, so `flat` was embedded
                cov = self.document_coverage(emb[pos : pos + len(us)][None], slice(i, i + 1))[0]  # (S, D)
                cov = cov[:, : int(self.doc_group[i].sum())].cpu().numpy()
                names = self.doc_group[i].argmax(-1)[: cov.shape[1]].tolist()
                if cov.max() > 0 and len(set(names)) >= 2:
                    out[row] = equal_coverage(np.clip(cov, 0, 1), [str(n) for n in names]).ec
            pos += len(us)
        return out.view(b, k).to(self.blocks.device)
