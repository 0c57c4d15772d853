"""One GRPO iteration: trl's ``GRPOTrainer`` on the iteration's prompts, rewarded by the run's scorer composite.

The reward of a completion is exactly the DPO+RR candidate score: per prompt,
its group of ``candidates`` completions is one candidate set, each registered
scorer's raw scores are normalized within the set (``normalize``: minmax by
default) and combined as ``sum_c w_c * norm_c / sum_c w_c``
(``Scoring.candidate_composite``, ``composite.set_composite``), under the same
``score_source`` view. GRPO then standardizes the rewards within each group
(trl's ``scale_rewards="group"``) to get advantages.

Prompts are the strings ``evenhand.decoding.generate`` feeds the model (chat
template with the system message, then the prompt kind's response prefix), so
the policy is trained on the prompt it is evaluated with. The text a scorer
sees is ``prefix + completion``, cleaned like ``generate`` output
(``clean_summary``).

Config mapping (``DPORRConfig`` -> ``trl.GRPOConfig``):

- ``candidates`` -> ``num_generations``; ``max_new_tokens`` -> ``max_completion_length``;
- ``batch_size`` prompts per device per step -> ``per_device_train_batch_size =
  batch_size * candidates`` completions, so a process always holds whole groups;
- ``gradient_accumulation_steps`` -> the same (and ``steps_per_generation``);
- ``epochs`` (a whole number) -> ``num_iterations`` (passes over each generated
  batch); ``num_train_epochs`` is 1: every sampled prompt is generated for once;
- ``grpo_beta`` -> ``beta`` (KL to the reference); ``reference`` "base" = adapter
  disabled, "previous" = the adapter as at the iteration's start;
- sampling: the first recipe of ``recipes`` (``rerank.RECIPES``; default nucleus:
  top-p 0.9, temperature 1.0) with ``GenerateConfig``'s repetition defaults
  (penalty 1.2, no repeated 3-grams) unless the recipe sets its own; trl's
  repetition penalty also counts prompt tokens (``generate`` counts generated ones only);
- ``learning_rate``, ``seed + k`` (trainer and data order), LoRA: as DPO+RR.

Equal generation budget: one iteration samples ``prompts_per_iteration`` prompts
and generates ``candidates`` completions for each, once — the same
``prompts_per_iteration * candidates`` generations a DPO+RR iteration makes. trl
drops prompts that do not fill a whole generation batch, so the number of
sampled prompts must be a multiple of ``batch_size * gradient_accumulation_steps
* processes`` (``check_budget`` raises before any model is loaded).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..evaluation.data.configs import as_list
from ..evaluation.data.schema import Example
from ..evaluation.errors import DataError
from .context import RunContext
from .scoring import Scoring
from .stages import mean

#: Column of the GRPO dataset holding the prompt's position in the iteration's prompt list.
POSITION = "position"


def prompts_per_round(batch_size: int, gradient_accumulation_steps: int, processes: int) -> int:
    """Prompts trl generates for at once over all processes (``generation_batch_size / num_generations``)."""
    return batch_size * gradient_accumulation_steps * processes


def check_budget(n_prompts: int, batch_size: int, gradient_accumulation_steps: int, processes: int) -> None:
    """Raise DataError (a ValueError) unless every one of ``n_prompts`` gets its completions (see module)."""
    per_round = prompts_per_round(batch_size, gradient_accumulation_steps, processes)
    if n_prompts % per_round:
        fit = max(per_round, n_prompts - n_prompts % per_round)
        raise DataError(
            f"method='grpo' samples {n_prompts} prompts per iteration, not a multiple of batch_size "
            f"({batch_size}) x gradient_accumulation_steps ({gradient_accumulation_steps}) x processes "
            f"({processes}) = {per_round}: trl would skip the rest; set `prompts_per_iteration` to {fit} "
            "(or a multiple of it) or lower `batch_size`"
        )


def sampling_settings(recipes: str | Sequence[str]) -> dict[str, Any]:
    """trl generation settings of the first recipe (see module): temperature, top_p, top_k, ..."""
    from ..decoding.config import GenerateConfig
    from ..rerank.reranker import RECIPES

    names = as_list(recipes, "recipes") or []
    if not names:
        raise ValueError("`recipes` is empty; give at least one of the rerank.RECIPES samplers")
    values: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(GenerateConfig)}
    values.update(RECIPES[names[0]])
    return {
        "recipe": names[0],
        "temperature": float(values["temperature"]),
        "top_p": 1.0 if values["top_p"] is None else float(values["top_p"]),
        "top_k": 0 if values["top_k"] is None else int(values["top_k"]),
        "repetition_penalty": float(values["repetition_penalty"]),
        "no_repeat_ngram_size": int(values["no_repeat_ngram_size"]),
    }


class CompositeReward:
    """trl reward function: each completion's per-set composite within its prompt's group (see module).

    Called by trl as ``reward(prompts=..., completions=..., position=[...], **kwargs)``
    on one process' rows, which hold whole groups of ``group_size`` completions.
    Every scored completion is kept in ``records`` (position -> DPO+RR-shaped record).

    Args:
        scoring: the run's ``Scoring`` (components, weights, normalization, source view).
        examples: the iteration's prompts; ``position`` indexes them.
        prefixes: the response prefix of each example (prepended to its completions).
        group_size: completions per prompt (``candidates``).
        recipe: sampler name stored with each candidate.
        clean: clean texts like ``generate`` (``clean_summary``).
    """

    __name__ = "composite"

    def __init__(
        self, scoring: Scoring, examples: Sequence[Example], prefixes: Sequence[str], group_size: int,
        recipe: str = "nucleus", clean: bool = True,
    ) -> None:
        if len(prefixes) != len(examples):
            raise ValueError(f"`prefixes` has {len(prefixes)} entries for {len(examples)} examples")
        self.scoring = scoring
        self.examples = list(examples)
        self.prefixes = list(prefixes)
        self.group_size = group_size
        self.recipe = recipe
        self.clean = clean
        self.records: dict[int, dict[str, Any]] = {}

    def text(self, position: int, completion: Any) -> str:
        """The summary a scorer sees: prefix + completion, cleaned."""
        from ..decoding.prompts.templates import clean_summary

        if isinstance(completion, list):  # conversational: [{"role": "assistant", "content": ...}]
            completion = completion[-1]["content"]
        text = (self.prefixes[position] + str(completion)).strip()
        return clean_summary(text) if self.clean else text

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        """One reward per completion (see class docstring); never None (trl's RewardFunc type allows it)."""
        positions = [int(p) for p in kwargs[POSITION]]
        texts = [self.text(p, c) for p, c in zip(positions, completions)]
        groups: dict[int, list[int]] = {}
        for row, pos in enumerate(positions):
            groups.setdefault(pos, []).append(row)
        partial = {pos: len(rows) for pos, rows in groups.items() if len(rows) != self.group_size}
        if partial:
            raise RuntimeError(
                f"GRPO reward got incomplete prompt groups {partial} (expected {self.group_size} completions "
                "each); per-set normalization needs whole groups on each process"
            )
        raw = self.scoring.raw([self.examples[p] for p in positions], texts)
        rewards: list[float | None] = [0.0] * len(texts)
        for pos, rows in groups.items():
            composite = self.scoring.candidate_composite({name: [raw[name][i] for i in rows] for name in raw})
            cands = []
            for j, (i, value) in enumerate(zip(rows, composite)):
                rewards[i] = value
                cands.append({"text": texts[i], "recipe": self.recipe, "index": j, "score": value,
                              "components": {name: raw[name][i] for name in raw}})
            self.records[pos] = {"position": pos, "id": self.examples[pos].id, "candidates": cands}
        log_metric = kwargs.get("log_metric")
        if log_metric is not None:
            for name in raw:
                log_metric(f"scores/{name}", sum(raw[name]) / len(raw[name]))
        return rewards


def grpo_prompts(ctx: RunContext, examples: Sequence[Example]) -> tuple[list[str], list[str]]:
    """The prompt strings ``generate`` would feed the policy, and each example's response prefix.

    Raises DataError (from ``encode_prompts``) when a prompt leaves no room for ``max_new_tokens``.
    """
    from ..decoding.config import GenerateConfig
    from ..decoding.engines.transformers import encode_prompts
    from ..decoding.prompts.plan import plan_prompts

    config = GenerateConfig(max_new_tokens=ctx.config.max_new_tokens, num_beams=1)
    encode_prompts(ctx.model, ctx.tokenizer, examples, config)  # context-length check only
    plans = plan_prompts(examples, config, prefixes=not ctx.model.config.is_encoder_decoder)
    return [plan.text(ctx.tokenizer) for plan in plans], [plan.prefix for plan in plans]


def grpo_args(ctx: RunContext, k: int, workdir: Path) -> Any:
    """The ``trl.GRPOConfig`` of iteration ``k`` (mapping in the module docstring)."""
    import torch
    from trl.trainer.grpo_config import GRPOConfig

    c = ctx.config
    sampling = sampling_settings(c.recipes)
    bf16 = ctx.device.startswith("cuda") and torch.cuda.is_bf16_supported()
    return GRPOConfig(
        output_dir=str(workdir / "trainer"),
        per_device_train_batch_size=c.batch_size * c.candidates,
        gradient_accumulation_steps=c.gradient_accumulation_steps,
        num_generations=c.candidates, max_completion_length=c.max_new_tokens,
        num_train_epochs=1, num_iterations=int(c.epochs), learning_rate=c.learning_rate, beta=c.grpo_beta,
        temperature=sampling["temperature"], top_p=sampling["top_p"], top_k=sampling["top_k"],
        repetition_penalty=sampling["repetition_penalty"],
        generation_kwargs={"no_repeat_ngram_size": sampling["no_repeat_ngram_size"]},
        bf16=bf16, gradient_checkpointing=False, disable_dropout=False, save_strategy="no",
        report_to="none", logging_steps=1, seed=c.seed + k, data_seed=c.seed + k,
        use_cpu=ctx.device == "cpu", dataloader_num_workers=0, log_completions=False,
        disable_tqdm=not (c.progress and ctx.state.is_main_process),
    )


def train_grpo(
    ctx: RunContext, k: int, prompts: list[Example], workdir: Path
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """GRPO on ``prompts``, continuing the context's LoRA; (candidate records of all processes, metrics)."""
    from datasets import Dataset
    from trl.trainer.grpo_trainer import GRPOTrainer

    c = ctx.config
    check_budget(len(prompts), c.batch_size, c.gradient_accumulation_steps, ctx.world)
    texts, prefixes = grpo_prompts(ctx, prompts)
    args = grpo_args(ctx, k, workdir)
    reward = CompositeReward(ctx.scoring, prompts, prefixes, c.candidates, sampling_settings(c.recipes)["recipe"])
    dataset = Dataset.from_list([{"prompt": text, POSITION: i} for i, text in enumerate(texts)])
    ctx.model.train()
    trainer = GRPOTrainer(
        model=ctx.model, reward_funcs=[reward], args=args, train_dataset=dataset, processing_class=ctx.tokenizer,
    )
    if c.reference == "base":
        ctx.drop_ref_adapter()  # trl copied the adapter to "ref"; without it, ref = adapters disabled
    result = trainer.train()
    ctx.drop_ref_adapter()
    ctx.model = trainer.model
    records = ctx.gather(list(reward.records.values()))
    history = [h for h in trainer.state.log_history if "loss" in h]
    metrics = {
        "steps": trainer.state.global_step,
        "train_loss": result.training_loss,
        "reward_mean": mean([h["reward"] for h in history if "reward" in h]),
        "reward_std": mean([h["reward_std"] for h in history if "reward_std" in h]),
        "frac_reward_zero_std": mean([h["frac_reward_zero_std"] for h in history if "frac_reward_zero_std" in h]),
        "kl": mean([h["kl"] for h in history if "kl" in h]),
    }
    return records, metrics
