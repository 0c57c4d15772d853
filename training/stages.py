"""The stages of one DPO+RR iteration, as functions of a ``RunContext``: sample, score, pair, train, evaluate.

Records flow between stages as JSON-ready dicts (what the run folder stores):

- ``sample`` -> one record per prompt ``{"position", "id", "candidates": [{"text", "recipe", "index"}]}``;
- ``score`` adds ``score`` (the per-set composite), ``components`` (raw score per
  scorer) and, with ``fairness``, ``fair_score`` (-EC) and ``group_diffs`` to each candidate;
- ``pair`` -> preference pairs ``{"id", "position", "chosen", "rejected", "gap", "weight",
  "chosen_text", "rejected_text"}``;
- ``train_dpo`` trains the context's policy on the pairs and returns its metrics;
- ``evaluate`` -> one dev record per example ``{"position", "id", "summary", "composite", "scores"}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..evaluation.data.schema import Example
from ..evaluation.io.progress import Progress
from .config import DPORRConfig
from .context import RunContext


def mean(values: Sequence[float]) -> float | None:
    """The mean, or None for no values."""
    return sum(values) / len(values) if values else None


def sample(ctx: RunContext, k: int, prompts: list[Example]) -> list[dict[str, Any]]:
    """``candidates`` per prompt of this process' shard, by the paper's samplers (``rerank.Reranker``)."""
    from ..decoding.config import GenerateConfig
    from ..rerank.reranker import RerankConfig, Reranker

    c = ctx.config
    ctx.model.eval()
    model, tokenizer, lora = _generator(ctx, base=False)
    reranker = Reranker(
        model, tokenizer, scorer=None,  # type: ignore[arg-type]
        config=RerankConfig(candidates=c.candidates, recipes=c.recipes, seed=c.seed + 1000 * k),
        generate_config=GenerateConfig(
            max_new_tokens=c.max_new_tokens, batch_size=c.generate_batch_size, num_beams=1,
        ),
        lora_request=lora,
    )
    mine = ctx.shard(prompts)
    with Progress(len(mine), f"iteration {k}: sample", "prompt", disable=not _shows(ctx)) as bar:
        bar.begin(len(mine))  # the samplers' decoding steps move it (evaluation.io.progress)
        per_example = reranker.candidates([ex for _, ex in mine]) if mine else []
        bar.update(len(mine))
    return [{"position": pos, "id": ex.id, "candidates": cands} for (pos, ex), cands in zip(mine, per_example)]


def _generator(ctx: RunContext, base: bool) -> tuple[Any, Any, Any]:
    """What ``generate`` decodes the policy with: (model, tokenizer, LoRA request).

    In-process: the live peft model (no request). ``engine: vllm``: the run's engine and
    the ``LoRARequest`` of ``ctx.policy_adapter`` (none for ``base`` or a fresh LoRA:
    ``training.vllm_policy``).
    """
    if ctx.vllm is None:
        return ctx.model, ctx.tokenizer, None
    return ctx.vllm.engine, None, None if base else ctx.vllm.request(ctx.policy_adapter)


def score(ctx: RunContext, prompts: list[Example], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Score each record's candidates in place (see module); return ``records``."""
    with Progress(len(records), "score", "prompt", disable=not _shows(ctx)) as bar:
        for record in records:
            _score_record(ctx, prompts, record)
            bar.update(1)
    return records


def _shows(ctx: RunContext) -> bool:
    """Whether this process shows progress (``config.progress``, main process only)."""
    return bool(ctx.config.progress and ctx.state.is_main_process)


def _score_record(ctx: RunContext, prompts: list[Example], record: dict[str, Any]) -> None:
    """Score one record's candidates in place."""
    ex = prompts[record["position"]]
    cands = record["candidates"]
    texts = [cand["text"] for cand in cands]
    raw = ctx.scoring.raw([ex] * len(texts), texts)
    composite = ctx.scoring.candidate_composite(raw)
    for j, cand in enumerate(cands):
        cand["score"] = composite[j]
        cand["components"] = {name: raw[name][j] for name in raw}
    if ctx.fair_scorer is not None:
        details = ctx.fair_scorer.score_details([ex] * len(texts), texts)
        for cand, d in zip(cands, details):
            cand["fair_score"] = d["score"]
            cand["group_diffs"] = d.get("group_diffs") or {}


