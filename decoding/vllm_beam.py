"""Fairness-aware beam search on vLLM: the step loop of ``beam_steps`` against a vLLM engine or server.

vLLM's own ``beam_search`` is a loop outside the engine (each live beam a one-token
request with ``logprobs = 2 × width``; ``BeamSearchParams`` carries no per-request
settings and the returned log-probs are the raw ones), so fair beam search cannot be
a vLLM logits processor. It runs the same way here: :func:`evenhand.decoding.beam_steps.beam_search_steps`
sends every live beam as a one-token request asking for the pool's number of
candidates and ranks them with :mod:`evenhand.decoding.beam_rank` — the code
``fair_beam_search`` runs in transformers. vLLM's prefix caching re-reads only each
request's new token.

Two engines implement ``next_token_logprobs``:

* :class:`VllmNextToken` — an in-process ``vllm.LLM`` (``VllmEngine`` of
  ``decoding/vllm_engine.py``, or anything with its ``llm`` and ``sampling_params``);
* :class:`ServerNextToken` — a vLLM server's ``/v1/completions`` with token-id prompts,
  ``max_tokens=1``, ``logprobs=k`` and ``return_tokens_as_token_ids`` (``generate --model
  http://HOST:PORT/v1``: :func:`server_fair_beam_generate`; the served model's tokenizer is
  loaded here from its ``/v1/models`` root, and one probe checks, before any output, that
  the server lists enough top log-probs on token ids: ``--max-logprobs``).

The returned log-probs are raw (before any processor), as transformers' beam search
sees them before its processors; the repetition penalty (generated tokens only,
or the whole prefix with ``penalize_prompt``) and n-gram blocking are applied to the
candidates by :func:`beam_steps.candidate_processors`, which only lower log-probs and
are checked exact. Processors that *raise* tokens — the group-coverage bonus α
(``--fair-strength``) and the abstractiveness constraint — cannot be applied to a
candidate list exactly, so with fair beam search on vLLM they are refused (exit 2).

Differences from vLLM's ``beam_search`` at β = 0: this loop keeps transformers'
bookkeeping (the pool is the 2k best continuations; only finishing candidates among
the top k become hypotheses; length penalty on generated tokens; transformers'
early-stop rule), which is what evenhand does in-process; vLLM's ``beam_search``
moves every eos candidate to the finished list and sorts by a length penalty over the
whole sequence (prompt included). The benchmark measures how often they agree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..evaluation.data.schema import Example
from ..evaluation.errors import DataError


class VllmNextToken:
    """``next_token_logprobs`` of an in-process vLLM engine (one batched ``generate`` per step).

    ``engine``: has ``llm`` (a ``vllm.LLM``) and ``sampling_params(**kw)``; ``lora_request``
    is passed with every request (a LoRA adapter loaded through vLLM). The engine's
    ``max_logprobs`` must be at least the candidates asked for (``EngineSettings.extra``).
    """

    def __init__(self, engine: Any, lora_request: Any = None) -> None:
        self.engine = engine
        self.lora_request = lora_request
        self.calls = 0
        self.requests = 0

    @property
    def max_candidates(self) -> int:
        """The most log-probs one request may ask for (the engine's ``max_logprobs``)."""
        return int(self.engine.llm.llm_engine.model_config.max_logprobs)

    def next_token_logprobs(self, prefix_token_ids: list[list[int]], k: int) -> tuple[Any, Any]:
        """The k best next tokens of each prefix and their raw log-probs, (N, k) tensors."""
        self.calls += 1
        self.requests += len(prefix_token_ids)
        params = self.engine.sampling_params(max_tokens=1, temperature=0.0, logprobs=k, detokenize=False)
        inputs = [{"prompt_token_ids": list(p)} for p in prefix_token_ids]
        kwargs: dict[str, Any] = {"use_tqdm": False}
        if self.lora_request is not None:
            kwargs["lora_request"] = self.lora_request
        outputs = self.engine.llm.generate(inputs, params, **kwargs)
        steps = [{int(t): float(lp.logprob) for t, lp in out.outputs[0].logprobs[0].items()} for out in outputs]
        return top_k_table(steps, k)


def top_k_table(steps: Sequence[dict[int, float]], k: int) -> tuple[Any, Any]:
    """(N, k) ids and log-probs from per-row ``{token: logprob}`` maps, best first (−inf padding)."""
    import torch

    ids = torch.zeros((len(steps), k), dtype=torch.long)
    lps = torch.full((len(steps), k), float("-inf"))
    for row, step in enumerate(steps):
        best = sorted(step.items(), key=lambda item: (-item[1], item[0]))[:k]
        if best:
            ids[row, : len(best)] = torch.tensor([t for t, _ in best])
            lps[row, : len(best)] = torch.tensor([v for _, v in best])
    return ids, lps


class ServerNextToken:
    """``next_token_logprobs`` of a vLLM server (``/v1/completions``, token-id prompts).

    ``post``: ``(payload) -> response JSON`` for one completions request (a
    ``ServerClient``'s); requests of a step are sent through ``map_requests`` (default
    one after the other; pass a thread pool's ``map`` for concurrency). The server's
    ``--max-logprobs`` must be at least the candidates asked for: :meth:`probe` checks it
    and sets ``max_candidates`` (None: no known limit).
    """

    def __init__(self, post: Callable[[dict[str, Any]], Any], model: str,
                 map_requests: Callable[..., Any] = map, where: str = "the server") -> None:
        self.post, self.model, self.map, self.where = post, model, map_requests, where
        self.calls = 0
        self.requests = 0
        self.max_candidates: int | None = None

    @classmethod
    def from_client(cls, client: Any) -> ServerNextToken:
        """An adapter over a ``decoding.server.ServerClient`` (its retries, timeout and concurrency)."""
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=client.config.max_concurrency)
        return cls(lambda body: client._request("POST", "/completions", body), client.model, pool.map,
                   f"server {client.url.base}")

    def _body(self, prefix: Sequence[int], k: int) -> dict[str, Any]:
        return {
            "model": self.model, "prompt": [int(t) for t in prefix], "max_tokens": 1, "temperature": 0.0,
            "logprobs": k, "return_tokens_as_token_ids": True,
        }

    def _top(self, body: Any) -> dict[int, float]:
        """``{token id: logprob}`` of a response's first position; DataError when not on token ids."""
        try:
            top = body["choices"][0]["logprobs"]["top_logprobs"][0]
            return {int(str(t).split("token_id:", 1)[1]): float(v) for t, v in top.items()}
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            raise DataError(
                f"{self.where} does not return top log-probs on token ids (`logprobs` with "
                "`return_tokens_as_token_ids`, as vLLM's /v1/completions does): fair beam search through a "
                f"server needs a vLLM server (got {str(body)[:120]!r})"
            ) from None

    def probe(self, needed: int, asked: int | None = None) -> None:
        """Check once, before any output, that the server returns ``needed`` top log-probs on token ids.

        Two one-token requests: one asking for far more log-probs than any vocabulary (vLLM
        refuses it naming its ``--max-logprobs`` limit, read into ``max_candidates``), one
        asking for ``min(asked, limit)`` with ``return_tokens_as_token_ids`` (the answer must
        list ``token_id:N`` keys). DataError (exit 2, one line) naming the flag to fix.
        """
        import re

        asked = max(asked or needed, needed)
        try:
            self._top(self.post(self._body([0], 1 << 20)))
        except DataError as err:
            limit = re.search(r"max allowed: (-?\d+)", str(err))
            if limit is not None:
                self.max_candidates = int(limit.group(1))
        if self.max_candidates is not None and self.max_candidates < needed:
            raise DataError(
                f"{self.where} returns at most {self.max_candidates} log-probs per token; fair beam search "
                f"needs {needed} candidates per beam ({asked} for exactness after the repetition penalty): "
                f"restart vLLM with `--max-logprobs {max(asked, 64)}`, or lower --num-beams"
            )
        self._top(self.post(self._body([0], min(asked, self.max_candidates or asked))))

    def next_token_logprobs(self, prefix_token_ids: list[list[int]], k: int) -> tuple[Any, Any]:
        """The k best next tokens of each prefix and their raw log-probs, (N, k) tensors."""
        self.calls += 1
        self.requests += len(prefix_token_ids)

        def one(prefix: list[int]) -> dict[int, float]:
            return self._top(self.post(self._body(prefix, k)))

        return top_k_table(list(self.map(one, prefix_token_ids)), k)


