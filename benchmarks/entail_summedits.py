"""SummEdits balanced accuracy of an entailment model folder on the ``evaluation`` split only.

Reads ``../shared/data/summedits/summedits_*.json`` (rows with ``doc``,
``summary``, ``label`` 1/0 and ``split``), keeps the rows whose split is
``evaluation`` and no other, scores them, and prints per domain the balanced
accuracy at the threshold that maximizes it on those same rows (an optimistic
figure, for choosing settings) and the ROC AUC. The ``test`` split is never
read into a score here: it is reported once, with ``evenhand meta-eval`` (whose threshold
choice and metrics, ``evaluation.metrics.binary_meta_eval``, this script uses).

    .venv/bin/python -m benchmarks.entail_summedits --entail rerank/entail/weights        # the model alone
    .venv/bin/python -m benchmarks.entail_summedits --entail DIR --k 3 --select words --int8
    .venv/bin/python -m benchmarks.entail_summedits --scorer checker                      # a registered scorer

``--out FILE`` writes the per-row scores as JSONL.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from evenhand.evaluation.metrics.binary_meta_eval import (
    balanced_accuracy,
    choose_threshold,
    roc_auc,
)

SPLIT = "evaluation"


def read_rows(folder: Path) -> dict[str, list[dict]]:
    """Per domain, its ``evaluation`` rows."""
    out = {}
    for path in sorted(folder.glob("summedits_*.json")):
        rows = json.loads(path.read_text(encoding="utf-8"))
        out[path.stem.removeprefix("summedits_")] = [r for r in rows if r["split"] == SPLIT]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", default="../shared/data/summedits")
    parser.add_argument("--entail", default=None, help="An entailment model folder: score with the inferencer.")
    parser.add_argument("--scorer", default=None, help="A registered scorer name instead.")
    parser.add_argument("--set", action="append", default=[], help="Scorer config KEY=VALUE (JSON value).")
    parser.add_argument("--k", type=int, default=2)
    parser.add_argument("--chunk-words", type=int, default=70)
    parser.add_argument("--select", default="embedding")
    parser.add_argument("--int8", action="store_true")
    parser.add_argument("--limit", type=int, default=0, help="Rows per domain (0: all).")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    domains = read_rows(Path(args.data))
    if args.entail:
        from evenhand.rerank.entail.inferencer import Inferencer
        from evenhand.rerank.entail.model import load_model

        model = load_model(args.entail, int8=args.int8)
        inf = Inferencer(model, k=args.k, chunk_words=args.chunk_words, select=args.select)
        label = f"{model.name} k={args.k} chunk_words={args.chunk_words} select={args.select}"

        def score(rows: list[dict]) -> list[float]:
            return [r["score"] for r in inf.score([[r["doc"]] for r in rows], [r["summary"] for r in rows])]
    else:
        from evenhand.evaluation.data.schema import Document, Example
        from evenhand.evaluation.scoring.registry import get_scorer

        config = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)}
        scorer = get_scorer(args.scorer or "checker", device="cpu", progress=False, **config)
        label = f"{args.scorer or 'checker'} {config}"

        def score(rows: list[dict]) -> list[float]:
            examples = [Example(r["id"], [Document(r["doc"], None)]) for r in rows]
            return scorer.score(examples, [r["summary"] for r in rows])
    print(f"SummEdits `{SPLIT}` split, {label}")
    print(f"{'domain':<12} {'rows':>5} {'bacc':>6} {'auc':>6} {'thr':>7} {'s/row':>6}")
    records, baccs = [], []
    for domain, rows in domains.items():
        rows = rows[: args.limit] if args.limit else rows
        start = time.monotonic()
        scores = score(rows)
        seconds = (time.monotonic() - start) / max(1, len(rows))
        labels = [int(r["label"]) for r in rows]
        thr = choose_threshold(scores, labels)
        bacc = balanced_accuracy(scores, labels, thr)
        baccs.append(bacc)
        print(f"{domain:<12} {len(rows):>5} {100 * bacc:>6.1f} {100 * roc_auc(scores, labels):>6.1f} "
              f"{thr:>7.3f} {seconds:>6.2f}", flush=True)
        records += [{"domain": domain, "id": r["id"], "label": y, "score": s} for r, y, s in zip(rows, labels, scores)]
    print(f"{'mean':<12} {'':>5} {100 * sum(baccs) / len(baccs):>6.1f}")
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
