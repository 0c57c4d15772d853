"""Held-out evaluation of a DPO+RR run: the systems, their per-article metrics, paired intervals.

A *system* is one set of dev summaries, one per dev article: the zero-shot
greedy policy (``iter_0``), each DPO+RR iteration's greedy policy (``iter_K``)
and best-of-N reranking with the untrained policy (the paper's RR baseline,
:func:`rerank_baseline`). Every system's summaries get the same metrics
(:func:`evaluate_summaries`):

- the training composite and its components (as the run scored its dev
  summaries: ``evenhand.training.scoring.Scoring.weighted`` of raw scores);
- checks the preferences never saw: ``fluency`` (mean token log p(summary)
  under the base LM), ``words`` (summary length), ``mint`` (abstractiveness
  against both articles, ``evenhand.evaluation.metrics.mint``), FairSumm's UER over the
  left/right groups, Equal Coverage ``ec`` and ``ec_target`` (the target
  group's mean document coverage minus the overall mean: > 0 when the summary
  covers the perspective it was asked for more than the other one).

:func:`comparison_table` gives, per metric, the mean paired difference of a
system and a baseline over the same dev articles with a percentile bootstrap
interval (``evenhand.evaluation.metrics.bootstrap.paired_bootstrap``).
"""

from __future__ import annotations

import dataclasses
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..evaluation.data.schema import Document, Example
from ..evaluation.errors import DataError
from ..evaluation.io.atomic import atomic_folder, atomic_write_bytes
from ..evaluation.io.csv_file import write_csv
from ..evaluation.io.json_file import write_json
from ..evaluation.io.jsonl import write_jsonl
from ..evaluation.metrics.paired import format_paired_table as format_table  # noqa: F401  (public name)
from ..evaluation.metrics.paired import paired_table

#: metric -> preferred direction: +1 higher is better, -1 lower is better, 0 descriptive.
#: EC and UER are descriptive on TheFlipSide: the task asks for one perspective, not both alike.
CHECKS: dict[str, int] = {
    "fluency": 1, "words": 0, "mint": 0, "fairsumm_uer": 0, "ec": 0, "ec_target": 1,
}


def truncate_words(example: Example, words: int) -> Example:
    """``example`` with every document cut to its first ``words`` words.

    A TheFlipSide prompt (instruction, then ``Left:``/``Right:`` blocks) is
    rebuilt around the cut articles, and ``meta["document"]`` (the target
    article the scorers read) is cut the same way.
    """
    if not isinstance(words, int) or words < 1:
        raise ValueError(f"`words` must be a positive int, got {words!r}")
    docs = [Document(" ".join(d.text.split()[:words]), d.group) for d in example.documents]
    prompt = example.prompt
    if prompt is not None and "\n\nLeft:" in prompt:
        header = prompt.split("\n\nLeft:")[0]
        prompt = header + "".join(f"\n\n{(d.group or '').capitalize()}:\n{d.text}" for d in docs)
    meta = dict(example.meta)
    if isinstance(meta.get("document"), str):
        meta["document"] = " ".join(meta["document"].split()[:words])
    return dataclasses.replace(example, documents=docs, prompt=prompt, meta=meta)


def check_split(train: Sequence[Example], dev: Sequence[Example], key: str) -> None:
    """Raise DataError if a ``meta[key]`` value (e.g. a topic) is in both splits."""
    shared = {str(ex.meta.get(key)) for ex in train} & {str(ex.meta.get(key)) for ex in dev}
    if shared:
        raise DataError(f"`{key}` values in both train and dev: {sorted(shared)[:5]}; split by `{key}`")


def commit_folder(folder: Path, files: Mapping[str, Any]) -> None:
    """Write ``files`` (name -> rows for .jsonl/.csv, data for .json) into ``folder`` atomically.

    The files go into a temporary sibling renamed into place (``atomic_folder``), so ``folder``
    exists only when complete.
    """
    with atomic_folder(folder) as tmp:
        for name, data in files.items():
            if name.endswith(".jsonl"):
                write_jsonl(tmp / name, data)
            elif name.endswith(".csv"):
                write_csv(tmp / name, data)
            else:
                write_json(tmp / name, data)


