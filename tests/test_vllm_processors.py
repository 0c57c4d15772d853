"""EvenhandLogitsProcessor (vLLM V1 interface) against the in-process transformers processors.

No engine here: the processor is driven with vLLM's own ``BatchUpdate`` objects the
way the V1 model runner drives it (requests added, removed, moved; output lists
growing by reference), and every row's processed logits must equal the transformers
chain of ``generate`` on that row's prompt + output: the repetition penalty on
generated tokens, the no-repeat-n-gram ban, ``AbstractivenessProcessor`` and
``GroupCoverageProcessor``. Needs vLLM (the .venv-vllm virtualenv): marked ``vllm``.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed (make setup-vllm)")

import torch  # noqa: E402

pytestmark = pytest.mark.vllm

V = 40


def _params(settings: dict | None, max_tokens: int = 16):
    from vllm import SamplingParams

    extra = {"evenhand": json.dumps(settings)} if settings is not None else None
    return SamplingParams(max_tokens=max_tokens, extra_args=extra)


def _coverage() -> dict:
    return {
        "alpha": 2.5, "tau": 0.8, "prior": 1.0, "token_ids": [3, 7, 11, 20],
        "member": [[1, 1, 0, 0], [0, 1, 1, 1]],
        "specificity": [[0.9, 0.1, 0.0, 0.0], [0.0, 0.2, 0.7, 0.5]],
        "target": [0.25, 0.75],
    }


def _reference(settings: dict | None, prompt: list[int], output: list[int], logits: torch.Tensor) -> torch.Tensor:
    """The in-process chain on one row."""
    from transformers import NoRepeatNGramLogitsProcessor, RepetitionPenaltyLogitsProcessor

    from evenhand.decoding.processors.abstractiveness import AbstractivenessProcessor
    from evenhand.decoding.processors.group_coverage import GroupCoverageProcessor
    from evenhand.decoding.processors.group_vocab import GroupTables

    if not settings:
        return logits
    ids = torch.tensor([prompt + output])
    scores = logits[None].clone()
    if "no_repeat_ngram_size" in settings:
        scores = NoRepeatNGramLogitsProcessor(settings["no_repeat_ngram_size"])(ids, scores)
    if "repetition_penalty" in settings:
        scores = RepetitionPenaltyLogitsProcessor(settings["repetition_penalty"], prompt_ignore_length=len(prompt))(ids, scores)
    a = settings.get("abstractiveness")
    if a is not None:
        source: list[int] = []
        for start, end in a["spans"]:
            source += ([-1] if source else []) + prompt[start:end]
        proc = AbstractivenessProcessor([source], a["h"], reward=a.get("reward", False), prompt_length=len(prompt))
        scores = proc(ids, scores)
    c = settings.get("coverage")
    if c is not None:
        g = len(c["target"])
        member = torch.zeros(1, V, g)
        spec = torch.zeros(1, g, V)
        member[0, c["token_ids"], :] = torch.tensor(c["member"], dtype=torch.float32).T
        spec[0, :, c["token_ids"]] = torch.tensor(c["specificity"], dtype=torch.float32)
        tables = GroupTables(member, spec, torch.tensor([c["target"]]), torch.ones(1, g, dtype=torch.bool), (("a", "b"),))
        scores = GroupCoverageProcessor(tables, c["alpha"], c["tau"], len(prompt), c["prior"])(ids, scores)
    return scores[0]


class Batch:
    """The processor plus the requests the test put in each batch slot."""

    def __init__(self) -> None:
        from evenhand.decoding.engines.vllm_processor import EvenhandLogitsProcessor

        config = SimpleNamespace(model_config=SimpleNamespace(get_vocab_size=lambda: V))
        self.proc = EvenhandLogitsProcessor(config, torch.device("cpu"), False)
        self.slots: dict[int, tuple[dict | None, list[int], list[int]]] = {}

    def update(self, added=(), removed=(), moved=()) -> None:
        from vllm.v1.sample.logits_processor import BatchUpdate

        for i in removed:
            del self.slots[i]
        adds = []
        for i, settings, prompt, output in added:
            self.slots[i] = (settings, prompt, output)
            adds.append((i, _params(settings), prompt, output))
        for a, b, direction in moved:
            sa, sb = self.slots.pop(a, None), self.slots.pop(b, None)
            if sa is not None:
                self.slots[b] = sa
            if sb is not None and direction.name == "SWAP":
                self.slots[a] = sb
        size = max(self.slots) + 1 if self.slots else 0
        self.proc.update_state(BatchUpdate(size, removed, adds, moved) if (added or removed or moved) else None)

    def check(self, seed: int) -> int:
        """Apply to random logits; every row must match its reference. Returns the rows changed."""
        size = max(self.slots) + 1
        logits = torch.randn(size, V, generator=torch.Generator().manual_seed(seed)) * 3
        expected = logits.clone()
        for i, (settings, prompt, output) in self.slots.items():
            expected[i] = _reference(settings, prompt, output, logits[i])
        got = self.proc.apply(logits.clone())
        assert torch.equal(got, expected), (got - expected).abs().max()
        return int((got != logits).any(dim=1).sum())

    def step(self, seed: int) -> None:
        """Every request emits one token (the growing lists are vLLM's live references)."""
        gen = torch.Generator().manual_seed(seed)
        for _, (_, _, output) in sorted(self.slots.items()):
            output.append(int(torch.randint(0, V, (1,), generator=gen)))
        self.proc.update_state(None)


def test_rows_match_the_transformers_chain_through_adds_removes_and_moves() -> None:
    from vllm.v1.sample.logits_processor import MoveDirectionality

    gen = torch.Generator().manual_seed(1)
    prompt = [int(t) for t in torch.randint(0, V, (30,), generator=gen)]
    full = {"repetition_penalty": 1.3, "no_repeat_ngram_size": 2,
            "abstractiveness": {"h": 1.5, "spans": [[2, 12], [15, 28]]}, "coverage": _coverage()}
    reward = {"abstractiveness": {"h": 2.0, "reward": True, "spans": [[0, 30]]}}
    batch = Batch()
    batch.update(added=[(0, full, prompt, []), (1, None, prompt[:10], []), (2, reward, prompt[5:], [])])
    assert batch.check(0) == 2  # the request without settings is untouched
    for k in range(6):
        batch.step(100 + k)
        batch.check(200 + k)
    # one leaves, one joins with tokens already generated (a resumed request), then a swap
    batch.update(removed=[1], added=[(1, {"coverage": _coverage(), "no_repeat_ngram_size": 3}, prompt[:20], [3, 7, 3, 7])])
    batch.check(300)
    batch.step(301)
    batch.check(302)
    batch.update(moved=[(0, 2, MoveDirectionality.SWAP)])
    batch.check(303)
    for k in range(4):
        batch.step(400 + k)
        batch.check(500 + k)
    # the last slot leaves and the first moves into a condensed batch
    batch.update(removed=[2], moved=[(0, 2, MoveDirectionality.UNIDIRECTIONAL)])
    batch.update(moved=[(2, 0, MoveDirectionality.UNIDIRECTIONAL)])
    batch.step(600)
    batch.check(601)


def test_a_request_joining_later_gets_no_stale_token() -> None:
    """Rows of one step may differ: a new request has no token yet while the others do."""
    prompt = list(range(5, 25))
    settings = {"repetition_penalty": 1.2, "no_repeat_ngram_size": 3,
                "abstractiveness": {"h": 1.0, "spans": [[0, 20]]}, "coverage": _coverage()}
    batch = Batch()
    batch.update(added=[(0, settings, prompt, [])])
    batch.step(1)
    batch.step(2)
    batch.update(added=[(1, settings, prompt[::-1], [])])
    batch.check(3)
    out0 = batch.slots[0][2]
    out0.append(7)  # only request 0 advanced this step
    batch.proc.update_state(None)
    batch.check(4)


def test_without_evenhand_settings_the_logits_are_returned_untouched() -> None:
    batch = Batch()
    batch.update(added=[(0, None, [1, 2, 3], []), (1, None, [4, 5], [])])
    logits = torch.randn(2, V)
    assert batch.proc.apply(logits) is logits
    assert not batch.proc.rows


@pytest.mark.parametrize("bad, field", [
    ({"abstractiveness": {"h": 0, "spans": [[0, 1]]}}, "abstractiveness.h"),
    ({"abstractiveness": {"h": 1.0}}, "exactly one of `spans` and `source_ids`"),
    ({"coverage": {**_coverage(), "member": [[1, 1]]}}, "coverage.member"),
    ({"repetition_penalty": -1}, "repetition_penalty"),
    ({"temperature": 2}, "unknown setting"),
    ({"probe": 1}, "evenhand-processors"),
])
def test_validate_params_names_the_field(bad: dict, field: str) -> None:
    from evenhand.decoding.engines.vllm_processor import EvenhandLogitsProcessor

    with pytest.raises(ValueError, match="evenhand") as err:
        EvenhandLogitsProcessor.validate_params(_params(bad))
    assert field in str(err.value)


# -- Model Runner V2 ----------------------------------------------------------------------
class BatchV2:
    """The processor as Model Runner V2 drives it: request slots, token ids on the device,
    rows reordered every step, the newest token only in the step's ``input_ids``."""

    def __init__(self, slots: int = 6, width: int = 96) -> None:
        import numpy as np

        from evenhand.decoding.engines.vllm_processor import EvenhandLogitsProcessor

        self.np = np
        self.states = SimpleNamespace(
            device=torch.device("cpu"),
            all_token_ids=SimpleNamespace(gpu=torch.full((slots, width), -7, dtype=torch.int32)),
            prompt_len=SimpleNamespace(np=np.zeros(slots, dtype=np.int32)),
            prefill_len=SimpleNamespace(np=np.zeros(slots, dtype=np.int32)),
        )
        config = SimpleNamespace(model_config=SimpleNamespace(get_vocab_size=lambda: V), speculative_config=None)
        self.proc = EvenhandLogitsProcessor(config, self.states)
        self.active: dict[int, tuple[dict | None, list[int], list[int]]] = {}

    def add(self, slot: int, settings: dict | None, prompt: list[int], output: list[int]) -> bool:
        tokens = prompt + output
        self.states.all_token_ids.gpu[slot, : len(tokens)] = torch.tensor(tokens)
        self.states.prompt_len.np[slot], self.states.prefill_len.np[slot] = len(prompt), len(tokens)
        self.active[slot] = (settings, prompt, list(output))
        asked = self.proc.add_request(slot, _params(settings))
        self.proc.apply_staged_writes()
        return asked

    def check(self, seed: int, scheduled: list[int] | None = None) -> int:
        """One step over the ``scheduled`` slots (default all) in a shuffled row order."""
        from vllm.v1.worker.gpu.sample.logits_processor import LogitsContext

        np = self.np
        gen = torch.Generator().manual_seed(seed)
        slots = scheduled if scheduled is not None else sorted(self.active)
        slots = [slots[i] for i in torch.randperm(len(slots), generator=gen).tolist()]
        last = [(self.active[s][1] + self.active[s][2])[-1] for s in slots]
        seqs = [len(self.active[s][1]) + len(self.active[s][2]) for s in slots]
        mapping = torch.tensor(slots, dtype=torch.int32)
        ctx = LogitsContext(
            expanded_idx_mapping=mapping, idx_mapping=mapping, idx_mapping_np=np.array(slots, dtype=np.int32),
            expanded_local_pos=torch.zeros(len(slots), dtype=torch.int32),
            input_ids=torch.tensor(last, dtype=torch.int32), pos=torch.tensor(seqs) - 1,
            seq_lens_upper_bound_np=np.array(seqs, dtype=np.int32),
        )
        logits = torch.randn(len(slots), V, generator=gen) * 3
        expected = torch.stack([_reference(self.active[s][0], self.active[s][1], self.active[s][2], logits[k])
                                for k, s in enumerate(slots)])
        got = self.proc.apply(logits.clone(), ctx)
        assert torch.equal(got, expected), (got - expected).abs().max()
        return int((got != logits).any(dim=1).sum())

    def sample(self, seed: int, slots: list[int] | None = None) -> None:
        """The scheduled requests emit a token; the previous one is committed to ``all_token_ids``
        only now (the runner writes a step's sampled token later than it feeds it)."""
        gen = torch.Generator().manual_seed(seed)
        for s in sorted(self.active) if slots is None else slots:
            _, prompt, output = self.active[s]
            if output:
                self.states.all_token_ids.gpu[s, len(prompt) + len(output) - 1] = output[-1]
            output.append(int(torch.randint(0, V, (1,), generator=gen)))


def test_model_runner_v2_rows_match_the_transformers_chain() -> None:
    """The same class under Model Runner V2's interface: slots, reordered rows, recycled slots,
    an unscheduled request, a preempted request re-added with its output."""
    gen = torch.Generator().manual_seed(2)
    prompt = [int(t) for t in torch.randint(0, V, (30,), generator=gen)]
    full = {"repetition_penalty": 1.3, "no_repeat_ngram_size": 2,
            "abstractiveness": {"h": 1.5, "spans": [[2, 12], [15, 28]]}, "coverage": _coverage()}
    reward = {"abstractiveness": {"h": 2.0, "reward": True, "spans": [[0, 30]]}}
    batch = BatchV2()
    assert batch.add(3, full, prompt, []) and not batch.add(0, None, prompt[:10], [])
    assert batch.add(5, reward, prompt[5:], [])
    assert batch.check(0) == 2  # the request without settings is untouched
    for k in range(5):
        batch.sample(100 + k)
        batch.check(200 + k)
    # slot 3 is recycled by a request without settings, slot 1 gets a resumed one (output already there)
    assert not batch.add(3, None, prompt[:7], [])
    assert batch.add(1, {"coverage": _coverage(), "no_repeat_ngram_size": 3}, prompt[:20], [3, 7, 3, 7])
    batch.check(300)
    batch.sample(301)
    batch.check(302)
    # slot 5 is not scheduled for two steps, then comes back
    for k in range(2):
        batch.sample(400 + k, [0, 1, 3])
        batch.check(500 + k, [0, 1, 3])
    batch.sample(600)
    batch.check(601)
    # slot 1 is preempted and re-added with the output it had (prefill of prompt + output)
    settings, p, out = batch.active[1]
    batch.states.all_token_ids.gpu[1, len(p) + len(out) - 1] = out[-1]
    assert batch.add(1, settings, p, out)
    batch.check(700)
    batch.sample(701)
    batch.check(702)


def test_one_class_serves_both_model_runners() -> None:
    from vllm.v1.sample.logits_processor import LogitsProcessor as V1
    from vllm.v1.worker.gpu.sample.logits_processor import LogitsProcessor as V2

    from evenhand.decoding.engines.vllm_processor import EvenhandLogitsProcessor

    assert issubclass(EvenhandLogitsProcessor, V1) and issubclass(EvenhandLogitsProcessor, V2)
    config = SimpleNamespace(model_config=SimpleNamespace(get_vocab_size=lambda: V), speculative_config=object())
    with pytest.raises(ValueError, match="speculative decoding"):
        EvenhandLogitsProcessor(config, SimpleNamespace(device=torch.device("cpu")))
