"""How often each faithfulness scorer prefers a faithful summary over a contradicted one, per kind.

``benchmarks/data/contradictions.jsonl`` holds 48 hand-written pairs (12 small
source sets — 9 review sets with star ratings, 3 debates with speakers —
written for this benchmark, unrelated to the checker's training corpus and to
the demo sets; none produced by the checker's corruption code). Each row is
one source, a faithful summary of it, and the same summary with one hand-made
edit that contradicts the source, of one of six kinds (8 each): ``polarity``
(praise <-> complaint), ``majority`` (one reviewer -> most), ``aspect`` (an
invented aspect), ``number`` (a wrong number), ``negation``, ``group`` (one
group's opinion given to another group).

A scorer wins a pair when it scores the faithful summary higher (a tie counts
0.5). Prints a table of wins per kind and in all, one column per scorer, and
with ``--out`` writes the per-pair scores as JSONL.

    .venv/bin/python benchmarks/contradictions.py                # all scorers (~several min on 2 cores)
    .venv/bin/python benchmarks/contradictions.py --scorers checker,rouge-l-precision --limit 6
    .venv/bin/python benchmarks/contradictions.py --data benchmarks/data/checker_dev.jsonl   # the dev set

``benchmarks/data/checker_dev.jsonl`` has the same form: 48 pairs over 8 other
hand-written source sets, the set the checker was tuned on; the 48 pairs above
are held out and were only run to report. ``benchmarks/data/contradictions_v2.jsonl``
is a second held-out set of the same form (48 pairs, 12 more source sets: reviews,
debates and tweets), written after the first had been seen and run once to report.

    .venv/bin/python benchmarks/contradictions.py --data benchmarks/data/contradictions_v2.jsonl

``benchmarks/data/contradictions_v3.jsonl`` is a third held-out set of the same form (48 pairs, 12 more source
sets: 6 review sets, 3 debates with speakers or stances, 3 tweet sets by party or stance), written by hand after
the second had been run once to report, and not run by its author; it was run once, after the checker's
quantity rules (checker ``score_version`` 3), which were written on the dev pairs and the first two sets.

    .venv/bin/python benchmarks/contradictions.py --data benchmarks/data/contradictions_v3.jsonl

``benchmarks/data/contradictions_v4.jsonl`` is a fourth held-out set of the same form (48 pairs, 12 more source
sets, each giving 4 pairs of 4 kinds: 6 review sets, 3 debates with speakers or stances, 3 post sets by sentiment,
party or stance), written by hand after the third had been run once to report, and not run by its author; run once, with the
same scorer as the third.

    .venv/bin/python benchmarks/contradictions.py --data benchmarks/data/contradictions_v4.jsonl

``benchmarks/data/contradictions_v5.jsonl`` is a fifth held-out set of the same form (48 pairs, 12 more source
sets, each giving 4 pairs of 4 kinds: 6 review sets, 3 debates with speakers or a stance, 3 post sets by sentiment,
party or stance), written by hand after the fourth had been written, and not run by its author; run once, with
the same scorer as the third and fourth.

    .venv/bin/python benchmarks/contradictions.py --data benchmarks/data/contradictions_v5.jsonl

``benchmarks/data/contradictions_v6.jsonl`` to ``contradictions_v29.jsonl`` are twenty-four more held-out sets of
the same form (48 pairs each, 12 more source sets each giving 4 pairs of 4 kinds: 6 review sets, 3 debates with
speakers or a stance, 3 post sets by sentiment, party or stance), written by hand two at a time by two hands
beside each other and apart (from v8 on, one with source ids a-l, the other m-z), each two after the two before
them had been run, and not run by their authors. Their constants below (``HELD_OUT_6`` ... ``HELD_OUT_29``) say
which set each was written after and beside; ``HELD_OUT_SETS`` lists them in the order written. Each is run as

    .venv/bin/python benchmarks/contradictions.py --data benchmarks/data/contradictions_vN.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("data") / "contradictions.jsonl"
#: The pairs the checker was tuned on (same form, other sources).
DEV = Path(__file__).with_name("data") / "checker_dev.jsonl"
#: A second held-out set, written after the first had been seen.
HELD_OUT_2 = Path(__file__).with_name("data") / "contradictions_v2.jsonl"
#: A third held-out set, written after the second had been seen.
HELD_OUT_3 = Path(__file__).with_name("data") / "contradictions_v3.jsonl"
#: A fourth held-out set, written after the third had been run.
HELD_OUT_4 = Path(__file__).with_name("data") / "contradictions_v4.jsonl"
#: A fifth held-out set, written after the fourth.
HELD_OUT_5 = Path(__file__).with_name("data") / "contradictions_v5.jsonl"
#: A sixth held-out set, written after the fifth.
HELD_OUT_6 = Path(__file__).with_name("data") / "contradictions_v6.jsonl"
#: A seventh held-out set, written after the fifth (beside the sixth, by another hand).
HELD_OUT_7 = Path(__file__).with_name("data") / "contradictions_v7.jsonl"
#: An eighth held-out set, written after the seventh (beside a ninth, by another hand).
HELD_OUT_8 = Path(__file__).with_name("data") / "contradictions_v8.jsonl"
#: A ninth held-out set, written after the seventh (beside the eighth, by another hand).
HELD_OUT_9 = Path(__file__).with_name("data") / "contradictions_v9.jsonl"
#: A tenth held-out set, written after the ninth (beside an eleventh, by another hand).
HELD_OUT_10 = Path(__file__).with_name("data") / "contradictions_v10.jsonl"
#: An eleventh held-out set, written after the ninth (beside a tenth, by another hand).
HELD_OUT_11 = Path(__file__).with_name("data") / "contradictions_v11.jsonl"
#: A twelfth held-out set, written after the eleventh (beside a thirteenth, by another hand).
HELD_OUT_12 = Path(__file__).with_name("data") / "contradictions_v12.jsonl"
#: A thirteenth held-out set, written after the eleventh (beside a twelfth, by another hand).
HELD_OUT_13 = Path(__file__).with_name("data") / "contradictions_v13.jsonl"
#: A fourteenth held-out set, written after the thirteenth (beside a fifteenth, by another hand).
HELD_OUT_14 = Path(__file__).with_name("data") / "contradictions_v14.jsonl"
#: A fifteenth held-out set, written after the thirteenth (beside a fourteenth, by another hand).
HELD_OUT_15 = Path(__file__).with_name("data") / "contradictions_v15.jsonl"
#: A sixteenth held-out set, written after the fifteenth (beside a seventeenth, by another hand).
HELD_OUT_16 = Path(__file__).with_name("data") / "contradictions_v16.jsonl"
#: A seventeenth held-out set, written after the fifteenth (beside a sixteenth, by another hand).
HELD_OUT_17 = Path(__file__).with_name("data") / "contradictions_v17.jsonl"
#: An eighteenth held-out set, written after the seventeenth (beside a nineteenth, by another hand).
HELD_OUT_18 = Path(__file__).with_name("data") / "contradictions_v18.jsonl"
#: A nineteenth held-out set, written after the seventeenth (beside an eighteenth, by another hand).
HELD_OUT_19 = Path(__file__).with_name("data") / "contradictions_v19.jsonl"
#: A twentieth held-out set, written after the nineteenth (beside a twenty-first, by another hand).
HELD_OUT_20 = Path(__file__).with_name("data") / "contradictions_v20.jsonl"
#: A twenty-first held-out set, written after the nineteenth (beside a twentieth, by another hand).
HELD_OUT_21 = Path(__file__).with_name("data") / "contradictions_v21.jsonl"
#: A twenty-second held-out set, written after the twenty-first, once sentiment agreement had been chosen
#: (beside a twenty-third, by another hand).
HELD_OUT_22 = Path(__file__).with_name("data") / "contradictions_v22.jsonl"
#: A twenty-third held-out set, written after the twenty-first (beside a twenty-second, by another hand).
HELD_OUT_23 = Path(__file__).with_name("data") / "contradictions_v23.jsonl"
#: A twenty-fourth held-out set, written after the twenty-third had been run (beside a twenty-fifth).
HELD_OUT_24 = Path(__file__).with_name("data") / "contradictions_v24.jsonl"
#: A twenty-fifth held-out set, written after the twenty-third had been run (beside a twenty-fourth).
HELD_OUT_25 = Path(__file__).with_name("data") / "contradictions_v25.jsonl"
#: A twenty-sixth held-out set, written after the twenty-fifth had been run (beside a twenty-seventh).
HELD_OUT_26 = Path(__file__).with_name("data") / "contradictions_v26.jsonl"
#: A twenty-seventh held-out set, written after the twenty-fifth had been run (beside a twenty-sixth).
HELD_OUT_27 = Path(__file__).with_name("data") / "contradictions_v27.jsonl"
#: A twenty-eighth held-out set, written after the twenty-seventh had been run (beside a twenty-ninth).
HELD_OUT_28 = Path(__file__).with_name("data") / "contradictions_v28.jsonl"
#: A twenty-ninth held-out set, written after the twenty-seventh had been run (beside a twenty-eighth).
HELD_OUT_29 = Path(__file__).with_name("data") / "contradictions_v29.jsonl"
#: The held-out sets in the order they were written (each written without seeing the later ones).
HELD_OUT_SETS = (HELD_OUT_2, HELD_OUT_3, HELD_OUT_4, HELD_OUT_5, HELD_OUT_6, HELD_OUT_7, HELD_OUT_8, HELD_OUT_9,
                 HELD_OUT_10, HELD_OUT_11, HELD_OUT_12, HELD_OUT_13, HELD_OUT_14,
                 HELD_OUT_15, HELD_OUT_16, HELD_OUT_17, HELD_OUT_18, HELD_OUT_19, HELD_OUT_20, HELD_OUT_21,
                 HELD_OUT_22, HELD_OUT_23, HELD_OUT_24, HELD_OUT_25, HELD_OUT_26, HELD_OUT_27, HELD_OUT_28,
                 HELD_OUT_29)
KINDS = ("polarity", "majority", "aspect", "number", "negation", "group")
SCORERS = ("checker", "calibrated:faithfulness", "lm-likelihood", "lm-pmi", "rouge-l-precision", "alignscore",
           "calibrated:coverage")


def read_pairs(path: str | Path = DATA) -> list[dict[str, Any]]:
    """The benchmark's rows (``id``, ``kind``, ``source``, ``faithful``, ``contradicted``, ``edit``)."""
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        if row["kind"] not in KINDS or row["faithful"] == row["contradicted"]:
            raise ValueError(f"{path}: row {row['id']}: unknown kind or no edit")
    return rows


