"""``lm-likelihood``, ``lm-pmi`` and ``fluency``: a language model's token log-probabilities of a summary.

For a summary with tokens y_1..y_n and a source x:

    lm-likelihood = (1/n) * sum_t log p(y_t | prompt(x), y_<t)        (BARTScore, source -> summary)
    fluency       = (1/n) * sum_t log p(y_t | prompt(), y_<t)         (no source)
    lm-pmi        = lm-likelihood - fluency                            (pointwise mutual information)

``lm-likelihood`` is BARTScore's faithfulness direction (Yuan et al. 2021);
``lm-pmi`` is the PMI score of van der Poel et al. (2022): how much the source,
rather than the language model's prior, explains the summary. Natural log, mean
per token, higher is better.

Prompts. A causal LM whose tokenizer has a chat template reads (``chat_prompt``)

    system:    config.system  (default: the generator's DEFAULT_SYSTEM, "You are a
               summarizer. You reply with a short, neutral summary in the third
               person and nothing else."; None = the template's own default)
    user:      the source documents as plain paragraphs (whitespace-normalized,
               separated by a blank line) + "\\n\\n" + config.instruction
               (default "Summarize the text above in a few sentences.")
    assistant: the summary

and without the source the user turn is config.no_source_instruction alone
(default "Write a short summary."). A causal LM without a chat template reads
the same user text followed by "\\n\\n", then the summary. A seq2seq LM is
BARTScore exactly: the encoder reads the source documents (no instruction), the
decoder scores the summary; without the source the encoder input is empty (the
tokenizer's special tokens only, or the eos token when it adds none).

Scored tokens. Only the summary's own tokens count (its text stripped of
surrounding whitespace, tokenized on its own after the prompt): the end-of-turn
token after it (``<|im_end|>``, a seq2seq eos) is not scored, so the score does
not reward stopping early. An empty summary has no tokens of its own and is
scored by the end token alone (the log-probability of replying nothing at once;
``empty: true``, ``n_tokens: 1``). BARTScore's code also scores the target's
``</s>``: ``score_end=True`` does the same (the end token joins the summary's
tokens and its last sentence; ``fairsumm-bartscore`` turns it on).

Long sources (AlignScore's chunking, Zha et al. 2023). When the source
documents take more than ``max_source_tokens`` tokens, they are split with
``text.alignscore_chunks`` into chunks of about ``chunk_words`` words (350, as
AlignScore) at sentence boundaries (a chunk still longer than
``max_source_tokens`` is cut at its end). The summary is scored as a whole
after each chunk's prompt; its tokens are then grouped into its sentences
(``text.split_sentences``), each sentence takes its log-probs from the chunk
under which its mean log-prob is highest (AlignScore's max over chunks per
claim sentence), and the score is the token-weighted mean over sentences:

    lm-likelihood = sum_s max-chunk-sum_s / n,   chunk(s) = argmax_c mean_{t in s} log p_c(y_t)

With one chunk this is the plain mean above. ``fluency`` never reads the source;
``lm-pmi`` subtracts the same ``fluency`` computation from the same
``lm-likelihood`` computation.

Cost. Within a batch the summaries are grouped by source: each chunk's prompt
prefix runs through the model once, and its KV cache (a seq2seq encoder output)
is shared by all summaries of that source, padded on the right after it
(``rerank.lm_prefix.continuation_logprobs``); the no-source prefix runs once per batch.
Batched and one-at-a-time scores agree (to float rounding).

Shared passes. ``lm-pmi``'s two computations are exactly ``lm-likelihood``'s and
``fluency``'s, so LM scorers of the same model and prompt settings share them
(:class:`LmPasses`): each summed log-probability (per source text and summary
for ``conditional``, per summary for ``unconditional``) is computed once per
process and reused by every such scorer, and the model is loaded once for them.
``lm-pmi``, ``lm-likelihood`` and ``fluency`` requested together thus cost
``lm-pmi``'s two passes (tested by counting forward passes).
"""

from __future__ import annotations

import bisect
import json
import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ...decoding.prompts.templates import DEFAULT_SYSTEM
from ...evaluation.data.schema import Example
from ...evaluation.scoring.registry import register
from ...evaluation.text.sentences import alignscore_chunks, split_sentences
from ..lm_prefix import LmBackedConfig, LmBackedScorer, continuation_logprobs

