"""Cost per summary of the shipped ``calibrated:faithfulness`` against the one before issue 33 (goal <= 1.5x).

Before issue 33 the shipped calibration had two features, ``lm-pmi`` and
``rouge-1-precision``; now it adds ``checker`` with a fixed weight and
``sentiment-agreement``. A calibrated score costs what its components cost (the
prediction is a dot product), so the baseline is the shipped calibration without
those two features, run in the same process on the same inputs: the faithful summaries
of the first ``--limit`` DEV contradiction pairs (short review sets and
debates, the demo's domain). Models load (and the checker is built if it
is not cached) in a warm-up on another summary before the clock starts; the
score cache is off and each scorer's in-memory cache is cleared before every
timed run (the LM scorers' shared passes too); baseline and new alternate ``--repeats`` times and the best time
of each is kept.

    .venv/bin/python benchmarks/faithfulness_cost.py             # 16 summaries, ~2 min on 2 cores
    .venv/bin/python benchmarks/faithfulness_cost.py --limit 48
    .venv/bin/python benchmarks/faithfulness_cost.py --lm-check   # with the checker's LM test (off by default)
    .venv/bin/python benchmarks/faithfulness_cost.py --controlled ../shared/data/perspective_metric_eval/controlled_summaries_dev.json

``--controlled FILE`` times the first ``--limit`` summaries of a controlled-summaries file instead
(~600-word news articles, summaries framed as "The article argues that A, B, and C", which the
checker reads point by point: its most expensive input).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is a folder of the checkout

from benchmarks.contradictions import DEV, read_pairs  # noqa: E402


def without(calibration: dict[str, Any], name: str) -> dict[str, Any]:
    """The calibration dict without feature ``name`` (same other weights: the cost does not depend on them).

    >>> cal = {"scorers": ["a", "b"], "weights": {"a": 1, "b": 2}, "transforms": {"a": {}, "b": {}},
    ...        "scorer_options": {"a": {}, "b": {}}}
    >>> without(cal, "b")["scorers"], without(cal, "b")["weights"]
    (['a'], {'a': 1})
    """
    out = json.loads(json.dumps(calibration))
    out["scorers"] = [s for s in out["scorers"] if s != name]
    for key in ("weights", "transforms", "scorer_options"):
        out.get(key, {}).pop(name, None)
    return out


def timed(scorer: Any, sources: list[Any], outputs: list[str]) -> float:
    """Seconds to score ``outputs`` with every component's in-memory cache cleared first (the LM
    scorers' shared passes too: the baseline's and the shipped lm-pmi share them, as in a real run)."""
    for component in scorer.components.values():
        component.cache_clear()
        passes = getattr(component, "passes", None)
        if passes is not None:
            passes.conditional.clear()
            passes.unconditional.clear()
    start = time.perf_counter()
    scorer.score(sources, outputs)
    return time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Cost of calibrated:faithfulness vs its pre-issue-33 features.")
    parser.add_argument("--limit", type=int, default=16, help="Summaries timed (DEV pairs' faithful ones).")
    parser.add_argument("--repeats", type=int, default=2, help="Alternating timed runs of each; best kept.")
    parser.add_argument("--feature", default="checker,sentiment-agreement",
                        help="The features the baseline drops, comma-separated.")
    parser.add_argument("--controlled", default=None, help="Time a controlled-summaries JSON's summaries instead.")
    parser.add_argument("--lm-check", action="store_true",
                        help="Time the shipped calibration with the checker's LM test on (`lm_check`, off by default).")
    args = parser.parse_args(argv)
    from evenhand.evaluation.data.loaders import example_from_dict
    from evenhand.evaluation.data.schema import Document, Example
    from evenhand.evaluation.scoring.registry import get_scorer
    from evenhand.rerank.scorers.calibrated import calibration_path

    if args.controlled:
        from evenhand.evaluation.metrics.meta_eval import load_controlled

        data = load_controlled(args.controlled)
        examples = [Example(id=f"src{data.source_index[i]}", documents=[Document(t) for t in
                                                                         data.sources[data.source_index[i]]])
                    for i in range(len(data))]
        rows = [{"faithful": s, "contradicted": s} for s in data.summaries]
    else:
        rows = read_pairs(DEV)
        examples = [example_from_dict(row["source"], str(DEV), i) for i, row in enumerate(rows, 1)]
    sources, outputs = examples[: args.limit], [row["faithful"] for row in rows[: args.limit]]
    shipped = json.loads(calibration_path("faithfulness").read_text(encoding="utf-8"))
    dropped = [f for f in args.feature.split(",") if f]
    missing = [f for f in dropped if f not in shipped["scorers"]]
    if missing or not dropped:
        print(f"the shipped calibration has no feature {missing or args.feature!r}: nothing to compare")
        return 2
    baseline = shipped
    for feature in dropped:
        baseline = without(baseline, feature)
    with tempfile.TemporaryDirectory() as tmp:
        base_path = Path(tmp) / "baseline.json"
        base_path.write_text(json.dumps(baseline), encoding="utf-8")
        new_path = Path(tmp) / "shipped.json"
        if args.lm_check:
            shipped["scorer_options"]["checker"] = {**shipped["scorer_options"].get("checker", {}), "lm_check": True}
        new_path.write_text(json.dumps(shipped), encoding="utf-8")
        scorers = {"baseline": get_scorer(f"calibrated:{base_path}", progress=False),
                   "shipped": get_scorer(f"calibrated:{new_path}", progress=False)}
        for scorer in scorers.values():  # load the models (and build the checker) off the clock
            scorer.score([examples[-1]], [rows[-1]["contradicted"]])
        best = {name: float("inf") for name in scorers}
        for _ in range(args.repeats):
            for name, scorer in scorers.items():
                best[name] = min(best[name], timed(scorer, sources, outputs))
    n = len(outputs)
    print(f"calibrated:faithfulness on {n} summaries (best of {args.repeats}, same process):")
    print(f"  before issue 33 ({', '.join(baseline['scorers'])}): "
          f"{best['baseline'] / n:.3f} s/summary")
    lm = ", checker lm_check on" if args.lm_check else ""
    print(f"  shipped ({', '.join(shipped['scorers'])}{lm}): {best['shipped'] / n:.3f} s/summary")
    print(f"  ratio {best['shipped'] / best['baseline']:.2f}x (goal <= 1.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
