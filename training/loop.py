"""``train_dpo_rr(config)``: iterated reranking + DPO on self-generated candidates (Ri et al. 2025), or GRPO.

Iteration k = 1..K:

1. sample ``prompts_per_iteration`` training prompts (seeded by ``seed`` and k,
   without replacement);
2. generate ``candidates`` per prompt with the current policy using the
   paper's samplers (``rerank.Reranker``: nucleus / top-k / hybrid thirds);
3. score every candidate with the scorers; a prompt's candidate composite is
   the weighted sum of per-set normalized scores (``evenhand.training.scoring``);
4. build preference pairs (``evenhand.training.pairs``; with ``fairness`` the scores are
   -Equal Coverage and pairs are weighted, ``evenhand.training.fairness``);
5. train ``epochs`` of trl ``DPOTrainer`` on the pairs, continuing the same
   peft LoRA (a fresh optimizer per iteration); the reference is the
   adapter-disabled policy (``reference="base"``) or the adapter as it was at
   the start of the iteration (``"previous"``);
6. evaluate: greedy summaries of the dev split, scored by the same scorers.

Each step is a stage function of ``evenhand.training.stages`` (sample, score,
pair, train_dpo, evaluate) over a ``RunContext`` (``evenhand.training.context``);
the run folder is a ``RunStore`` (``evenhand.training.store``). With
``engine="vllm"`` steps 2 and 6 decode through one in-process vLLM engine serving
the iteration's saved adapter as a LoRA (``evenhand.training.vllm_policy``);
``summary.json``'s ``seconds`` time ``sample``, ``score``, ``train`` and ``eval``.

With ``method="grpo"`` steps 2-5 are one call of trl's ``GRPOTrainer`` on the
iteration's prompts (``evenhand.training.grpo``): it generates ``candidates``
completions per prompt and is rewarded by the same per-set composite that
orders DPO+RR's pairs; ``iter_K`` then holds ``candidates.jsonl`` (every
completion with its reward), ``adapter/``, ``dev.jsonl`` and ``summary.json``,
no ``pairs.jsonl``.

Outputs, written into a temporary folder renamed into place, so a folder
``out_dir/iter_K`` exists only when complete:

- ``iter_0/``: ``dev.jsonl`` and ``summary.json`` of the untrained policy
  (zero-shot greedy baseline);
- ``iter_K/``: ``candidates.jsonl``, ``pairs.jsonl``, ``adapter/``
  (safetensors, loadable with ``load_generator(path)`` / ``--model``),
  ``dev.jsonl``, ``summary.json`` (counts, dev means, train metrics, seconds
  per stage);
- ``manifest.json``: the config and every finished iteration's summary.

A restarted run (same ``out_dir`` and settings; ``iterations`` may grow) loads
the last finished adapter and continues with the next iteration. Every
iteration re-seeds sampling, LoRA dropout and data order from ``seed`` and k,
so a resumed run produces the same pairs and adapters as an uninterrupted one.

Under ``accelerate launch --multi_gpu --num_processes N`` (torchrun underneath;
on a CPU-only machine the processes join a gloo group; ``accelerate launch
--cpu`` starts a single process) each process generates, scores and evaluates its
share of the prompts (``prompts[rank::world]``, gathered to all), and
``DPOTrainer`` trains data-parallel; the main process writes the files.
Outputs then depend on the number of processes (each shard re-seeds its batches).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..evaluation.data.schema import Example
from ..evaluation.errors import DataError
from . import stages
from .config import DPORRConfig
from .context import RunContext, drop_gguf_marker, open_run, split_dev
from .store import (
    ADAPTER,
    ITER_PREFIX,
    MANIFEST,
    RESUMABLE_CHANGES,
    SUMMARY,
    RunStore,
    check_resumable,
    finished_iterations,
    iteration_dir,
)

__all__ = [
    "ITER_PREFIX", "MANIFEST", "RESUMABLE_CHANGES", "SUMMARY", "check_resumable", "drop_gguf_marker",
    "finished_iterations", "iteration_dir", "sample_prompts", "split_dev", "train_dpo_rr",
]


def sample_prompts(n_train: int, per_iteration: int, seed: int, iteration: int) -> list[int]:
    """Sorted indices of the training prompts of one iteration (seeded, without replacement)."""
    rng = random.Random(seed * 1_000_003 + iteration)
    return sorted(rng.sample(range(n_train), min(per_iteration, n_train)))


def manifest(ctx: RunContext, store: RunStore) -> dict[str, Any]:
    """The run's manifest: config, finished iterations and their summaries, process and data counts."""
    return {
        "config": ctx.config.to_dict(), "inputs": run_inputs(ctx.config),
        "finished": store.finished(), "iterations": store.summaries(),
        "num_processes": ctx.world, "train_examples": len(ctx.train), "dev_examples": len(ctx.dev),
    }