DEFAULT_INSTRUCTION = "Summarize the text above in a few sentences."
DEFAULT_NO_SOURCE_INSTRUCTION = "Write a short summary."

_WORD = re.compile(r"\S+")


def sentence_of_tokens(text: str, offsets: Sequence[tuple[int, int]]) -> list[int]:
    """For each token (by its character span in ``text``) the index of its sentence.

    Sentences are ``split_sentences(text)``; a token belongs to the sentence holding
    its last character, so whitespace between sentences goes with the next one.

    >>> sentence_of_tokens("A b. C d.", [(0, 1), (1, 3), (3, 4), (4, 6), (6, 8), (8, 9)])
    [0, 0, 0, 1, 1, 1]
    """
    words = [m.end() for m in _WORD.finditer(text)]
    ends, count = [], 0
    for sentence in split_sentences(text):
        count += len(sentence.split())
        ends.append(words[count - 1])
    if not ends:
        return [0] * len(offsets)
    return [min(bisect.bisect_right(ends, max(end - 1, start)), len(ends) - 1) for start, end in offsets]


@dataclass
class TokenMean:
    """A summary's summed token log-probs, how many tokens, and how many source chunks gave them."""

    total: float
    n_tokens: int
    chunks: int = 0

    @property
    def mean(self) -> float:
        """Mean log-prob per token."""
        return self.total / self.n_tokens


@dataclass
class LmConfig(LmBackedConfig):
    """Settings of the LM-likelihood scorers (wording: see the module docstring)."""

    batch_size: int = field(
        default=16,
        metadata={"help": "Summaries per batch; those of one source share its prompt's KV cache."},
    )
    instruction: str = field(
        default=DEFAULT_INSTRUCTION,
        metadata={"help": "Instruction after the source documents in the user turn."},
    )
    no_source_instruction: str = field(
        default=DEFAULT_NO_SOURCE_INSTRUCTION,
        metadata={"help": "The whole user turn when the summary is scored without its source."},
    )
    system: str | None = field(
        default=DEFAULT_SYSTEM,
        metadata={"help": "System message of chat models (None: the chat template's default)."},
    )
    max_source_tokens: int = field(
        default=2048,
        metadata={"help": "Longer sources are split into chunks (AlignScore's max over chunks)."},
    )
    chunk_words: int = field(
        default=350, metadata={"help": "Words per source chunk when chunking (AlignScore: 350)."}
    )
    score_end: bool = field(
        default=False,
        metadata={"help": "Also score the end-of-reply token after the summary (BARTScore's code scores </s>)."},
    )
    max_concurrency: int = field(
        default=4, metadata={"help": "vLLM server URL as `model` only: requests in flight at once."}
    )
    timeout: float = field(
        default=120.0, metadata={"help": "vLLM server URL as `model` only: seconds to wait for one response."}
    )

    def __post_init__(self) -> None:
        from ...decoding.engines.http import ServerConfig

        super().__post_init__()
        ServerConfig(max_concurrency=self.max_concurrency, timeout=self.timeout)  # validates both
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError(f"`model` must be a model alias, folder or HF id, got {self.model!r}")
        if self.device is not None and (not isinstance(self.device, str) or not self.device.strip()):
            raise ValueError(f"`device` must be None (auto) or a device name like 'cpu', got {self.device!r}")
        for name in ("instruction", "no_source_instruction"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"`{name}` must be a non-empty string, got {value!r}")
        if self.system is not None and not isinstance(self.system, str):
            raise ValueError(f"`system` must be a string or None, got {self.system!r}")
        if not isinstance(self.max_source_tokens, int) or self.max_source_tokens < 16:
            raise ValueError(
                f"`max_source_tokens` must be an int >= 16, got {self.max_source_tokens!r}"
            )
        if not isinstance(self.chunk_words, int) or self.chunk_words < 1:
            raise ValueError(f"`chunk_words` must be a positive int, got {self.chunk_words!r}")


