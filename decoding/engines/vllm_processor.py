"""evenhand's logits processors inside vLLM (V1 engine, V1 model runner): thin adapters.

One class, :class:`EvenhandLogitsProcessor`, a ``vllm.v1.sample.logits_processor.LogitsProcessor``.
Register it with ``LLM(logits_processors=[EvenhandLogitsProcessor])`` or
``vllm serve MODEL --logits-processors evenhand.vllm:EvenhandLogitsProcessor``; a
request turns it on with ``SamplingParams.extra_args["evenhand"]`` (server:
``vllm_xargs``), the settings of :mod:`evenhand.decoding.engines.vllm_settings`. It applies, to
the rows of requests that asked and in the in-process order of ``generate``:

1. transformers' repetition penalty on generated tokens only (``repetition_penalty``;
   vLLM's own penalizes the prompt too);
2. transformers' ``no_repeat_ngram_size`` ban over prompt + output (vLLM has none);
3. the abstractiveness penalty / extraction reward (``abstractiveness.AbstractivenessProcessor``'s
   functions: ``source_table``, ``extend_lengths``, ``reduced_increments``);
4. the group-coverage bonus (``group_coverage.coverage_bonus``).

The formulas are the in-process ones (the same functions); what this module adds is
the bookkeeping of vLLM's persistent batch. ``update_state`` applies the batch's
changes in vLLM's order (removed, added, moved), builds each new request's state once
(the source table from its prompt token ids and the documents' spans; its group
vocabulary as token ids), then consumes each row's newest output token (vLLM passes a
live reference to the request's output list) and advances the per-row state
incrementally: P (abstractiveness match lengths), group counts, the set of generated
tokens, the prompt + output history. ``apply`` touches only the rows that asked, as
one vectorized pass per part over the stacked rows; with no such row it returns the
logits untouched (requests without evenhand settings cost one dictionary lookup when
they join).

Model Runner V2 (vLLM's GPU default since 0.32 where Triton is installed,
``VLLM_USE_V2_MODEL_RUNNER``) loads processors of another interface,
``vllm.v1.worker.gpu.sample.logits_processor.LogitsProcessor``: ``__init__(vllm_config,
req_states)``, ``add_request(slot, params)`` (no token ids), ``apply_staged_writes()``,
``apply(logits, ctx)`` with rows reordered every step and mapped to request slots by
``ctx.idx_mapping_np``. The same class implements both interfaces (it subclasses both
ABCs; ``__init__`` tells the runners apart by their arguments), so one
``--logits-processors evenhand.vllm:EvenhandLogitsProcessor`` serves either runner. Under
V2 the state is derived from token ids only: a joining request's prompt (and any output
of a resumed request) is read back from ``req_states.all_token_ids`` once, in
``apply_staged_writes``; each step's newest token is the row's input token
(``ctx.input_ids``) and the number of new tokens per request comes from the host-side
sequence lengths (``ctx.seq_lens_upper_bound_np`` − ``prompt_len``), so the hot path does
not synchronise with the device. Speculative decoding (several rows per request) is
refused at start-up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from vllm.v1.sample.logits_processor import (  # pyright: ignore[reportMissingImports]
    BatchUpdate,
    LogitsProcessor,
    MoveDirectionality,
)

from ..processors.abstractiveness import (
    extend_lengths,
    increment_coef,
    recompute_lengths,
    reduce_of,
    reduced_increments,
    shift_lengths,
    source_table,
)
from ..processors.group_coverage import DEFAULT_PRIOR, DEFAULT_TAU, coverage_bonus
from ..processors.repetition import ngram_bans, penalize_seen
from .vllm_settings import parse

try:  # Model Runner V2's interface (vLLM >= 0.32); older vLLM has only the V1 runner
    from vllm.v1.worker.gpu.sample.logits_processor import (  # pyright: ignore[reportMissingImports]
        LogitsProcessor as RunnerV2Processor,
    )

    _BASES: tuple[type, ...] = (LogitsProcessor, RunnerV2Processor)
except ImportError:  # pragma: no cover - depends on the installed vLLM
    _BASES = (LogitsProcessor,)


def _pad_stack(rows: list[Any], fill: float | int) -> Any:
    """Stack 1-d (or 2-d, padding the last dim) tensors, padding to the longest with ``fill``."""
    width = max(r.shape[-1] for r in rows)
    return torch.stack([torch.nn.functional.pad(r, (0, width - r.shape[-1]), value=fill) for r in rows])


@dataclass
class _Row:
    """One request's state: static tables built once, dynamic state advanced per token."""

    settings: dict[str, Any]
    prompt: list[int]
    output: list[int]  # vLLM's live list of the request's output token ids
    vocab: int
    device: Any
    consumed: int = 0
    # repetition penalty
    penalty: float = 1.0
    seen: Any = None  # (V,) bool: generated tokens
    # no-repeat n-grams
    ngram: int = 0
    history: Any = None  # (prompt + max output,) long, -1 past `length`
    length: int = 0
    # abstractiveness
    abstr: tuple[Any, ...] | None = None  # src, inv, uniq, offset (static)
    reduce: str = "amax"
    lengths: Any = None  # P (L,) float32
    # coverage
    cover: tuple[Any, ...] | None = None  # ids (K,), member (G,K), spec (G,K), target (G,), alpha, tau, prior
    counts: Any = None  # (G,) float32
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def build(cls, settings: dict[str, Any], prompt: list[int], output: list[int], vocab: int,
              max_tokens: int, device: Any) -> _Row:
        row = cls(settings, list(prompt), output, vocab, device)
        if settings.get("repetition_penalty", 1.0) != 1.0:
            row.penalty = float(settings["repetition_penalty"])
        row.ngram = int(settings.get("no_repeat_ngram_size", 0))
        a = settings.get("abstractiveness")
        if a is not None:
            if "spans" in a:
                source: list[int] = []
                for start, end in a["spans"]:
                    if source:
                        source.append(-1)
                    source.extend(row.prompt[start:end])
            else:
                source = list(a["source_ids"])
            reward = bool(a.get("reward", False))
            coef = increment_coef(float(a["h"]), reward)
            tables = source_table([source], a.get("special_ids", ()), coef)
            row.abstr = tuple(t[0].to(device) for t in tables)
            row.reduce = reduce_of(reward, bool(a.get("reward_longest", False)))
        c = settings.get("coverage")
        if c is not None:
            ids = torch.tensor(c["token_ids"], dtype=torch.long)
            keep = ids < vocab  # ids the model cannot emit count never and get no bonus
            row.cover = (
                ids[keep].to(device),
                torch.tensor(c["member"], dtype=torch.float32).reshape(len(c["target"]), -1)[:, keep].to(device),
                torch.tensor(c["specificity"], dtype=torch.float32).reshape(len(c["target"]), -1)[:, keep].to(device),
                torch.tensor(c["target"], dtype=torch.float32).to(device),
                float(c["alpha"]), float(c.get("tau", DEFAULT_TAU)), float(c.get("prior", DEFAULT_PRIOR)),
            )
        row.extra["capacity"] = len(prompt) + max(1, max_tokens)
        row.rebuild()
        return row

    def rebuild(self) -> None:
        """Dynamic state from scratch, from the output tokens so far (join, resume)."""
        out = [t for t in self.output if t >= 0]
        self.consumed = len(out)
        generated = torch.tensor(out, dtype=torch.long, device=self.device)
        if self.penalty != 1.0:
            self.seen = torch.zeros(self.vocab, dtype=torch.bool, device=self.device)
            self.seen[generated[generated < self.vocab]] = True
        if self.ngram:
            capacity = max(self.extra["capacity"], len(self.prompt) + len(out) + 1)
            self.history = torch.full((capacity,), -1, dtype=torch.long, device=self.device)
            full = torch.tensor(self.prompt + out, dtype=torch.long, device=self.device)
            self.history[: full.numel()] = full
            self.length = full.numel()
        if self.abstr is not None:
            src = self.abstr[0]
            self.lengths = shift_lengths(recompute_lengths(generated[None], src[None]))[0]
        if self.cover is not None:
            ids, member = self.cover[0], self.cover[1]
            hits = (generated[:, None] == ids[None, :]).to(torch.float32).sum(dim=0)  # (K,)
            self.counts = member @ hits


