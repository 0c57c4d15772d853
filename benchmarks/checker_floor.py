"""The margin of a reranking floor, measured on the controlled summaries' dev half (issue 33).

A floor ``NAME=m`` excludes a candidate whose score is below the plain
summary's by more than ``m``. Whether that exclusion is right can be checked
where the ground truth is known: for every pair of summaries of the same
source in ``controlled_summaries_dev.json``, the floor would exclude the
lower-scored one when the scores differ by more than ``m``; the exclusion is
right when its ground-truth faithfulness is lower too, wrong when it is at
least as faithful. Per margin this prints how many pairs would be excluded
and the share excluded rightly; the shipped margin is the smallest one in the
grid whose exclusions are right at least ``--precision`` of the time (dev
half only; the held-out half and the contradiction set are never used here).

    .venv/bin/python benchmarks/checker_floor.py                      # scores with `checker` (minutes)
    .venv/bin/python benchmarks/checker_floor.py --scores META.jsonl  # reuse `evenhand meta-eval --out` scores
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "perspective_metric_eval" / (
    "controlled_summaries_dev.json")
MARGINS = (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4)


def floor_exclusions(
    scores: Sequence[float], truth: Sequence[float], source_index: Sequence[int], margin: float,
) -> tuple[int, int]:
    """(exclusions, right ones) over same-source pairs: the lower-scored summary of a pair is
    excluded when it scores below the other by more than ``margin``; right when its truth is lower."""
    excluded = right = 0
    for i in range(len(scores)):
        for j in range(len(scores)):
            if source_index[i] != source_index[j] or i == j:
                continue
            if scores[i] < scores[j] - margin:  # i would be excluded against j as the plain summary
                excluded += 1
                right += truth[i] < truth[j]
    return excluded, right


def pick_margin(rows: Sequence[tuple[float, int, int]], precision: float) -> float | None:
    """The smallest margin whose exclusions are right at least ``precision`` of the time (None: none)."""
    for margin, excluded, right in sorted(rows):
        if excluded and right / excluded >= precision:
            return margin
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The margin of a reranking floor, measured on the dev half.")
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--scorer", default="checker")
    parser.add_argument("--scores", default=None, help="An `evenhand meta-eval --out` file holding the scorer.")
    parser.add_argument("--precision", type=float, default=0.8)
    parser.add_argument("--save", default=None, help="Write the scores here (JSON list, data order).")
    parser.add_argument("--max-length", type=int, default=512,
                        help="Tokens per (window, claim) pair: the dev half's claims run past the scorer's 128.")
    args = parser.parse_args(argv)
    if not Path(args.data).is_file():
        print(f"skipped: {args.data} is absent (shared data)")
        return 0
    from evenhand.evaluation.metrics.meta_eval import load_controlled

    data = load_controlled(args.data)
    if args.scores:
        rows = [json.loads(line) for line in Path(args.scores).read_text(encoding="utf-8").splitlines()]
        scores = next(r["scores"] for r in rows if r.get("scorer") == args.scorer)
    else:
        from evenhand.evaluation.scoring.registry import get_scorer

        sources = [data.sources[i] for i in data.source_index]
        options = {"max_length": args.max_length} if args.scorer == "checker" else {}
        scores = get_scorer(args.scorer, **options).score(sources, data.summaries)
    if args.save:
        Path(args.save).write_text(json.dumps(scores), encoding="utf-8")
    truth = data.truth["faithfulness"]
    from evenhand.evaluation.metrics.meta_eval import meta_evaluate

    for target in ("faithfulness", "coverage"):
        result = meta_evaluate(scores, data.truth[target], data.source_index, 200, 0)
        print(f"{args.scorer} vs {target}: Spearman {result['spearman'].value:.3f}, "
              f"winrate {result['winrate'].value:.3f}")
    table = []
    print(f"{args.scorer} floor on {len(scores)} controlled summaries (dev half), same-source pairs")
    print(f"{'margin':>7} {'excluded':>9} {'right':>7} {'share right':>12}")
    for margin in MARGINS:
        excluded, right = floor_exclusions(scores, truth, data.source_index, margin)
        table.append((margin, excluded, right))
        share = f"{right / excluded:.3f}" if excluded else "n/a"
        print(f"{margin:>7.2f} {excluded:>9d} {right:>7d} {share:>12}")
    chosen = pick_margin(table, args.precision)
    print(f"smallest margin with >= {args.precision:.0%} of exclusions right: "
          + ("none" if chosen is None else f"{chosen:g}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
