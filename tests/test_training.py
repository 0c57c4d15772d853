"""training/: pairs, config, FairPO-like weights, weighted DPO loss, the loop, resume, 2 processes."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evenhand.evaluation.data.schema import Document, Example
from evenhand.training.config import DPORRConfig
from evenhand.training.fairness import pair_weight, representation_ratios
from evenhand.training.loop import (
    check_resumable,
    finished_iterations,
    iteration_dir,
    sample_prompts,
    split_dev,
    train_dpo_rr,
)
from evenhand.training.pairs import Pair, build_pairs

ROOT = Path(__file__).resolve().parents[1]


# -- pairs ------------------------------------------------------------------------------
SCORES = [0.5, 0.25, 0.5, 1.0]  # binary fractions: gaps are exact


def test_all_pairs_hand_checked():
    assert build_pairs(SCORES, "all") == [
        Pair(0, 1, 0.25), Pair(3, 0, 0.5), Pair(2, 1, 0.25), Pair(3, 1, 0.75), Pair(3, 2, 0.5),
    ]  # (0, 2) tie dropped


def test_best_worst_and_its_tie_rules():
    assert build_pairs(SCORES, "best-worst") == [Pair(3, 1, 0.75)]
    # best = first of the tied maxima, worst = last of the tied minima
    assert build_pairs([1.0, 1.0, 0.0, 0.0], "best-worst") == [Pair(0, 3, 1.0)]
    assert build_pairs([0.3, 0.3, 0.3], "best-worst") == []


def test_top_gap_keeps_largest_gaps_stably():
    assert build_pairs(SCORES, "top-gap", k=1) == [Pair(3, 1, 0.75)]
    assert build_pairs(SCORES, "top-gap", k=3) == [Pair(3, 1, 0.75), Pair(3, 0, 0.5), Pair(3, 2, 0.5)]
    assert len(build_pairs(SCORES, "top-gap", k=99)) == 5


def test_min_gap_and_ties():
    assert build_pairs(SCORES, "all", min_gap=0.5) == [Pair(3, 0, 0.5), Pair(3, 1, 0.75), Pair(3, 2, 0.5)]
    assert build_pairs(SCORES, "best-worst", min_gap=0.75) == [Pair(3, 1, 0.75)]
    assert build_pairs(SCORES, "best-worst", min_gap=0.8) == []
    assert build_pairs([0.7, 0.7], "all") == []
    assert build_pairs([0.2], "all") == [] and build_pairs([0.2], "best-worst") == []


def test_pairs_reject_bad_input():
    with pytest.raises(ValueError, match="`strategy` must be one of"):
        build_pairs(SCORES, "top-gap 3")
    with pytest.raises(ValueError, match="`scores` must be finite"):
        build_pairs([0.1, math.nan], "all")
    with pytest.raises(ValueError, match="`k` must be a positive int"):
        build_pairs(SCORES, "top-gap", k=0)


# -- config -----------------------------------------------------------------------------
def test_config_defaults_are_the_papers():
    c = DPORRConfig()
    assert (c.iterations, c.prompts_per_iteration, c.candidates, c.batch_size) == (10, 500, 9, 4)
    assert (c.lora_r, c.lora_alpha, c.lora_dropout, c.target_modules) == (8, 16, 0.1, ["q_proj", "v_proj"])
    assert c.recipes == ["nucleus", "top-k", "hybrid"] and c.pair_strategy == "all"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("iterations", 0, "`iterations` must be a positive int, got 0"),
        ("beta", -1.0, "`beta` must be a positive float, got -1.0"),
        ("pair_strategy", "top-gap 3", "write `top-gap` and set `top_gap_k`"),
        ("candidates", 1, "at least 2"),
        ("recipes", "nucleus,greedy", "`recipes` must name samplers"),
        ("reference", "sft", "`reference` must be one of"),
        ("lora_dropout", 1.0, "`lora_dropout` must be a float in"),
    ],
)
def test_config_validation_messages(field, value, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        DPORRConfig(**{field: value})


def test_config_yaml_overrides_and_unknown_keys(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("iterations: 3\nscorers: rouge-l-recall\nbeta: 0.2\n")
    c = DPORRConfig.from_yaml(path, beta=0.5, seed=None)
    assert (c.iterations, c.scorers, c.beta, c.seed) == (3, ["rouge-l-recall"], 0.5, 0)
    assert DPORRConfig.from_dict(c.to_dict()) == c
    path.write_text("iterations: 3\nbetta: 0.2\n")
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['betta'\]; valid keys: data"):
        DPORRConfig.from_yaml(path)


# -- fairness ---------------------------------------------------------------------------
DIFFS = [{"a": 0.2, "b": -0.2}, {"a": 0.1, "b": -0.1}, {"a": -0.1, "b": 0.1}]


def test_representation_ratios_hand_computed():
    # O_a = mean(0.2, 0.1) = 0.15, U_a = 0.1; O_b = 0.1, U_b = 0.15
    r = representation_ratios(DIFFS)
    assert r[("a", "over")] == pytest.approx(1.5) and r[("a", "under")] == pytest.approx(2 / 3)
    assert r[("b", "over")] == pytest.approx(2 / 3) and r[("b", "under")] == pytest.approx(1.5)
    assert representation_ratios(DIFFS, temperature=2.0)[("a", "over")] == pytest.approx(2.25)
    # a group only ever over-represented: no opposite side, ratio 1
    assert representation_ratios([{"a": 0.3}])[("a", "over")] == 1.0


def test_pair_weight_up_weights_rejected_erring_with_the_corpus():
    r = representation_ratios(DIFFS)
    # rejected over-represents a (the corpus does too) and under-represents b (so does the corpus)
    assert pair_weight({"a": 0.3, "b": -0.3}, r) == pytest.approx(2 * 1.5 / 2.5)  # 1.2
    # rejected errs against the corpus' direction: down-weighted
    assert pair_weight({"a": -0.1, "b": 0.1}, r) == pytest.approx(2 * (2 / 3) / (5 / 3))  # 0.8
    assert pair_weight({"a": 0.0, "b": 0.0}, r) == 1.0
    assert pair_weight({}, r) == 1.0


# -- data -------------------------------------------------------------------------------
def _examples(n: int = 5) -> list[Example]:
    return [
        Example(
            id=f"e{i}",
            documents=[
                Document(f"Review {i}: the food was good and fresh.", "pos"),
                Document(f"Review {i}: the service was slow and rude.", "neg"),
            ],
            attribute="sentiment", meta={"topic": f"t{i // 2}"},
        )
        for i in range(n)
    ]


def test_split_dev_keeps_topics_together_and_is_seeded():
    examples = _examples(6)  # topics t0 t0 t1 t1 t2 t2
    train, dev = split_dev(examples, 3, key="topic", seed=1)
    assert len(dev) == 4 and len(train) == 2  # whole topics until >= 3
    assert not {e.meta["topic"] for e in dev} & {e.meta["topic"] for e in train}
    assert split_dev(examples, 3, key="topic", seed=1) == (train, dev)
    assert split_dev(examples, 0) == (examples, [])


def test_sample_prompts_seeded_without_replacement():
    a = sample_prompts(10, 4, seed=0, iteration=1)
    assert a == sample_prompts(10, 4, seed=0, iteration=1) and len(set(a)) == 4 and a == sorted(a)
    assert a != sample_prompts(10, 4, seed=0, iteration=2)
    assert sample_prompts(3, 10, seed=0, iteration=1) == [0, 1, 2]


# -- weighted DPO loss ------------------------------------------------------------------
def test_weighted_loss_is_the_weighted_mean_of_per_pair_losses(tiny_causal, tmp_path):
    import torch
    from datasets import Dataset
    from peft import LoraConfig, get_peft_model
    from trl import DPOConfig

    from evenhand.training.trainer import split_pair, weighted_dpo_trainer

    model, tok = tiny_causal
    peft_model = get_peft_model(
        _clone(model), LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=["q_proj", "v_proj"])
    )
    rows = [
        {"prompt": [{"role": "user", "content": "Summarize: good food."}],
         "chosen": [{"role": "assistant", "content": "Good food."}],
         "rejected": [{"role": "assistant", "content": "Bad service, slow and rude."}], "pair_weight": 2.0},
        {"prompt": [{"role": "user", "content": "Summarize: slow service."}],
         "chosen": [{"role": "assistant", "content": "Service was slow."}],
         "rejected": [{"role": "assistant", "content": "Great."}], "pair_weight": 0.5},
    ]
    args = DPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none",
                     per_device_train_batch_size=2, gradient_checkpointing=False, max_length=256)
    trainer = weighted_dpo_trainer()(model=peft_model, args=args, train_dataset=Dataset.from_list(rows),
                                     processing_class=tok)
    peft_model.delete_adapter("ref")  # reference = adapters disabled
    with torch.no_grad():  # make the policy differ from the reference
        gen = torch.Generator().manual_seed(0)
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
    peft_model.eval()
    batch = trainer.data_collator([trainer.train_dataset[0], trainer.train_dataset[1]])
    assert batch["pair_weight"].tolist() == [2.0, 0.5]
    with torch.no_grad():
        l0 = trainer.compute_loss(peft_model, split_pair(batch, 0)).item()
        l1 = trainer.compute_loss(peft_model, split_pair(batch, 1)).item()
        plain = trainer.compute_loss(peft_model, {k: v for k, v in batch.items() if k != "pair_weight"}).item()
        weighted = trainer.compute_loss(peft_model, dict(batch)).item()
    assert abs(l0 - l1) > 1e-3  # the check below can tell weights apart
    assert plain == pytest.approx((l0 + l1) / 2, rel=1e-5)
    assert weighted == pytest.approx((2.0 * l0 + 0.5 * l1) / 2, rel=1e-5)


def _clone(model):
    import copy

    return copy.deepcopy(model)


# -- the loop ---------------------------------------------------------------------------
class HashScorer:
    """A tiny deterministic scorer with (almost) no ties: character codes mod 97."""

    name = "hash"

    def score(self, sources, outputs):
        return [(sum(map(ord, o)) % 97) / 96 for o in outputs]


def _config(model_dir: Path, out: Path, **overrides) -> DPORRConfig:
    values = dict(
        model=str(model_dir), out_dir=str(out), iterations=1, prompts_per_iteration=2, candidates=3,
        max_new_tokens=6, dev_size=1, batch_size=2, learning_rate=1e-2, scorers="hash",
        progress=False, generate_batch_size=4, seed=3,
    )
    values.update(overrides)
    return DPORRConfig(**values)


@pytest.fixture(scope="module")
def one_iteration(tmp_path_factory, model_dir):
    out = tmp_path_factory.mktemp("runs") / "b"
    manifest = train_dpo_rr(_config(model_dir, out), scorers={"hash": HashScorer()}, train=_examples())
    return out, manifest


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _adapter(path: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(path / "adapter" / "adapter_model.safetensors"))


def test_one_iteration_end_to_end(one_iteration):
    out, manifest = one_iteration
    assert manifest["finished"] == [0, 1] and finished_iterations(out) == [0, 1]
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp folders left
    it = iteration_dir(out, 1)
    candidates = _rows(it / "candidates.jsonl")
    assert len(candidates) == 2 and all(len(r["candidates"]) == 3 for r in candidates)
    assert [c["recipe"] for c in candidates[0]["candidates"]] == ["nucleus", "top-k", "hybrid"]
    # the stored pairs are exactly build_pairs of the stored composite scores
    pairs = _rows(it / "pairs.jsonl")
    expected = [
        (r["id"], p.chosen, p.rejected)
        for r in candidates for p in build_pairs([c["score"] for c in r["candidates"]], "all")
    ]
    assert [(p["id"], p["chosen"], p["rejected"]) for p in pairs] == expected and expected
    tensors = _adapter(it)
    assert any("lora_B" in k and v.abs().sum() > 0 for k, v in tensors.items())  # trained
    assert not [k for k in tensors if ".ref." in k]  # trl's reference copy is not saved
    summary = json.loads((it / "summary.json").read_text())
    assert summary["pairs"] == len(pairs) and summary["train"]["steps"] >= 1
    assert set(summary["dev"]) == {"composite", "hash"}
    dev = _rows(it / "dev.jsonl")
    assert len(dev) == 1 and dev[0]["composite"] == dev[0]["scores"]["hash"]
    assert json.loads((iteration_dir(out, 0) / "summary.json").read_text())["iteration"] == 0


def test_resume_after_interruption_matches_uninterrupted_run(one_iteration, model_dir, tmp_path):
    out_b, _ = one_iteration
    resumed = tmp_path / "resumed"
    shutil.copytree(out_b, resumed)
    first_mtime = (iteration_dir(resumed, 1) / "summary.json").stat().st_mtime_ns
    # what a kill during iteration 2 leaves: a temp folder and a folder without summary.json
    (resumed / ".iter_2.tmp-killed").mkdir()
    (iteration_dir(resumed, 2) / "adapter").mkdir(parents=True)
    train_dpo_rr(_config(model_dir, resumed, iterations=2), scorers={"hash": HashScorer()}, train=_examples())
    straight = tmp_path / "straight"
    train_dpo_rr(_config(model_dir, straight, iterations=2), scorers={"hash": HashScorer()}, train=_examples())

    assert (iteration_dir(resumed, 1) / "summary.json").stat().st_mtime_ns == first_mtime  # not redone
    for k in (1, 2):
        a, b = iteration_dir(resumed, k), iteration_dir(straight, k)
        assert _rows(a / "pairs.jsonl") == _rows(b / "pairs.jsonl")
        assert _rows(a / "candidates.jsonl") == _rows(b / "candidates.jsonl")
        ta, tb = _adapter(a), _adapter(b)
        assert ta.keys() == tb.keys() and all((ta[n] == tb[n]).all() for n in ta)
    assert not (_adapter(iteration_dir(straight, 1))["base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"]
                == _adapter(iteration_dir(straight, 2))["base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"]).all()


def test_resume_refuses_other_settings(one_iteration, model_dir):
    out, _ = one_iteration
    check_resumable(out, _config(model_dir, out, iterations=5))  # more iterations: fine
    with pytest.raises(ValueError, match=r"beta: 0.1 -> 0.3"):
        check_resumable(out, _config(model_dir, out, beta=0.3))


def test_trained_adapter_loads_back_with_model_dir(one_iteration, tmp_path):
    import torch

    from evenhand.cli import main
    from evenhand.decoding.models import load_generator
    from evenhand.evaluation.data.loaders import write_examples

    out, _ = one_iteration
    adapter = iteration_dir(out, 1) / "adapter"
    model, _ = load_generator(str(adapter), device="cpu")
    saved = _adapter(iteration_dir(out, 1))
    loaded = {k: v for k, v in model.state_dict().items() if "lora_" in k}
    for name, value in saved.items():
        key = name.replace(".weight", ".default.weight")
        assert torch.equal(loaded[key], value)
    data, summaries = tmp_path / "one.jsonl", tmp_path / "out.jsonl"
    write_examples(data, _examples(1))
    argv = ["generate", "--data", str(data), "--out", str(summaries), "--model", str(adapter),
            "--max-new-tokens", "4", "--num-beams", "1"]
    assert main(argv) == 0
    assert len(_rows(summaries)) == 1


def test_train_cli_needs_config_or_data(capsys):
    from evenhand.cli import main

    assert main(["train", "--out", "x"]) == 2
    assert "give --config FILE, or both --data FILE and --out DIR" in capsys.readouterr().err


_SCRIPT = """
import sys
from tests.test_training import HashScorer, _config, _examples
from evenhand.training.loop import train_dpo_rr
from pathlib import Path
train_dpo_rr(_config(Path(sys.argv[1]), Path(sys.argv[2])), scorers={"hash": HashScorer()}, train=_examples())
"""


def launch_two_processes(script: str, model_dir: Path, out: Path) -> None:
    """Run ``script`` (source text; argv: the tiny model folder, the run folder) under
    ``accelerate launch`` with 2 CPU processes; assert it exits 0 and its manifest records
    2 processes and iterations 0 and 1 finished."""
    path = out.parent / f"{out.name}_script.py"
    path.write_text(textwrap.dedent(script))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TQDM_DISABLE": "1"}
    # `--multi_gpu` = torchrun; on CPU the two processes form a gloo group (`--cpu` would start one)
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
           str(path), str(model_dir), str(out)]
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["num_processes"] == 2 and manifest["finished"] == [0, 1]


def test_two_process_accelerate_run(model_dir, tmp_path):
    out = tmp_path / "ddp"
    launch_two_processes(_SCRIPT, model_dir, out)
    candidates = _rows(iteration_dir(out, 1) / "candidates.jsonl")
    assert [r["position"] for r in candidates] == [0, 1]  # both shards gathered in prompt order
    pairs = _rows(iteration_dir(out, 1) / "pairs.jsonl")
    assert len(pairs) == sum(len(build_pairs([c["score"] for c in r["candidates"]])) for r in candidates)
    assert json.loads((iteration_dir(out, 1) / "summary.json").read_text())["train"]["steps"] >= 1
    assert "adapter_model.safetensors" in os.listdir(iteration_dir(out, 1) / "adapter")


def test_fairness_pairs_use_equal_coverage_and_weights(model_dir):
    from evenhand.training.stages import pair

    config = _config(model_dir, Path("unused"), fairness=True)
    cands = [  # composite prefers 0; -EC prefers 1; group diffs as in DIFFS
        {"text": "x", "score": 0.9, "fair_score": -0.4, "group_diffs": DIFFS[0]},
        {"text": "y", "score": 0.1, "fair_score": -0.2, "group_diffs": DIFFS[1]},
        {"text": "z", "score": 0.5, "fair_score": -0.2, "group_diffs": DIFFS[2]},
    ]
    pairs = pair(config, [{"id": "e0", "position": 0, "candidates": cands}])
    # -EC: 1 and 2 tie (dropped); 1 > 0 and 2 > 0; the rejected is 0 both times (over-represents a)
    assert [(p["chosen"], p["rejected"]) for p in pairs] == [(1, 0), (2, 0)]
    assert [p["weight"] for p in pairs] == pytest.approx([1.2, 1.2])
    assert pairs[0]["chosen_text"] == "y" and pairs[0]["rejected_text"] == "x"


def test_train_cli_builds_config_from_yaml_and_flags(tmp_path, monkeypatch, capsys):
    import evenhand.training.loop
    from evenhand.cli import main

    seen = {}

    def fake(config):
        seen["config"] = config
        return {"iterations": [{"iteration": 0, "dev": {"composite": 0.5, "rouge-l-recall": 0.5},
                                "seconds": {"eval": 1.0}}]}

    monkeypatch.setattr(evenhand.training.loop, "train_dpo_rr", fake)
    path = tmp_path / "run.yaml"
    path.write_text("data: d.jsonl\nout_dir: runs/a\niterations: 3\nscorers: rouge-l-recall\n")
    assert main(["train", "--config", str(path), "--iterations", "2", "--no-progress"]) == 0
    c = seen["config"]
    assert (c.data, c.out_dir, c.iterations, c.progress, c.scorers) == ("d.jsonl", "runs/a", 2, False, ["rouge-l-recall"])
    assert main(["train", "--data", "x.jsonl", "--out", "o", "--pair-strategy", "top-gap", "--top-gap-k", "2"]) == 0
    assert (seen["config"].pair_strategy, seen["config"].top_gap_k, seen["config"].out_dir) == ("top-gap", 2, "o")
    assert "0.5000" in capsys.readouterr().out
    path.write_text("iterations: 3\nbogus: 1\n")
    assert main(["train", "--config", str(path)]) == 2


@pytest.mark.slow
def test_embedded_model_is_trainable_after_dropping_the_gguf_marker():
    from peft import LoraConfig, get_peft_model
    from transformers.trainer_utils import validate_quantization_for_training

    from evenhand.decoding.models import load_generator
    from evenhand.training.loop import drop_gguf_marker

    model, _ = load_generator("smollm2-135m-instruct", device="cpu")
    before = {k: v.clone() for k, v in model.state_dict().items() if "mlp" in k or "embed" in k}
    peft_model = get_peft_model(drop_gguf_marker(model), LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
    assert not getattr(model, "is_quantized", False)  # never set once the marker is gone
    validate_quantization_for_training(peft_model)  # raised for the GGUF-marked model before
    after = model.state_dict()
    assert all((after[k] == v).all() for k, v in before.items())  # weights untouched


class TieScorer:
    """Every candidate scores the same: no preference pairs can form."""

    name = "hash"

    def score(self, sources, outputs):
        return [0.5 for _ in outputs]


def test_an_iteration_without_pairs_stops_with_the_fix(tmp_path, model_dir):
    """All candidates tie -> DataError (the CLI's exit 2) naming the fix, not a run that trained nothing."""
    from evenhand.evaluation.errors import DataError

    with pytest.raises(DataError) as err:
        train_dpo_rr(_config(model_dir, tmp_path / "tie"), scorers={"hash": TieScorer()}, train=_examples())
    message = str(err.value)
    assert message.startswith("iteration 1 formed no preference pairs: the 3 candidates of each of 2 prompts")
    assert "--candidates 6" in message and "--scorers hash" in message and "\n" not in message
    assert not (tmp_path / "tie" / "iter_1").exists()  # nothing committed for the failed iteration


def test_train_selects_with_reranks_scorers():
    from evenhand.rerank.reranker import DEFAULT_SCORERS

    assert DPORRConfig().scorers == DEFAULT_SCORERS.split(",") == [
        "calibrated:coverage", "calibrated:faithfulness", "equal-coverage"]