def rerank_baseline(config: Any, dev: Sequence[Example], out: Path, progress: bool = True) -> list[dict]:
    """Best-of-``config.candidates`` reranking with the untrained policy on ``dev`` (the RR baseline).

    Candidates come from the run's samplers (``config.recipes``, seed ``config.seed``),
    are scored by the run's scorers, and the best by the per-set composite is kept.
    Writes ``out/dev.jsonl`` (the loop's dev record shape: ``id``, ``summary``,
    ``composite``, ``scores``, plus ``candidates``) and ``out/summary.json``; when
    ``out/summary.json`` exists, the stored records are returned instead.
    """
    import time

    import torch

    from ..decoding.config import GenerateConfig
    from ..decoding.models import load_generator
    from ..evaluation.io.jsonl import read_jsonl
    from ..evaluation.io.progress import Progress
    from ..rerank.reranker import RerankConfig, Reranker, select_best
    from .scoring import registry_scoring

    if (out / "summary.json").is_file():
        return read_jsonl(out / "dev.jsonl")
    start = time.perf_counter()
    scoring = registry_scoring(config.scorer_names, config.weights, config.normalize, config.score_source)
    model, tok = load_generator(config.model, device=config.device or "cpu", dtype=torch.float32)
    reranker = Reranker(
        model, tok, scorer=None,  # type: ignore[arg-type]
        config=RerankConfig(candidates=config.candidates, recipes=config.recipes, seed=config.seed),
        generate_config=GenerateConfig(
            max_new_tokens=config.max_new_tokens, batch_size=config.generate_batch_size, num_beams=1,
        ),
    )
    records = []
    bar = Progress(len(dev), "rerank baseline", "ex", disable=not progress)
    for pos, ex in enumerate(dev):
        bar.begin(1)
        texts = [c["text"] for c in reranker.candidates([ex])[0]]
        raw = scoring.raw([ex] * len(texts), texts)
        pick = select_best(scoring.candidate_composite(raw))
        scores = {name: raw[name][pick] for name in raw}
        records.append({
            "position": pos, "id": ex.id, "summary": texts[pick],
            "composite": scoring.weighted({n: [scores[n]] for n in scoring.names})[0],
            "scores": scores, "best_index": pick, "candidates": texts,
        })
        bar.update(1)
    bar.close()
    summary = {"system": "rerank", "candidates": config.candidates, "dev_examples": len(records),
               "seconds": time.perf_counter() - start}
    commit_folder(out, {"dev.jsonl": records, "summary.json": summary})
    return records


def greedy_dev(config: Any, dev: Sequence[Example], model: str | None, out: Path) -> list[dict]:
    """Greedy dev summaries of ``model`` (a LoRA adapter folder, or None: the base) scored like the loop's.

    The same generation and scoring as ``train_dpo_rr``'s per-iteration dev
    evaluation, run after training (so a run can train without evaluating
    every iteration). Writes ``out/dev.jsonl`` and ``out/summary.json``; when
    ``out/summary.json`` exists, the stored records are returned instead.
    """
    import time

    import torch

    from ..decoding.config import GenerateConfig
    from ..decoding.generate import generate
    from ..decoding.models import load_generator
    from ..evaluation.io.jsonl import read_jsonl
    from .scoring import registry_scoring

    if (out / "summary.json").is_file():
        return read_jsonl(out / "dev.jsonl")
    start = time.perf_counter()
    scoring = registry_scoring(config.scorer_names, config.weights, config.normalize, config.score_source)
    policy, tok = load_generator(model or config.model, device=config.device or "cpu", dtype=torch.float32)
    policy.eval()
    texts = generate(
        policy, tok, list(dev),
        GenerateConfig(max_new_tokens=config.max_new_tokens, batch_size=config.generate_batch_size,
                       num_beams=1, seed=config.seed),
        progress=False,
    )
    raw = scoring.raw(list(dev), texts)
    composite = scoring.weighted(raw)
    records = [{"position": i, "id": ex.id, "summary": text, "composite": composite[i],
                "scores": {name: raw[name][i] for name in raw}} for i, (ex, text) in enumerate(zip(dev, texts))]
    summary = {"model": model or config.model, "dev_examples": len(records), "seconds": time.perf_counter() - start}
    commit_folder(out, {"dev.jsonl": records, "summary.json": summary})
    return records


