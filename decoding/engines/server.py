"""``generate`` through an OpenAI-compatible server: the same prompts, sampling as request parameters.

``ServerEngine`` is the engine a server URL opens (``open_engine("http://HOST:PORT/v1")``,
over a ``ServerClient`` of ``engines/http.py``). Each example becomes one ``/chat/completions`` request with
the in-process path's messages (system ``DEFAULT_SYSTEM``, user
``build_prompt(example)``); the server applies its model's own chat template.
``GenerateConfig`` maps onto request parameters:

=====================  ====================================================
``do_sample=False``    ``temperature: 0`` (greedy)
``temperature``        ``temperature``
``top_p`` / ``top_k``  ``top_p`` (1.0 when unset) / ``top_k`` (0 = off, as in
                       transformers; vLLM and llama.cpp take it as an extra)
``repetition_penalty`` ``repetition_penalty`` (vLLM, TGI) and
                       ``repeat_penalty`` (llama.cpp): both are sent
``max_new_tokens``     ``max_tokens``
``seed``               ``seed``: request i of a call gets ``seed + i``
=====================  ====================================================

plus ``min_p: 0`` (llama.cpp filters with min-p 0.05 by default; transformers
does not). So the reranker's three recipes (nucleus, top-k, hybrid) are request
parameters. What a server cannot do:

- **logits processors** (``abstractiveness``, ``extractiveness``, fair decoding
  ``fairness_strength``/``fair_beam``, any ``processor_builders``): the OpenAI
  API runs no client code between decoding steps, so these raise ``DataError``
  before any request — unless the client says the server is a vLLM server started
  with ``--logits-processors evenhand.vllm:EvenhandLogitsProcessor``
  (``ServerClient(url, processors=True)``, the CLI's ``--server-processors``; one
  probe request, ``ServerClient.runs_evenhand_processors``, checks it): then ``abstractiveness``,
  ``extractiveness`` and ``fairness_strength`` run there (``processor_builders``
  still raise). Such requests go to ``/completions`` with the
  in-process templated prompt as token ids (response prefix included), the
  decoding settings of ``engines/vllm_engine.py`` and evenhand's settings in
  ``vllm_xargs``; the served model's tokenizer must be loadable here (its
  ``/models`` ``root``: a folder or cached HF id);
- **fair beam search** (``fair_beam``, ``fair_meaning``) runs on a vLLM server as a step
  loop here (``engines/beam_loop.py`` with :class:`ServerNextToken`: one-token ``/completions`` requests on token ids
  with ``logprobs`` and ``return_tokens_as_token_ids``), without the group bonus or the
  abstractiveness constraint, as on the in-process vLLM engine; a probe checks first that
  the server lists enough top log-probs on token ids (vLLM's ``--max-logprobs``);
- **beam search** (``num_beams > 1`` without sampling) runs as greedy decoding,
  and ``no_repeat_ngram_size`` is not applied (neither engine has it): both with
  a warning;
- **response prefixes**: the chat API cannot make the model continue a started
  reply, so the prompt kinds' default prefixes are dropped (``clean_summary``
  still strips preambles) and an explicit non-empty ``response_prefix`` raises (on a
  server running evenhand's processors it goes, on token ids, to ``/completions``).

What the server cannot do it declares in :data:`PLAIN` / :data:`WITH_PROCESSORS`
(``Capabilities``); ``engines.base.refuse_unsupported`` refuses it, before any request.

Repetition penalties differ by engine: llama.cpp penalizes the last 64 tokens
(prompt included), vLLM every prompt and output token; transformers (our
default, ``penalize_prompt=False``) the generated tokens only.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ...evaluation.data.schema import Example
from ...evaluation.errors import DataError
from ..config import GenerateConfig
from ..processors.builders import ProcessorBuilder
from .base import NEEDS_VLLM, SummaryCollector, sampling_values, validate_examples
from .beam_loop import fair_beam_generate, step_loop_capabilities
from .http import ServerClient, ServerConfig

_WHY = (
    "logits processors run inside the decoding loop, and an OpenAI-compatible server runs "
    "no client code there; generate in-process (--model an alias, folder or cached HF id) "
    "— docs/serving.md has the plan for vLLM-side processors"
)


_UNLESS = (
    "; a vLLM server started with `--logits-processors evenhand.vllm:EvenhandLogitsProcessor` "
    "runs them: pass --server-processors"
)

#: What a server can do without evenhand's processors (and with them: abstractiveness, α, prefixes).
PLAIN = step_loop_capabilities(
    processor_builders=f"`processor_builders` cannot run through a server URL: {_WHY}",
    abstractiveness="`{name}` cannot run through a server URL: " + _WHY + _UNLESS,
    group_bonus="fair decoding's group bonus (`fairness_strength`) cannot run through a server URL: "
    + _WHY + _UNLESS,
    response_prefix="`response_prefix` {value} cannot be used with a server URL: the chat "
    "API cannot continue a started reply; drop it (or pass '')",
    lora_request=NEEDS_VLLM,
)
WITH_PROCESSORS = step_loop_capabilities(processor_builders=PLAIN.processor_builders, lora_request=NEEDS_VLLM)


def needs_processors(config: GenerateConfig) -> bool:
    """Whether ``config`` needs evenhand's processors on the server (abstractiveness, α)."""
    return (
        config.abstractiveness is not None or config.extractiveness is not None
        or (config.fairness is not None and config.fairness_strength > 0)
    )