class LmPasses:
    """The two LM computations' results, shared by the LM scorers of one model and prompt.

    ``conditional`` maps (source text, summary) and ``unconditional`` maps summary to a
    :class:`TokenMean`; ``model``/``tokenizer`` hold the model once loaded for them.
    Obtain one with :func:`shared_passes`; it lives as long as a scorer holds it.
    """

    def __init__(self) -> None:
        self.conditional: dict[tuple[str, str], TokenMean] = {}
        self.unconditional: dict[str, TokenMean] = {}
        self.model: Any = None
        self.tokenizer: Any = None


_PASSES: weakref.WeakValueDictionary[str, LmPasses] = weakref.WeakValueDictionary()


def shared_passes(key: str) -> LmPasses:
    """The :class:`LmPasses` of ``key`` (model and prompt settings), made on first use."""
    passes = _PASSES.get(key)
    if passes is None:
        passes = LmPasses()
        _PASSES[key] = passes
    return passes


LmConfigT = TypeVar("LmConfigT", bound=LmConfig)


class LmScorer(LmBackedScorer[LmConfigT]):
    """Shared machinery of the LM scorers: prompts, chunking, KV-reusing log-probs.

    Subclasses combine ``conditional`` (with the source) and ``unconditional``
    (without it) in ``_score_batch``.
    """

    Config = LmConfig
    _warned_cut: bool = False  # a sentence longer than max_source_tokens was cut (warned once)
    cli_options = {
        "lm_model": "model", "device": "device", "engine": "engine",
        "max_concurrency": "max_concurrency", "server_timeout": "timeout",
    }
    detail_fields = ("n_tokens", "model", "empty")
    reads_prompts = True

    def __init__(self, config: Any = None, cache_dir: Any = None) -> None:
        super().__init__(config, cache_dir)
        self._handed = False
        self._passes: LmPasses | None = None
        self._passes_at = ""
        self._cuts: dict[str, str] = {}  # example id -> how source_chunks cut its source

    def _passes_key(self) -> str:
        c = self.config
        assert isinstance(c, LmConfig)
        handed = id(self._model) if self._handed else None
        return json.dumps([
            self._model_name, handed, c.device, c.instruction, c.no_source_instruction, c.system,
            c.max_source_tokens, c.chunk_words, c.score_end, c.engine,
            self._cached_model_content(),  # a model replaced in place shares nothing with the old one
        ])

    @property
    def passes(self) -> LmPasses:
        """The computations this scorer shares with the other LM scorers of its model and prompt."""
        key = self._passes_key()
        if self._passes is None or self._passes_at != key:
            self._passes, self._passes_at = shared_passes(key), key
        return self._passes

    def use_model(self, model: Any, tokenizer: Any, name: str) -> LmScorer:
        """Score with an already loaded model (``name`` keys the cache); returns self."""
        super().use_model(model, tokenizer, name)
        self._handed = True
        return self

    def _load(self) -> tuple[Any, Any]:
        if self._model is None:
            passes = self.passes
            if passes.model is None:
                passes.model, passes.tokenizer = super()._load()
            self._model, self._tokenizer = passes.model, passes.tokenizer
        return super()._load()

    def token_logprobs(self, prefix_ids: list[int], suffixes: list[list[int]]) -> list[Any]:
        """Per-token log p of each suffix after the prefix (the one place a forward runs).

        In-process: the prefix runs once and its KV cache serves every suffix
        (``continuation_logprobs``). vLLM (in-process, or a server URL as ``model``): one
        request per prefix + suffix with ``prompt_logprobs`` (its prefix cache shares the
        prompt), the suffix's own values taken from the end.
        """
        import torch

        model = self._load()[0]
        if not self.on_vllm and self.server is None:
            return continuation_logprobs(model, prefix_ids, suffixes)
        if not suffixes:
            return []
        values = model.prompt_logprobs([list(prefix_ids) + list(s) for s in suffixes])
        return [torch.tensor(v[len(v) - len(s) :], dtype=torch.float32) for v, s in zip(values, suffixes)]

    @property
    def _seq2seq(self) -> bool:
        return bool(self._load()[0].config.is_encoder_decoder)

    @property
    def _chat(self) -> bool:
        return not self._seq2seq and getattr(self._load()[1], "chat_template", None) is not None

    def _ids(self, text: str, special: bool = False) -> list[int]:
        return self._load()[1](text, add_special_tokens=special)["input_ids"]

    # -- prompts -------------------------------------------------------------------
    def prefix_ids(self, source: str | None) -> list[int]:
        """Token ids of the prompt before the summary, for a source text (None: without source)."""
        from ...decoding.prompts.templates import chat_prompt, plain_text

        _, tok = self._load()
        if self._seq2seq:
            ids = self._ids(plain_text(tok, source or ""), special=True)
            return ids or [tok.eos_token_id]
        if source is None:
            user = self.config.no_source_instruction
        else:
            user = f"{source}\n\n{self.config.instruction}"
        if self._chat:
            return self._ids(chat_prompt(tok, user, system=self.config.system))
        return self._ids(plain_text(tok, user) + "\n\n", special=True)

    def end_id(self) -> int:
        """The token that ends the reply (``<|im_end|>`` in a chat template, else eos)."""
        _, tok = self._load()
        if self._chat:
            marker = "\x00SUMMARY\x00"
            text = tok.apply_chat_template(
                [{"role": "user", "content": "x"}, {"role": "assistant", "content": marker}],
                tokenize=False,
            )
            after = self._ids(text.split(marker)[1])
            if after:
                return after[0]
        if tok.eos_token_id is None:
            raise ValueError("the tokenizer has no eos token to score an empty summary with")
        return tok.eos_token_id

    def summary_ids(self, summary: str) -> list[int]:
        """The scored tokens: the stripped summary's own, or the end token for an empty one."""
        from ...decoding.prompts.templates import plain_text

        text = plain_text(self._load()[1], summary.strip())  # a summary cannot end its own turn
        if not text:
            return [self.end_id()]
        return self._ids(text) + ([self.end_id()] if self.config.score_end else [])

    def source_chunks(self, example: Example) -> list[str]:
        """The source text the prompt holds: the whole documents, or AlignScore chunks when too long."""
        from ...decoding.prompts.templates import format_documents

        text = format_documents(example)
        limit = self.config.max_source_tokens
        if len(self._ids(text)) <= limit:
            return [text]
        chunks = []
        cut = 0
        for chunk in alignscore_chunks(text, self.config.chunk_words):
            ids = self._ids(chunk)
            cut += len(ids) > limit
            if len(ids) > limit and not self._warned_cut:  # stated, never silent (once per scorer)
                import warnings

                self._warned_cut = True
                warnings.warn(
                    f"{self.model_id}: example {example.id!r} holds a sentence of {len(ids)} tokens, more than "
                    f"`max_source_tokens` ({limit}); it is scored on its first {limit} tokens (and so is any "
                    "other such sentence; their rows say so in `source_cut`); split long sentences or raise "
                    "`max_source_tokens`", stacklevel=2)
            chunks.append(chunk if len(ids) <= limit else self._load()[1].decode(ids[:limit]))
        if cut:
            self._cuts[example.id] = f"{cut} source chunk(s) cut to their first {limit} tokens"
        return chunks

    def cut_note(self, example: Example) -> dict[str, str]:
        """``{"source_cut": why}`` for an example whose source was cut to ``max_source_tokens``, else {}."""
        why = self._cuts.get(example.id)
        return {"source_cut": why} if why else {}

    def columns(self, record: dict[str, Any]) -> dict[str, Any]:
        """The default columns, plus ``<label>_source_cut`` on a row scored on a cut source."""
        row = super().columns(record)
        if record.get("source_cut"):
            row[f"{self.label}_source_cut"] = record["source_cut"]
        return row

    # -- the two computations ------------------------------------------------------
    def conditional(self, sources: list[Example], outputs: list[str]) -> list[TokenMean]:
        """Summed log p(summary | source) per output, each source's prompt prefix run once.

        Chunked sources take, per summary sentence, the chunk with the highest
        mean log-prob (see the module docstring).
        """
        import torch

        from ...decoding.prompts.templates import format_documents

        memo = self.passes.conditional
        texts = [format_documents(ex) for ex in sources]
        groups: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            if (text, outputs[i]) not in memo:
                groups.setdefault(text, []).append(i)
        for text, members in groups.items():
            members = list({outputs[i]: i for i in members}.values())  # one pass per distinct summary
            chunks = self.source_chunks(sources[members[0]])
            suffixes = [self.summary_ids(outputs[i]) for i in members]
            per_chunk = [self.token_logprobs(self.prefix_ids(c), suffixes) for c in chunks]
            for j, i in enumerate(members):
                rows = torch.stack([lps[j] for lps in per_chunk])  # (chunks, tokens)
                if len(chunks) == 1:
                    total = float(rows[0].sum())
                else:
                    total = float(self._best_chunk_sum(outputs[i], rows))
                memo[(text, outputs[i])] = TokenMean(total, rows.shape[1], len(chunks))
        return [memo[(text, out)] for text, out in zip(texts, outputs)]

    def _best_chunk_sum(self, summary: str, rows: Any) -> Any:
        """Sum over sentences of the sentence's log-probs under its best chunk (by mean)."""
        import torch

        text = summary.strip()
        if not text:
            return rows.sum(1).max()
        _, tok = self._load()
        if not getattr(tok, "is_fast", False):
            raise ValueError(
                "chunked scoring needs a fast tokenizer (character offsets); raise "
                "`max_source_tokens` so the source fits, or use a model with a fast tokenizer"
            )
        offsets = tok(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        sentence = torch.tensor(sentence_of_tokens(text, offsets))
        # a scored end token (``score_end``) belongs to the last sentence
        sentence = torch.cat([sentence, sentence[-1:].expand(rows.shape[1] - len(sentence))])
        n = int(sentence.max()) + 1
        sums = torch.zeros((rows.shape[0], n)).index_add_(1, sentence, rows)
        counts = torch.zeros(n).index_add_(0, sentence, torch.ones(len(sentence)))
        best = (sums / counts.clamp(min=1)).argmax(0)
        return sums.gather(0, best.unsqueeze(0)).sum()

    def unconditional(self, outputs: list[str]) -> list[TokenMean]:
        """Summed log p(summary) without the source; the no-source prefix runs once per batch."""
        memo = self.passes.unconditional
        todo = list(dict.fromkeys(out for out in outputs if out not in memo))
        if todo:
            lps = self.token_logprobs(self.prefix_ids(None), [self.summary_ids(out) for out in todo])
            memo.update({out: TokenMean(float(lp.sum()), len(lp)) for out, lp in zip(todo, lps)})
        return [memo[out] for out in outputs]

    def _base_record(self, mean: TokenMean, output: str) -> dict[str, Any]:
        return {"score": mean.mean, "n_tokens": mean.n_tokens, "model": self._model_name,
                "empty": not output.strip()}


@register("lm-likelihood")
class LmLikelihood(LmScorer[LmConfig]):
    """Mean token log p(summary | source): BARTScore's faithfulness direction."""

    detail_fields = ("n_tokens", "model", "empty", "chunks")

    def _score_batch(self, sources: list[Example], outputs: list[str]) -> list[dict[str, Any]]:
        return [
            {**self._base_record(c, out), "chunks": c.chunks, **self.cut_note(ex)}
            for c, out, ex in zip(self.conditional(sources, outputs), outputs, sources)
        ]


@register("lm-pmi")
class LmPmi(LmScorer[LmConfig]):
    """Mean token log p(summary | source) − mean token log p(summary): pointwise mutual information."""

    detail_fields = ("n_tokens", "model", "empty", "chunks", "conditional", "unconditional")

    def _score_batch(self, sources: list[Example], outputs: list[str]) -> list[dict[str, Any]]:
        results = []
        for c, u, out, ex in zip(self.conditional(sources, outputs), self.unconditional(outputs), outputs, sources):
            record = self._base_record(c, out)
            record.update(score=c.mean - u.mean, conditional=c.mean, unconditional=u.mean, chunks=c.chunks,
                          **self.cut_note(ex))
            results.append(record)
        return results


@register("fluency")
class Fluency(LmScorer[LmConfig]):
    """Mean token log p(summary) without the source."""

    def _score_batch(self, sources: list[Example], outputs: list[str]) -> list[dict[str, Any]]:
        return [self._base_record(u, out) for u, out in zip(self.unconditional(outputs), outputs)]