def candidates_needed(config: Any) -> tuple[int, int]:
    """(needed, asked): candidates per beam and step fair beam search needs, and asks for first.

    The pool holds ``pool`` (2, ``FairBeamSettings``) × 2 × ``num_beams`` continuations when
    it steers (β > 0 or a meaning term), 2 × ``num_beams`` otherwise; with a repetition
    penalty or n-gram blocking the loop first asks for twice as many (``beam_steps._candidates``).
    """
    from .fair_beam import FairBeamSettings

    pool = FairBeamSettings.__dataclass_fields__["pool"].default
    needed = 2 * config.num_beams * (pool if config.beam_search else 1)
    adjusts = config.repetition_penalty != 1.0 or config.no_repeat_ngram_size > 0
    return needed, 2 * needed if adjusts else needed


def server_next_token(client: Any, config: Any) -> tuple[ServerNextToken, Any, int]:
    """``(next_token, tokenizer, vocab_size)`` of a vLLM server for fair beam search, checked once.

    The tokenizer is the served model's (``server_generate.server_tokenizer``: its
    ``/v1/models`` root loaded here); the probe (:meth:`ServerNextToken.probe`) runs once per
    client. DataError (exit 2) when the server cannot serve the search.
    """
    from .server_generate import server_tokenizer

    needed, asked = candidates_needed(config)
    if "next_token" not in client.memo:
        next_token = ServerNextToken.from_client(client)
        tokenizer = server_tokenizer(client)
        client.memo["next_token"] = (next_token, tokenizer, served_vocab_size(client, tokenizer))
    next_token, tokenizer, vocab = client.memo["next_token"]
    if client.memo.get("probed", 0) < asked:
        next_token.probe(needed, asked)
        client.memo["probed"] = asked
    return next_token, tokenizer, vocab


