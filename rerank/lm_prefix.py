"""A shared prompt prefix run once, its KV cache reused by every padded continuation.

Scorers that read many summaries after one prompt (the LM-likelihood scorers, the
LLM judges) run the prompt prefix through the model once and reuse its KV cache,
repeated per continuation, for one forward of all continuations: padded (left or
right), with an attention mask hiding the padding and position ids continuing the
prefix, so every row equals an unpadded forward of its own prefix + continuation
(to float rounding). ``LmBackedScorer`` holds the model such scorers read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from ..decoding.engines.http import ServerClient, ServerConfig, is_server_url
from ..evaluation.errors import DataError
from ..evaluation.scoring.scorer import Scorer, ScorerConfig


def logits_after_prefix(
    model: Any,
    prefix_ids: Sequence[int],
    suffix_ids_list: Sequence[Sequence[int]],
    *,
    pad_left: bool = False,
    pad_id: int = 0,
    logits_to_keep: int = 0,
) -> tuple[Any, Any]:
    """Logits of a causal LM over each continuation, the shared prefix run once.

    Args:
        model: a transformers causal LM.
        prefix_ids: token ids of the shared prompt prefix (non-empty).
        suffix_ids_list: the continuations' token ids (when all are empty only the
            prefix runs).
        pad_left: pad the continuations on the left (the last column is then every
            row's last token) instead of on the right (column j is token j).
        pad_id: the id written into padding (masked out; any valid id works).
        logits_to_keep: keep only the last this many positions' logits (0: all).

    Returns:
        ``(prefix_logits, logits)``: the logits after the prefix's last token,
        shape ``(1, 1, vocab)``, and the continuations' logits, shape
        ``(k, width or logits_to_keep, vocab)``, in the model's dtype and device.
    """
    import torch

    device = next(model.parameters()).device
    k, width, plen = len(suffix_ids_list), max(map(len, suffix_ids_list)), len(prefix_ids)
    ids = torch.full((k, width), pad_id, dtype=torch.long)
    mask = torch.zeros((k, width), dtype=torch.long)
    for row, suffix in enumerate(suffix_ids_list):
        span = slice(width - len(suffix), width) if pad_left else slice(0, len(suffix))
        ids[row, span] = torch.tensor(list(suffix), dtype=torch.long)
        mask[row, span] = 1
    ids, mask = ids.to(device), mask.to(device)
    with torch.no_grad():
        out = model(input_ids=torch.tensor([list(prefix_ids)], device=device), use_cache=True, logits_to_keep=1)
        if width == 0:
            return out.logits[:, -1:, :], out.logits.new_zeros((k, 0, out.logits.shape[-1]))
        cache = out.past_key_values
        if k > 1:
            cache.batch_repeat_interleave(k)
        full_mask = torch.cat([torch.ones((k, plen), dtype=torch.long, device=device), mask], 1)
        positions = plen + (mask.cumsum(-1) - 1).clamp(min=0)
        logits = model(
            input_ids=ids, attention_mask=full_mask, position_ids=positions,
            past_key_values=cache, use_cache=False, logits_to_keep=logits_to_keep,
        ).logits
    return out.logits[:, -1:, :], logits


def packed_logits_after_prefix(
    model: Any, prefix_ids: Sequence[int], suffix_ids_list: Sequence[Sequence[int]]
) -> tuple[Any, Any]:
    """Logits of a causal LM over continuations packed into one row after a shared prefix.

    The prefix runs once (batch 1) and its KV cache is used as it is, not repeated:
    the continuations are concatenated into one row of S tokens, with position ids
    restarting after the prefix for each of them and a 4D additive attention mask
    letting each token see the whole prefix and the earlier tokens of its own
    continuation only. No padding, no copies of the cache; every continuation's
    logits equal an unpadded forward of prefix + continuation (to float rounding).

    Returns:
        ``(prefix_logits, logits)``: the logits after the prefix's last token,
        shape ``(vocab,)``, and the packed continuations' logits, shape ``(S, vocab)``.
    """
    import torch

    device = next(model.parameters()).device
    plen = len(prefix_ids)
    lengths = torch.tensor([len(s) for s in suffix_ids_list], dtype=torch.long)
    total = int(lengths.sum())
    with torch.no_grad():
        out = model(input_ids=torch.tensor([list(prefix_ids)], device=device), use_cache=True, logits_to_keep=1)
        first = out.logits[0, -1]
        if total == 0:
            return first, out.logits.new_zeros((0, out.logits.shape[-1]))
        ids = torch.tensor([t for s in suffix_ids_list for t in s], dtype=torch.long, device=device)
        segment = torch.repeat_interleave(torch.arange(len(lengths)), lengths).to(device)
        starts = (torch.cumsum(lengths, 0) - lengths).to(device)
        offset = torch.arange(total, device=device) - starts[segment]
        own = (segment[:, None] == segment[None, :]) & (offset[None, :] <= offset[:, None])
        mask = _after_cache_mask(own, plen, out.logits)
        logits = model(
            input_ids=ids[None], attention_mask=mask[None, None], position_ids=(plen + offset)[None],
            past_key_values=out.past_key_values, use_cache=False,
        ).logits[0]
    return first, logits


def _after_cache_mask(allowed: Any, cached: int, like: Any) -> Any:
    """The additive attention mask of tokens read after ``cached`` cached ones: each sees every cached token
    and the new ones ``allowed`` (a boolean ``(new, new)`` matrix) lets it; 0 where seen, the dtype's minimum
    elsewhere, in ``like``'s floating dtype (float32 otherwise) and on its device."""
    import torch

    seen = torch.cat([torch.ones((allowed.shape[0], cached), dtype=torch.bool, device=allowed.device), allowed], 1)
    dtype = like.dtype if like.is_floating_point() else torch.float32
    return torch.zeros(seen.shape, dtype=dtype, device=allowed.device).masked_fill(~seen, torch.finfo(dtype).min)


def continuation_logprobs(model: Any, prefix_ids: Sequence[int], suffix_ids_list: Sequence[Sequence[int]]) -> list[Any]:
    """Per-token log p of each suffix given the shared prefix, the prefix run once.

    Causal LM: the prefix runs once with ``use_cache``; its last logits score
    each suffix's first token, and its KV cache is reused by one forward of all
    suffixes packed into one row (``packed_logits_after_prefix``: no padding, no
    copies of the cache, a block mask keeping the suffixes apart). Seq2seq LM: the
    prefix is the encoder input, encoded once; the decoder reads
    ``decoder_start + suffix[:-1]``. Every row equals an unpadded forward of its
    own prefix + suffix.

    Args:
        model: a transformers causal or seq2seq LM.
        prefix_ids: token ids of the prompt prefix (the encoder input of a seq2seq LM).
        suffix_ids_list: the continuations' token ids, each non-empty.

    Returns:
        One float32 CPU tensor per suffix with its tokens' natural-log probabilities.
    """
    import torch

    if not suffix_ids_list:
        return []
    if len(prefix_ids) == 0:
        raise ValueError("`prefix_ids` is empty; give at least one prompt token (e.g. bos)")
    if any(len(s) == 0 for s in suffix_ids_list):
        raise ValueError("every suffix in `suffix_ids_list` needs at least one token")
    if model.config.is_encoder_decoder:
        return _seq2seq_logprobs(model, prefix_ids, suffix_ids_list)
    with torch.no_grad():
        first, packed = packed_logits_after_prefix(model, prefix_ids, [list(s)[:-1] for s in suffix_ids_list])
        first, packed = first.float(), packed.float()
        heads = torch.tensor([s[0] for s in suffix_ids_list], dtype=torch.long, device=first.device)
        first_lp = (first[heads] - torch.logsumexp(first, -1)).cpu()
        targets = torch.tensor([t for s in suffix_ids_list for t in list(s)[1:]], dtype=torch.long)
        targets = targets.to(packed.device)
        rest_lp = (packed.gather(-1, targets[:, None])[:, 0] - torch.logsumexp(packed, -1)).cpu()
    return _per_suffix(first_lp, rest_lp, suffix_ids_list)


def _per_suffix(first_lp: Any, rest_lp: Any, suffixes: Sequence[Sequence[int]]) -> list[Any]:
    """One row per suffix: its first token's log p (``first_lp[i]``) and the rest's, cut from ``rest_lp``
    (the suffixes' other tokens, concatenated in order)."""
    import torch

    ends = torch.tensor([len(s) - 1 for s in suffixes]).cumsum(0).tolist()
    rests = torch.tensor_split(rest_lp, ends[:-1])
    return [torch.cat([first_lp[i : i + 1], rest]) for i, rest in enumerate(rests)]


def branched_logprobs(
    model: Any, stem_ids: Sequence[int], branches: Sequence[tuple[Sequence[int], Sequence[Sequence[int]]]]
) -> list[list[Any]]:
    """Per-token log p of each suffix after ``stem + branch``, for several branches, in two forwards.

    A causal LM reads a tree: the stem (shared by every prompt, e.g. a chat template's system turn) runs once
    with ``use_cache``; then one row holds every branch (the rest of one prompt, e.g. one document and the
    instruction) and every suffix read after it, with position ids continuing its branch and a 4D mask
    letting a branch token see the stem and its own branch's earlier tokens, and a suffix token the stem,
    its whole branch and its own suffix's earlier tokens. The row is ordered so that the positions whose
    logits are needed (each branch's last token, every suffix token but the last) come last and only they
    are kept (``logits_to_keep``). Every suffix's values equal an unpadded forward of stem + branch + suffix
    (to float rounding).

    Args:
        model: a transformers causal LM.
        stem_ids: the shared prefix (non-empty).
        branches: ``(branch_ids, suffixes)`` pairs; every branch and every suffix non-empty.

    Returns:
        Per branch, one float32 CPU tensor per suffix with its tokens' natural-log probabilities.
    """
    import torch

    if not stem_ids:
        raise ValueError("`stem_ids` is empty; give at least one prompt token (e.g. bos)")
    if any(not b or any(not s for s in sfx) for b, sfx in branches):
        raise ValueError("every branch and every suffix in `branches` needs at least one token")
    read = [i for i, (_, sfx) in enumerate(branches) if sfx]  # a branch without suffixes is not run
    result: list[list[Any]] = [[] for _ in branches]
    if not read:
        return result
    device = next(model.parameters()).device
    stem = len(stem_ids)
    # the row: branches' heads (all but the last token), their last tokens, then the suffixes (all but the last)
    ids, branch, suffix, offset = [], [], [], []  # per token: branch index, suffix index (-1: a branch token)
    branches = [(list(branches[i][0]), [list(x) for x in branches[i][1]]) for i in read]
    for part in ("head", "last"):
        for b, (tokens, _) in enumerate(branches):
            span = range(len(tokens) - 1) if part == "head" else [len(tokens) - 1]
            ids += [tokens[i] for i in span]
            branch += [b] * len(span)
            suffix += [-1] * len(span)
            offset += list(span)
    kept = len(branches)
    k = 0
    for b, (tokens, suffixes) in enumerate(branches):
        for s in suffixes:
            ids += s[:-1]
            branch += [b] * (len(s) - 1)
            suffix += [k] * (len(s) - 1)
            offset += [len(tokens) + i for i in range(len(s) - 1)]
            kept += len(s) - 1
            k += 1
    br, sf, off = (torch.tensor(x, dtype=torch.long, device=device) for x in (branch, suffix, offset))
    same = br[:, None] == br[None, :]
    key_branch = sf[None, :] < 0
    own = (sf[:, None] == sf[None, :]) & (off[None, :] <= off[:, None])
    allowed = same & ((key_branch & (off[None, :] <= off[:, None])) | (~key_branch & own))
    with torch.no_grad():
        out = model(input_ids=torch.tensor([list(stem_ids)], device=device), use_cache=True, logits_to_keep=1)
        mask = _after_cache_mask(allowed, stem, out.logits)
        logits = model(
            input_ids=torch.tensor([ids], device=device), attention_mask=mask[None, None],
            position_ids=(stem + off)[None], past_key_values=out.past_key_values, use_cache=False,
            logits_to_keep=kept,
        ).logits[0].float()
        logp = logits - torch.logsumexp(logits, -1, keepdim=True)
        last, rest = logp[: len(branches)], logp[len(branches):]
        flat = [(b, s) for b, (_, sfx) in enumerate(branches) for s in sfx]
        heads = torch.tensor([s[0] for _, s in flat], dtype=torch.long, device=device)
        which = torch.tensor([b for b, _ in flat], dtype=torch.long, device=device)
        first_lp = last[which, heads].cpu()
        targets = torch.tensor([t for _, s in flat for t in s[1:]], dtype=torch.long, device=device)
        rest_lp = rest.gather(-1, targets[:, None])[:, 0].cpu()
    values = _per_suffix(first_lp, rest_lp, [s for _, s in flat])
    for i, (_, sfx) in zip(read, branches):
        result[i], values = values[: len(sfx)], values[len(sfx):]
    return result


def _seq2seq_logprobs(model: Any, prefix_ids: Sequence[int], suffix_ids_list: Sequence[Sequence[int]]) -> list[Any]:
    """``continuation_logprobs`` of a seq2seq LM: the prefix encoded once, the suffixes right-padded."""
    import torch
    from transformers.modeling_outputs import BaseModelOutput

    device = next(model.parameters()).device
    k, width, plen = len(suffix_ids_list), max(map(len, suffix_ids_list)), len(prefix_ids)
    ids = torch.zeros((k, width), dtype=torch.long)
    mask = torch.zeros((k, width), dtype=torch.long)
    for row, suffix in enumerate(suffix_ids_list):
        ids[row, : len(suffix)] = torch.tensor(list(suffix))
        mask[row, : len(suffix)] = 1
    ids, mask = ids.to(device), mask.to(device)
    with torch.no_grad():
        prefix = torch.tensor([list(prefix_ids)], device=device)
        enc_mask = torch.ones((1, plen), dtype=torch.long, device=device)
        hidden = model.get_encoder()(input_ids=prefix, attention_mask=enc_mask).last_hidden_state
        start = torch.full((k, 1), model.config.decoder_start_token_id, dtype=torch.long, device=device)
        logits = model(
            encoder_outputs=BaseModelOutput(last_hidden_state=hidden.expand(k, -1, -1)),
            attention_mask=enc_mask.expand(k, -1),
            decoder_input_ids=torch.cat([start, ids[:, :-1]], 1),
            decoder_attention_mask=torch.cat([torch.ones_like(start), mask[:, :-1]], 1),
        ).logits.float()
        picked = logits.gather(-1, ids.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(logits, -1)
    picked = picked.cpu()
    return [picked[row, : len(s)] for row, s in enumerate(suffix_ids_list)]


#: The engines an LM-backed scorer runs on.
ENGINES = ("transformers", "vllm")


def vllm_engine_for(model: str) -> Any:
    """The in-process ``VllmEngine`` of ``model``: one per process, shared with the generator."""
    from ..decoding.engines.base import open_engine

    return open_engine(model, "vllm")


@dataclass
class LmBackedConfig(ScorerConfig):
    """Settings every LM-backed scorer has (the judges, the LM-likelihood scorers)."""

    model: str = field(default="smollm2-135m-instruct", metadata={"help": "Judge or (causal or seq2seq) LM: embedded alias, local folder or cached HF id."})
    device: str | None = field(default=None, metadata={"help": "cpu, cuda... (default: auto)."})
    engine: str = field(
        default="transformers",
        metadata={"help": "transformers (in-process) or vllm (an in-process vLLM engine: prompt log-probs, generation)."},
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.engine not in ENGINES:
            raise ValueError(f"`engine` must be one of {', '.join(ENGINES)}, got {self.engine!r}")


LmBackedConfigT = TypeVar("LmBackedConfigT", bound=LmBackedConfig)


class ServerPromptLogprobs:
    """Log-probs of given tokens from a vLLM server, with :meth:`VllmEngine.prompt_logprobs`' contract.

    :meth:`prompt_logprobs` (the LM scorers): one ``/v1/completions`` request per prompt,
    the token ids as ``prompt``, ``max_tokens`` 1, ``prompt_logprobs`` 0 (vLLM's extension:
    ``choices[0].prompt_logprobs`` lists, per prompt position, ``None`` for the first token
    and then ``{token id: {logprob, rank, decoded_token}}`` holding at least the prompt's
    own token). vLLM skips its prefix cache for such requests (every position's logits
    are needed). :meth:`next_logprobs` (the judges): the log-probs of a few given tokens
    at the position after each prompt, one request per prompt with ``logprob_token_ids``
    (``logprobs`` = their number, ``return_tokens_as_token_ids``), which the prefix cache
    serves. Requests go out through the client (``max_concurrency`` in flight, retries,
    timeout). ``config`` answers ``is_encoder_decoder`` (False: vLLM serves causal LMs
    through ``/v1/completions``).
    """

    def __init__(self, client: ServerClient) -> None:
        from types import SimpleNamespace

        self.client = client
        self.config = SimpleNamespace(is_encoder_decoder=False)
        self.requests = 0
        self.probed: set[str] = set()

    def _refuse(self, what: str) -> DataError:
        return DataError(
            f"server {self.client.url.base} does not return {what} (a vLLM extension of /v1/completions; "
            "llama.cpp, TGI and OpenAI have none): give a vLLM server URL or a local model (alias, folder "
            "or cached HF id) — see docs/serving.md"
        )

    def _values(self, prompt: Sequence[int], response: Any) -> list[float]:
        try:
            steps = response["choices"][0]["prompt_logprobs"]
            if not isinstance(steps, list) or len(steps) != len(prompt):
                raise TypeError
            return [float(step[str(tok)]["logprob"]) for tok, step in zip(prompt[1:], steps[1:])]
        except (KeyError, IndexError, TypeError, ValueError):
            raise self._refuse("prompt log-probs on token ids (`prompt_logprobs`)") from None

    def probe(self, what: str = "prompt_logprobs") -> None:
        """One tiny request, once: DataError (exit 2, one line) unless the server answers ``what``
        (``prompt_logprobs`` or ``logprob_token_ids``) on token ids."""
        if what not in self.probed:
            if what == "prompt_logprobs":
                self.prompt_logprobs([[0, 0]])
            else:
                self.next_logprobs([[0]], [0])
            self.probed.add(what)

    def prompt_logprobs(self, prompts: Sequence[Sequence[int]], progress: bool = False) -> list[list[float]]:
        """log p(t_i | t_<i) of every token of each prompt after its first (len − 1 values each)."""
        if not prompts:
            return []
        prompts = [[int(t) for t in p] for p in prompts]
        self.requests += len(prompts)
        bodies = [{"prompt": p, "max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 0} for p in prompts]
        return [self._values(p, r) for p, r in zip(prompts, self.client.completions(bodies))]

    def next_logprobs(self, prompts: Sequence[Sequence[int]], token_ids: Sequence[int]) -> list[list[float]]:
        """log p(token | prompt) of each of ``token_ids`` after each prompt (one request per prompt)."""
        if not prompts:
            return []
        ids = [int(t) for t in token_ids]
        self.requests += len(prompts)
        bodies = [
            {"prompt": [int(t) for t in p], "max_tokens": 1, "temperature": 0.0, "logprobs": len(ids),
             "logprob_token_ids": ids, "return_tokens_as_token_ids": True}
            for p in prompts
        ]
        out = []
        for response in self.client.completions(bodies):
            try:
                top = response["choices"][0]["logprobs"]["top_logprobs"][0]
                out.append([float(top[f"token_id:{t}"]) for t in ids])
            except (KeyError, IndexError, TypeError, ValueError):
                raise self._refuse("the log-probs of given next tokens on token ids (`logprob_token_ids`)") from None
        return out


def server_prompt_model(client: ServerClient, need: str = "prompt_logprobs") -> tuple[ServerPromptLogprobs, Any]:
    """``(ServerPromptLogprobs, tokenizer)`` of a vLLM server, ``need`` probed once per client (DataError, exit 2)."""
    if "prompt_model" not in client.memo:
        client.memo["prompt_model"] = ServerPromptLogprobs(client)
    model = client.memo["prompt_model"]
    model.probe(need)
    if "tokenizer" not in client.memo:
        from ..decoding.engines.server import server_tokenizer

        client.memo["tokenizer"] = server_tokenizer(client)
    return model, client.memo["tokenizer"]


class LmBackedScorer(Scorer[LmBackedConfigT]):
    """A scorer reading a causal or seq2seq LM: ``config.model`` loaded on first use, or one handed in.

    Its config is an ``LmBackedConfig`` (``model``: alias, folder or HF id; ``device``). A
    scorer with ``serves = True`` (the LLM judges) also takes a server URL
    ``http://HOST:PORT/v1[#MODEL]`` as ``model`` (``decoding.engines.http``; its config
    then reads ``max_concurrency`` and ``timeout``); so does one with ``reads_prompts =
    True`` (the LM-likelihood scorers), which reads a vLLM server's prompt log-probs
    (:class:`ServerPromptLogprobs`) and the served model's tokenizer, loaded here. Others
    refuse one with a ``DataError`` when built, before any model or request.
    """

    Config = LmBackedConfig
    #: Whether ``config.model`` may be a server URL (the scorer then scores through ``self.server``).
    serves: ClassVar[bool] = False
    #: Whether ``config.model`` may be a vLLM server URL read through its prompt log-probs.
    reads_prompts: ClassVar[bool] = False
    #: What such a scorer reads from the server (``ServerPromptLogprobs.probe``).
    server_reads: ClassVar[str] = "prompt_logprobs"

    def __init__(self, config: LmBackedConfigT | None = None, cache_dir: Any = None) -> None:
        super().__init__(config, cache_dir)
        self._model: Any = None
        self._tokenizer: Any = None
        self._model_name = self.config.model
        self.server: Any = None
        if is_server_url(self.config.model):
            if not (self.serves or self.reads_prompts):
                raise DataError(
                    f"scorer {self.name!r}: `model` {self.config.model!r} is a server URL, but "
                    f"{self.name} needs the log-probabilities of the summary's own tokens read as a "
                    "prompt, which evenhand does not take from a server (not every server returns "
                    "them); give a local model (alias, folder or cached HF id) — see docs/serving.md"
                )
            server = ServerConfig(
                max_concurrency=getattr(self.config, "max_concurrency", 4),
                timeout=getattr(self.config, "timeout", 120.0),
            )
            from ..decoding.engines.base import open_engine

            self.server = open_engine(self.config.model, server=server).client  # the server engine's client

    @property
    def on_vllm(self) -> bool:
        """Whether this scorer reads an in-process vLLM engine (``config.engine == "vllm"``)."""
        return getattr(self.config, "engine", "transformers") == "vllm" and self.server is None

    def _unkeyed_settings(self) -> set[str]:
        # the engine keys the cache only when it is not the default (older caches stay valid)
        return super()._unkeyed_settings() | (set() if self.on_vllm else {"engine"})

    def use_model(self, model: Any, tokenizer: Any, name: str) -> LmBackedScorer:
        """Score with an already loaded model (``name`` keys the cache); returns self."""
        self._model, self._tokenizer, self._model_name = model, tokenizer, name
        return self

    @property
    def model_id(self) -> str:
        """The model's name; for a server ``BASE#MODEL`` (asks ``/v1/models`` when the URL names none)."""
        return self.server.key if self.server is not None else self._model_name

    def _model_content(self) -> list[str] | None:
        """Local models: their files' digests. A server read for prompt log-probs: the model folder
        or id it serves (``/v1/models`` root) and, when that folder is here too, its digest."""
        if not self.reads_server_prompts():
            return super()._model_content()
        from ..evaluation.io.digests import content_digest

        assert self.server is not None
        root = str(self.server.model_entry().get("root") or self.server.model)
        digest = content_digest(root) if not is_server_url(root) else None
        return [f"served:{root}", self.server_reads, *([digest] if digest is not None else [])]

    def reads_server_prompts(self) -> bool:
        """Whether this scorer reads a server's prompt log-probs on token ids (:class:`ServerPromptLogprobs`)."""
        return self.server is not None and self.reads_prompts

    def _load(self) -> tuple[Any, Any]:
        if self.server is not None and self.reads_server_prompts():
            if self._model is None:
                self._model, self._tokenizer = server_prompt_model(self.server, self.server_reads)
            return self._model, self._tokenizer
        if self.server is not None:
            raise RuntimeError(f"scorer {self.name!r} reads server {self.server.url}; it loads no model")
        if self._model is None and self.on_vllm:
            config: Any = self.config
            engine = vllm_engine_for(config.model)
            self._model, self._tokenizer = engine, engine.tokenizer
        elif self._model is None:
            from ..decoding.models import load_generator

            self._model, self._tokenizer = load_generator(self.config.model, device=self.config.device)
        return self._model, self._tokenizer