class _Stack:
    """The active rows' state stacked for one vectorized pass per part (rebuilt on batch changes)."""

    def __init__(self, rows: dict[int, _Row], device: Any) -> None:
        self.order = sorted(rows)
        self.rows = [rows[i] for i in self.order]
        self.index = torch.tensor(self.order, dtype=torch.long, device=device)
        self.device = device

        def part(pred: Any) -> tuple[list[int], Any]:
            pos = [k for k, r in enumerate(self.rows) if pred(r)]
            return pos, torch.tensor(pos, dtype=torch.long, device=device)

        self.pen_pos, self.pen_idx = part(lambda r: r.penalty != 1.0)
        if self.pen_pos:
            self.penalty = torch.tensor([[self.rows[k].penalty] for k in self.pen_pos], device=device)
            self.seen = torch.stack([self.rows[k].seen for k in self.pen_pos])
        self.ng_pos, self.ng_idx = part(lambda r: r.ngram > 0)
        if self.ng_pos:
            self.ngram = [self.rows[k].ngram for k in self.ng_pos]
            self.history = _pad_stack([self.rows[k].history for k in self.ng_pos], -1)
            self.length = torch.tensor([self.rows[k].length for k in self.ng_pos], device=device)
        self.ab_pos, self.ab_idx = part(lambda r: r.abstr is not None)
        if self.ab_pos:
            ab = [self.rows[k] for k in self.ab_pos]
            self.src = _pad_stack([r.abstr[0] for r in ab], -1)  # type: ignore[index]
            width = max(r.abstr[2].numel() for r in ab)  # type: ignore[index]
            # padding columns: inv points at the dump column (index `width`), offset 0 there
            self.inv = _pad_stack([torch.where(r.abstr[1] == r.abstr[2].numel(), width, r.abstr[1])  # type: ignore[index]
                                   for r in ab], width)
            self.uniq = _pad_stack([r.abstr[2] for r in ab], 0)  # type: ignore[index]
            self.offset = torch.stack([
                torch.cat([r.abstr[3][:-1], r.abstr[3].new_zeros(width + 1 - r.abstr[3].numel() + 1)])  # type: ignore[index]
                for r in ab
            ])
            self.reduces = sorted({r.reduce for r in ab})
            self.reduce_rows = {
                red: torch.tensor([k for k, r in enumerate(ab) if r.reduce == red], device=device)
                for red in self.reduces
            }
            self.lengths = _pad_stack([r.lengths for r in ab], 0.0)
        self.cv_pos, self.cv_idx = part(lambda r: r.cover is not None)
        if self.cv_pos:
            cv = [self.rows[k] for k in self.cv_pos]
            groups = max(r.cover[3].numel() for r in cv)  # type: ignore[index]
            self.ids = _pad_stack([r.cover[0] for r in cv], 0)  # type: ignore[index]
            kmax = self.ids.shape[1]
            self.member = torch.stack([
                torch.nn.functional.pad(r.cover[1], (0, kmax - r.cover[1].shape[1], 0, groups - r.cover[1].shape[0]))  # type: ignore[index]
                for r in cv
            ])
            self.spec = torch.stack([
                torch.nn.functional.pad(r.cover[2], (0, kmax - r.cover[2].shape[1], 0, groups - r.cover[2].shape[0]))  # type: ignore[index]
                for r in cv
            ])
            self.target = _pad_stack([r.cover[3] for r in cv], 0.0)[:, None, :]  # type: ignore[index]
            self.counts = _pad_stack([r.counts for r in cv], 0.0)[:, None, :]
            self.alpha = torch.tensor([r.cover[4] for r in cv], device=device)[:, None, None]  # type: ignore[index]
            self.tau = torch.tensor([r.cover[5] for r in cv], device=device)[:, None, None]  # type: ignore[index]
            self.prior = torch.tensor([r.cover[6] for r in cv], device=device)[:, None, None]  # type: ignore[index]

    def write_back(self) -> None:
        """Copy the dynamic state into the rows (before the batch changes)."""
        for j, k in enumerate(self.pen_pos):
            self.rows[k].seen = self.seen[j]
        for j, k in enumerate(self.ng_pos):
            row = self.rows[k]
            row.history = self.history[j, : max(row.history.numel(), int(self.length[j]))].clone()
            row.length = int(self.length[j])
        for j, k in enumerate(self.ab_pos):
            row = self.rows[k]
            row.lengths = self.lengths[j, : row.abstr[0].numel()].clone()  # type: ignore[index]
        for j, k in enumerate(self.cv_pos):
            row = self.rows[k]
            row.counts = self.counts[j, 0, : row.cover[3].numel()].clone()  # type: ignore[index]

    def advance(self, last: Any, mask: Any = None) -> None:
        """Consume one new output token per row (``last``: (rows,) long, in stack order);
        with ``mask``, only the rows where it is True (the others have no new token yet)."""
        if self.pen_pos:
            tok = last[self.pen_idx]
            ok = (tok >= 0) & (tok < self.seen.shape[1])
            self.seen[torch.arange(len(self.pen_pos), device=tok.device)[ok], tok[ok]] = True
        if self.ng_pos:
            tok = last[self.ng_idx]
            step = torch.ones_like(self.length) if mask is None else mask[self.ng_idx].long()
            if int(self.length.max()) >= self.history.shape[1]:
                self.history = torch.nn.functional.pad(self.history, (0, 64), value=-1)
            # rows without a new token write -1 just past their history: nothing changes
            self.history.scatter_(1, self.length[:, None], torch.where(step > 0, tok, -1)[:, None])
            self.length += step
        if self.ab_pos:
            grown = extend_lengths(self.lengths, self.src, last[self.ab_idx][:, None])
            self.lengths = grown if mask is None else torch.where(mask[self.ab_idx][:, None], grown, self.lengths)
        if self.cv_pos:  # a row without a new token (-1) hits no content token: its counts stay
            hits = (self.ids == last[self.cv_idx][:, None]).to(torch.float32)  # (A, K)
            self.counts = self.counts + (self.member @ hits[:, :, None]).transpose(1, 2)

    def apply(self, logits: Any) -> Any:
        """The rows' processed logits, written back into ``logits``."""
        sub = logits.index_select(0, self.index)
        if self.pen_pos:
            part = sub[self.pen_idx]
            sub[self.pen_idx] = penalize_seen(part, self.seen[:, : part.shape[1]], self.penalty)
        if self.ng_pos:
            sub[self.ng_idx] = self._ban_ngrams(sub[self.ng_idx])
        if self.ab_pos:
            part = sub[self.ab_idx]
            for red in self.reduces:
                rows = self.reduce_rows[red]
                added = reduced_increments(self.lengths[rows], self.inv[rows], self.offset[rows], red)
                part[rows] = part[rows].scatter_add(1, self.uniq[rows], added.to(part.dtype))
            sub[self.ab_idx] = part
        if self.cv_pos:
            bonus = coverage_bonus(self.counts, self.target, self.spec, self.alpha, self.tau, self.prior)
            part = sub[self.cv_idx]
            sub[self.cv_idx] = part.scatter_add(1, self.ids, bonus[:, 0, :].to(part.dtype))
        logits.index_copy_(0, self.index, sub)
        return logits

    def _ban_ngrams(self, scores: Any) -> Any:
        """transformers' NoRepeatNGramLogitsProcessor on ragged histories (prompt + output)."""
        vocab = scores.shape[1]
        banned = torch.zeros((scores.shape[0], vocab + 1), dtype=torch.bool, device=scores.device)
        for n in sorted(set(self.ngram)):
            rows = torch.tensor([j for j, m in enumerate(self.ngram) if m == n], device=scores.device)
            tokens, matches = ngram_bans(self.history[rows], self.length[rows], n)
            if tokens.shape[1] == 0:
                continue
            cols = torch.where(matches, tokens.clamp(min=0, max=vocab), vocab)
            banned[rows] = banned[rows].scatter(1, cols, True)
        return scores.masked_fill(banned[:, :vocab], -float("inf"))