def served_vocab_size(client: Any, tokenizer: Any) -> int:
    """Width of the served model's logits: its config's ``vocab_size`` when readable here, else the tokenizer's."""
    import json
    from pathlib import Path

    root = Path(str(client.model_entry().get("root") or client.model)) / "config.json"
    try:
        vocab = int(json.loads(root.read_text())["vocab_size"])
    except (OSError, ValueError, KeyError, TypeError):
        vocab = 0
    return max(vocab, len(tokenizer))


def server_fair_beam_generate(
    client: Any,
    examples: Sequence[Example],
    config: Any,
    progress: bool = True,
    on_batch: Callable[[list[Example], list[str]], None] | None = None,
) -> list[str]:
    """:func:`fair_beam_generate` through a vLLM server URL (``generate`` hands over here)."""
    check_vllm_fair_config(config)
    next_token, tokenizer, vocab = server_next_token(client, config)
    return fair_beam_generate(next_token, tokenizer, examples, config, vocab, progress, on_batch)


def check_vllm_fair_config(config: Any) -> None:
    """DataError (exit 2) for settings fair beam search on vLLM cannot honour exactly."""
    if config.fairness_strength > 0:
        raise DataError(
            "--fair-strength (the group-coverage bonus) cannot be combined with --fair-beam/--fair-meaning "
            "on vLLM: the beam loop reads raw candidate log-probs and a bonus that raises tokens cannot be "
            "applied to them exactly; drop --fair-strength or use --engine transformers"
        )
    if getattr(config, "abstractiveness", None) or getattr(config, "extractiveness", None):
        raise DataError(
            "--abstractiveness/--extractiveness cannot be combined with --fair-beam/--fair-meaning on vLLM "
            "(the beam loop reads raw candidate log-probs); use --engine transformers for both together"
        )