def evaluate_summaries(
    dev: Sequence[Example], records: Sequence[Mapping[str, Any]], fluency: Any, equal_coverage: Any,
) -> list[dict[str, Any]]:
    """Per dev article, the training composite, its components and the untrained checks.

    Args:
        dev: the dev examples, in the order of ``records``.
        records: one dev record per example (``id``, ``summary``, ``composite``,
            ``scores``: what ``train_dpo_rr`` writes to ``iter_K/dev.jsonl``).
        fluency: a scorer with ``score(sources, outputs)`` (registered ``fluency``).
        equal_coverage: a scorer with ``score_details`` (registered ``equal-coverage``).

    Returns:
        One row per article: ``id``, ``summary`` and the float metrics
        (``composite``, each component, ``fluency``, ``words``, ``mint``,
        ``fairsumm_uer``, ``ec``, ``ec_target``; NaN where EC is undefined).
    """
    from ..evaluation.scoring.report import Scored, evaluate

    if len(dev) != len(records):
        raise DataError(f"{len(records)} dev records for {len(dev)} dev examples; give one record per example")
    for ex, r in zip(dev, records):
        if r["id"] != ex.id:
            raise DataError(f"dev record {r['id']!r} is not aligned with dev example {ex.id!r}; keep the order")
    summaries = [str(r["summary"]) for r in records]
    report = evaluate([Scored(ex.id, ex, s) for ex, s in zip(dev, summaries)], "mint,fairsumm")
    flu = fluency.score(list(dev), summaries)
    ec = equal_coverage.score_details(list(dev), summaries)
    rows = []
    for ex, r, s, rep, f, e in zip(dev, records, summaries, report.rows, flu, ec):
        diffs = e.get("group_diffs") or {}
        rows.append({
            "id": ex.id, "summary": s, "composite": float(r["composite"]),
            **{name: float(v) for name, v in r["scores"].items()},
            "fluency": float(f), "words": float(len(s.split())), "mint": float(rep["mint"]),
            "fairsumm_uer": float(rep["fairsumm_uer"]),
            "ec": math.nan if e.get("ec") is None else float(e["ec"]),
            "ec_target": float(diffs[ex.target]) if ex.target in diffs else math.nan,
        })
    return rows


def comparison_table(
    rows: Mapping[str, Sequence[Mapping[str, Any]]], pairs: Sequence[tuple[str, str]],
    metrics: Sequence[str], n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0,
) -> list[dict[str, Any]]:
    """``evaluation.metrics.paired.paired_table`` with the experiment's metric directions (:data:`CHECKS`)."""
    return paired_table(rows, pairs, metrics, CHECKS, n_resamples, confidence, seed)


def plot_differences(
    table: Sequence[Mapping[str, Any]], systems: Sequence[str], baseline: str, path: str | Path,
    reference: str | None = None, label: str = "trained",
) -> Path:
    """PNG: per metric, ``system - baseline`` with its interval for each of ``systems`` in order.

    ``reference`` (e.g. the RR baseline) is drawn as a dashed line with a shaded interval.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = list(dict.fromkeys(r["metric"] for r in table if r["baseline"] == baseline))
    cells = {(r["system"], r["metric"]): r for r in table if r["baseline"] == baseline}
    for metric in metrics:  # the baseline itself: difference 0, no interval
        cells.setdefault((baseline, metric), {"diff": 0.0, "lower": 0.0, "upper": 0.0})
    cols = min(4, len(metrics))
    nrows = math.ceil(len(metrics) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(3.4 * cols, 2.8 * nrows), squeeze=False)
    for ax, metric in zip(axes.flat, metrics):
        xs = [i for i, s in enumerate(systems) if (s, metric) in cells]
        rs = [cells[(systems[i], metric)] for i in xs]
        ys = [r["diff"] for r in rs]
        err = [[max(r["diff"] - r["lower"], 0.0) for r in rs], [max(r["upper"] - r["diff"], 0.0) for r in rs]]
        ax.errorbar(xs, ys, yerr=err, fmt="o-", capsize=3, label=label)
        if reference is not None and (reference, metric) in cells:
            ref = cells[(reference, metric)]
            ax.axhline(ref["diff"], color="C1", ls="--", lw=1, label=reference)
            ax.axhspan(ref["lower"], ref["upper"], color="C1", alpha=0.15)
        ax.axhline(0, color="grey", ls=":", lw=1)
        ax.set_title(metric, fontsize=9)
        ax.set_xticks(range(len(systems)), systems, fontsize=7, rotation=30)
    for ax in list(axes.flat)[len(metrics):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"difference from {baseline} (paired 95% bootstrap interval over dev articles)", fontsize=10)
    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, dpi=110, format="png")
    plt.close(fig)
    return atomic_write_bytes(path, image.getvalue())

