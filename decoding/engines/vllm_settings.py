"""Per-request settings of evenhand's vLLM logits processors: ``SamplingParams.extra_args["evenhand"]``.

The same object travels offline (``LLM.generate(..., SamplingParams(extra_args=...))``)
and through a server (the request field ``vllm_xargs``). vLLM's server only takes
flat values there (str, number, list of them), so the settings go as one JSON
string, ``{"evenhand": "<json>"}``; offline a dict is accepted too. Schema
(version 1; every part optional, absent = off)::

    {"v": 1,
     "repetition_penalty": 1.2,        # transformers' penalty on generated tokens only
     "no_repeat_ngram_size": 3,        # transformers' n-gram ban over prompt + output
     "abstractiveness": {              # Dreyer et al.'s λ_h (decoding/processors/abstractiveness.py)
         "h": 2.0, "reward": false, "reward_longest": false,
         "spans": [[start, end], ...], # the documents' token positions in the prompt
         "source_ids": [...],          # or the source ids themselves (-1 between documents)
         "special_ids": [...]},        # ids that never match
     "coverage": {                     # group-coverage bonus (decoding/processors/group_coverage.py)
         "alpha": 3.0, "tau": 0.8, "prior": 1.0,
         "token_ids": [...],           # the example's K content tokens (GroupVocab)
         "member": [[...K], ...G],     # A over those tokens, one row per group
         "specificity": [[...K], ...G],
         "target": [...G]}}

``{"probe": 1}`` is refused with a message naming evenhand: a client sends it to
learn whether a server runs evenhand's processors (a server without them ignores
unknown ``vllm_xargs`` and answers normally).

This module does not import vLLM: the client (``decoding/engines/vllm_engine.py``)
builds and checks the settings with it, and the processors
(``decoding/engines/vllm_processor.py``) check them again in ``validate_params``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ...evaluation.data.schema import Example
from ...evaluation.errors import DataError
from ..config import FairnessSettings, GenerateConfig

KEY = "evenhand"
VERSION = 1
#: Marker in the message a server running evenhand's processors refuses a probe with.
PROBE_MARK = "evenhand-processors"


def dumps(settings: Mapping[str, Any]) -> str:
    """The wire form of ``settings``: compact JSON."""
    return json.dumps(settings, separators=(",", ":"))


def parse(extra_args: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The evenhand settings of one request's ``extra_args`` (checked), or None when absent.

    Raises ValueError naming the field for anything malformed (vLLM turns it into
    HTTP 400 on a server).
    """
    if not extra_args or KEY not in extra_args:
        return None
    raw = extra_args[KEY]
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as err:
            raise ValueError(f"{KEY}: extra_args[{KEY!r}] is not valid JSON ({err.msg})") from None
    if not isinstance(raw, Mapping):
        raise ValueError(f"{KEY}: extra_args[{KEY!r}] must be a JSON object, got {type(raw).__name__}")
    if "probe" in raw:
        raise ValueError(f"{PROBE_MARK}: this server runs evenhand's logits processors (settings v{VERSION})")
    check(raw)
    return dict(raw)


def _number(value: Any, field: str, low: float, high: float = math.inf, *, low_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{KEY}: `{field}` must be a finite number, got {value!r}")
    if value < low or value > high or (low_open and value == low):
        bound = f"> {low:g}" if low_open else f">= {low:g}"
        raise ValueError(f"{KEY}: `{field}` must be {bound}" + (f" and <= {high:g}" if high < math.inf else "")
                         + f", got {value!r}")
    return float(value)


def _ints(value: Any, field: str, low: int = 0) -> list[int]:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= low for v in value
    ):
        raise ValueError(f"{KEY}: `{field}` must be a list of ints >= {low}")
    return value


def _matrix(value: Any, field: str, rows: int, cols: int) -> None:
    if (
        not isinstance(value, list) or len(value) != rows
        or not all(isinstance(r, list) and len(r) == cols for r in value)
    ):
        raise ValueError(f"{KEY}: `{field}` must be {rows} lists (one per group) of {cols} numbers")
    for r in value:
        for v in r:
            _number(v, field, 0.0, 1.0)


