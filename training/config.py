"""``DPORRConfig``: every setting of a DPO+RR or GRPO run, loadable from YAML (unknown keys rejected).

Defaults follow Ri, Deas & McKeown (2025): 10 iterations of 500 sampled training
prompts, 9 candidates per prompt (3 nucleus, 3 top-k, 3 hybrid), all candidate
pairs with unequal scores, one epoch of DPO per iteration continuing one LoRA
(r 8, alpha 16, dropout 0.1 on q_proj/v_proj), batch size 4.

``method="grpo"`` reads the same fields (mapping onto trl's ``GRPOConfig`` in
``evenhand.training.grpo``) plus ``grpo_beta``; the pair, DPO-loss and FairPO
fields are DPO+RR's only (set under GRPO they warn; ``fairness`` raises).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..decoding.engines.base import engine_names
from ..evaluation.data.configs import coerce_lists, config_from_mapping, load_config
from ..rerank.reranker import DEFAULT_SCORERS

#: The generation engines of `sample` and `evaluate` (the registry's built-in ones).
ENGINES = engine_names()
PAIR_STRATEGIES = ("all", "best-worst", "top-gap")
REFERENCES = ("base", "previous")
METHODS = ("dpo-rr", "grpo")
#: Fields only one method reads: a non-default value under the other method warns.
DPO_ONLY = ("pair_strategy", "top_gap_k", "min_gap", "beta", "max_length", "fairness_temperature")
GRPO_ONLY = ("grpo_beta",)


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass
class DPORRConfig:
    """Settings of ``train_dpo_rr``; see the module docstring for the paper's values."""

    # -- data and model ----------------------------------------------------------------
    data: str | None = field(
        default=None, metadata=_help("Training examples: .jsonl, .csv, FairSumm or TheFlipSide .json.")
    )
    dev_data: str | None = field(
        default=None,
        metadata=_help("Held-out examples for the per-iteration evaluation (default: split off `data`)."),
    )
    dev_size: int = field(
        default=8, metadata=_help("Dev examples split off `data` when `dev_data` is not given.")
    )
    split_key: str | None = field(
        default=None,
        metadata=_help("`meta` field whose values never straddle train and dev (e.g. 'topic')."),
    )
    model: str = field(
        default="smollm2-135m-instruct",
        metadata=_help("Base causal LM: embedded alias, local folder or cached HF id."),
    )
    out_dir: str = field(default="dpo_rr_run", metadata=_help("Run folder: iter_K/ per iteration."))
    device: str | None = field(default=None, metadata=_help("cpu, cuda... (default: auto)."))
    engine: str = field(
        default="transformers",
        metadata={"help": "What samples candidates and writes the dev summaries: transformers (in-process) "
                          "or vllm (one in-process vLLM engine serving each iteration's LoRA; training "
                          "stays in-process; docs/training.md).",
                  "choices": ENGINES},
    )
    # -- method ------------------------------------------------------------------------------
    method: str = field(
        default="dpo-rr",
        metadata={"help": "dpo-rr: sample, rerank, DPO on preference pairs; grpo: online RL with trl's "
                          "GRPOTrainer rewarded by the same scorer composite (docs/training.md).",
                  "choices": METHODS},
    )
    # -- iterations and sampling ---------------------------------------------------------
    iterations: int = field(default=10, metadata=_help("DPO+RR iterations."))
    prompts_per_iteration: int = field(
        default=500, metadata=_help("Training prompts sampled (seeded, without replacement) per iteration.")
    )
    candidates: int = field(default=9, metadata=_help("Candidates sampled per prompt."))
    recipes: list[str] = field(
        default_factory=lambda: ["nucleus", "top-k", "hybrid"],
        metadata=_help("Samplers cycled over candidates (rerank.RECIPES): the paper's thirds."),
    )
    max_new_tokens: int = field(default=96, metadata=_help("Tokens per candidate and dev summary."))
    generate_batch_size: int = field(default=4, metadata=_help("Sequences per generate() call."))
    # -- scoring and pairs ---------------------------------------------------------------
    scorers: list[str] = field(
        default_factory=lambda: [str(name) for name in DEFAULT_SCORERS.split(",")],
        metadata={**_help("Registered scorers combined by `composite` (the ones `evenhand rerank` "
                          "selects with)."), "scorers": True},
    )
    weights: list[float] | None = field(
        default=None, metadata=_help("Scorer weights, one per scorer (default: equal).")
    )
    normalize: str = field(
        default="minmax", metadata=_help("Per-candidate-set normalization of each scorer: minmax, zscore, none.")
    )
    score_source: str = field(
        default="documents",
        metadata=_help("Score against 'documents' (all) or 'target' (the target perspective's document)."),
    )
    pair_strategy: str = field(
        default="all", metadata=_help("Preference pairs per prompt: all, best-worst or top-gap.")
    )
    top_gap_k: int = field(
        default=4, metadata=_help("Pairs kept per prompt by `top-gap` (largest score gaps first).")
    )
    min_gap: float = field(
        default=0.0, metadata=_help("Drop pairs whose score gap is below this (ties always dropped).")
    )
    fairness: bool = field(
        default=False,
        metadata=_help("FairPO-like: pairs by Equal Coverage, weighted by over-representation."),
    )
    fairness_temperature: float = field(
        default=1.0, metadata=_help("Exponent on the corpus over/under-representation ratio (FairPO).")
    )
    fairness_model: str = field(
        default="fallback",
        metadata=_help("Alignment model of the equal-coverage scorer (NLI folder, .ckpt or 'fallback')."),
    )
    # -- DPO -------------------------------------------------------------------------------
    beta: float = field(default=0.1, metadata=_help("DPO beta (strength of the KL anchor; GRPO: see `grpo_beta`)."))
    learning_rate: float = field(default=5e-5, metadata=_help("AdamW learning rate of the LoRA."))
    epochs: float = field(default=1.0, metadata=_help("DPO epochs per iteration (GRPO: passes over each generated batch, a whole number)."))
    batch_size: int = field(default=4, metadata=_help("Preference pairs per device per step (GRPO: prompts, each with `candidates` completions)."))
    gradient_accumulation_steps: int = field(default=1, metadata=_help("Steps per optimizer update."))
    max_length: int = field(
        default=4096,
        metadata=_help("Max tokens of prompt + completion in DPO (completions cut at the end; "
                       "pairs whose prompt alone is longer are dropped)."),
    )
    reference: str = field(
        default="base",
        metadata=_help("DPO/GRPO reference: 'base' (adapter disabled) or 'previous' (adapter at iteration start)."),
    )
    # -- GRPO ------------------------------------------------------------------------------
    grpo_beta: float = field(
        default=0.04,
        metadata=_help("GRPO's KL coefficient (trl GRPOConfig.beta; DeepSeekMath's 0.04; 0 = no reference)."),
    )
    # -- LoRA ------------------------------------------------------------------------------
    lora_r: int = field(default=8, metadata=_help("LoRA rank."))
    lora_alpha: int = field(default=16, metadata=_help("LoRA alpha."))
    lora_dropout: float = field(default=0.1, metadata=_help("LoRA dropout."))
    lora_target: list[str] = field(
        default_factory=lambda: ["q_proj", "v_proj"], metadata=_help("LoRA target modules.")
    )
    # -- misc --------------------------------------------------------------------------------
    seed: int = field(default=0, metadata=_help("Seed of prompt sampling, sampling, LoRA init and DPO."))
    progress: bool = field(default=True, metadata=_help("Progress bars and per-stage messages."))

    def __post_init__(self) -> None:
        coerce_lists(self)  # YAML lists and comma-separated strings alike
        positive = ("iterations", "prompts_per_iteration", "candidates", "max_new_tokens",
                    "generate_batch_size", "batch_size", "gradient_accumulation_steps", "max_length",
                    "lora_r", "lora_alpha", "top_gap_k")
        # every count an int with a sane upper bound, every float finite (evaluation.data.checks)
        from ..evaluation.data.checks import (
            check_count,
            check_finite_list,
            check_number,
            check_seed,
        )

        bounds = {"prompts_per_iteration": 10**7, "generate_batch_size": 4096, "gradient_accumulation_steps": 10**6,
                  "lora_alpha": 10**6, "top_gap_k": 10**6}
        for name in positive:
            check_count(getattr(self, name), name, high=bounds.get(name))
        check_count(self.dev_size, "dev_size", low=0, high=10**7)
        check_seed(self.seed)
        # upper bounds past any useful value: a learning rate above 1 only makes NaN adapters
        highs = {"beta": 100, "learning_rate": 1, "epochs": 1000, "fairness_temperature": 10**6}
        for name, high in highs.items():
            check_number(getattr(self, name), name, low=0, low_open=True, high=high)
        if self.method not in METHODS:
            raise ValueError(f"`method` must be one of {METHODS}, got {self.method!r}")
        if self.engine not in ENGINES:
            raise ValueError(f"`engine` must be one of {ENGINES}, got {self.engine!r}")
        check_number(self.grpo_beta, "grpo_beta", low=0, high=100)
        check_number(self.lora_dropout, "lora_dropout", low=0, high=1, high_open=True)
        check_number(self.min_gap, "min_gap", low=0)
        if not self.fairness and self.normalize == "minmax" and self.min_gap > 1:
            # minmax composites lie in [0, 1]: no pair could ever form, and the run would train on nothing
            raise ValueError(f"`min_gap` {self.min_gap:g} can never be met: with `normalize: minmax` composite "
                             "scores lie in [0, 1], so gaps are at most 1; lower it")
        if self.weights is not None:
            check_finite_list(self.weights, "weights")
        if self.pair_strategy not in PAIR_STRATEGIES:
            hint = "; write `top-gap` and set `top_gap_k`" if str(self.pair_strategy).startswith("top-gap") else ""
            raise ValueError(
                f"`pair_strategy` must be one of {PAIR_STRATEGIES}, got {self.pair_strategy!r}{hint}"
            )
        if self.score_source not in ("documents", "target"):
            raise ValueError(f"`score_source` must be 'documents' or 'target', got {self.score_source!r}")
        if self.reference not in REFERENCES:
            raise ValueError(f"`reference` must be one of {REFERENCES}, got {self.reference!r}")
        if self.candidates < 2:
            raise ValueError(f"`candidates` must be at least 2 to form pairs, got {self.candidates}")
        if not self.target_modules:
            raise ValueError("`lora_target` is empty; give module names such as 'q_proj,v_proj'")
        if not self.scorer_names and not self.fairness:
            raise ValueError("`scorers` is empty; give at least one registered scorer name")
        from ..rerank.reranker import RECIPES

        unknown = [r for r in self.recipes if r not in RECIPES]
        if not self.recipes or unknown:
            raise ValueError(f"`recipes` must name samplers among {', '.join(RECIPES)}, got {self.recipes!r}")
        self._check_method()

    def _check_method(self) -> None:
        """Options of the other method: conflicting ones raise, ignored ones warn (always shown by the CLI)."""
        import warnings

        from ..evaluation.errors import IgnoredOptionWarning

        defaults = {
            f.name: f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            for f in dataclasses.fields(self)
        }
        ignored = DPO_ONLY if self.method == "grpo" else GRPO_ONLY
        changed = [name for name in ignored if getattr(self, name) != defaults[name]]
        if changed:
            other = "dpo-rr" if self.method == "grpo" else "grpo"
            warnings.warn(
                f"{', '.join(f'`{n}`' for n in changed)} only appl{'ies' if len(changed) == 1 else 'y'} to "
                f"method={other!r} and {'is' if len(changed) == 1 else 'are'} ignored with method={self.method!r}",
                IgnoredOptionWarning, stacklevel=3,
            )
        if self.method != "grpo":
            return
        if self.fairness:
            raise ValueError(
                "`fairness` (FairPO-like pairs) needs method='dpo-rr'; for GRPO add the 'equal-coverage' "
                "scorer to `scorers` instead"
            )
        if float(self.epochs) != int(self.epochs):
            raise ValueError(
                f"`epochs` must be a whole number with method='grpo' (GRPO's num_iterations: optimization "
                f"passes over each generated batch), got {self.epochs!r}"
            )
        recipes = list(self.recipes)
        if len(recipes) > 1 and self.recipes != defaults["recipes"]:
            warnings.warn(
                f"method='grpo' samples every completion with the first of `recipes` ({recipes[0]!r}); "
                f"{', '.join(repr(r) for r in recipes[1:])} ignored",
                IgnoredOptionWarning, stacklevel=3,
            )

    @property
    def target_modules(self) -> list[str]:
        """LoRA target module names."""
        return list(self.lora_target)

    @property
    def scorer_names(self) -> list[str]:
        """The component scorer names."""
        return list(self.scorers)

    def to_dict(self) -> dict[str, Any]:
        """A JSON/YAML-ready dict of every field."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any], where: str = "config") -> DPORRConfig:
        """Build from a mapping; unknown keys raise ValueError listing the valid ones."""
        return config_from_mapping(cls, values, where)

    @classmethod
    def from_yaml(cls, path: str | Path, **overrides: Any) -> DPORRConfig:
        """Load a YAML file of fields; ``overrides`` (not None) win over the file."""
        return load_config(cls, path, **overrides)
