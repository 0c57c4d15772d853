"""MINT throughput on the shared data sets, bit-parallel LCS vs the plain DP baseline.

    python -m benchmarks.bench_mint [--budget SECONDS]     (from the repository root)

For each set: spaCy tokenization time, then MINT pairs per second on the
tokens with the bit-parallel LCS (``evenhand.evaluation.lcs.lcs_length_ids``) and with
the O(n·m) dynamic program swapped in, on the same pairs (the DP run stops
after ``--budget`` seconds and is compared on the pairs it finished). Also the
share of MINT time spent in the LCS. Reads ../shared/data; skips absent sets.
"""

from __future__ import annotations

import argparse
import importlib
import json
import time
from pathlib import Path

import numpy as np
from evenhand.evaluation.lcs import lcs_length_dp, lcs_length_ids, token_ids
from evenhand.evaluation.text import spacy_tokens_batch

# the module, not the function `evenhand.evaluation.mint` that the package re-exports
mint_module = importlib.import_module("evenhand.evaluation.mint")
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def fairsumm_pairs(name: str) -> list[tuple[str, str]]:
    data = json.loads((SHARED / "perspectivesumm" / name).read_text())
    return [
        ("\n".join(u["text"] for u in s["units"]), ref) for s in data for ref in s["gold_summary"]
    ]


def controlled_pairs() -> list[tuple[str, str]]:
    data = json.loads(
        (SHARED / "perspective_metric_eval" / "controlled_summaries_dev.json").read_text()
    )
    return [("\n".join(s["source"]), x["summary"]) for s in data for x in s["summaries"]]


SETS = {
    "amazon_gold (refs)": lambda: fairsumm_pairs("amazon_gold.json"),
    "yelp_gold (refs)": lambda: fairsumm_pairs("yelp_gold.json"),
    "perspective_metric_eval dev": controlled_pairs,
}


def dp_ids(x: np.ndarray, y: np.ndarray) -> int:
    return lcs_length_dp(x.tolist(), y.tolist())


def timed_mint(pairs, lcs, budget: float) -> tuple[int, float]:
    mint_module.lcs_length_ids = lcs
    start = time.perf_counter()
    done = 0
    try:
        for source, summary in pairs:
            mint_module.mint_tokens(source, summary)
            done += 1
            if time.perf_counter() - start > budget:
                break
    finally:
        mint_module.lcs_length_ids = lcs_length_ids
    return done, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=5.0, help="seconds per DP baseline run")
    args = parser.parse_args()
    print(
        f"{'set':<28} {'pairs':>5} {'src tok':>7} {'sum tok':>7} {'tokenize/s':>10} "
        f"{'MINT/s':>8} {'MINT+DP/s':>9} {'speed-up':>8} {'LCS share':>9} {'DP LCS share':>12} "
        f"{'LCS speed-up':>12}"
    )
    spacy_tokens_batch(["warm up the tokenizer."])
    for name, load in SETS.items():
        try:
            pairs = load()
        except FileNotFoundError:
            print(f"{name:<28} skipped: not found under {SHARED}")
            continue
        start = time.perf_counter()
        sources = spacy_tokens_batch([p[0] for p in pairs])
        summaries = spacy_tokens_batch([p[1] for p in pairs])
        tokenize = time.perf_counter() - start
        tokens = list(zip(sources, summaries))
        n_fast, t_fast = timed_mint(tokens, lcs_length_ids, budget=1e9)
        n_dp, t_dp = timed_mint(tokens, dp_ids, budget=args.budget)
        ids = [token_ids(s, y) for s, y in tokens[:n_dp]]
        start = time.perf_counter()
        for x, y in ids:
            lcs_length_ids(x, y)
        t_lcs = time.perf_counter() - start
        start = time.perf_counter()
        for x, y in ids:
            dp_ids(x, y)
        t_lcs_dp = time.perf_counter() - start
        fast_rate, dp_rate = n_fast / t_fast, n_dp / t_dp
        fast_on_subset = t_fast * n_dp / n_fast
        print(
            f"{name:<28} {len(pairs):>5} {np.mean([len(s) for s in sources]):>7.0f} "
            f"{np.mean([len(y) for y in summaries]):>7.0f} {len(pairs) / tokenize:>10.0f} "
            f"{fast_rate:>8.0f} {dp_rate:>9.1f} {fast_rate / dp_rate:>7.0f}x "
            f"{t_lcs / fast_on_subset:>9.0%} {t_lcs_dp / t_dp:>12.0%} {t_lcs_dp / t_lcs:>11.0f}x"
        )
    print(
        "MINT/s and MINT+DP/s exclude tokenization (pre-tokenized pairs); the DP run covers the "
        f"pairs it finished within {args.budget:g}s. LCS share = LCS time / MINT time."
    )


if __name__ == "__main__":
    main()