def check(settings: Mapping[str, Any]) -> None:
    """Raise ValueError naming the field for a malformed settings object (see the module doc)."""
    known = {"v", "repetition_penalty", "no_repeat_ngram_size", "abstractiveness", "coverage"}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ValueError(f"{KEY}: unknown setting(s) {unknown}; known: {sorted(known)}")
    if settings.get("v", VERSION) != VERSION:
        raise ValueError(f"{KEY}: settings version {settings.get('v')!r}, this server runs version {VERSION}")
    if "repetition_penalty" in settings:
        _number(settings["repetition_penalty"], "repetition_penalty", 0.0, low_open=True)
    if "no_repeat_ngram_size" in settings:
        n = settings["no_repeat_ngram_size"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"{KEY}: `no_repeat_ngram_size` must be an int >= 0, got {n!r}")
    if "abstractiveness" in settings:
        a = settings["abstractiveness"]
        if not isinstance(a, Mapping):
            raise ValueError(f"{KEY}: `abstractiveness` must be an object")
        _number(a.get("h"), "abstractiveness.h", 0.0, low_open=True)
        for flag in ("reward", "reward_longest"):
            if not isinstance(a.get(flag, False), bool):
                raise ValueError(f"{KEY}: `abstractiveness.{flag}` must be true or false")
        if a.get("reward_longest") and not a.get("reward"):
            raise ValueError(f"{KEY}: `abstractiveness.reward_longest` only applies with `reward`")
        if ("spans" in a) == ("source_ids" in a):
            raise ValueError(f"{KEY}: `abstractiveness` needs exactly one of `spans` and `source_ids`")
        if "spans" in a:
            spans = a["spans"]
            if not isinstance(spans, list) or not all(
                isinstance(s, list) and len(s) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in s)
                and 0 <= s[0] <= s[1] for s in spans
            ):
                raise ValueError(f"{KEY}: `abstractiveness.spans` must be a list of [start, end] token positions")
        else:
            _ints(a["source_ids"], "abstractiveness.source_ids", low=-1)
        _ints(a.get("special_ids", []), "abstractiveness.special_ids")
    if "coverage" in settings:
        c = settings["coverage"]
        if not isinstance(c, Mapping):
            raise ValueError(f"{KEY}: `coverage` must be an object")
        _number(c.get("alpha"), "coverage.alpha", 0.0)
        _number(c.get("tau", 0.8), "coverage.tau", 0.0, 1.0)
        _number(c.get("prior", 1.0), "coverage.prior", 0.0)
        ids = _ints(c.get("token_ids"), "coverage.token_ids")
        target = c.get("target")
        if not isinstance(target, list) or not target:
            raise ValueError(f"{KEY}: `coverage.target` must be a non-empty list (one share per group)")
        for t in target:
            _number(t, "coverage.target", 0.0, 1.0)
        _matrix(c.get("member"), "coverage.member", len(target), len(ids))
        _matrix(c.get("specificity"), "coverage.specificity", len(target), len(ids))


def source_spans(tokenizer: Any, prompt: str, texts: Sequence[str]) -> tuple[list[int], list[list[int]] | None]:
    """(token ids of ``prompt``, the token span of each document in it).

    The spans cover the tokens ``source_tokens.prompt_source_ids`` keeps for each
    document (those overlapping its characters in the prompt); None when a
    document is not found verbatim (then the caller sends ``source_ids``).
    """
    from ..prompts.source_tokens import document_spans

    enc = tokenizer(prompt, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = list(enc["input_ids"]), enc["offset_mapping"]
    spans: list[list[int]] = []
    for span in document_spans(prompt, texts):
        if span is None:
            return ids, None
        lo, hi = span
        kept = [i for i, (a, b) in enumerate(offsets) if a < hi and b > lo]
        if kept and kept != list(range(kept[0], kept[-1] + 1)):
            return ids, None
        spans.append([kept[0], kept[-1] + 1] if kept else [0, 0])
    return ids, spans


def request_settings(
    config: GenerateConfig, tokenizer: Any, example: Example, prompt: str, prompt_ids: Sequence[int],
    vocab_size: int,
) -> dict[str, Any]:
    """The evenhand settings of one example's request under ``config`` (a ``GenerateConfig``).

    ``prompt`` is the templated prompt (chat template + response prefix) and
    ``prompt_ids`` its token ids, as sent to vLLM. Only the parts ``config``
    turns on are present; an empty dict means plain vLLM decoding.
    """
    settings: dict[str, Any] = {}
    if config.repetition_penalty != 1.0 and not config.penalize_prompt:
        settings["repetition_penalty"] = float(config.repetition_penalty)
    if config.no_repeat_ngram_size:
        settings["no_repeat_ngram_size"] = int(config.no_repeat_ngram_size)
    h = config.abstractiveness if config.abstractiveness is not None else config.extractiveness
    if h is not None:
        ids, spans = source_spans(tokenizer, prompt, example.texts)
        part: dict[str, Any] = {"h": float(h), "reward": config.extractiveness is not None}
        if spans is not None and list(ids) == list(prompt_ids):
            part["spans"] = spans
        else:
            from ..prompts.source_tokens import prompt_source_ids

            part["source_ids"] = prompt_source_ids(tokenizer, prompt, example.texts)
        special = set(tokenizer.all_special_ids)
        within = {t for t in prompt_ids if t in special}
        if within:
            part["special_ids"] = sorted(within)
        settings["abstractiveness"] = part
    if config.fairness is not None and config.fairness_strength > 0:
        settings["coverage"] = coverage_settings(config, tokenizer, example, vocab_size)
    return settings


def coverage_settings(config: FairnessSettings, tokenizer: Any, example: Example, vocab_size: int) -> dict[str, Any]:
    """The ``coverage`` part: the example's group vocabulary as token ids and its target."""
    from ..processors.group_vocab import build_group_vocab

    if config.fairness is None:
        raise ValueError("the group-coverage bonus needs a `fairness` target")
    vocab = build_group_vocab(example, tokenizer)
    ids = vocab.token_ids.tolist()
    if ids and max(ids) >= vocab_size:
        raise DataError(
            f"example {example.id!r}: token id {max(ids)} is outside the model's vocabulary of "
            f"{vocab_size}; use the served model's tokenizer"
        )
    return {
        "alpha": float(config.fairness_strength), "tau": float(config.fairness_tau), "prior": 1.0,
        "token_ids": ids, "member": vocab.member.tolist(), "specificity": vocab.specificity.tolist(),
        "target": vocab.target(config.fairness).tolist(),
    }
