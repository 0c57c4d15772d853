"""``checker``: faithfulness by evenhand's own trained checker (``evenhand.rerank.checker``).

A summary is split into claims (``claims.split_claims``); each claim is
checked against the documents of the groups it names (all documents when it
names none), a document's support being the checker's largest p(window
supports claim) over its windows of about ``window_words`` words that the
claim is checked against (``claims.closest_windows``: the ``max_windows``
sharing the most content words with the claim, and for a "most" claim at
least one per document; 0: all); the
claim's score aggregates its documents' support by its quantifier
(``claims.aggregate``: "most" needs half of them, "one" needs one), times
``number_factor`` when the claim states a number that none of those documents
states about the same thing (``claims.unsupported_numbers``: the cross-encoder
reads digits poorly); a claim whose quantifier contradicts them
(``claims.quantity_conflict``: "most" against the documents' ratings or for a
detail few of them share, "only one" for what most say; the cross-encoder reads
one document at a time and cannot count; also the writers a claim names after
"from", ``claims.from_writers``) scores ``quantity_score`` (-1) instead;
so does a claim about several writers ("most guests", "three of the speakers",
``claims.about_several``) that one document alone supports, by the checker
(``claims.concentrated``) or, with ``lm_check``, by an LM: said of one writer
(``claims.one_writer``), the claim's mean token log-prob after one document
exceeds that after every other by more than ``lm_gap`` (the LM reads each
document alone, its prompt run once for all claims about it; the same words
after each document, so this is the gap between per-document PMIs). ``lm_check``
is off by default: on fresh hand-written pairs it changed no result, at 1.9x the
cost (docs/reranking.md).
A claim that quotes a writer verbatim ("One of the one-star reviewers wrote: "The
strap broke after two weeks."", ``claims.quoted_source``) is not read by the model:
it scores ``QUOTED_SCORE`` (1) when the quotation is the text of a document of the
group it names, ``quantity_score`` when it is only in other groups' documents (a
quotation given to the wrong group); a quotation no document holds is read as usual.
The summary's score is the mean over its claims, in [-1, 1] ([0, 1] without
such claims). A summary without claims scores ``empty_score``.

The model is the entailment model the package ships (``evenhand.rerank.entail``,
issue 48: a MiniLM cross-encoder trained on public labelled pairs, named
``evenhand-entail <sha8>``) when there is one, else the issue-33 checker (a
MiniLM cross-encoder trained on corruptions of ``checker/corpus.jsonl``, named
``evenhand-checker <key>``); every record names it in ``backend``. With
``rules`` false, none of the above rules applies: the score is the model's
plain chunk x sentence max-mean (``entail.inferencer``: each summary sentence
read with its ``k`` closest chunks of about ``chunk_words`` words).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...evaluation.data.checks import check_count, check_flags, check_number
from ...evaluation.data.schema import Example
from ...evaluation.scoring.registry import register
from ...evaluation.scoring.scorer import Scorer, ScorerConfig
from ..checker.claims import (
    about_several,
    aggregate,
    closest_windows,
    concentrated,
    from_writers,
    is_majority,
    named_groups,
    one_writer,
    quantity_conflict,
    quoted_source,
    split_claims,
    unsupported_numbers,
    windows,
)
from ..lm_prefix import branched_logprobs

#: Tokens per forward of the LM test (documents' prompts and the claims read after them).
LM_TREE_TOKENS = 4096


def _common_start(rows: list[list[int]]) -> list[int]:
    """The longest common start of token rows, one token short of the shortest (each keeps a branch).

    >>> _common_start([[1, 2, 3, 4], [1, 2, 5]]), _common_start([[1, 2], [1, 2, 3]])
    ([1, 2], [1])
    """
    n = min(len(r) for r in rows) - 1
    for i in range(n):
        if any(r[i] != rows[0][i] for r in rows):
            return rows[0][:i]
    return rows[0][:n]


#: The score of a claim that quotes a document of the group it names word for word (``claims.quoted_source``).
QUOTED_SCORE = 1.0


@dataclass
class CheckerScorerConfig(ScorerConfig):
    """Settings of the ``checker`` scorer."""

    folder: str = field(default="", metadata={
        "help": "An entailment model folder (`evenhand build-checker --train-file`) or an issue-33 checker folder "
        "(default: the shipped entailment model; without one, the issue-33 recipe's checker, shipped built)."})
    window_words: int = field(default=60, metadata={"help": "Words per premise window of a document."})
    max_length: int = field(default=128, metadata={"help": "Tokens per (window, claim) pair."})
    max_windows: int = field(default=3, metadata={
        "help": "Windows checked per claim, the ones sharing the most content words with it (a claim "
        "about most documents: at least one per document; 0: all)."})
    empty_score: float = field(default=0.0, metadata={"help": "Score of a summary without claims."})
    number_factor: float = field(default=0.25, metadata={
        "help": "Factor on the score of a claim stating a number its documents do not state (1: no check)."})
    quantity_check: bool = field(default=True, metadata={
        "help": "Score a claim whose quantifier its documents contradict ('most' against most groups' ratings or "
        "for a detail few documents share, 'only one' for what most say) as `quantity_score`."})
    quantity_score: float = field(default=-1.0, metadata={
        "help": "Score of such a claim in place of its support, in [-1, 1] (default -1: below any claim that is "
        "merely unsupported)."})
    lm_check: bool = field(default=False, metadata={
        "help": "Also score as `quantity_score` a claim about several writers ('most guests', 'three of the "
        "speakers') that one document alone makes likely under `lm_model`: the LM's mean log-prob of the claim "
        "said of one writer after that document exceeds that after every other document by more than `lm_gap` "
        "(needs `quantity_check`; false: no LM is loaded)."})
    lm_model: str = field(default="smollm2-135m-instruct", metadata={
        "help": "The LM of `lm_check`: embedded alias, local folder or cached HF id (read as lm-pmi reads it)."})
    lm_gap: float = field(default=1.5, metadata={
        "help": "Nats per token by which one document must lead the next for `lm_check` to fire (> 0)."})
    device: str | None = field(default=None, metadata={"help": "cpu, cuda... (default: auto)."})
    rules: bool = field(default=True, metadata={
        "help": "Read the summary as claims and apply the phrase rules (groups, quantifiers, numbers, quotations) "
        "over the model's support; false: the entailment model's plain max-mean over the source's chunks "
        "(`entail.inferencer`), no rule overriding it."})
    k: int = field(default=2, metadata={"help": "Without `rules`: chunks read per summary sentence (0: all)."})
    chunk_words: int = field(default=70, metadata={"help": "Without `rules`: words per source chunk."})
    select: str = field(default="embedding", metadata={
        "help": "Without `rules`: how a sentence's chunks are chosen, 'embedding' (MiniLM cosine) or 'words'."})
    int8: bool = field(default=False, metadata={
        "help": "Entailment model with dynamically quantized int8 Linear layers (CPU)."})

    def __post_init__(self) -> None:
        super().__post_init__()
        check_flags(self, "rules", "int8")
        if not isinstance(self.folder, str):
            raise ValueError(f"`folder` must be a folder path (text), got {self.folder!r}")
        if self.folder:
            from ..alignment import trained_folder_problem

            problem = trained_folder_problem(self.folder)
            if problem:
                raise ValueError(f"`folder`: {problem}")
        check_count(self.k, "k", low=0, high=1000)
        check_count(self.chunk_words, "chunk_words")
        if self.select not in ("embedding", "words"):
            raise ValueError(f"`select` must be 'embedding' or 'words', got {self.select!r}")
        if not isinstance(self.window_words, int) or self.window_words < 1:
            raise ValueError(f"`window_words` must be a positive int, got {self.window_words!r}")
        check_count(self.max_windows, "max_windows", low=0, high=10_000)
        if not isinstance(self.max_length, int) or self.max_length < 16:
            raise ValueError(f"`max_length` must be an int >= 16, got {self.max_length!r}")
        for name, low in (("number_factor", 0.0), ("quantity_score", -1.0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= 1.0:
                raise ValueError(f"`{name}` must be a number in [{low:g}, 1], got {value!r}")
        check_flags(self, "quantity_check", "lm_check")
        check_number(self.lm_gap, "lm_gap", low=0, low_open=True)
        if not isinstance(self.lm_model, str) or not self.lm_model.strip():
            raise ValueError(f"`lm_model` must name a model (alias, folder or HF id), got {self.lm_model!r}")


def claim_documents(claim: str, example: Example) -> list[str]:
    """Texts of the documents a claim is checked against: its named groups', else all."""
    groups = set(named_groups(claim, example))
    docs = [d.text for d in example.documents if not groups or d.group in groups]
    return docs or [d.text for d in example.documents]


