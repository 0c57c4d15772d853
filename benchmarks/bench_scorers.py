"""Scorer throughput at batch 16 versus batch 1, in the same process (goal: >= 3x).

Judge (``llm-coverage`` on the embedded SmolLM2) and consistency (``alignscore``
on the embedded MiniLM fallback) each score the same 16 summaries of one
~200-word source twice: with ``batch_size=1`` and with ``batch_size=16``, cache
cleared before each run, after one warm-up call. Batching helps the judge by
running the shared rubric+article prefix once per batch (its KV cache is reused
by every summary of the batch) and padding the summaries into one forward; it
helps AlignScore by embedding each context chunk once per batch and running
all (chunk, sentence) pairs as one padded batch.

    python benchmarks/bench_scorers.py            # embedded models (~2 min on 2 cores)
    python benchmarks/bench_scorers.py --tiny     # tiny random judge, seconds
"""

from __future__ import annotations

import argparse
import time

SOURCE = (
    "The city council voted on Tuesday to raise the property tax by two percent. Supporters said "
    "the money would pay for new teachers, longer library hours and repairs to the central bridge, "
    "which engineers rated unsafe last spring. The mayor called the vote a responsible choice that "
    "protects services families rely on. Opponents argued that homeowners already pay too much and "
    "that the council had not cut waste first. A group of retirees said the increase would force "
    "some of them to sell their homes. Business owners were divided: restaurant owners welcomed the "
    "bridge repairs, while landlords warned that rents would rise. The council promised an audit of "
    "spending within a year and said it would revisit the rate if revenue grows faster than expected. "
    "Turnout at the public hearing was the highest in a decade, and the debate lasted five hours."
)
SUMMARIES = [
    "The council raised the property tax by two percent to fund teachers and bridge repairs.",
    "Opponents said homeowners pay too much already; retirees feared losing their homes.",
    "The mayor defended the vote while landlords warned about rents.",
    "The council cut taxes.",
    "A tax rise passed after a five-hour debate; an audit was promised.",
    "Business owners were divided over the increase.",
    "The bridge was rated unsafe, and the new money will repair it.",
    "Critics argued the council should have cut waste first.",
    "Library hours will be longer and new teachers hired.",
    "The highest turnout in a decade came to the hearing.",
    "Supporters and opponents clashed over a two percent tax increase.",
    "Rents may rise, landlords said.",
    "The council will revisit the rate if revenue grows.",
    "Restaurant owners welcomed the bridge repairs.",
    "The vote was unanimous and uncontroversial.",
    "Retirees, landlords and the mayor all reacted to the new tax.",
]


def throughput(scorer, batch_size: int) -> float:
    """Summaries per second at ``batch_size`` (cache cleared, same inputs)."""
    scorer.config.batch_size = batch_size
    scorer.cache_clear()
    start = time.perf_counter()
    scorer.score([SOURCE] * len(SUMMARIES), SUMMARIES)
    return len(SUMMARIES) / (time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description="Scorer throughput, batch 16 vs batch 1.")
    parser.add_argument("--tiny", action="store_true", help="Use a tiny random judge (fast check).")
    args = parser.parse_args()

    import torch
    from evenhand.rerank.registry import get_scorer

    torch.manual_seed(0)
    judge = get_scorer("llm-coverage", progress=False, device="cpu")
    if args.tiny:
        from evenhand.decoding.models import tiny_model

        model, tok = tiny_model("causal", seed=0)
        judge.use_model(model, tok, "tiny-llama")
    align = get_scorer("alignscore", progress=False, device="cpu")
    print(f"{'scorer':<14} {'batch 1 (sum/s)':>16} {'batch 16 (sum/s)':>17} {'ratio':>7}")
    for name, scorer in (("llm-coverage", judge), ("alignscore", align)):
        scorer.score([SOURCE], [SUMMARIES[0]])  # warm-up: load the model
        one = throughput(scorer, 1)
        sixteen = throughput(scorer, 16)
        print(f"{name:<14} {one:>16.2f} {sixteen:>17.2f} {sixteen / one:>6.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