def fair_beam_generate(
    next_token: Any,
    tokenizer: Any,
    examples: Sequence[Example],
    config: Any,
    vocab_size: int,
    progress: bool = True,
    on_batch: Callable[[list[Example], list[str]], None] | None = None,
) -> list[str]:
    """Summaries by (fair) beam search through ``next_token`` (a vLLM engine or server adapter).

    Prompts are the in-process ones (chat template + response prefix, tokenized without
    padding); per batch of ``config.batch_size`` examples the group tables (and the meaning
    term's document blocks) are built once, as in-process. Returns the cleaned summaries
    in example order, each batch handed to ``on_batch``.
    """
    import torch

    from .beam_steps import beam_search_steps, candidate_processors
    from .fair_beam import FairBeamSettings
    from .fair_decoding import check_examples
    from .generate import SummaryCollector, _batches
    from .group_vocab import GroupTables, build_group_vocab
    from .prompting import build_prompt, chat_prompt, response_prefix

    check_vllm_fair_config(config)
    for i, ex in enumerate(examples):
        ex.validate(f"examples[{i}]")
    check_examples(examples, config)
    adjust = candidate_processors(config.repetition_penalty, config.no_repeat_ngram_size)
    if adjust is not None and config.penalize_prompt and config.repetition_penalty != 1.0:
        inner = adjust
        adjust = lambda prefixes, n, ids, lps: inner(prefixes, max(map(len, prefixes)), ids, lps)  # noqa: E731
    summaries = SummaryCollector(len(examples), config, on_batch, progress)
    for _, batch in _batches(examples, config.batch_size):
        prefixes = [response_prefix(ex, config.response_prefix, config.instruction, config.prompt_kind) for ex in batch]
        texts = [
            chat_prompt(tokenizer, build_prompt(ex, config.instruction, config.fair_prompt, config.prompt_kind)) + p
            for ex, p in zip(batch, prefixes)
        ]
        prompts = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
        fair = None
        if config.beam_search:
            vocabs = [build_group_vocab(ex, tokenizer) for ex in batch]
            tables = GroupTables.build(vocabs, vocab_size, config.fairness, device=torch.device("cpu"))
            meaning = None
            if config.fair_meaning > 0:
                from .embeddings import load_encoder
                from .meaning import MeaningCoverage

                meaning = MeaningCoverage.build(
                    batch, tables, load_encoder(config.fair_meaning_encoder, device="cpu"), tokenizer,
                    config.fair_meaning, config.fair_meaning_every, config.fair_meaning_measure,
                )
            fair = FairBeamSettings(tables, config.fair_beam, config.fairness_tau, meaning=meaning)
        from tqdm.auto import tqdm

        # a step per generated token: the bar moves while a large batch is searched
        with tqdm(total=config.max_new_tokens, desc="beam steps", unit="tok", leave=False,
                  disable=not progress) as bar:
            hyps = beam_search_steps(
                next_token, prompts, num_beams=config.num_beams, max_new_tokens=config.max_new_tokens,
                eos_token_ids=[tokenizer.eos_token_id], pad_token_id=tokenizer.pad_token_id, fair=fair,
                adjust=adjust, on_step=lambda requests: bar.update(1),
            )
        decoded = tokenizer.batch_decode([h[0] for h in hyps], skip_special_tokens=True)
        summaries.add(batch, [(p + t).strip() for p, t in zip(prefixes, decoded)])
    return summaries.close()