def run_inputs(config: DPORRConfig) -> dict[str, Any]:
    """The content a run's results depend on beyond its settings: data files' SHA-256 and the model's identity."""
    from ..decoding.models import model_identity
    from ..evaluation.io.digests import content_digest

    inputs: dict[str, Any] = {"model": model_identity(config.model)}
    for name in ("data", "dev_data"):
        path = getattr(config, name)
        if path:
            inputs[name] = content_digest(path)
    return inputs


def check_inputs(config: DPORRConfig, out_dir: Path) -> None:
    """Refuse to resume a run whose data or model content changed since its manifest was written."""
    from ..evaluation.errors import DataError

    path = out_dir / MANIFEST
    if not path.is_file():
        return
    try:
        stored = json.loads(path.read_text(encoding="utf-8")).get("inputs")
    except (OSError, ValueError, AttributeError):
        return  # check_resumable reports an unreadable manifest
    if not isinstance(stored, dict):
        return  # a run from before inputs were recorded
    current = json.loads(json.dumps(run_inputs(config), default=str))
    changed = [k for k in sorted(set(stored) | set(current)) if stored.get(k) != current.get(k)]
    if changed:
        raise DataError(
            f"{out_dir}: the run's {', '.join(changed)} changed since its iterations were trained "
            "(content differs from the manifest's inputs); resuming would mix them: choose another `out_dir`"
        )


def zero_shot(ctx: RunContext, store: RunStore) -> None:
    """Iteration 0: the untrained policy's greedy dev summaries (adapter disabled)."""
    start = time.perf_counter()
    ctx.log(f"iteration 0: zero-shot greedy on {len(ctx.dev)} dev examples")
    dev_records = stages.evaluate(ctx, base=True)
    summary = {"iteration": 0, "dev": stages.dev_means(ctx, dev_records),
               "seconds": {"eval": time.perf_counter() - start}}
    store.commit(0, {"dev.jsonl": dev_records}, summary, manifest=lambda: manifest(ctx, store))
    ctx.log(f"iteration 0: {_dev_text(summary['dev'])}")


def no_pairs_message(config: Any, k: int, prompts: int) -> str:
    """The one line a run stops with when iteration ``k`` forms no preference pairs (nothing to train)."""
    gap = f" or lower --min-gap (now {config.min_gap:g})" if config.min_gap > 0 else ""
    return (
        f"iteration {k} formed no preference pairs: the {config.candidates} candidates of each of "
        f"{prompts} prompts tie on --scorers {','.join(config.scorers)}, so DPO would train nothing; "
        f"sample more (--candidates {max(2 * config.candidates, 6)}), use scorers that tell the "
        f"candidates apart{gap}, and run again (finished iterations are kept)"
    )


