"""SummEdits balanced accuracy of an entailment model folder on the ``evaluation`` split only.

Reads ``../shared/data/summedits/summedits_*.json`` (rows with ``doc``,
``summary``, ``label`` 1/0 and ``split``) with the one loader of labelled rows,
``evaluation.metrics.binary_meta_eval.load_labelled``, keeps the rows whose split is
``evaluation`` and no other, scores them, and prints per domain the balanced
accuracy at the threshold that maximizes it on those same rows (an optimistic
figure, for choosing settings) and the ROC AUC (``evaluate_protocol`` on the
evaluation split alone). The ``test`` split is never read into a score here: it is
reported once, with ``evenhand meta-eval`` (the same loader, threshold choice and metrics).

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

from evenhand.evaluation.errors import DataError
from evenhand.evaluation.metrics.binary_meta_eval import (
    SPLITS,
    LabelledSet,
    evaluate_protocol,
    first_rows,
    load_labelled,
)

#: The split scored here: the one the threshold is chosen on (test is left to ``evenhand meta-eval``).
SPLIT = SPLITS[0]


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
    paths = sorted(Path(args.data).glob("summedits_*.json"))
    if not paths:
        parser.error(f"--data {args.data}: no summedits_*.json files there; pass the SummEdits folder")
    try:
        data = load_labelled(paths)
    except DataError as err:
        parser.error(str(err))
    data = data.select(data.rows_of_split(SPLIT))
    if args.limit:
        data = first_rows(data, args.limit)
    import torch

    torch.set_num_threads(1)
    if args.entail:
        from evenhand.rerank.entail.inferencer import Inferencer
        from evenhand.rerank.entail.model import load_model

        model = load_model(args.entail, int8=args.int8)
        inf = Inferencer(model, k=args.k, chunk_words=args.chunk_words, select=args.select)
        label = f"{model.name} k={args.k} chunk_words={args.chunk_words} select={args.select}"

        def score(rows: LabelledSet) -> list[float]:
            return [r["score"] for r in inf.score([[doc] for doc in rows.documents], rows.summaries)]
    else:
        import dataclasses

        from evenhand.evaluation.data.schema import Document, Example
        from evenhand.evaluation.scoring.registry import get_scorer, scorer_class

        config = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)}
        name = args.scorer or "checker"
        if "device" in {f.name for f in dataclasses.fields(scorer_class(name).Config)}:
            config.setdefault("device", "cpu")  # model-backed scorers: on the CPU; the others have no device
        scorer = get_scorer(name, progress=False, **config)
        label = f"{args.scorer or 'checker'} {config}"

        def score(rows: LabelledSet) -> list[float]:
            examples = [Example(i, [Document(doc, None)]) for i, doc in zip(rows.ids, rows.documents)]
            return scorer.score(examples, rows.summaries)
    print(f"SummEdits `{SPLIT}` split, {label}")
    print(f"{'domain':<12} {'rows':>5} {'bacc':>6} {'auc':>6} {'thr':>7} {'s/row':>6}")
    records, baccs = [], []
    for domain in data.domain_names():
        rows = data.select(data.rows(domain))
        start = time.monotonic()
        scores = score(rows)
        seconds = (time.monotonic() - start) / max(1, len(rows))
        result = evaluate_protocol(scores, rows.labels)
        baccs.append(result.evaluation_balanced_accuracy)
        print(f"{domain:<12} {len(rows):>5} {100 * result.evaluation_balanced_accuracy:>6.1f} "
              f"{100 * result.evaluation_roc_auc:>6.1f} {result.threshold:>7.3f} {seconds:>6.2f}", flush=True)
        records += [{"domain": domain, "id": i, "label": y, "score": s} for i, y, s in zip(rows.ids, rows.labels, scores)]
    print(f"{'mean':<12} {'':>5} {100 * sum(baccs) / len(baccs):>6.1f}")
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
