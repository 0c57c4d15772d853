"""Fair decoding vs. plain beam search and the prompting baselines on FairSumm's gold sets.

For each data set (amazon, yelp: the first ``--n`` examples with at least two
groups) and each setting, writes the summaries to ``OUT/<data>_<setting>.jsonl``
as they come (rows already there are reused on a rerun), then scores them:

* the registered metrics (no private copies): FairSumm BUR and UER (``fairsumm``:
  N-gram target; ``fairsumm-bertscore``: BERTScore-precision target on the embedded
  MiniLM, at the code's T = 2 and the paper's T = 0.1); Equal Coverage
  (``equal-coverage`` with the MiniLM fallback backend: blocks x summary sentences);
* MINT against the source, ROUGE-L F1 (stemmed, best of the references, ×100);
* wall and CPU time per summary, and their ratios to plain beam search on the same data
  (CPU time is the fair ratio when other jobs share the machine).

Corpus metrics go to ``OUT/metrics.json`` and ``OUT/metrics.csv`` (one row per
data set and setting), rewritten after each setting; a rerun with other settings
adds its rows to those already there.

Usage: python scripts/fair_decoding_eval.py --n 20 --datasets amazon --out runs/fair_amazon
       .venv-vllm/bin/python scripts/fair_decoding_eval.py --engine vllm --batch-size 40 --n 40 --settings plain,beta1 --out runs/fair_vllm
(docs/fair_decoding.md has the measured table and the commands behind it).
"""

from __future__ import annotations

import argparse
import json
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
    "meaning3": {"fairness": "ratio", "fair_meaning": 3.0},
    "meaning5": {"fairness": "ratio", "fair_meaning": 5.0},
    "meaning10": {"fairness": "ratio", "fair_meaning": 10.0},
    "alpha3-beta1-meaning3": {"fairness": "ratio", "fairness_strength": 3.0, "fair_beam": 1.0, "fair_meaning": 3.0},
    "alpha3-beta1-meaning10": {"fairness": "ratio", "fairness_strength": 3.0, "fair_beam": 1.0, "fair_meaning": 10.0},
}
DATA = {"amazon": "amazon_gold.json", "yelp": "yelp_gold.json"}


def eligible(examples: list[Any], n: int, skip: int = 0) -> list[Any]:
    """``n`` examples with documents of at least two groups, after the first ``skip`` such."""
    out = [ex for ex in examples if len({d.group for d in ex.documents}) >= 2]
    return out[skip : skip + n]


def run_setting(model: Any, tok: Any, examples: list[Any], overrides: dict[str, Any], path: Path,
                batch_size: int, max_new_tokens: int, prefix: str | None) -> tuple[list[str], float, float]:
    """Summaries and mean wall and CPU seconds per summary; rows already in ``path`` (same ids)
    are reused. CPU seconds (this process, one thread) are the fair time ratio on a shared
    machine: wall time moves with whatever else runs."""
    from evenhand.decoding.config import GenerateConfig
    from evenhand.decoding.generate import generate

    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    done = {r["id"] for r in rows}
    todo = [ex for ex in examples if ex.id not in done]
    clock = [time.perf_counter(), time.process_time()]

    def write(batch: list[Any], texts: list[str]) -> None:
        now = [time.perf_counter(), time.process_time()]
        per, cpu = ((b - a) / len(batch) for a, b in zip(clock, now))
        clock[:] = now
        with path.open("a") as f:
            for ex, s in zip(batch, texts):
                f.write(json.dumps({"id": ex.id, "summary": s, "seconds": per, "cpu_seconds": cpu}) + "\n")

    if todo:
        config = GenerateConfig(
            batch_size=batch_size, max_new_tokens=max_new_tokens, num_beams=4,
            response_prefix=prefix, **overrides,
        )
        generate(model, tok, todo, config, progress=False, on_batch=write)
    by_id = {r["id"]: r for r in map(json.loads, path.read_text().splitlines())}
    chosen = [by_id[ex.id] for ex in examples]
    cpu = [r.get("cpu_seconds", float("nan")) for r in chosen]
    return [r["summary"] for r in chosen], sum(r["seconds"] for r in chosen) / len(chosen), sum(cpu) / len(cpu)


#: Per-example columns: name -> (registered metric, its options, the record field).
COLUMNS: dict[str, tuple[str, dict[str, Any], str]] = {
    "uer_ngram": ("fairsumm", {}, "fairsumm_uer"),
    "unfair_ngram": ("fairsumm", {}, "fairsumm_unfair"),
    "uer_bert": ("fairsumm-bertscore", {}, "fairsumm_bertscore_uer"),
    "unfair_bert": ("fairsumm-bertscore", {}, "fairsumm_bertscore_unfair"),
    "uer_bert_t01": ("fairsumm-bertscore", {"temperature": 0.1}, "fairsumm_bertscore_uer"),
    "unfair_bert_t01": ("fairsumm-bertscore", {"temperature": 0.1}, "fairsumm_bertscore_unfair"),
    "ec": ("equal-coverage", {"model": "fallback"}, "ec"),
}


