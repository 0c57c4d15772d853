"""Scorer throughput at batch 16 versus batch 1, in the same process (goal: >= 3x); LM-scorer cost of 12 candidates.

Judge (``llm-coverage`` on the embedded SmolLM2) and consistency (``alignscore``
on the embedded MiniLM fallback) each score the same 16 summaries of one
~200-word source twice: with ``batch_size=1`` and with ``batch_size=16``, cache
cleared before each run, after one warm-up call. Batching helps the judge by
running the shared rubric+article prefix once per batch (its KV cache is reused
by every summary of the batch) and padding the summaries into one forward; it
helps AlignScore by embedding each context chunk once per batch and running
all (chunk, sentence) pairs as one padded batch.

LM scorers (``lm-likelihood``, ``lm-pmi``) on the embedded SmolLM2: the time to
score 12 candidates of one ~500-word source (~60 words each, one batch) against
the baseline "1 candidate of the same source, same process" (goal: <= 2x). The
source prompt runs once per batch and its KV cache serves all 12 candidates, so
the extra cost is the candidates' own tokens; ``lm-pmi`` adds the candidates
scored without the source (one short no-source prefix per batch).

    python benchmarks/bench_scorers.py            # embedded models (~3 min on 2 cores)
    python benchmarks/bench_scorers.py --tiny     # tiny random judge and LM, seconds
    python benchmarks/bench_scorers.py --lm-only  # only the LM-scorer measurement
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


LONG_SOURCE = SOURCE + " " + (
    "At the next meeting the school board presented its own plan for the new money. The board "
    "wants to hire twelve teachers for the elementary schools, where classes have grown to more "
    "than thirty children, and to restore the music program that was cut three years ago. Parents "
    "who spoke at the meeting mostly supported the plan, although some asked why the high school "
    "was left out. The superintendent said the high school would be next if the audit finds "
    "savings. Meanwhile the library director announced that branches will open on Sundays from "
    "the first of March, a change that students and working parents had requested for years. "
    "The bridge repairs are expected to take eighteen months. During that time traffic will be "
    "diverted through the old industrial district, and shop owners there hope for more customers, "
    "while residents fear noise and heavy trucks on narrow streets. The city engineer promised "
    "night work only in emergencies and a weekly update on the project website. Several council "
    "members who voted against the increase said they will propose a cap on future tax rises at "
    "the rate of inflation. The mayor replied that a cap would tie the hands of future councils "
    "when the next emergency comes. A local business association plans to survey its members "
    "about the effect of the tax on rents and will publish the results in the autumn. The "
    "retirees' group asked the council to extend the existing tax relief program to all "
    "homeowners over seventy, and the finance committee agreed to study the cost. Observers "
    "noted that the vote may shape the mayoral election next year, in which both leading "
    "candidates have promised lower taxes and better services at the same time. Outside city hall, "
    "reactions were mixed. A teacher who has worked in the district for twenty years said the new "
    "positions would finally let her give every child attention, while a young couple who bought "
    "their first house last year said they had not planned for a higher bill. The council will "
    "publish a plain-language guide to the increase next month and hold two more public meetings "
    "in the spring, one of them in the evening so that working residents can attend."
)
CANDIDATE_SENTENCES = [
    "The council raised the property tax by two percent to pay for teachers, libraries and the bridge.",
    "Opponents said homeowners already pay too much and that waste should have been cut first.",
    "Retirees feared they would have to sell their homes and asked for wider tax relief.",
    "The school board wants twelve new teachers and the return of the music program.",
    "Libraries will open on Sundays from March, as students and parents had asked.",
    "Bridge repairs will take eighteen months and send traffic through the industrial district.",
    "Shop owners there hope for customers while residents fear noise and trucks.",
    "Some council members will propose capping future tax rises at the rate of inflation.",
    "The mayor said such a cap would tie the hands of future councils in an emergency.",
    "Business owners were divided, and landlords warned that rents would rise.",
    "An audit of spending was promised within a year, and the rate may be revisited.",
    "The vote may shape next year's mayoral election, where both candidates promise lower taxes.",
]
#: 12 candidates of ~60 words: 4 consecutive sentences of the pool, starting at each sentence.
CANDIDATES = [
    " ".join(CANDIDATE_SENTENCES[(i + j) % len(CANDIDATE_SENTENCES)] for j in range(4))
    for i in range(len(CANDIDATE_SENTENCES))
]


def best_seconds(scorer, sources: list, outputs: list[str], repeats: int = 3) -> float:
    """Fastest of ``repeats`` runs scoring ``outputs`` in one batch (cache cleared each time)."""
    scorer.config.batch_size = max(16, len(outputs))
    times = []
    for _ in range(repeats):
        scorer.cache_clear()
        start = time.perf_counter()
        scorer.score(sources, outputs)
        times.append(time.perf_counter() - start)
    return min(times)


def controlled_source() -> tuple[str, list[str]] | None:
    """The first dev-half controlled source (~800 words) and 12 real summaries, or None.

    The data lives in ../shared/data (or ``$EVENHAND_SHARED``); the 12 summaries are
    the first source's own and then the next sources' (about 50 words each).
    """
    import json
    import os
    from pathlib import Path

    root = Path(os.environ.get("EVENHAND_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    path = root / "data" / "perspective_metric_eval" / "controlled_summaries_dev.json"
    if not path.is_file():
        return None
    entries = json.loads(path.read_text(encoding="utf-8"))
    summaries = [s["summary"] for e in entries for s in e["summaries"]][:12]
    return "\n\n".join(entries[0]["source"]), summaries


def lm_candidates_vs_one(tiny: bool) -> None:
    """12 candidates of one source vs 1 candidate of the same source, same process.

    Two sources: a ~500-word synthetic one with ~60-word candidates, and (when the
    shared data is there) a real ~800-word controlled-summaries source with 12 real
    summaries, the reranker's typical case.
    """
    from evenhand.evaluation.scoring.registry import get_scorer

    cases = [("synthetic", LONG_SOURCE, CANDIDATES)]
    real = controlled_source()
    if real is not None:
        cases.append(("controlled", *real))
    else:
        print("(shared data absent: the controlled-summaries case is skipped)")
    shared = None
    for label, source, candidates in cases:
        print(f"\n{label}: source {len(source.split())} words, candidates "
              f"{min(len(c.split()) for c in candidates)}-{max(len(c.split()) for c in candidates)} words; "
              "baseline: 1 candidate of the same source, same process")
        print(f"{'scorer':<14} {'1 candidate (s)':>16} {'12 candidates (s)':>18} {'ratio':>7}  (goal <= 2x)")
        for name in ("lm-likelihood", "lm-pmi"):
            scorer = get_scorer(name, progress=False, device="cpu")
            if tiny:
                from evenhand.decoding.models import tiny_model

                shared = shared or tiny_model("causal", seed=0)
                scorer.use_model(*shared, "tiny-llama")
            elif shared is not None:
                scorer.use_model(*shared, scorer.config.model)
            scorer.score([source], [candidates[0]])  # warm-up: load the model
            shared = (scorer._model, scorer._tokenizer)
            one = best_seconds(scorer, [source], candidates[:1])
            twelve = best_seconds(scorer, [source] * len(candidates), candidates)
            print(f"{name:<14} {one:>16.2f} {twelve:>18.2f} {twelve / one:>6.2f}x")


def throughput(scorer, batch_size: int) -> float:
    """Summaries per second at ``batch_size`` (cache cleared, same inputs)."""
    scorer.config.batch_size = batch_size
    scorer.cache_clear()
    start = time.perf_counter()
    scorer.score([SOURCE] * len(SUMMARIES), SUMMARIES)
    return len(SUMMARIES) / (time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description="Scorer throughput, batch 16 vs batch 1.")
    parser.add_argument("--tiny", action="store_true", help="Use a tiny random judge and LM (fast check).")
    parser.add_argument("--lm-only", action="store_true", help="Only the LM-scorer measurement.")
    args = parser.parse_args()

    import torch

    from evenhand.evaluation.scoring.registry import get_scorer

    torch.set_num_threads(1)
    torch.manual_seed(0)
    if args.lm_only:
        lm_candidates_vs_one(args.tiny)
        return 0
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
    print()
    lm_candidates_vs_one(args.tiny)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
