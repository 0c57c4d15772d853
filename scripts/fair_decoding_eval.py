"""Fair decoding vs. plain beam search and the prompting baselines on FairSumm's gold sets.

For each data set (amazon, yelp: the first ``--n`` examples with at least two
groups) and each setting, writes the summaries to ``OUT/<data>_<setting>.jsonl``
as they come (rows already there are reused on a rerun), then scores them:

* FairSumm BUR and UER (τ = 0.8, cutoff 1, reference "ratio") with the N-gram
  target and with an embedding target (softmax over groups of the MiniLM cosine
  between the group's documents and the summary, T = 0.1, the paper's value);
* Equal Coverage with p(d, s) = max(0, cos(MiniLM(d), MiniLM(s))) per document d
  and summary sentence s (the fallback backend's formula);
* MINT against the source, ROUGE-L F1 (stemmed, best of the references, ×100);
* wall time per summary, and its ratio to plain beam search on the same data.

Corpus metrics go to ``OUT/metrics.json`` and ``OUT/metrics.csv`` (one row per
data set and setting), rewritten after each setting.

Usage: python scripts/fair_decoding_eval.py --n 20 --datasets amazon --out runs/fair_amazon
(docs/fair_decoding.md has the measured tables and the commands behind them).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path
from typing import Any

SETTINGS: dict[str, dict[str, Any]] = {
    "plain": {},
    "prompt-labels": {"fair_prompt": "labels"},
    "prompt-definition": {"fair_prompt": "definition"},
    "alpha3": {"fairness": "ratio", "fairness_strength": 3.0},
    "beta1": {"fairness": "ratio", "fair_beam": 1.0},
    "beta3": {"fairness": "ratio", "fair_beam": 3.0},
    "alpha3-beta1": {"fairness": "ratio", "fairness_strength": 3.0, "fair_beam": 1.0},
}
DATA = {"amazon": "amazon_gold.json", "yelp": "yelp_gold.json"}
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def eligible(examples: list[Any], n: int, skip: int = 0) -> list[Any]:
    """``n`` examples with documents of at least two groups, after the first ``skip`` such."""
    out = [ex for ex in examples if len({d.group for d in ex.documents}) >= 2]
    return out[skip : skip + n]


def run_setting(model: Any, tok: Any, examples: list[Any], overrides: dict[str, Any], path: Path,
                batch_size: int, max_new_tokens: int, prefix: str | None) -> tuple[list[str], float]:
    """Summaries and mean seconds per summary; rows already in ``path`` (same ids) are reused."""
    from evenhand.decoding.generate import GenerateConfig, generate

    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    done = {r["id"] for r in rows}
    todo = [ex for ex in examples if ex.id not in done]
    clock = [time.perf_counter()]

    def write(batch: list[Any], texts: list[str]) -> None:
        now = time.perf_counter()
        per = (now - clock[0]) / len(batch)
        clock[0] = now
        with path.open("a") as f:
            for ex, s in zip(batch, texts):
                f.write(json.dumps({"id": ex.id, "summary": s, "seconds": per}) + "\n")

    if todo:
        config = GenerateConfig(
            batch_size=batch_size, max_new_tokens=max_new_tokens, num_beams=4,
            response_prefix=prefix, **overrides,
        )
        generate(model, tok, todo, config, progress=False, on_batch=write)
    by_id = {r["id"]: r for r in map(json.loads, path.read_text().splitlines())}
    chosen = [by_id[ex.id] for ex in examples]
    return [r["summary"] for r in chosen], sum(r["seconds"] for r in chosen) / len(chosen)


class MiniLM:
    """Unit-norm mean-pooled all-MiniLM-L6-v2 embeddings (the alignment fallback's), cached per text."""

    def __init__(self) -> None:
        from evenhand.rerank.alignment import load_backend

        self.backend = load_backend("fallback", device="cpu")
        self.cache: dict[str, Any] = {}

    def __call__(self, texts: list[str]) -> Any:
        import torch

        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            self.cache.update(zip(todo, self.backend.embed(todo, batch_size=32)))
        return torch.stack([self.cache[t] for t in texts])


def score(examples: list[Any], summaries: list[str], embed: MiniLM) -> dict[str, float]:
    """Corpus metrics of one setting (module docstring)."""
    import numpy as np
    from evenhand.evaluation.coverage import equal_coverage
    from evenhand.evaluation.fairsumm import (
        corpus_fairness,
        ngram_target_counts,
        sample_fairness,
        similarity_target,
        source_counts,
    )
    from evenhand.evaluation.mint import mint
    from rouge_score import rouge_scorer

    rouge = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    ngram, emb, ecs, mints, rls = [], [], [], [], []
    for ex, summary in zip(examples, summaries):
        texts = ex.group_texts()
        src = source_counts(texts)
        ngram.append(sample_fairness(src, ngram_target_counts(texts, summary)))
        groups = [g for g, t in texts.items() if t]
        vecs = embed([texts[g] for g in groups] + [summary])
        sims = {g: float(vecs[i] @ vecs[-1]) for i, g in enumerate(groups)}
        emb.append(sample_fairness(src, similarity_target(texts, summary, sims, temperature=0.1)))
        sentences = [s for s in _SENTENCE.split(summary.strip()) if s.strip()]
        if sentences:
            d = embed(ex.texts)
            s = embed(sentences)
            p = (s @ d.T).clamp(0, 1).numpy()
            if p.sum() > 0:
                ecs.append(equal_coverage(p, [str(doc.group) for doc in ex.documents]).ec)
        mints.append(mint(ex.source_text(" "), summary).mint)
        rls.append(max(rouge.score(r, summary)["rougeL"].fmeasure for r in ex.references))
    ng, em = corpus_fairness(ngram), corpus_fairness(emb)
    return {
        "bur_ngram": ng.bur, "uer_ngram": ng.uer, "bur_emb": em.bur, "uer_emb": em.uer,
        "ec": float(np.mean(ecs)) if ecs else float("nan"), "mint": float(np.mean(mints)),
        "rougeL": 100 * float(np.mean(rls)),
        "words": float(np.mean([len(s.split()) for s in summaries])),
    }


def write_csv(path: Path, results: dict[str, dict[str, Any]]) -> None:
    """One row per data/setting, written atomically."""
    from evenhand.evaluation.jsonl import write_csv as write_rows

    rows = []
    for key, row in results.items():
        data, setting = key.split("/", 1)
        rows.append({"data": data, "setting": setting, **row})
    write_rows(path, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "perspectivesumm"))
    parser.add_argument("--n", type=int, default=10, help="Examples per data set.")
    parser.add_argument("--skip", type=int, default=0, help="Skip the first eligible examples.")
    parser.add_argument(
        "--response-prefix", default="The reviewers",
        help="Start of every summary ('' for none): without it SmolLM2 opens with "
        "'Here is a rewritten version...' under beam search.",
    )
    parser.add_argument("--out", default="/tmp/fair_meas")
    parser.add_argument("--datasets", default="amazon,yelp")
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=80)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads.")
    args = parser.parse_args()

    import torch
    from evenhand.decoding.models import load_generator
    from evenhand.evaluation.lists import split_list
    from evenhand.evaluation.loaders import load_examples

    # one thread: on a shared, oversubscribed CPU two OpenMP threads spin-wait (6x the CPU time)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model, tok = load_generator(device="cpu")
    embed = MiniLM()
    results: dict[str, dict[str, Any]] = {}
    for name in split_list(args.datasets, "--datasets"):
        examples = eligible(load_examples(Path(args.data_dir) / DATA[name]), args.n, args.skip)
        for setting in split_list(args.settings, "--settings"):
            summaries, seconds = run_setting(
                model, tok, examples, SETTINGS[setting], out / f"{name}_{setting}.jsonl",
                args.batch_size, args.max_new_tokens, args.response_prefix,
            )
            row = {"n": len(examples), "seconds": seconds, **score(examples, summaries, embed)}
            row["time_ratio"] = seconds / results[f"{name}/plain"]["seconds"] if f"{name}/plain" in results else 1.0
            results[f"{name}/{setting}"] = row
            (out / "metrics.json").write_text(json.dumps(results, indent=1))
            write_csv(out / "metrics.csv", results)
            print(f"{name}/{setting}: " + " ".join(f"{k}={v:.3f}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