class ServerEngine:
    """``generate`` through an OpenAI-compatible server (the module docstring).

    Args:
        client: the server's ``ServerClient``; with ``client.processors`` (the CLI's
            ``--server-processors``) abstractiveness, extractiveness and the group bonus run
            on a vLLM server started with evenhand's processors (checked by one probe).
    """

    kind: ClassVar[str] = "server"

    def __init__(self, client: ServerClient) -> None:
        self.client = client

    @classmethod
    def open(cls, model: str, server: ServerConfig | None = None, processors: bool = False,
             **_: Any) -> ServerEngine:
        """The engine of a server URL ``http://HOST:PORT/v1[#MODEL]`` (nothing is sent yet)."""
        return cls(ServerClient(model, server, processors=processors))

    @property
    def capabilities(self) -> Any:
        """What this server can do: more with evenhand's processors (``client.processors``)."""
        return WITH_PROCESSORS if self.client.processors else PLAIN

    @property
    def tokenizer(self) -> Any:
        """None: the server templates chat prompts itself."""
        return None

    def prepare(self, config: GenerateConfig) -> None:
        """Once, before any output: fair beam search's probe of the server's top log-probs (and the
        served tokenizer), or the probe that the server runs evenhand's processors."""
        if config.beam_search:
            server_next_token(self.client, config)
        elif self.uses_processors(config):
            require_processors(self.client)

    def uses_processors(self, config: GenerateConfig) -> bool:
        """Whether ``config`` decodes through evenhand's processors on the server (``/completions`` on
        token ids): the server runs them and ``config`` asks for one, or for a response prefix (which
        the chat API cannot continue)."""
        return self.client.processors and (needs_processors(config) or bool(config.response_prefix))

    def check_prompts(self, examples: Sequence[Example], config: GenerateConfig) -> None:
        """The server checks its own context."""

    def shared_model(self) -> tuple[Any, Any] | None:
        """None: there is no model here."""
        return None

    def summarize(
        self,
        examples: Sequence[Example],
        config: GenerateConfig,
        processor_builders: Sequence[ProcessorBuilder] = (),
        progress: bool = True,
        on_batch: Callable[[list[Example], list[str]], None] | None = None,
        lora_request: Any = None,
    ) -> list[str]:
        """One summary per example from the server; ``decoding.generate.generate``'s contract.

        Requests go out in chunks of ``max(config.batch_size, client max_concurrency)``
        examples; ``on_batch`` sees each finished chunk. Request i (over the whole
        call) is seeded ``config.seed + i``, so the same inputs and seed give the
        same outputs from the same server and model.
        """
        client = self.client
        if config.beam_search:  # fair beam search: the step loop (engines/beam_loop.py)
            next_token, tokenizer, vocab = server_next_token(client, config)
            return fair_beam_generate(next_token, tokenizer, examples, config, vocab, progress, on_batch)
        if self.uses_processors(config):
            return generate_with_processors(client, examples, config, progress, on_batch)
        return generate_via_chat(client, examples, config, progress, on_batch)

    def close(self) -> None:
        """Close the client's connections."""
        self.client.close()


