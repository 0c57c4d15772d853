"""(Fairness-aware) beam search as a loop outside the engine, one token per request.

vLLM's own ``beam_search`` works this way: each step sends every live beam as a
one-token request asking for its top ``logprobs`` candidates and ranks the
beams itself. This loop does the same against any engine that implements
:class:`NextTokenEngine` — ``next_token_logprobs(prefix_token_ids, k) -> (ids,
logprobs)``, each (N, k), the k most likely next tokens of each prefix and their
natural-log probabilities — and ranks with :mod:`evenhand.decoding.beam.objective`,
the same code ``fair_beam_search`` runs inside transformers. So the objective J,
the pool, keep-alive, the meaning term and the final rerank are one
implementation; with ``fair=None`` (or β = 0 and no meaning term) it is plain beam
search, and on the same log-probs it returns what transformers' beam search
returns (tested token for token with :class:`TransformersNextToken`).

Each beam asks for as many candidates as the step's pool holds (plain beam search:
2 × ``num_beams``, as vLLM's ``beam_search``; fair: ``pool`` × that): every candidate
of the pool is among its own beam's top candidates, so nothing the full-vocabulary
search would pick is missed. At the first step all beams share the prompt, so
one request per example is sent. An example whose search is over (transformers'
early-stop heuristic: no running beam can still beat its finished hypotheses) sends
nothing more: its running beams can no longer change what it returns, so they get
placeholder candidates (log-prob −1e9) instead of requests. An engine with prefix
caching (vLLM) re-reads only the new token of each request (and the tokens after the
last full KV block).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..processors.repetition import ngram_bans, penalize_seen
from .objective import POOL, FairBeamSettings, pool_size
from .search import beam_step, finish
from .state import NEG, BeamConfig, BeamState


class NextTokenEngine(Protocol):
    """What the step loop needs from an engine."""

    def next_token_logprobs(self, prefix_token_ids: list[list[int]], k: int) -> tuple[Any, Any]:
        """The k most likely next tokens of each prefix: ``(ids, logprobs)``, (N, k) tensors.

        Log-probs are natural logs after whatever processors the engine applies;
        an engine may return fewer than k columns only when the vocabulary is smaller.
        """
        ...


#: Lowers candidates' log-probs after the engine: ``(prefixes, n_generated, ids, logprobs) -> logprobs``
#: (``n_generated``: how many of each prefix's last tokens were generated).
Adjust = Callable[[list[list[int]], int, Any, Any], Any]


def candidate_processors(repetition_penalty: float = 1.0, no_repeat_ngram_size: int = 0) -> Adjust | None:
    """transformers' repetition penalty (generated tokens only) and n-gram blocking, on candidates.

    Both only lower log-probs, as :func:`beam_search_steps`' ``adjust`` requires:
    a candidate already generated gets log p × ``repetition_penalty`` (log p < 0, as
    ``RepetitionPenaltyLogitsProcessor`` with ``prompt_ignore_length``); a candidate that
    would repeat an n-gram of the prefix (prompt included, as ``NoRepeatNGramLogitsProcessor``)
    gets −inf. Vectorized over rows and candidates. None when both are off.
    """
    if repetition_penalty == 1.0 and no_repeat_ngram_size <= 0:
        return None
    if not repetition_penalty > 0:
        raise ValueError(f"`repetition_penalty` must be > 0, got {repetition_penalty!r}")

    def adjust(prefixes: list[list[int]], n_generated: int, ids: Any, lps: Any) -> Any:
        import torch

        width = max(len(p) for p in prefixes)
        history = torch.full((len(prefixes), width), -1, dtype=torch.long)
        for row, prefix in enumerate(prefixes):  # left-aligned: the row's tokens, then -1
            history[row, : len(prefix)] = torch.tensor(prefix, dtype=torch.long)
        length = torch.tensor([len(p) for p in prefixes], dtype=torch.long)
        if repetition_penalty != 1.0 and n_generated > 0:
            at = (length[:, None] - n_generated + torch.arange(n_generated)).clamp(min=0)
            seen = (ids[:, :, None] == history.gather(1, at)[:, None, :]).any(-1)
            lps = penalize_seen(lps, seen, repetition_penalty)
        if no_repeat_ngram_size > 0:
            tokens, banned = ngram_bans(history, length, no_repeat_ngram_size)
            hit = (ids[:, :, None] == tokens[:, None, :]) & banned[:, None, :]
            lps = lps.masked_fill(hit.any(-1), float("-inf"))
        return lps

    return adjust


def beam_search_steps(
    engine: NextTokenEngine,
    prompts: Sequence[Sequence[int]],
    *,
    num_beams: int,
    max_new_tokens: int,
    eos_token_ids: Sequence[int] = (),
    pad_token_id: int | None = None,
    length_penalty: float = 1.0,
    early_stopping: bool | str = False,
    num_return_sequences: int = 1,
    fair: FairBeamSettings | None = None,
    adjust: Adjust | None = None,
    on_step: Callable[[int], object] | None = None,
) -> list[list[list[int]]]:
    """Beam search (fair with ``fair``, a ``FairBeamSettings``) over ``engine``'s next-token log-probs.

    Args:
        engine: any :class:`NextTokenEngine`.
        prompts: each example's prompt token ids.
        num_beams: beams per example (>= 2).
        max_new_tokens: generated tokens at most.
        eos_token_ids: tokens that end a hypothesis.
        pad_token_id: fills finished hypotheses (transformers' fill: pad, else the first eos).
        length_penalty, early_stopping, num_return_sequences: as transformers' generation config.
        fair: ``FairBeamSettings`` (its tables in ``prompts`` order) or None for plain beam search.
        adjust: candidate processors that only *lower* log-probs (e.g. a repetition
            penalty), applied to the returned candidates; the loop then asks for twice the
            candidates and checks that the pool's last one still beats every unreturned token.
        on_step: called after each step with the number of requests it sent (progress).

    Returns:
        Per example its ``num_return_sequences`` best hypotheses (generated token ids only,
        best first, each ending with its eos when it has one).
    """
    import torch

    if num_beams < 2:
        raise ValueError(f"beam search needs `num_beams` >= 2, got {num_beams}")
    if max_new_tokens < 1:
        raise ValueError(f"`max_new_tokens` must be >= 1, got {max_new_tokens}")
    if not 1 <= num_return_sequences <= num_beams:
        raise ValueError(f"`num_return_sequences` must be in [1, num_beams], got {num_return_sequences}")
    if not prompts:
        return []
    if fair is not None and fair.tables.target.shape[0] != len(prompts):
        raise ValueError(f"`fair.tables` hold {fair.tables.target.shape[0]} examples but there are {len(prompts)} prompts")
    eos = torch.tensor(list(eos_token_ids), dtype=torch.long)
    fill = pad_token_id if pad_token_id is not None else (int(eos[0]) if len(eos) else -1)
    config = BeamConfig(
        num_beams=num_beams, max_length=max_new_tokens, prompt_len=0, length_penalty=length_penalty,
        early_stopping=early_stopping, num_return_sequences=num_return_sequences, n_eos=len(eos),
    )
    b, k = len(prompts), num_beams
    state = BeamState.start(torch.zeros((b, 0), dtype=torch.long), config, fill)
    prompts = [list(p) for p in prompts]
    wanted = pool_size(config, fair, 1 << 62)

    def stop(candidates: Any) -> Any:
        hits = torch.isin(candidates[:, :, -1], eos) if len(eos) else torch.zeros(candidates.shape[:2], dtype=torch.bool)
        return hits | (candidates.shape[-1] >= config.max_length)

    done = False
    while not done:
        first = state.cur_len == 0
        rows = state.running[:, :1, :0] if first else state.running[:, :, : state.cur_len]
        generated = rows.reshape(rows.shape[0] * rows.shape[1], rows.shape[2]).tolist()  # requests are lists
        per_beam = 1 if first else k
        # examples whose search is over send no requests (their finished hypotheses are final)
        live = state.open[:, 0].repeat_interleave(per_beam).tolist()
        prefixes = [prompts[i // per_beam] + g for i, (g, on) in enumerate(zip(generated, live)) if on]
        some_ids, some_lps = _candidates(engine, prefixes, state.cur_len, wanted, adjust)
        if all(live):
            ids, lps = some_ids, some_lps
        else:
            rows = torch.tensor(live, dtype=torch.bool)
            ids = torch.zeros((len(live), some_ids.shape[1]), dtype=torch.long)
            lps = torch.full((len(live), some_lps.shape[1]), NEG, dtype=some_lps.dtype)
            ids[rows], lps[rows] = some_ids, some_lps
        ids, lps = ids.view(b, per_beam, -1), lps.view(b, per_beam, -1)
        if first:  # the other beams start dead (score −1e9) on the same candidates, as transformers
            ids, lps = ids.expand(b, k, -1), lps.expand(b, k, -1)
        done, _ = beam_step(state, config, fair, lps.float(), stop, token_ids=ids)
        if on_step is not None:
            on_step(len(prefixes))  # the requests this step sent (progress)
    sequences, lengths = finish(state, config, fair)
    out = [seq[:n].tolist() for seq, n in zip(sequences, lengths.tolist())]
    r = num_return_sequences
    return [out[i * r : (i + 1) * r] for i in range(b)]


def _candidates(
    engine: NextTokenEngine, prefixes: list[list[int]], n_generated: int, wanted: int, adjust: Adjust | None
) -> tuple[Any, Any]:
    """``wanted`` candidates per prefix, sorted, after ``adjust`` (checked exact, else more are asked)."""
    import torch

    if adjust is None:
        ids, lps = engine.next_token_logprobs(prefixes, wanted)
        return torch.as_tensor(ids, dtype=torch.long), torch.as_tensor(lps, dtype=torch.float32)
    cap = getattr(engine, "max_candidates", None) or (1 << 30)
    if wanted > cap:
        raise ValueError(f"the beam pool needs {wanted} candidates per beam; the engine returns at most {cap} "
                         "(raise vLLM's max_logprobs, or lower num_beams)")
    ask = min(2 * wanted, cap)
    while True:
        ids, lps = engine.next_token_logprobs(prefixes, ask)
        ids, raw = torch.as_tensor(ids, dtype=torch.long), torch.as_tensor(lps, dtype=torch.float32)
        lowered = adjust(prefixes, n_generated, ids, raw)
        top, order = torch.topk(lowered, k=min(wanted, lowered.shape[1]), dim=1)
        # an unreturned token has raw log-prob <= the last returned one, and adjust only lowers
        exact = raw.shape[1] < ask or bool((top[:, -1] >= raw[:, -1]).all())
        if exact or ask >= cap:
            if not exact:
                _warn_inexact(cap)
            return ids.gather(1, order), top
        ask = min(2 * ask, cap)


def _warn_inexact(cap: int) -> None:
    import warnings

    warnings.warn(
        f"beam search: after the repetition penalty / n-gram blocking, a step's pool may miss a token "
        f"outside the engine's top {cap} candidates (raise vLLM's max_logprobs for exactness)",
        stacklevel=3,
    )


class TransformersNextToken:
    """:class:`NextTokenEngine` of an in-process transformers causal LM (no KV cache; for tests and CPU).

    Each call left-pads the prefixes into one batch (``pad_token_id``), runs the model once
    and applies ``logits_processor`` (a transformers ``LogitsProcessorList`` or any callable
    ``(input_ids, log_probs) -> log_probs``) to the log-softmax of the last position, as
    transformers' beam search does.
    """

    def __init__(self, model: Any, logits_processor: Any = None, pad_token_id: int = 0) -> None:
        self.model = model
        self.logits_processor = logits_processor
        self.pad_token_id = pad_token_id
        self.calls = 0

    def next_token_logprobs(self, prefix_token_ids: list[list[int]], k: int) -> tuple[Any, Any]:
        """The k best next tokens of each prefix and their log-probs."""
        import torch

        self.calls += 1
        device = next(self.model.parameters()).device
        width = max(len(p) for p in prefix_token_ids)
        ids = torch.full((len(prefix_token_ids), width), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, prefix in enumerate(prefix_token_ids):
            ids[row, width - len(prefix) :] = torch.tensor(prefix, dtype=torch.long)
            mask[row, width - len(prefix) :] = 1
        ids, mask = ids.to(device), mask.to(device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        with torch.no_grad():
            logits = self.model(input_ids=ids, attention_mask=mask, position_ids=positions).logits[:, -1].float()
        log_probs = torch.log_softmax(logits, dim=-1)
        if self.logits_processor is not None:
            log_probs = self.logits_processor(ids, log_probs)
        top = torch.topk(log_probs, k=min(k, log_probs.shape[-1]), dim=-1)
        return top.indices.cpu(), top.values.cpu()


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


def candidates_needed(num_beams: int, steering: bool, adjusts: bool) -> tuple[int, int]:
    """(needed, asked): candidates per beam and step the step loop needs, and asks for first.

    The pool holds :data:`~evenhand.decoding.beam.objective.POOL` × 2 × ``num_beams``
    continuations when it steers (β > 0 or a meaning term), 2 × ``num_beams`` otherwise;
    with candidate processors (``adjusts``: a repetition penalty or n-gram blocking) the
    loop first asks for twice as many (:func:`_candidates`).
    """
    needed = 2 * num_beams * (POOL if steering else 1)
    return needed, 2 * needed if adjusts else needed