def pair(config: DPORRConfig, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Preference pairs of every record (``training.pairs``; FairPO-like weights with ``fairness``)."""
    from .fairness import pair_weight, representation_ratios
    from .pairs import build_pairs

    c = config
    ratios = None
    if c.fairness:
        ratios = representation_ratios(
            [cand["group_diffs"] for r in records for cand in r["candidates"]], c.fairness_temperature
        )
    out = []
    for record in records:
        cands = record["candidates"]
        key = "fair_score" if c.fairness else "score"
        for p in build_pairs([cand[key] for cand in cands], c.pair_strategy, c.min_gap, c.top_gap_k):
            weight = 1.0 if ratios is None else pair_weight(cands[p.rejected]["group_diffs"], ratios)
            out.append({
                "id": record["id"], "position": record["position"], "chosen": p.chosen,
                "rejected": p.rejected, "gap": p.gap, "weight": weight,
                "chosen_text": cands[p.chosen]["text"], "rejected_text": cands[p.rejected]["text"],
            })
    return out


def candidate_means(ctx: RunContext, records: list[dict[str, Any]]) -> dict[str, float | None]:
    """Mean raw score per scorer over all candidates of an iteration."""
    return {
        name: mean([cand["components"][name] for r in records for cand in r["candidates"]])
        for name in ctx.scoring.names
    }


def train_dpo(
    ctx: RunContext, k: int, prompts: list[Example], pairs: list[dict[str, Any]], workdir: Path
) -> dict[str, Any]:
    """``epochs`` of trl's DPO on ``pairs``, continuing the context's LoRA; the training metrics."""
    import torch
    from datasets import Dataset
    from trl.trainer.dpo_config import DPOConfig

    from ..decoding.prompts.templates import build_prompt
    from .trainer import WEIGHT_COLUMN, weighted_dpo_trainer

    c = ctx.config
    if not pairs:
        ctx.log(f"iteration {k}: no preference pairs (all candidates tie); adapter unchanged")
        return {"steps": 0}
    rows = []
    for p in pairs:
        prompt = build_prompt(prompts[p["position"]])
        row = {
            "prompt": [{"role": "user", "content": prompt}],
            "chosen": [{"role": "assistant", "content": p["chosen_text"]}],
            "rejected": [{"role": "assistant", "content": p["rejected_text"]}],
        }
        if c.fairness:
            row[WEIGHT_COLUMN] = p["weight"]
        rows.append(row)
    bf16 = ctx.device.startswith("cuda") and torch.cuda.is_bf16_supported()
    args = DPOConfig(
        output_dir=str(workdir / "trainer"), per_device_train_batch_size=c.batch_size,
        gradient_accumulation_steps=c.gradient_accumulation_steps, num_train_epochs=c.epochs,
        learning_rate=c.learning_rate, beta=c.beta, max_length=c.max_length,
        bf16=bf16, gradient_checkpointing=False,
        disable_dropout=False, save_strategy="no", report_to="none", logging_steps=1,
        seed=c.seed + k, data_seed=c.seed + k, use_cpu=ctx.device == "cpu",
        dataloader_num_workers=0, disable_tqdm=not (c.progress and ctx.state.is_main_process),
    )
    trainer_cls = weighted_dpo_trainer()
    trainer = trainer_cls(
        model=ctx.model, ref_model=None, args=args, train_dataset=Dataset.from_list(rows),
        processing_class=ctx.tokenizer,
    )
    if c.reference == "base":
        ctx.drop_ref_adapter()  # trl copied the adapter to "ref"; without it, ref = adapters disabled
    result = trainer.train()
    ctx.drop_ref_adapter()
    ctx.model = trainer.model
    history = [h for h in trainer.state.log_history if "loss" in h]
    return {
        "steps": trainer.state.global_step,
        "train_loss": result.training_loss,
        "reward_accuracy": mean([h["rewards/accuracies"] for h in history if "rewards/accuracies" in h]),
        "reward_margin": mean([h["rewards/margins"] for h in history if "rewards/margins" in h]),
    }


def evaluate(ctx: RunContext, base: bool = False) -> list[dict[str, Any]]:
    """Greedy summaries of the dev split scored by the run's scorers (``base``: adapter disabled)."""
    import contextlib

    from ..decoding.config import GenerateConfig
    from ..decoding.generate import generate

    c = ctx.config
    ctx.model.eval()
    mine = ctx.shard(ctx.dev)
    examples = [ex for _, ex in mine]
    model, tokenizer, lora = _generator(ctx, base)
    in_process_base = base and ctx.vllm is None
    context = ctx.model.disable_adapter() if in_process_base else contextlib.nullcontext()
    with context:
        texts = generate(
            model, tokenizer, examples,
            GenerateConfig(max_new_tokens=c.max_new_tokens, batch_size=c.generate_batch_size,
                           num_beams=1, seed=c.seed),
            progress=_shows(ctx), lora_request=lora,
        ) if examples else []
    raw = ctx.scoring.raw(examples, texts) if examples else {}
    composite = ctx.scoring.weighted(raw) if examples else []
    records = [
        {"position": pos, "id": ex.id, "summary": text, "composite": composite[i],
         "scores": {name: raw[name][i] for name in raw}}
        for i, ((pos, ex), text) in enumerate(zip(mine, texts))
    ]
    return ctx.gather(records)


def dev_means(ctx: RunContext, records: list[dict[str, Any]]) -> dict[str, float | None]:
    """Mean dev composite and mean raw score per scorer."""
    means = {"composite": mean([r["composite"] for r in records])}
    for name in ctx.scoring.names:
        means[name] = mean([r["scores"][name] for r in records])
    return means