def quantity_conflicts(claim: str, example: Example, documents: list[str]) -> bool:
    """Whether the claim's quantifier contradicts its documents (``claims.quantity_conflict``), or that of the
    writers it names after "from" (``claims.from_writers``: "… come from several reviewers whose …",
    checked against the documents that restatement is about)."""
    if quantity_conflict(claim, example, documents) is not None:
        return True
    restated = from_writers(claim)
    return restated is not None and quantity_conflict(restated, example, claim_documents(restated, example)) is not None


@register("checker")
class CheckerScorer(Scorer[CheckerScorerConfig]):
    """Support of each claim of the summary by the documents it is about, by evenhand's checker."""

    Config = CheckerScorerConfig
    # 1: framed news claims ("The article argues that A, B") split into their points; 2: max_windows;
    # 3: quantity_check; 4: counts, "half", stances, and claims about several that one document states alone;
    # 5: the last at support 0.15 (was 0.3); 6: lm_check, "all but N", "are N stars"; 7: writers named after "from";
    # 8: "rate it highly/poorly" states the labels (and, agreeing, skips the spread rule), "several" of a one-document group
    # 9: after_comma (reverted); 10: a verbatim quotation is one claim, scored by its attribution
    # (claims.quoted_source); 11: more quantifiers ("plenty of", "lots of", "a handful") and writers ("posters");
    # 12: "a good number of", contributions as writers, the writers' noun looked for in 7 words;
    # 13: a majority claim stating one document's detail (claims.one_document_detail)
    # (the entailment model of issue 48, when one is shipped or configured, needs no version of its
    # own: `model_id` is its folder, whose content digest is part of the cache key)
    score_version = 13
    detail_fields = ("backend", "claims", "weakest")
    cli_options = {"device": "device"}

    def __init__(self, config: CheckerScorerConfig | None = None, cache_dir: Any = None) -> None:
        super().__init__(config, cache_dir)
        self._model: Any = None
        self._lm: Any = None
        self._lm_means: dict[tuple[str, str], float] = {}  # (document, claim said of one writer) -> mean log-prob

    @property
    def entail(self) -> bool:
        """Whether the scores come from the entailment model (``evenhand.rerank.entail``): the configured folder
        holds one, or none is configured and the package ships one."""
        from ..entail.model import has_model

        return has_model(self.config.folder or None)

    @property
    def folder(self) -> Path:
        """The model's folder: the configured one, the shipped entailment model's, or the issue-33 recipe's."""
        from ..checker.model import checker_dir
        from ..entail.model import shipped_dir

        if self.config.folder:
            return Path(self.config.folder)
        return shipped_dir() if self.entail else checker_dir()

    @property
    def model_id(self) -> str:
        return str(self.folder)

    @property
    def backend_name(self) -> str:
        from ..alignment import checker_backend_name

        return checker_backend_name(self.folder, self.config.int8)

    def _load(self) -> Any:
        if self._model is None:
            from ..alignment import load_trained

            self._model = load_trained(self.config.folder or None, self.config.device, self.config.max_length,
                                       self.config.int8)
        return self._model

    def _plain(self, sources: list[Example], outputs: list[str]) -> list[dict[str, Any]]:
        """Without ``rules``: the model's max-mean over each source's chunks (``entail.inferencer``)."""
        from ..entail.inferencer import Inferencer

        c = self.config
        inferencer = Inferencer(self._load(), c.k, c.chunk_words, c.select, c.batch_size, c.empty_score)
        rows = inferencer.score([[d.text for d in ex.documents] for ex in sources], outputs)
        return [{"score": r["score"], "backend": self.backend_name, "claims": r["sentences"],
                 "weakest": min(r["per_sentence"], default=c.empty_score)} for r in rows]

    def _score_batch(self, sources: list[Example], outputs: list[str]) -> list[dict[str, Any]]:
        if not self.config.rules:
            return self._plain(sources, outputs)
        model = self._load()
        # per output, per claim: (claim, example, its documents, majority, [window indices per document],
        # number factor, conflict); a claim whose quantifier conflicts has no window to check
        plans = []
        premises: list[str] = []
        hypotheses: list[str] = []
        split: dict[str, list[str]] = {}  # a document's windows, cut once for all claims of the batch
        for ex, out in zip(sources, outputs):
            plan = []
            for claim in split_claims(out):
                docs = []
                quoted = quoted_source(claim, ex)
                if quoted is not None:  # the source's own words: right group or not, no model reading
                    plan.append((claim, ex, [], False, [], 1.0, not quoted))
                    continue
                texts = claim_documents(claim, ex)
                factor = self.config.number_factor if unsupported_numbers(claim, texts) else 1.0
                if self.config.quantity_check and quantity_conflicts(claim, ex, texts):
                    plan.append((claim, ex, texts, False, [], 1.0, True))
                    continue
                majority = is_majority(claim)
                for text in texts:
                    if text not in split:
                        split[text] = windows(text, self.config.window_words)
                parts = [split[text] for text in texts]
                for doc, keep in zip(parts, closest_windows(claim, parts, self.config.max_windows, majority)):
                    docs.append(list(range(len(premises), len(premises) + len(keep))))
                    premises.extend(doc[i] for i in keep)
                    hypotheses.extend([claim] * len(keep))
                plan.append((claim, ex, texts, majority, docs, factor, False))
            plans.append(plan)
        probs = model.probs(premises, hypotheses, self.config.batch_size) if premises else []
        # a claim about several documents that one of them states alone is a conflict too: by the checker's
        # support, else (``lm_check``) by the LM's reading of each document
        lm_test: list[tuple[str, list[str]]] = []
        for plan in plans:
            for j, (claim, ex, texts, majority, docs, factor, conflict) in enumerate(plan):
                if not texts:  # a quotation (claims.quoted_source): scored already
                    continue
                support = [max(probs[i] for i in rows) for rows in docs if rows]
                conflict = conflict or (self.config.quantity_check and concentrated(claim, ex, texts, support))
                plan[j] = (claim, ex, texts, majority, support, factor, conflict)
                if not conflict and self.config.quantity_check and self.config.lm_check \
                        and about_several(claim, ex, texts, opinions=False):
                    lm_test.append((claim, texts))
        alone = self._one_document_leads(lm_test)
        results = []
        for plan in plans:
            scores = []
            for claim, _, texts, majority, support, factor, conflict in plan:
                conflict = conflict or (claim, tuple(texts)) in alone
                if conflict:
                    scores.append(self.config.quantity_score)
                elif not texts:  # a verbatim quotation of the right group
                    scores.append(QUOTED_SCORE)
                else:
                    scores.append(factor * aggregate(support, majority))
            results.append({
                "score": sum(scores) / len(scores) if scores else self.config.empty_score,
                "backend": self.backend_name, "claims": len(scores),
                "weakest": min(scores) if scores else self.config.empty_score,
            })
        return results

    # -- lm_check ------------------------------------------------------------------
    def lm(self) -> Any:
        """The ``lm-pmi`` scorer whose model ``lm_check`` reads (not loaded until used; it shares the model
        with an ``lm-pmi`` of the same settings in this process)."""
        if self._lm is None:
            from .lm_likelihood import LmConfig, LmPmi

            self._lm = LmPmi(LmConfig(model=self.config.lm_model, device=self.config.device, progress=False))
        return self._lm

    def _one_document_leads(self, claims: list[tuple[str, list[str]]]) -> set[tuple[str, tuple[str, ...]]]:
        """The (claim, documents) pairs whose claim, said of one writer (``claims.one_writer``), one document
        makes more likely than every other by more than ``lm_gap`` (mean log-prob per token after each
        document alone; the same words read after each, so this is also the gap in per-document PMI).

        Each document's prompt runs once for all the claims read after it: in-process, all documents' prompts
        in one tree of their shared start (``lm_prefix.branched_logprobs``, per ``LM_TREE_TOKENS`` tokens);
        on vLLM or a server, one request per document and claim (their prefix cache shares the prompt).
        """
        if not claims:
            return set()
        lm = self.lm()
        limit = lm.config.max_source_tokens
        wanted: dict[str, dict[str, None]] = {}
        for claim, texts in claims:
            for text in texts:
                if (text, one_writer(claim)) not in self._lm_means:
                    wanted.setdefault(text, {})[one_writer(claim)] = None
        prompts, suffixes = {}, {}
        for text, said in wanted.items():
            ids = lm._ids(text)
            prompt = lm._load()[1].decode(ids[:limit]) if len(ids) > limit else text  # a long turn: its start
            prompts[text] = lm.prefix_ids(prompt)
            suffixes.update({c: lm.summary_ids(c) for c in said if c not in suffixes})
        if lm.on_vllm or lm.server is not None or lm._seq2seq:  # one request or pass per document
            for text, said in wanted.items():
                rows = lm.token_logprobs(prompts[text], [suffixes[c] for c in said])
                self._lm_means.update({(text, c): float(r.mean()) for c, r in zip(said, rows)})
            return self._leads(claims)
        # in-process causal LM: the documents' prompts as branches of their shared start, a tree per
        # LM_TREE_TOKENS tokens (``lm_prefix.branched_logprobs``: two forwards each)
        texts = list(wanted)
        while texts:
            size, group = 0, []
            for text in texts:
                cost = len(prompts[text]) + sum(len(suffixes[c]) for c in wanted[text])
                if group and size + cost > LM_TREE_TOKENS:
                    break
                size, group = size + cost, [*group, text]
            texts = texts[len(group):]
            stem = _common_start([prompts[t] for t in group])
            if stem:
                rows = branched_logprobs(lm._load()[0], stem, [
                    (prompts[t][len(stem):], [suffixes[c] for c in wanted[t]]) for t in group])
            else:  # prompts that share no start (no bos, no template): one pass per document
                rows = [lm.token_logprobs(prompts[t], [suffixes[c] for c in wanted[t]]) for t in group]
            for text, values in zip(group, rows):
                self._lm_means.update({(text, c): float(r.mean()) for c, r in zip(wanted[text], values)})
        return self._leads(claims)

    def _leads(self, claims: list[tuple[str, list[str]]]) -> set[tuple[str, tuple[str, ...]]]:
        """The claims of ``_one_document_leads`` whose leading document leads by more than ``lm_gap``."""
        leads = set()
        for claim, texts in claims:
            means = sorted((self._lm_means[(t, one_writer(claim))] for t in texts), reverse=True)
            if means[0] - means[1] > self.config.lm_gap:
                leads.add((claim, tuple(texts)))
        return leads

    def _model_content(self) -> list[str] | None:
        """The checker folder's digest, and with ``lm_check`` the LM's (a local model replaced in place)."""
        own = super()._model_content() or []
        lm = (self.lm()._cached_model_content() or []) if self.config.lm_check else []
        return own + lm or None

    def cache_clear(self) -> None:
        """Forget the in-memory cache and the LM test's per-document log-probs."""
        super().cache_clear()
        self._lm_means.clear()
