"""``train_dpo_rr(config)``: iterated reranking + DPO on self-generated candidates (Ri et al. 2025).

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
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evenhand.evaluation.configs import normalized
from evenhand.evaluation.jsonl import write_json
from evenhand.evaluation.schema import DataError, Example
from evenhand.training.config import DPORRConfig

ITER_PREFIX = "iter_"
SUMMARY = "summary.json"
MANIFEST = "manifest.json"
#: Fields a resumed run may change.
RESUMABLE_CHANGES = ("iterations", "progress", "out_dir", "device")


def split_dev(
    examples: Sequence[Example], dev_size: int, key: str | None = None, seed: int = 0
) -> tuple[list[Example], list[Example]]:
    """Split off about ``dev_size`` dev examples, whole ``meta[key]`` groups at a time (seeded).

    Groups (``meta[key]`` values, or single examples without ``key``) are
    shuffled by ``seed`` and moved to dev until it holds at least ``dev_size``.
    """
    groups: dict[str, list[int]] = {}
    for i, ex in enumerate(examples):
        if key is not None and key not in ex.meta:
            raise DataError(f"example {ex.id!r} has no `meta.{key}`; fix `split_key` or the data")
        name = str(ex.meta[key]) if key is not None else ex.id
        groups.setdefault(name, []).append(i)
    names = sorted(groups)
    random.Random(seed).shuffle(names)
    dev_idx: set[int] = set()
    for name in names:
        if len(dev_idx) >= dev_size:
            break
        dev_idx.update(groups[name])
    train = [ex for i, ex in enumerate(examples) if i not in dev_idx]
    dev = [ex for i, ex in enumerate(examples) if i in dev_idx]
    if not train:
        raise DataError(f"`dev_size`={dev_size} leaves no training examples; lower it")
    return train, dev


def sample_prompts(n_train: int, per_iteration: int, seed: int, iteration: int) -> list[int]:
    """Sorted indices of the training prompts of one iteration (seeded, without replacement)."""
    rng = random.Random(seed * 1_000_003 + iteration)
    return sorted(rng.sample(range(n_train), min(per_iteration, n_train)))


def iteration_dir(out_dir: str | Path, k: int) -> Path:
    """``out_dir/iter_k``."""
    return Path(out_dir) / f"{ITER_PREFIX}{k}"


def finished_iterations(out_dir: str | Path) -> list[int]:
    """Iterations whose folder is complete (it holds ``summary.json``), sorted."""
    out = Path(out_dir)
    if not out.is_dir():
        return []
    done = []
    for path in out.iterdir():
        suffix = path.name[len(ITER_PREFIX):]
        if path.name.startswith(ITER_PREFIX) and suffix.isdigit() and (path / SUMMARY).is_file():
            done.append(int(suffix))
    return sorted(done)


def check_resumable(out_dir: Path, config: DPORRConfig) -> None:
    """Raise ValueError if ``out_dir`` holds a run with other settings than ``config``."""
    manifest = out_dir / MANIFEST
    if not manifest.is_file():
        return
    old = normalized(DPORRConfig, json.loads(manifest.read_text(encoding="utf-8")).get("config", {}))
    new = config.to_dict()
    changed = sorted(k for k in set(old) | set(new) if k not in RESUMABLE_CHANGES and old.get(k) != new.get(k))
    if changed:
        detail = ", ".join(f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in changed)
        raise ValueError(
            f"{out_dir} holds a run with other settings ({detail}); resume with the same settings "
            "or choose another `out_dir`"
        )


def drop_gguf_marker(model: Any) -> Any:
    """Forget a GGUF quantization marker on a model whose weights are already floats.

    The embedded SmolLM2 folder is converted from a GGUF file and its config keeps
    ``quantization_config: gguf``; transformers then attaches a GGUF quantizer and
    ``Trainer`` refuses to train. GGUF weights are always de-quantized on load,
    so the marker is dropped (the model's parameters are untouched).
    """
    quantizer = getattr(model, "hf_quantizer", None)
    method = str(getattr(getattr(quantizer, "quantization_config", None), "quant_method", "")).lower()
    if quantizer is not None and method.endswith("gguf"):
        quantizer.remove_quantization_config(model)  # transformers' own "dequantized" clean-up
    return model


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


class _Run:
    """The state of one run; see ``train_dpo_rr``."""

    def __init__(self, config: DPORRConfig, scorers: Mapping[str, Any] | None,
                 train: Sequence[Example] | None, dev: Sequence[Example] | None) -> None:
        import torch
        from accelerate import PartialState
        from accelerate.utils import parse_flag_from_env
        from evenhand.training.scoring import Scoring, registry_scoring

        self.config = c = config
        # PartialState() alone ignores CPU process groups: under torchrun/accelerate
        # (LOCAL_RANK set) on CPU, cpu=True makes it MULTI_CPU with gloo.
        cpu = (c.device == "cpu" or not torch.cuda.is_available()
               or parse_flag_from_env("ACCELERATE_USE_CPU"))
        self.state = PartialState(cpu=cpu)
        self.device = c.device or ("cpu" if self.state.device.type == "cpu" else str(self.state.device))
        self.out = Path(c.out_dir)
        if scorers is not None:
            self.scoring = Scoring(scorers, c.weights, c.normalize, c.score_source)
        else:
            self.scoring = registry_scoring(c.scorer_names, c.weights, c.normalize, c.score_source)
        self.fair_scorer = None
        if c.fairness:
            from evenhand.rerank.registry import get_scorer

            self.fair_scorer = get_scorer("equal-coverage", model=c.fairness_model, progress=False)
        self.train, self.dev = self._data(train, dev)

    # -- helpers -------------------------------------------------------------------------
    def log(self, message: str) -> None:
        if self.config.progress and self.state.is_main_process:
            print(f"[dpo-rr] {message}", flush=True)

    def _data(self, train: Sequence[Example] | None, dev: Sequence[Example] | None) -> tuple[list, list]:
        from evenhand.evaluation.loaders import load_examples

        c = self.config
        if train is None:
            if c.data is None:
                raise ValueError("`data` is not set; give a training data file (--data FILE)")
            train = load_examples(c.data)
        train = list(train)
        if dev is None:
            if c.dev_data is not None:
                dev = load_examples(c.dev_data)
            else:
                train, dev = split_dev(train, c.dev_size, c.split_key, c.seed)
        if not train:
            raise DataError("no training examples")
        return train, list(dev)

    def _shard(self, items: Sequence[Any]) -> list[tuple[int, Any]]:
        rank, world = self.state.process_index, self.state.num_processes
        return [(i, items[i]) for i in range(rank, len(items), world)]

    def _gather(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.state.num_processes > 1:
            from accelerate.utils import gather_object

            records = gather_object(records)
        return sorted(records, key=lambda r: r["position"])

    # -- model -------------------------------------------------------------------------
    def load_policy(self, last: int) -> None:
        import torch
        from evenhand.decoding.models import load_generator
        from peft import LoraConfig, PeftModel, get_peft_model

        c = self.config
        base, self.tokenizer = load_generator(c.model, device=self.device, dtype=torch.float32)
        drop_gguf_marker(base)
        if last > 0:
            adapter = iteration_dir(self.out, last) / "adapter"
            self.model = PeftModel.from_pretrained(base, str(adapter), is_trainable=True)
        else:
            lora = LoraConfig(
                r=c.lora_r, lora_alpha=c.lora_alpha, lora_dropout=c.lora_dropout,
                target_modules=c.target_modules, task_type="CAUSAL_LM", bias="none",
            )
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(c.seed)
                self.model = get_peft_model(base, lora)
        self.model.to(self.device)

    # -- stages --------------------------------------------------------------------------
    def candidates(self, k: int, prompts: list[Example]) -> list[dict[str, Any]]:
        from evenhand.decoding.generate import GenerateConfig
        from evenhand.rerank.reranker import RerankConfig, Reranker

        c = self.config
        self.model.eval()
        reranker = Reranker(
            self.model, self.tokenizer, scorer=None,  # type: ignore[arg-type]
            config=RerankConfig(candidates=c.candidates, recipes=c.recipes, seed=c.seed + 1000 * k),
            generate_config=GenerateConfig(
                max_new_tokens=c.max_new_tokens, batch_size=c.generate_batch_size, num_beams=1,
            ),
        )
        mine = self._shard(prompts)
        per_example = reranker.candidates([ex for _, ex in mine]) if mine else []
        records = []
        for (pos, ex), cands in zip(mine, per_example):
            texts = [cand["text"] for cand in cands]
            raw = self.scoring.raw([ex] * len(texts), texts)
            composite = self.scoring.candidate_composite(raw)
            for j, cand in enumerate(cands):
                cand["score"] = composite[j]
                cand["components"] = {name: raw[name][j] for name in raw}
            if self.fair_scorer is not None:
                details = self.fair_scorer.score_details([ex] * len(texts), texts)
                for cand, d in zip(cands, details):
                    cand["fair_score"] = d["score"]
                    cand["group_diffs"] = d.get("group_diffs") or {}
            records.append({"position": pos, "id": ex.id, "candidates": cands})
        return self._gather(records)

    def pairs(self, prompts: list[Example], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        from evenhand.training.fairness import pair_weight, representation_ratios
        from evenhand.training.pairs import build_pairs

        c = self.config
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

    def train_dpo(self, k: int, prompts: list[Example], pairs: list[dict[str, Any]], workdir: Path) -> dict:
        import torch
        from datasets import Dataset
        from evenhand.decoding.prompting import build_prompt
        from evenhand.training.trainer import WEIGHT_COLUMN, weighted_dpo_trainer
        from trl import DPOConfig

        c = self.config
        if not pairs:
            self.log(f"iteration {k}: no preference pairs (all candidates tie); adapter unchanged")
            return {"steps": 0}
        by_position = {i: ex for i, ex in enumerate(prompts)}
        rows = []
        for p in pairs:
            prompt = build_prompt(by_position[p["position"]])
            row = {
                "prompt": [{"role": "user", "content": prompt}],
                "chosen": [{"role": "assistant", "content": p["chosen_text"]}],
                "rejected": [{"role": "assistant", "content": p["rejected_text"]}],
            }
            if c.fairness:
                row[WEIGHT_COLUMN] = p["weight"]
            rows.append(row)
        bf16 = self.device.startswith("cuda") and torch.cuda.is_bf16_supported()
        args = DPOConfig(
            output_dir=str(workdir / "trainer"), per_device_train_batch_size=c.batch_size,
            gradient_accumulation_steps=c.gradient_accumulation_steps, num_train_epochs=c.epochs,
            learning_rate=c.learning_rate, beta=c.beta, max_length=c.max_length,
            bf16=bf16, gradient_checkpointing=False,
            disable_dropout=False, save_strategy="no", report_to="none", logging_steps=1,
            seed=c.seed + k, data_seed=c.seed + k, use_cpu=self.device == "cpu",
            dataloader_num_workers=0, disable_tqdm=not (c.progress and self.state.is_main_process),
        )
        trainer_cls = weighted_dpo_trainer()
        trainer = trainer_cls(
            model=self.model, ref_model=None, args=args, train_dataset=Dataset.from_list(rows),
            processing_class=self.tokenizer,
        )
        if c.reference == "base":
            self._drop_ref_adapter()  # trl copied the adapter to "ref"; without it, ref = adapters disabled
        result = trainer.train()
        self._drop_ref_adapter()
        self.model = trainer.model
        history = [h for h in trainer.state.log_history if "loss" in h]
        return {
            "steps": trainer.state.global_step,
            "train_loss": result.training_loss,
            "reward_accuracy": _mean([h["rewards/accuracies"] for h in history if "rewards/accuracies" in h]),
            "reward_margin": _mean([h["rewards/margins"] for h in history if "rewards/margins" in h]),
        }

    def _drop_ref_adapter(self) -> None:
        model = self.model
        if "ref" in getattr(model, "peft_config", {}):
            model.delete_adapter("ref")
            model.set_adapter("default")

    def evaluate(self, base: bool = False) -> list[dict[str, Any]]:
        import contextlib

        from evenhand.decoding.generate import GenerateConfig, generate

        c = self.config
        self.model.eval()
        mine = self._shard(self.dev)
        examples = [ex for _, ex in mine]
        context = self.model.disable_adapter() if base else contextlib.nullcontext()
        with context:
            texts = generate(
                self.model, self.tokenizer, examples,
                GenerateConfig(max_new_tokens=c.max_new_tokens, batch_size=c.generate_batch_size,
                               num_beams=1, seed=c.seed),
                progress=False,
            ) if examples else []
        raw = self.scoring.raw(examples, texts) if examples else {}
        composite = self.scoring.weighted(raw) if examples else []
        records = [
            {"position": pos, "id": ex.id, "summary": text, "composite": composite[i],
             "scores": {name: raw[name][i] for name in raw}}
            for i, ((pos, ex), text) in enumerate(zip(mine, texts))
        ]
        return self._gather(records)

    def dev_means(self, records: list[dict[str, Any]]) -> dict[str, float | None]:
        means = {"composite": _mean([r["composite"] for r in records])}
        for name in self.scoring.names:
            means[name] = _mean([r["scores"][name] for r in records])
        return means

    # -- writing -------------------------------------------------------------------------
    def commit(self, k: int, files: dict[str, list[dict[str, Any]]], summary: dict[str, Any],
               save_adapter: bool) -> None:
        """Write iteration k's files into a temporary folder and rename it to ``iter_k``."""
        from evenhand.evaluation.jsonl import write_jsonl

        if self.state.is_main_process:
            self.out.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{ITER_PREFIX}{k}.tmp-", dir=self.out))
            tmp.chmod(0o755)
            try:
                for name, rows in files.items():
                    write_jsonl(tmp / name, rows)
                if save_adapter:
                    self.save_adapter(tmp / "adapter")
                write_json(tmp / SUMMARY, summary)
                target = iteration_dir(self.out, k)
                if target.exists():  # a stale folder without summary.json
                    shutil.rmtree(target)
                os.replace(tmp, target)
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
            self.write_manifest()
        self.state.wait_for_everyone()

    def save_adapter(self, path: Path) -> None:
        """The LoRA as safetensors; its config names the base as given (portable aliases)."""
        self.model.save_pretrained(str(path), safe_serialization=True)
        config_file = path / "adapter_config.json"
        adapter_config = json.loads(config_file.read_text(encoding="utf-8"))
        adapter_config["base_model_name_or_path"] = self.config.model
        write_json(config_file, adapter_config)

    def write_manifest(self) -> dict[str, Any]:
        done = finished_iterations(self.out)
        summaries = [json.loads((iteration_dir(self.out, k) / SUMMARY).read_text()) for k in done]
        manifest = {
            "config": self.config.to_dict(), "finished": done, "iterations": summaries,
            "num_processes": self.state.num_processes,
            "train_examples": len(self.train), "dev_examples": len(self.dev),
        }
        write_json(self.out / MANIFEST, manifest)
        return manifest


def train_dpo_rr(
    config: DPORRConfig,
    scorers: Mapping[str, Any] | None = None,
    train: Sequence[Example] | None = None,
    dev: Sequence[Example] | None = None,
) -> dict[str, Any]:
    """Run (or resume) DPO+RR as configured; return the run manifest.

    Args:
        config: the run's settings; ``config.out_dir`` receives every output.
        scorers: name -> scorer object (``name`` and ``score(sources, outputs)``);
            default: the registered scorers named by ``config.scorers``.
        train: training examples (default: loaded from ``config.data``).
        dev: dev examples (default: ``config.dev_data`` or split off ``train``).

    Returns:
        The manifest (also in ``out_dir/manifest.json``): the config, finished
        iterations and each one's summary (dev means per scorer, pair counts,
        train loss, seconds per stage).
    """
    run = _Run(config, scorers, train, dev)
    out = run.out
    check_resumable(out, config)
    done = finished_iterations(out)
    last = max([k for k in done if k > 0], default=0)
    if done:
        run.log(f"resuming {out}: iterations {done} finished")
    run.load_policy(last)

    if 0 not in done and run.dev:
        start = time.perf_counter()
        run.log(f"iteration 0: zero-shot greedy on {len(run.dev)} dev examples")
        dev_records = run.evaluate(base=True)
        summary = {"iteration": 0, "dev": run.dev_means(dev_records),
                   "seconds": {"eval": time.perf_counter() - start}}
        run.commit(0, {"dev.jsonl": dev_records}, summary, save_adapter=False)
        run.log(f"iteration 0: dev {summary['dev']}")

    for k in range(last + 1, config.iterations + 1):
        seconds: dict[str, float] = {}
        t0 = time.perf_counter()
        idx = sample_prompts(len(run.train), config.prompts_per_iteration, config.seed, k)
        prompts = [run.train[i] for i in idx]
        tag = f"iteration {k}/{config.iterations}"
        run.log(f"{tag}: generate {config.candidates} candidates x {len(prompts)} prompts")
        records = run.candidates(k, prompts)
        seconds["generate_and_score"] = time.perf_counter() - t0

        t = time.perf_counter()
        pairs = run.pairs(prompts, records)
        run.log(f"{tag}: {len(pairs)} pairs ({config.pair_strategy}); DPO")
        train_metrics = run.train_dpo(k, prompts, pairs, out / f".{ITER_PREFIX}{k}.trainer")
        shutil.rmtree(out / f".{ITER_PREFIX}{k}.trainer", ignore_errors=True)
        seconds["train"] = time.perf_counter() - t

        t = time.perf_counter()
        dev_records = run.evaluate() if run.dev else []
        seconds["eval"] = time.perf_counter() - t
        seconds["total"] = time.perf_counter() - t0
        summary = {
            "iteration": k, "prompts": len(prompts), "candidates": sum(len(r["candidates"]) for r in records),
            "pairs": len(pairs), "train": train_metrics,
            "candidate_means": {
                name: _mean([cand["components"][name] for r in records for cand in r["candidates"]])
                for name in run.scoring.names
            },
            "dev": run.dev_means(dev_records), "seconds": seconds,
        }
        files = {"candidates.jsonl": records, "pairs.jsonl": pairs, "dev.jsonl": dev_records}
        run.commit(k, files, summary, save_adapter=True)
        run.log(f"{tag}: dev {summary['dev']} ({seconds['total']:.0f} s)")
    if run.state.is_main_process:
        return run.write_manifest()
    return json.loads((out / MANIFEST).read_text())