class EvenhandLogitsProcessor(*_BASES):
    """evenhand's decoding controls for the requests that carry ``extra_args["evenhand"]``.

    See the module docstring; settings: :mod:`evenhand.decoding.engines.vllm_settings`. Built by
    the V1 model runner as ``(vllm_config, device, is_pin_memory)`` and by Model Runner
    V2 as ``(vllm_config, req_states)``.
    """

    def __init__(self, vllm_config: Any, *runner_args: Any) -> None:
        self.vocab = int(vllm_config.model_config.get_vocab_size())
        self.rows: dict[int, _Row] = {}  # V1: batch index -> row; V2: request slot -> row
        self.stack: _Stack | None = None
        self.req_states: Any = None
        if len(runner_args) == 1:  # Model Runner V2
            if getattr(vllm_config, "speculative_config", None) is not None:
                raise ValueError(
                    "evenhand's logits processor does not support speculative decoding (its state "
                    "advances one token per request and step); start vLLM without it"
                )
            self.req_states = runner_args[0]
            self.device = self.req_states.device
            self.staged: dict[int, tuple[dict[str, Any], int]] = {}
        else:  # V1 model runner: (device, is_pin_memory)
            self.device = runner_args[0]

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        """Check the request's evenhand settings (a ValueError becomes HTTP 400 on a server)."""
        parse(sampling_params.extra_args)

    def is_argmax_invariant(self) -> bool:
        """False: the constraints change which token greedy decoding picks."""
        return False

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        """Apply the batch's changes (removed, added, moved), then consume new output tokens."""
        if batch_update is not None and (
            self.rows or batch_update.added
        ):
            self._change(batch_update)
        if self.rows:
            self._consume()

    def _change(self, update: BatchUpdate) -> None:
        if self.stack is not None:
            self.stack.write_back()
            self.stack = None
        for index in update.removed:
            self.rows.pop(index, None)
        for index, params, prompt, output in update.added:
            settings = parse(params.extra_args)
            if settings:
                self.rows[index] = _Row.build(
                    settings, list(prompt or ()), output, self.vocab, int(params.max_tokens or 1), self.device
                )
            else:
                self.rows.pop(index, None)
        for a, b, direction in update.moved:
            row_a, row_b = self.rows.pop(a, None), self.rows.pop(b, None)
            if row_a is not None:
                self.rows[b] = row_a
            if row_b is not None and direction == MoveDirectionality.SWAP:
                self.rows[a] = row_b

    def _consume(self) -> None:
        """Advance every row by its newest output token (vLLM appends one per step)."""
        rows = [self.rows[i] for i in sorted(self.rows)]
        new = [len(r.output) - r.consumed for r in rows]
        stale = [r for n, r in zip(new, rows) if n not in (0, 1) or (n == 1 and r.output[-1] < 0)]
        if stale:  # several tokens at once (or a placeholder): those rows start over from their outputs
            if self.stack is not None:
                self.stack.write_back()
                self.stack = None
            for r in stale:
                r.rebuild()
            new = [len(r.output) - r.consumed for r in rows]
        if self.stack is None:
            self.stack = _Stack(self.rows, self.device)
        if not any(new):
            return
        last = torch.tensor([r.output[-1] if n else -1 for n, r in zip(new, rows)], dtype=torch.long,
                            device=self.device)
        self.stack.advance(last, None if all(new) else last >= 0)
        for n, r in zip(new, rows):
            r.consumed += n

    def apply(self, logits: Any, ctx: Any = None) -> Any:
        """Add evenhand's terms to the rows of requests that asked; others untouched.

        ``ctx``: Model Runner V2's ``LogitsContext`` (rows mapped to request slots).
        """
        if not self.rows:
            return logits
        if ctx is not None:
            return self._apply_v2(logits, ctx)
        if self.stack is None:
            self.stack = _Stack(self.rows, self.device)
        return self.stack.apply(logits)

    # -- Model Runner V2 ------------------------------------------------------------------
    def add_request(self, req_idx: int, sampling_params: Any) -> bool:
        """V2: a request takes slot ``req_idx`` (whatever held it before is gone)."""
        self._forget(req_idx)
        settings = parse(sampling_params.extra_args)
        if not settings:
            return False
        self.staged[req_idx] = (settings, int(sampling_params.max_tokens or 1))
        return True

    def apply_staged_writes(self) -> None:
        """V2: build each joining request's row from its token ids (prompt, and the output of
        a resumed request), read back from the runner's ``all_token_ids`` once."""
        if not self.staged:
            return
        rs = self.req_states
        for slot, (settings, max_tokens) in self.staged.items():
            prompt_len, filled = int(rs.prompt_len.np[slot]), int(rs.prefill_len.np[slot])
            tokens = rs.all_token_ids.gpu[slot, :filled].tolist()
            row = _Row.build(settings, tokens[:prompt_len], tokens[prompt_len:], self.vocab,
                             max_tokens, self.device)
            row.extra["prompt_len"] = prompt_len
            self.rows[slot] = row
        self.staged.clear()

    def _forget(self, slot: int) -> None:
        self.staged.pop(slot, None)
        if slot in self.rows:
            if self.stack is not None:
                self.stack.write_back()
                self.stack = None
            del self.rows[slot]

    def _apply_v2(self, logits: Any, ctx: Any) -> Any:
        import numpy as np

        slots = np.asarray(ctx.idx_mapping_np)
        if logits.shape[0] != slots.shape[0]:
            raise RuntimeError("evenhand's logits processor: several logits rows per request "
                               "(speculative decoding) are not supported")
        mine = np.flatnonzero(np.isin(slots, np.fromiter(self.rows, dtype=slots.dtype)))
        if mine.size == 0:
            return logits
        order = np.argsort(slots[mine], kind="stable")
        rows_at, present = mine[order], slots[mine][order]  # logits rows and slots, in slot order
        if self.stack is None or self.stack.order != present.tolist():
            if self.stack is not None:
                self.stack.write_back()
            self.stack = _Stack({int(s): self.rows[int(s)] for s in present}, self.device)
        stack = self.stack
        # tokens each request has now (prompt + output, its newest being this step's input token)
        seen = np.asarray(ctx.seq_lens_upper_bound_np)[rows_at]  # batch position = logits row here
        out_len = np.maximum(seen - np.array([r.extra["prompt_len"] for r in stack.rows]), 0)
        new = out_len - np.array([r.consumed for r in stack.rows])
        index = torch.as_tensor(rows_at, dtype=torch.long, device=self.device)
        stack.index = index
        if ((new < 0) | (new > 1)).any():  # a resumed or re-prefilled request: rebuild from its tokens
            stack.write_back()
            tokens = self.req_states.all_token_ids.gpu
            for k in np.flatnonzero((new < 0) | (new > 1)):
                r, p = stack.rows[k], stack.rows[k].extra["prompt_len"]
                slot, last = int(present[k]), int(seen[k]) - 1
                r.output = tokens[slot, p:last].tolist() + ([int(ctx.input_ids[rows_at[k]])] if last >= p else [])
                r.rebuild()
            self.stack = stack = _Stack({int(s): self.rows[int(s)] for s in present}, self.device)
            stack.index = index
            new = out_len - np.array([r.consumed for r in stack.rows])
        if new.any():
            step = torch.as_tensor(new == 1, device=self.device)
            last = torch.where(step, ctx.input_ids.index_select(0, index).long(), -1)
            stack.advance(last, None if bool(new.all()) else step)
            for r, n in zip(stack.rows, new.tolist()):
                r.consumed += n
        return stack.apply(logits)