def win(faithful: float, contradicted: float) -> float:
    """1 when the faithful summary scores higher, 0.5 on a tie, else 0.

    >>> win(0.7, 0.2), win(0.5, 0.5), win(0.1, 0.3)
    (1.0, 0.5, 0.0)
    """
    return 1.0 if faithful > contradicted else 0.5 if faithful == contradicted else 0.0


def score_pairs(
    name: str, rows: Sequence[dict[str, Any]], cache_dir: str | Path | None = None, **config: Any
) -> list[tuple[float, float]]:
    """(faithful score, contradicted score) of every row by scorer ``name`` (scores cached in ``cache_dir``)."""
    from evenhand.evaluation.data.loaders import example_from_dict
    from evenhand.evaluation.scoring.registry import get_scorer

    scorer = get_scorer(name, cache_dir=cache_dir, progress=False, **config)
    examples = [example_from_dict(row["source"], str(DATA), i) for i, row in enumerate(rows, 1)]
    scores = scorer.score(examples + examples, [r["faithful"] for r in rows] + [r["contradicted"] for r in rows])
    return list(zip(scores[: len(rows)], scores[len(rows):]))


def win_table(rows: Sequence[dict[str, Any]], scores: dict[str, list[tuple[float, float]]]) -> dict[str, dict]:
    """Per scorer, per kind (and ``all``): wins (ties 0.5) and the number of pairs."""
    table: dict[str, dict] = {}
    for name, pairs in scores.items():
        per: dict[str, list[float]] = {}
        for row, (good, bad) in zip(rows, pairs):
            per.setdefault(row["kind"], []).append(win(good, bad))
        table[name] = {kind: (sum(v), len(v)) for kind, v in per.items()}
        table[name]["all"] = (sum(w for v in per.values() for w in v), sum(len(v) for v in per.values()))
    return table