def dpo_rr_iteration(ctx: RunContext, store: RunStore, k: int, prompts: list[Example]) -> None:
    """One DPO+RR iteration: sample, score, pair, train, evaluate, commit ``iter_k``."""
    c, t0, seconds = ctx.config, time.perf_counter(), {}
    ctx.log(f"{_tag(ctx, k)}: generate {c.candidates} candidates x {len(prompts)} prompts")
    sampled = stages.sample(ctx, k, prompts)
    seconds["sample"] = time.perf_counter() - t0
    t = time.perf_counter()
    records = ctx.gather(stages.score(ctx, prompts, sampled))
    seconds["score"] = time.perf_counter() - t
    seconds["generate_and_score"] = time.perf_counter() - t0

    t = time.perf_counter()
    pairs = stages.pair(c, records)
    if not pairs:
        raise DataError(no_pairs_message(c, k, len(prompts)))
    ctx.log(f"{_tag(ctx, k)}: {len(pairs)} pairs ({c.pair_strategy}); DPO")
    train_metrics = stages.train_dpo(ctx, k, prompts, pairs, store.workdir(k))
    store.drop_workdir(k)
    seconds["train"] = time.perf_counter() - t

    fields = {"prompts": len(prompts), "candidates": sum(len(r["candidates"]) for r in records),
              "pairs": len(pairs), "train": train_metrics}
    _evaluate_and_commit(ctx, store, k, t0, seconds, records, fields, {"pairs.jsonl": pairs})


def grpo_iteration(ctx: RunContext, store: RunStore, k: int, prompts: list[Example]) -> None:
    """One GRPO iteration: trl's GRPOTrainer on the prompts (generate, reward, train), evaluate, commit."""
    from .grpo import train_grpo

    c, t0 = ctx.config, time.perf_counter()
    ctx.log(f"{_tag(ctx, k)}: GRPO, {c.candidates} completions x {len(prompts)} prompts")
    records, train_metrics = train_grpo(ctx, k, prompts, store.workdir(k))
    store.drop_workdir(k)
    seconds = {"generate_score_and_train": time.perf_counter() - t0}
    fields = {"method": "grpo", "prompts": len(prompts),
              "candidates": sum(len(r["candidates"]) for r in records), "train": train_metrics}
    _evaluate_and_commit(ctx, store, k, t0, seconds, records, fields, {})


def _evaluate_and_commit(
    ctx: RunContext, store: RunStore, k: int, t0: float, seconds: dict[str, float],
    records: list[dict[str, Any]], fields: dict[str, Any], files: dict[str, list[dict[str, Any]]],
) -> None:
    """The end of training iteration ``k`` (either method): the dev pass, ``summary.json``
    (``fields`` after the iteration number), the atomic commit of ``iter_k``, the log line."""
    t = time.perf_counter()
    save_adapter = ctx.save_adapter
    if ctx.vllm is not None and ctx.dev:  # vLLM serves the trained adapter from disk: save it first
        save_adapter = _saved_policy(ctx, store, k)
    dev_records = stages.evaluate(ctx) if ctx.dev else []
    seconds["eval"] = time.perf_counter() - t
    seconds["total"] = time.perf_counter() - t0
    summary = {
        "iteration": k, **fields, "candidate_means": stages.candidate_means(ctx, records),
        "dev": stages.dev_means(ctx, dev_records), "seconds": seconds,
    }
    files = {"candidates.jsonl": records, **files, "dev.jsonl": dev_records}
    store.commit(k, files, summary, save_adapter=save_adapter, manifest=lambda: manifest(ctx, store))
    ctx.policy_adapter = store.adapter_dir(k)  # the next iteration samples with it
    ctx.log(f"{_tag(ctx, k)}: {_dev_text(summary['dev'])} ({seconds['total']:.0f} s)")


