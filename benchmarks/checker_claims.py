"""Does the checker rank a true claim above a false one? Hand-written premise/claim checks.

Every case below was written by hand for this check (not taken from the checker's
training corpus, not produced by its corruption code): a short review, a claim
it supports, and claims it contradicts by negation, polarity, a wrong number or
an invented aspect. Prints, per kind, how often p(true) > p(false) (ties 0.5)
and the mean probabilities.

    .venv/bin/python benchmarks/checker_claims.py [--folder CHECKER_DIR]
"""

from __future__ import annotations

import argparse
import sys
import time

#: (premise, true claim, {kind: false claim})
CASES: list[tuple[str, str, dict[str, str]]] = [
    ("The blender crushes ice in seconds, but the jug cracked after a month.",
     "The blender crushes ice quickly.",
     {"negation": "The blender does not crush ice.", "polarity": "The blender crushes ice badly.",
      "number": "The jug cracked after six months.", "aspect": "The blender's timer is easy to set."}),
    ("Our guide spoke three languages and knew every street of the old town.",
     "The guide spoke three languages.",
     {"negation": "The guide did not know the old town.", "polarity": "The guide was clueless about the old town.",
      "number": "The guide spoke five languages.", "aspect": "The bus was comfortable."}),
    ("The hotel breakfast was cold and the coffee tasted burnt.",
     "The coffee tasted burnt.",
     {"negation": "The breakfast was not cold.", "polarity": "The breakfast was warm and delicious.",
      "number": "The hotel served two breakfasts.", "aspect": "The pool was too small."}),
    ("I have worn these boots for two winters and my feet stay dry in deep snow.",
     "The boots keep feet dry in snow.",
     {"negation": "The boots do not keep feet dry.", "polarity": "The boots leak in snow.",
      "number": "The reviewer wore the boots for six winters.", "aspect": "The laces snapped."}),
    ("The printer jams on every third page and the ink runs out fast.",
     "The printer jams often.",
     {"negation": "The printer never jams.", "polarity": "The printer runs smoothly.",
      "number": "The printer jams on every tenth page.", "aspect": "The scanner lid is flimsy."}),
    ("The novel's ending moved me to tears; the middle chapters drag a little.",
     "The ending of the novel is moving.",
     {"negation": "The ending did not move the reader.", "polarity": "The ending is dull.",
      "number": "The novel has two endings.", "aspect": "The cover art is ugly."}),
    ("Delivery took nine days and the box arrived crushed.",
     "Delivery took nine days.",
     {"negation": "The box did not arrive crushed.", "polarity": "The box arrived in perfect shape.",
      "number": "Delivery took two days.", "aspect": "The invoice was wrong."}),
    ("The tent went up in ten minutes and stayed dry through a night of heavy rain.",
     "The tent stayed dry in the rain.",
     {"negation": "The tent did not stay dry.", "polarity": "The tent leaked in the rain.",
      "number": "The tent took an hour to put up.", "aspect": "The zipper broke."}),
    ("The dentist was gentle and explained each step before she started.",
     "The dentist was gentle.",
     {"negation": "The dentist did not explain the steps.", "polarity": "The dentist was rough.",
      "number": "There were three dentists.", "aspect": "The waiting room was noisy."}),
    ("The phone's camera is sharp in daylight, but the battery barely lasts a day.",
     "The camera is sharp in daylight.",
     {"negation": "The camera is not sharp.", "polarity": "The battery lasts a long time.",
      "number": "The battery lasts three days.", "aspect": "The speaker is tinny."}),
    ("The council promised 200 new homes but has not approved a single permit.",
     "The council promised new homes.",
     {"negation": "The council has approved the permits.", "polarity": "The council kept its promise.",
      "number": "The council promised 50 new homes.", "aspect": "The council cut bus routes."}),
    ("The soup was salty, though the bread was fresh and warm.",
     "The bread was fresh.",
     {"negation": "The bread was not fresh.", "polarity": "The bread was stale.",
      "number": "They served four kinds of soup.", "aspect": "The dessert was too sweet."}),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Hand-written premise/claim checks of the checker.")
    parser.add_argument("--folder", help="a built checker folder (default: build or reuse the default one)")
    args = parser.parse_args(argv)
    from evenhand.rerank.checker.model import load_checker

    model = load_checker(args.folder, device="cpu")
    wins: dict[str, float] = {}
    gaps: dict[str, list[tuple[float, float]]] = {}
    start = time.monotonic()
    for premise, true, false in CASES:
        p_true = model.probs([premise], [true])[0]
        for kind, claim in false.items():
            p_false = model.probs([premise], [claim])[0]
            wins[kind] = wins.get(kind, 0.0) + (1.0 if p_true > p_false else 0.5 if p_true == p_false else 0.0)
            gaps.setdefault(kind, []).append((p_true, p_false))
    print(f"{'kind':<10} {'wins':>7} {'p(true)':>8} {'p(false)':>9}")
    for kind, won in wins.items():
        pairs = gaps[kind]
        print(f"{kind:<10} {won:>4g}/{len(pairs):<2} {sum(t for t, _ in pairs) / len(pairs):>8.3f} "
              f"{sum(f for _, f in pairs) / len(pairs):>9.3f}")
    total = sum(wins.values())
    count = sum(len(v) for v in gaps.values())
    print(f"{'all':<10} {total:>4g}/{count:<2} ({time.monotonic() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