def sampling_parameters(config: GenerateConfig) -> dict[str, Any]:
    """The request parameters of ``config``'s decoding settings (the table in the module docstring)."""
    sampling = sampling_values(config)
    return {
        "max_tokens": sampling.pop("max_tokens"),
        "repetition_penalty": config.repetition_penalty,
        "repeat_penalty": config.repetition_penalty,
        "min_p": 0.0,
        **sampling,
    }


def _warn_unsupported(config: GenerateConfig) -> None:
    if config.num_beams > 1 and not config.do_sample:
        warnings.warn(
            f"`num_beams={config.num_beams}`: a server URL decodes greedily (no beam search)",
            stacklevel=4,
        )
    if config.no_repeat_ngram_size:
        warnings.warn(
            f"`no_repeat_ngram_size={config.no_repeat_ngram_size}` is not applied through a server URL",
            stacklevel=4,
        )


def generate_via_chat(
    client: ServerClient,
    examples: Sequence[Example],
    config: GenerateConfig,
    progress: bool = True,
    on_batch: Callable[[list[Example], list[str]], None] | None = None,
) -> list[str]:
    """Summaries through ``/chat/completions``: the plan's messages, sampling as request parameters."""
    from ..prompts.plan import plan_prompts

    validate_examples(examples, where_files=False)
    _warn_unsupported(config)
    params = sampling_parameters(config)
    size = max(config.batch_size, client.config.max_concurrency)
    summaries = SummaryCollector(len(examples), config, on_batch, progress)
    for start in range(0, len(examples), size):
        batch = list(examples[start : start + size])
        payloads = [
            {"messages": plan.messages(), **params, "seed": config.seed + start + k}
            for k, plan in enumerate(plan_prompts(batch, config, prefixes=False))
        ]
        summaries.add(batch, [reply_text(r, client) for r in client.chat(payloads)])
    return summaries.close()


def reply_text(response: dict[str, Any], client: ServerClient) -> str:
    """The assistant message of a chat-completion response, stripped; DataError when malformed."""
    try:
        return str(response["choices"][0]["message"]["content"] or "").strip()
    except (KeyError, IndexError, TypeError):
        raise DataError(
            f"server {client.url.base} answered a chat completion without choices[0].message.content: "
            f"{str(response)[:200]}"
        ) from None


def require_processors(client: ServerClient) -> None:
    """Raise today's refusal (``DataError``) unless the server runs evenhand's processors."""
    if not client.runs_evenhand_processors():
        raise DataError(
            f"server {client.url.base} does not run evenhand's logits processors (--server-processors "
            "was given): start vLLM with `--logits-processors evenhand.vllm:EvenhandLogitsProcessor` "
            "(docs/serving.md), or drop the option and the processors"
        )


def server_tokenizer(client: ServerClient) -> Any:
    """The served model's tokenizer, loaded here from its ``/models`` ``root`` (folder or cached id)."""
    from ..models import load_tokenizer

    root = str(client.model_entry().get("root") or client.model)
    try:
        tokenizer = load_tokenizer(root)
    except (DataError, OSError, ValueError) as err:
        raise DataError(
            f"server {client.url.base}: the served model's tokenizer {root!r} is not available here "
            f"({' '.join(str(err).split())[:160]}); evenhand's processors need the prompt's token ids: "
            "copy the model folder (or its tokenizer files) to the same path here, or cache the HF id"
        ) from None
    tokenizer.padding_side = "left"
    return tokenizer