def _saved_policy(ctx: RunContext, store: RunStore, k: int) -> Callable[[Path], None]:
    """``engine: vllm``: save the trained adapter into ``.iter_k.tmp-policy/adapter`` (the policy
    the dev pass serves) and return the commit's ``save_adapter``, which moves that folder
    into ``iter_k`` (the committed bytes are the ones vLLM served; a kill leaves a ``.tmp-``
    folder that the next start removes)."""
    scratch = store.out / f".{ITER_PREFIX}{k}.tmp-policy"
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    ctx.save_adapter(scratch / ADAPTER)
    ctx.policy_adapter = scratch / ADAPTER

    def move(path: Path) -> None:
        os.replace(scratch / ADAPTER, path)
        shutil.rmtree(scratch, ignore_errors=True)

    return move


def _dev_text(means: dict[str, float | None]) -> str:
    """The dev means for the log; 'dev not evaluated' when there were no dev summaries."""
    if all(v is None for v in means.values()):
        return "dev not evaluated (no dev examples this iteration)"
    return "dev " + ", ".join(f"{k} {v:.4f}" if v is not None else f"{k} n/a" for k, v in means.items())


def _tag(ctx: RunContext, k: int) -> str:
    return f"iteration {k}/{ctx.config.iterations}"


def train_dpo_rr(
    config: DPORRConfig,
    scorers: Mapping[str, Any] | None = None,
    train: Sequence[Example] | None = None,
    dev: Sequence[Example] | None = None,
    engine: Any = None,
) -> dict[str, Any]:
    """Run (or resume) DPO+RR — or GRPO with ``config.method="grpo"`` — as configured; return the manifest.

    Args:
        config: the run's settings; ``config.out_dir`` receives every output.
        scorers: name -> scorer object (``name`` and ``score(sources, outputs)``);
            default: the registered scorers named by ``config.scorers``.
        train: training examples (default: loaded from ``config.data``).
        dev: dev examples (default: ``config.dev_data`` or split off ``train``).
        engine: with ``config.engine="vllm"``: a ``VllmEngine`` on ``config.model`` built with
            ``VllmPolicy.settings(config)`` to reuse (several runs in one process); default:
            the run builds its own and closes it at the end (``training.vllm_policy``).

    Returns:
        The manifest (also in ``out_dir/manifest.json``): the config, finished
        iterations and each one's summary (dev means per scorer, pair counts,
        train metrics, seconds per stage).
    """
    from .vllm_policy import VllmPolicy, check_engine_config

    check_inputs(config, Path(config.out_dir))  # before any model loads
    check_engine_config(config, int(os.environ.get("WORLD_SIZE", "1")))
    ctx = open_run(config, scorers, train, dev)
    check_engine_config(config, ctx.world)
    store = RunStore(config.out_dir, ctx.state)
    store.check_resumable(config)
    if config.method == "grpo":
        from .grpo import check_budget

        n_prompts = min(config.prompts_per_iteration, len(ctx.train))
        check_budget(n_prompts, config.batch_size, config.gradient_accumulation_steps, ctx.world)
    store.clean_stale()
    store.wait()
    done = store.finished()
    last = store.last_trained()
    if done:
        ctx.log(f"resuming {store.out}: iterations {done} finished")
    ctx.policy_adapter = store.adapter_dir(last) if last > 0 else None
    ctx.load_policy(ctx.policy_adapter)
    if config.engine == "vllm":
        ctx.vllm = VllmPolicy(config, engine)
    try:
        if 0 not in done and ctx.dev:
            zero_shot(ctx, store)
        iteration = grpo_iteration if config.method == "grpo" else dpo_rr_iteration
        for k in range(last + 1, config.iterations + 1):
            idx = sample_prompts(len(ctx.train), config.prompts_per_iteration, config.seed, k)
            iteration(ctx, store, k, [ctx.train[i] for i in idx])
    finally:
        if ctx.vllm is not None:
            ctx.vllm.close()  # the engine this run built (a given one stays open)
    if store.is_main:
        result = manifest(ctx, store)
        store.write_manifest(result)
        return result
    return json.loads((store.out / MANIFEST).read_text())
