"""Paired comparison of fair-decoding settings against plain beam search, per example.

Reads the summaries ``scripts/fair_decoding_eval.py`` wrote (``OUT/<data>_<setting>.jsonl``),
scores every example alone with the same metrics, and prints for each setting the
mean difference to ``--baseline`` with a 95% paired bootstrap interval
(``evaluation.metrics.paired``: examples resampled, 2000 draws, seed 0) and the share of examples where the setting is
better. Writes the per-example scores to ``OUT/paired_<data>.jsonl``.

    python scripts/fair_decoding_paired.py --out /tmp/fair_meas --data amazon --settings beta1,alpha3-beta1
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

METRICS = ("uer_ngram", "uer_bert", "uer_bert_t01", "ec", "rougeL")  # lower is better but ROUGE-L


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--out", required=True, help="The OUT folder of fair_decoding_eval.py.")
    parser.add_argument("--data", default="amazon")
    parser.add_argument("--baseline", default="plain")
    parser.add_argument("--settings", default="beta1,alpha3-beta1")
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "perspectivesumm"))
    args = parser.parse_args()

    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from fair_decoding_eval import DATA, Metrics

    from evenhand.evaluation.data.lists import split_list
    from evenhand.evaluation.data.loaders import load_examples
    from evenhand.evaluation.metrics.paired import paired_table

    out = Path(args.out)
    by_id = {ex.id: ex for ex in load_examples(Path(args.data_dir) / DATA[args.data])}
    settings = [args.baseline, *split_list(args.settings, "--settings")]
    rows = {s: {r["id"]: r["summary"] for r in map(json.loads, (out / f"{args.data}_{s}.jsonl").open())}
            for s in settings}
    ids = [i for i in rows[args.baseline] if all(i in rows[s] for s in settings)]
    metrics = Metrics()
    per = {}
    for s in settings:  # the registered metrics, per example
        scored = metrics.rows([by_id[i] for i in ids], [rows[s][i] for i in ids])
        per[s] = {m: np.array([r[m] for r in scored]) for m in METRICS}
    with (out / f"paired_{args.data}.jsonl").open("w") as f:
        for k, i in enumerate(ids):
            f.write(json.dumps({"id": i, **{f"{s}/{m}": float(per[s][m][k]) for s in settings for m in METRICS}}) + "\n")
    table = paired_table(
        {s: [{"id": i, **{m: float(per[s][m][k]) for m in METRICS}} for k, i in enumerate(ids)] for s in settings},
        [(s, args.baseline) for s in settings[1:]], METRICS, {m: 1 if m == "rougeL" else -1 for m in METRICS},
    )
    print(f"{args.data}: {len(ids)} examples, differences setting - {args.baseline}")
    for r in table:
        d = per[r["system"]][r["metric"]] - per[args.baseline][r["metric"]]
        d = d[~np.isnan(d)]
        better = np.mean(d > 0) if r["metric"] == "rougeL" else np.mean(d < 0)
        print(f"  {r['system']:<14} {r['metric']:<10} {r['diff']:+.4f} [{r['lower']:+.4f}, {r['upper']:+.4f}]  "
              f"better on {better:.0%}")

if __name__ == "__main__":
    main()