def generate_with_processors(
    client: ServerClient,
    examples: Sequence[Example],
    config: GenerateConfig,
    progress: bool = True,
    on_batch: Callable[[list[Example], list[str]], None] | None = None,
) -> list[str]:
    """Summaries from a vLLM server running evenhand's processors (``/completions`` on token ids)."""
    from ..config import check_examples
    from ..prompts.plan import plan_prompts, prompt_token_ids
    from .vllm_engine import request_extra, request_values, warn_greedy

    validate_examples(examples, where_files=False)
    check_examples(examples, config)
    require_processors(client)
    warn_greedy(config)
    tokenizer = server_tokenizer(client)
    entry = client.model_entry()
    limit = entry.get("max_model_len") if isinstance(entry.get("max_model_len"), int) else None
    vocab = len(tokenizer)
    size = max(config.batch_size, client.config.max_concurrency)
    summaries = SummaryCollector(len(examples), config, on_batch, progress)
    for start in range(0, len(examples), size):
        batch = list(examples[start : start + size])
        plans = plan_prompts(batch, config)
        prompts = prompt_token_ids(tokenizer, plans, limit, config.max_new_tokens)
        payloads = []
        for k, (plan, ids) in enumerate(zip(plans, prompts)):
            body = {"prompt": ids, **request_values(config, tokenizer, start + k), "return_token_ids": True}
            extra = request_extra(config, tokenizer, plan.example, plan.text(tokenizer), ids, vocab)
            if extra:
                body["vllm_xargs"] = extra
            payloads.append(body)
        texts = []
        for response, plan in zip(client.completions(payloads), plans):
            choice = _first_choice(response, client)
            ids = choice.get("token_ids")
            text = tokenizer.decode(ids, skip_special_tokens=True) if isinstance(ids, list) else str(choice.get("text") or "")
            texts.append(plan.summary(text))
        summaries.add(batch, texts)
    return summaries.close()


def _first_choice(response: dict[str, Any], client: ServerClient) -> dict[str, Any]:
    try:
        choice = response["choices"][0]
        if not isinstance(choice, dict):
            raise TypeError
        return choice
    except (KeyError, IndexError, TypeError):
        raise DataError(
            f"server {client.url.base} answered a completion without choices[0]: {str(response)[:200]}"
        ) from None


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
    def from_client(cls, client: ServerClient) -> ServerNextToken:
        """An adapter over a ``ServerClient`` (its retries, timeout and concurrency)."""
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=client.config.max_concurrency)
        return cls(lambda body: client.request("POST", "/completions", body), client.model, pool.map,
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

        from ..beam.step_loop import top_k_table

        return top_k_table(list(self.map(one, prefix_token_ids)), k)


def server_next_token(client: ServerClient, config: GenerateConfig) -> tuple[ServerNextToken, Any, int]:
    """``(next_token, tokenizer, vocab_size)`` of a vLLM server for fair beam search, checked once.

    The tokenizer is the served model's (``server_tokenizer``: its
    ``/v1/models`` root loaded here); the probe (:meth:`ServerNextToken.probe`) runs once per
    client. DataError (exit 2) when the server cannot serve the search.
    """
    from ..beam.step_loop import candidates_needed

    adjusts = config.repetition_penalty != 1.0 or config.no_repeat_ngram_size > 0
    needed, asked = candidates_needed(config.num_beams, config.beam_search, adjusts)
    if "next_token" not in client.memo:
        next_token = ServerNextToken.from_client(client)
        tokenizer = server_tokenizer(client)
        client.memo["next_token"] = (next_token, tokenizer, served_vocab_size(client, tokenizer))
    next_token, tokenizer, vocab = client.memo["next_token"]
    if client.memo.get("probed", 0) < asked:
        next_token.probe(needed, asked)
        client.memo["probed"] = asked
    return next_token, tokenizer, vocab


def served_vocab_size(client: ServerClient, tokenizer: Any) -> int:
    """Width of the served model's logits: its config's ``vocab_size`` when readable here, else the tokenizer's."""
    import json
    from pathlib import Path

    root = Path(str(client.model_entry().get("root") or client.model)) / "config.json"
    try:
        vocab = int(json.loads(root.read_text())["vocab_size"])
    except (OSError, ValueError, KeyError, TypeError):
        vocab = 0
    return max(vocab, len(tokenizer))
