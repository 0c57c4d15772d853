"""training/ with method="grpo": config, budget, reward = the DPO+RR composite, a tiny run, resume, 2 processes."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.errors import DataError
from evenhand.training.config import DPORRConfig
from evenhand.training.grpo import CompositeReward, check_budget, grpo_args, sampling_settings
from evenhand.training.loop import finished_iterations, iteration_dir, train_dpo_rr
from evenhand.training.scoring import Scoring
from tests.test_training import (
    HashScorer,
    _adapter,
    _config,
    _examples,
    _rows,
    launch_two_processes,
)


# -- config -------------------------------------------------------------------------------
def test_method_is_validated_and_defaults_to_dpo_rr():
    assert DPORRConfig().method == "dpo-rr" and DPORRConfig().grpo_beta == 0.04
    with pytest.raises(ValueError, match=r"`method` must be one of \('dpo-rr', 'grpo'\), got 'ppo'"):
        DPORRConfig(method="ppo")
    with pytest.raises(ValueError, match="`grpo_beta` must be a non-negative float, got -0.1"):
        DPORRConfig(method="grpo", grpo_beta=-0.1)


def test_grpo_conflicting_options_raise_and_ignored_ones_warn():
    with pytest.raises(ValueError, match="`fairness` .* needs method='dpo-rr'; for GRPO add the 'equal-coverage'"):
        DPORRConfig(method="grpo", fairness=True)
    with pytest.raises(ValueError, match="`epochs` must be a whole number with method='grpo'"):
        DPORRConfig(method="grpo", epochs=1.5)
    with pytest.warns(UserWarning, match="`pair_strategy`, `beta` only apply to method='dpo-rr'"):
        DPORRConfig(method="grpo", pair_strategy="top-gap", beta=0.3)
    with pytest.warns(UserWarning, match="`grpo_beta` only applies to method='grpo'"):
        DPORRConfig(grpo_beta=0.0)
    with pytest.warns(UserWarning, match="first of `recipes` \\('hybrid'\\); 'nucleus' ignored"):
        DPORRConfig(method="grpo", recipes="hybrid,nucleus")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the defaults of either method warn about nothing
        DPORRConfig(method="grpo", epochs=2.0)
        DPORRConfig()


def test_budget_needs_whole_generation_rounds():
    check_budget(500, 4, 1, 1)  # the paper's defaults
    check_budget(8, 2, 2, 2)
    with pytest.raises(DataError, match=r"samples 6 prompts .* = 4: trl would skip the rest; set "
                                        r"`prompts_per_iteration` to 4"):
        check_budget(6, 2, 1, 2)


def test_budget_is_checked_before_any_model_loads(tmp_path):
    config = _config(Path("no-such-model"), tmp_path / "run", method="grpo", batch_size=3)
    with pytest.raises(DataError, match=r"batch_size \(3\) x gradient_accumulation_steps \(1\) x processes \(1\)"):
        train_dpo_rr(config, scorers={"hash": HashScorer()}, train=_examples())
    assert not (tmp_path / "run").exists()


def test_score_source_target_is_checked_before_any_model_loads(tmp_path):
    config = _config(Path("no-such-model"), tmp_path / "run", method="grpo", score_source="target")
    with pytest.raises(DataError, match="`score_source='target'` needs `meta.document` or documents whose group"):
        train_dpo_rr(config, scorers={"hash": HashScorer()}, train=_examples())  # no `target` set


def test_sampling_settings_follow_the_first_recipe():
    assert sampling_settings("nucleus,top-k,hybrid") == {
        "recipe": "nucleus", "temperature": 1.0, "top_p": 0.9, "top_k": 0,
        "repetition_penalty": 1.2, "no_repeat_ngram_size": 3,  # GenerateConfig's defaults
    }
    assert sampling_settings("top-k")["top_p"] == 1.0 and sampling_settings("top-k")["top_k"] == 100
    assert sampling_settings(["hybrid"])["temperature"] == 1.2


def test_grpo_args_map_the_config():
    config = _config(Path("m"), Path("o"), method="grpo", batch_size=2, candidates=3, max_new_tokens=7,
                     gradient_accumulation_steps=2, epochs=2.0, grpo_beta=0.1, learning_rate=1e-3, seed=5)
    ctx = SimpleNamespace(config=config, device="cpu", state=SimpleNamespace(is_main_process=True))
    args = grpo_args(ctx, 4, Path("/tmp/unused"))
    assert (args.per_device_train_batch_size, args.num_generations, args.max_completion_length) == (6, 3, 7)
    assert (args.gradient_accumulation_steps, args.steps_per_generation, args.generation_batch_size) == (2, 2, 12)
    assert (args.num_iterations, args.num_train_epochs, args.beta, args.learning_rate) == (2, 1, 0.1, 1e-3)
    assert (args.temperature, args.top_p, args.top_k, args.seed) == (1.0, 0.9, 0, 9)
    assert args.generation_kwargs == {"no_repeat_ngram_size": 3}


# -- reward ---------------------------------------------------------------------------------
class TableScorer:
    """Scores looked up by output text."""

    def __init__(self, name, table):
        self.name, self.table = name, table

    def score(self, sources, outputs):
        return [self.table[o] for o in outputs]


class DocsScorer:
    """The number of documents the scorer sees (0.5 per document)."""

    name = "docs"

    def score(self, sources, outputs):
        return [0.5 * len(s.documents) for s in sources]


def _reward_examples():
    return [Example(id=f"x{i}", documents=[Document("a b", "pos"), Document("c d", "neg")],
                    attribute="sentiment", target="pos") for i in range(2)]


def test_reward_is_the_per_set_composite_hand_checked():
    a = TableScorer("a", {"p": 0.0, "q": 0.5, "r": 1.0, "s": 2.0, "t": 4.0, "u": 3.0})
    b = TableScorer("b", {"p": 1.0, "q": 0.0, "r": 0.0, "s": 0.25, "t": 0.25, "u": 0.75})
    scoring = Scoring({"a": a, "b": b}, weights=[3.0, 1.0], normalize="minmax")
    examples = _reward_examples()
    reward = CompositeReward(scoring, examples, ["", ""], group_size=3, clean=False)
    rewards = reward(prompts=["P1"] * 3 + ["P0"] * 3, completions=["s", "t", "u", "p", "q", "r"],
                     position=[1, 1, 1, 0, 0, 0])
    # prompt 1: a (2, 4, 3) -> (0, 1, .5); b (.25, .25, .75) -> (0, 0, 1); (3 a + b) / 4
    # prompt 0: a (0, .5, 1) -> (0, .5, 1); b (1, 0, 0) -> (1, 0, 0)
    assert rewards == pytest.approx([0.0, 0.75, 0.625, 0.25, 0.375, 0.75])
    # exactly what DPO+RR's score stage gives the same candidate sets (its pairs come from these)
    from evenhand.training.stages import score

    records = [{"position": 0, "id": "x0", "candidates": [{"text": t} for t in "pqr"]},
               {"position": 1, "id": "x1", "candidates": [{"text": t} for t in "stu"]}]
    score(SimpleNamespace(scoring=scoring, fair_scorer=None, config=SimpleNamespace(progress=False),
                          state=SimpleNamespace(is_main_process=True)), examples, records)
    dpo = [c["score"] for r in records[::-1] for c in r["candidates"]]
    assert rewards == pytest.approx(dpo)
    kept = reward.records[1]["candidates"]
    assert [c["text"] for c in kept] == ["s", "t", "u"] and kept[1]["components"] == {"a": 4.0, "b": 0.25}
    with pytest.raises(RuntimeError, match=r"incomplete prompt groups \{0: 2\}"):
        reward(prompts=["P"] * 2, completions=["p", "q"], position=[0, 0])


def test_reward_sees_the_score_source_view_and_prefixed_clean_text():
    seen = []

    class Spy:
        name = "spy"

        def score(self, sources, outputs):
            seen.extend(outputs)
            return [float(len(o)) for o in outputs]

    examples = _reward_examples()
    scoring = Scoring({"docs": DocsScorer(), "spy": Spy()}, normalize="none", source="target")
    reward = CompositeReward(scoring, examples, ["Reviewers ", "Reviewers "], group_size=2)
    rewards = reward(prompts=["P", "P"], completions=["like it.  They", "hate it."], position=[0, 0])
    assert seen == ["Reviewers like it.", "Reviewers hate it."]  # prefix + completion, cleaned
    # target view: 1 document -> 0.5; no normalization: (0.5 + len) / 2
    assert rewards == [pytest.approx((0.5 + 18) / 2), pytest.approx((0.5 + 18) / 2)]
    assert reward.records[0]["candidates"][0]["components"]["docs"] == 0.5


# -- the loop ---------------------------------------------------------------------------------
def _grpo(model_dir: Path, out: Path, **overrides) -> DPORRConfig:
    return _config(model_dir, out, method="grpo", **overrides)


@pytest.fixture(scope="module")
def grpo_run(tmp_path_factory, model_dir):
    out = tmp_path_factory.mktemp("grpo-runs") / "g"
    manifest = train_dpo_rr(_grpo(model_dir, out), scorers={"hash": HashScorer()}, train=_examples())
    return out, manifest


def test_grpo_iteration_end_to_end(grpo_run):
    from evenhand.rerank.scorers.composite import set_composite

    out, manifest = grpo_run
    assert manifest["finished"] == [0, 1] and finished_iterations(out) == [0, 1]
    assert manifest["config"]["method"] == "grpo"
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp or trainer folders left
    it = iteration_dir(out, 1)
    assert sorted(p.name for p in it.iterdir()) == ["adapter", "candidates.jsonl", "dev.jsonl", "summary.json"]
    summary = json.loads((it / "summary.json").read_text())
    # equal generation budget: prompts_per_iteration x candidates completions, each scored once
    assert (summary["method"], summary["prompts"], summary["candidates"]) == ("grpo", 2, 6)
    records = _rows(it / "candidates.jsonl")
    assert [r["position"] for r in records] == [0, 1] and all(len(r["candidates"]) == 3 for r in records)
    scores = []
    for r in records:
        texts = [c["text"] for c in r["candidates"]]
        hashes = HashScorer().score(None, texts)
        assert [c["components"]["hash"] for c in r["candidates"]] == hashes
        expected = set_composite({"hash": hashes}, {"hash": 1.0}, "minmax")
        assert [c["score"] for c in r["candidates"]] == pytest.approx(expected)
        scores += expected
    # trl logged the mean of the rewards it received: exactly our composite's mean (one step)
    assert summary["train"]["steps"] == 1
    assert summary["train"]["reward_mean"] == pytest.approx(sum(scores) / len(scores), abs=1e-6)
    assert summary["candidate_means"]["hash"] == pytest.approx(
        sum(c["components"]["hash"] for r in records for c in r["candidates"]) / 6)
    tensors = _adapter(it)
    assert any("lora_B" in k and v.abs().sum() > 0 for k, v in tensors.items())  # trained
    assert not [k for k in tensors if ".ref." in k]  # trl's reference copy is not saved
    dev = _rows(it / "dev.jsonl")
    assert len(dev) == 1 and dev[0]["composite"] == dev[0]["scores"]["hash"]
    assert summary["dev"]["composite"] == dev[0]["composite"]


def test_grpo_resume_keeps_finished_iterations_and_matches_a_straight_run(grpo_run, model_dir, tmp_path):
    out, _ = grpo_run
    resumed = tmp_path / "resumed"
    shutil.copytree(out, resumed)
    before = {p.relative_to(resumed): p.read_bytes() for p in iteration_dir(resumed, 1).rglob("*") if p.is_file()}
    mtime = (iteration_dir(resumed, 1) / "summary.json").stat().st_mtime_ns
    (resumed / ".iter_2.tmp-killed").mkdir()  # what a kill during iteration 2 leaves
    manifest = train_dpo_rr(_grpo(model_dir, resumed, iterations=2), scorers={"hash": HashScorer()}, train=_examples())
    assert manifest["finished"] == [0, 1, 2] and not (resumed / ".iter_2.tmp-killed").exists()
    after = {p.relative_to(resumed): p.read_bytes() for p in iteration_dir(resumed, 1).rglob("*") if p.is_file()}
    assert after == before and (iteration_dir(resumed, 1) / "summary.json").stat().st_mtime_ns == mtime
    straight = tmp_path / "straight"
    train_dpo_rr(_grpo(model_dir, straight, iterations=2), scorers={"hash": HashScorer()}, train=_examples())
    a, b = iteration_dir(resumed, 2), iteration_dir(straight, 2)
    assert _rows(a / "candidates.jsonl") == _rows(b / "candidates.jsonl")
    ta, tb = _adapter(a), _adapter(b)
    assert ta.keys() == tb.keys() and all((ta[n] == tb[n]).all() for n in ta)
    t1 = _adapter(iteration_dir(straight, 1))
    assert any(not (t1[n] == tb[n]).all() for n in tb)  # iteration 2 trained further
    # reference "base" = adapters disabled: iteration 1's policy already differs from it (its
    # first-step KL is 0: the fresh LoRA is the base model), so iteration 2 measures a KL > 0
    kl = [json.loads((iteration_dir(straight, k) / "summary.json").read_text())["train"]["kl"] for k in (1, 2)]
    assert kl[0] == 0.0 and kl[1] > 0.0


def test_grpo_resume_refuses_a_method_change(grpo_run, model_dir):
    from evenhand.training.loop import check_resumable

    out, _ = grpo_run
    with pytest.raises(ValueError, match=r"method: 'grpo' -> 'dpo-rr'"):
        check_resumable(out, _config(model_dir, out))


def test_train_cli_grpo_help_and_conflicts(capsys):
    from evenhand.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--method", "grpo", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "--method {dpo-rr,grpo}" in text and "--grpo-beta" in text and "GRPOTrainer" in text
    assert main(["train", "--data", "x.jsonl", "--out", "o", "--method", "grpo", "--fairness"]) == 2
    assert "needs method='dpo-rr'" in capsys.readouterr().err


_SCRIPT = """
import sys
from pathlib import Path
from tests.test_training import HashScorer, _config, _examples
from evenhand.training.loop import train_dpo_rr
config = _config(Path(sys.argv[1]), Path(sys.argv[2]), method="grpo", batch_size=1)
train_dpo_rr(config, scorers={"hash": HashScorer()}, train=_examples())
"""


def test_two_process_accelerate_grpo_run(model_dir, tmp_path):
    out = tmp_path / "ddp"
    launch_two_processes(_SCRIPT, model_dir, out)  # also checks the manifest: 2 processes, 0 and 1 finished
    records = _rows(iteration_dir(out, 1) / "candidates.jsonl")
    # one prompt's group per process, both gathered in prompt order: still 2 x 3 generations
    assert [r["position"] for r in records] == [0, 1] and [len(r["candidates"]) for r in records] == [3, 3]
    summary = json.loads((iteration_dir(out, 1) / "summary.json").read_text())
    assert summary["candidates"] == 6 and summary["train"]["steps"] >= 1
    assert "adapter_model.safetensors" in os.listdir(iteration_dir(out, 1) / "adapter")