def format_table(table: dict[str, dict]) -> str:
    """The table as text: one row per kind, one column per scorer."""
    names = list(table)
    kinds = [k for k in (*KINDS, "all") if any(k in table[n] for n in names)]
    width = max(12, *(len(n) for n in names))
    lines = ["kind".ljust(10) + "".join(n.rjust(width + 2) for n in names)]
    for kind in kinds:
        cells = []
        for name in names:
            won, count = table[name].get(kind, (0.0, 0))
            cells.append(f"{won:g}/{count}".rjust(width + 2))
        lines.append(kind.ljust(10) + "".join(cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Win rates of faithfulness scorers on hand-written contradictions.")
    parser.add_argument("--scorers", default=",".join(SCORERS), help="Comma-separated scorer names.")
    parser.add_argument("--data", default=str(DATA), help="The pairs (JSONL).")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N pairs.")
    parser.add_argument("--checker", default="", help="A checker folder for the `checker` scorer (default: built).")
    parser.add_argument("--out", default=None, help="Also write the per-pair scores here (JSONL).")
    parser.add_argument("--score-cache", default="", help="Score cache folder (default: evenhand's; 'none': off).")
    args = parser.parse_args(argv)
    if args.score_cache == "none":
        cache: str | Path | None = None
    elif args.score_cache:
        cache = args.score_cache
    else:
        from evenhand.decoding.models import cache_dir

        cache = cache_dir() / "scores"
    rows = read_pairs(args.data)[: args.limit]
    scores: dict[str, list[tuple[float, float]]] = {}
    for name in [n.strip() for n in args.scorers.split(",") if n.strip()]:
        start = time.monotonic()
        config = {"folder": args.checker} if name == "checker" and args.checker else {}
        scores[name] = score_pairs(name, rows, cache, **config)
        print(f"{name}: {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
    print(format_table(win_table(rows, scores)))
    if args.out:
        from evenhand.evaluation.io.atomic import atomic_write_bytes

        lines = [json.dumps({"id": row["id"], "kind": row["kind"],
                             **{n: list(s[i]) for n, s in scores.items()}}) for i, row in enumerate(rows)]
        atomic_write_bytes(args.out, "".join(line + "\n" for line in lines).encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