class Metrics:
    """The registered metrics behind :data:`COLUMNS` (built once; MiniLM loaded once)."""

    def __init__(self, device: str = "cpu") -> None:
        from evenhand.evaluation.scoring.registry import get_scorer

        self.scorers: dict[str, Any] = {}
        for name, options, _ in COLUMNS.values():
            key = f"{name}|{sorted(options.items())}"
            if key not in self.scorers:
                extra = {} if name == "fairsumm" else {"device": device}
                self.scorers[key] = get_scorer(name, progress=False, **options, **extra)

    def rows(self, examples: list[Any], summaries: list[str]) -> list[dict[str, float]]:
        """Per example: the COLUMNS (EC NaN when undefined), MINT and ROUGE-L (best gold, x100)."""
        from evenhand.evaluation.metrics.mint import mint
        from evenhand.rerank.scorers.rouge import rouge_score_scorer

        details = {key: scorer.score_details(examples, summaries) for key, scorer in self.scorers.items()}
        rouge = rouge_score_scorer("rougeL", True)
        out = []
        for i, (ex, summary) in enumerate(zip(examples, summaries)):
            row: dict[str, float] = {}
            for column, (name, options, field) in COLUMNS.items():
                value = details[f"{name}|{sorted(options.items())}"][i].get(field)
                row[column] = float("nan") if value is None else float(value)
            row["mint"] = mint(ex.source_text(" "), summary).mint
            row["rougeL"] = 100 * max(rouge.score(r, summary)["rougeL"].fmeasure for r in ex.references)
            row["words"] = float(len(summary.split()))
            out.append(row)
        return out


def score(examples: list[Any], summaries: list[str], metrics: Metrics) -> dict[str, float]:
    """Corpus metrics of one setting: means of the per-example rows (UER = FairSumm's corpus UER,
    mean of `unfair` = BUR), EC over the summaries where it is defined."""
    import numpy as np

    rows = metrics.rows(examples, summaries)
    out = {k: float(np.nanmean([r[k] for r in rows])) for k in rows[0]}
    for kind in ("ngram", "bert", "bert_t01"):
        out[f"bur_{kind}"] = out.pop(f"unfair_{kind}")
    return out


def write_csv(path: Path, results: dict[str, dict[str, Any]]) -> None:
    """One row per data/setting, written atomically."""
    from evenhand.evaluation.io.csv_file import write_csv as write_rows

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
    parser.add_argument(
        "--engine", default="transformers", choices=("transformers", "vllm"),
        help="vllm: decode through an in-process vLLM engine (beam search as the step loop of "
        "decoding/engines/beam_loop.py; run with .venv-vllm/bin/python); use a large --batch-size there.",
    )
    args = parser.parse_args()

    import torch

    from evenhand.decoding.models import load_generator
    from evenhand.evaluation.data.lists import split_list
    from evenhand.evaluation.data.loaders import load_examples

    # one thread: on a shared, oversubscribed CPU two OpenMP threads spin-wait (6x the CPU time)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.engine != "transformers":  # another engine: generate() decodes through it
        from evenhand.decoding.engines.base import open_engine

        model, tok = open_engine("smollm2-135m-instruct", args.engine), None
    else:
        model, tok = load_generator(device="cpu")
    metrics = Metrics()
    # a rerun with other settings adds its rows to those already in OUT/metrics.json
    previous = out / "metrics.json"
    results: dict[str, dict[str, Any]] = json.loads(previous.read_text()) if previous.exists() else {}
    for name in split_list(args.datasets, "--datasets"):
        examples = eligible(load_examples(Path(args.data_dir) / DATA[name]), args.n, args.skip)
        for setting in split_list(args.settings, "--settings"):
            summaries, seconds, cpu_seconds = run_setting(
                model, tok, examples, SETTINGS[setting], out / f"{name}_{setting}.jsonl",
                args.batch_size, args.max_new_tokens, args.response_prefix,
            )
            row = {"n": len(examples), "seconds": seconds, "cpu_seconds": cpu_seconds,
                   **score(examples, summaries, metrics)}
            plain = results.get(f"{name}/plain")
            row["time_ratio"] = seconds / plain["seconds"] if plain else 1.0
            row["cpu_ratio"] = cpu_seconds / plain["cpu_seconds"] if plain else 1.0
            results[f"{name}/{setting}"] = row
            (out / "metrics.json").write_text(json.dumps(results, indent=1))
            write_csv(out / "metrics.csv", results)
            print(f"{name}/{setting}: " + " ".join(f"{k}={v:.3f}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
