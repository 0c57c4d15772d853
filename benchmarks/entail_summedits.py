"""SummEdits balanced accuracy of an entailment model folder on the ``evaluation`` split only.

Reads ``../shared/data/summedits/summedits_*.json`` (rows with ``doc``,
``summary``, ``label`` 1/0 and ``split``) with the one loader of labelled rows,
``evaluation.metrics.binary_meta_eval.load_labelled``, keeps the rows whose split is
``evaluation`` and no other, scores them, and prints per domain the balanced
accuracy at the threshold that maximizes it on those same rows (an optimistic
figure, for choosing settings) and the ROC AUC (``evaluate_protocol`` on the
evaluation split alone). The ``test`` split is read only with ``--split test``, to
report it once for a setting chosen on ``evaluation``: each domain's threshold is
chosen on its evaluation rows and balanced accuracy and ROC AUC are reported on its
test rows (``evenhand meta-eval``'s protocol, for a model folder or scorer options
that command cannot name).

    .venv/bin/python -m benchmarks.entail_summedits --entail rerank/entail/weights        # the model alone
    .venv/bin/python -m benchmarks.entail_summedits --entail DIR --k 3 --select words --int8
    .venv/bin/python -m benchmarks.entail_summedits --scorer checker                      # a registered scorer
    .venv/bin/python -m benchmarks.entail_summedits --scorer checker --set 'folder="DIR"' --split test   # once

``--out FILE`` writes the per-row scores as JSONL.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from evenhand.evaluation.errors import DataError
from evenhand.evaluation.metrics.binary_meta_eval import (
    SPLITS,
    LabelledSet,
    evaluate_protocol,
    first_rows,
    load_labelled,
)

#: The split scored by default: the one the threshold is chosen on.
SPLIT = SPLITS[0]


def summedits_files(folder: str | Path) -> list[Path]:
    """The ``summedits_*.json`` files of ``folder``, sorted; none there is a DataError naming the folder."""
    paths = sorted(Path(folder).glob("summedits_*.json"))
    if not paths:
        raise DataError(f"{folder}: no summedits_*.json files there; pass the SummEdits folder")
    return paths


def score_rows(scorer: Any, rows: LabelledSet) -> list[float]:
    """A registered scorer's score of each (document, summary) row, one single-document source per row."""
    from evenhand.evaluation.data.schema import Document, Example

    examples = [Example(i, [Document(doc, None)]) for i, doc in zip(rows.ids, rows.documents)]
    return scorer.score(examples, rows.summaries)


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
    parser.add_argument("--split", choices=SPLITS, default=SPLIT,
                        help="evaluation (default; choose settings there) or test (report once: threshold from "
                        "evaluation)")
    args = parser.parse_args(argv)
    try:
        data = load_labelled(summedits_files(args.data))
    except DataError as err:
        parser.error(str(err))
    test = args.split != SPLIT
    data = data.select(data.rows_of_split(SPLIT) + (data.rows_of_split(args.split) if test else []))
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

        from evenhand.evaluation.scoring.registry import get_scorer, scorer_class

        config = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)}
        name = args.scorer or "checker"
        if "device" in {f.name for f in dataclasses.fields(scorer_class(name).Config)}:
            config.setdefault("device", "cpu")  # model-backed scorers: on the CPU; the others have no device
        scorer = get_scorer(name, progress=False, **config)
        label = f"{args.scorer or 'checker'} {config}"

        def score(rows: LabelledSet) -> list[float]:
            return score_rows(scorer, rows)
    print(f"SummEdits `{args.split}` split{' (threshold from evaluation)' if test else ''}, {label}")
    print(f"{'domain':<12} {'rows':>5} {'bacc':>6} {'auc':>6} {'thr':>7} {'s/row':>6}")
    records, baccs, aucs = [], [], []
    for domain in data.domain_names():
        rows = data.select(data.rows(domain))
        start = time.monotonic()
        scores = score(rows)
        seconds = (time.monotonic() - start) / max(1, len(rows))
        split = [rows.splits[i] for i in range(len(scores))]
        part = {name: ([s for s, x in zip(scores, split) if x == name], [y for y, x in zip(rows.labels, split)
                                                                          if x == name]) for name in set(split)}
        result = evaluate_protocol(*part[SPLIT], *(part[args.split] if test else (None, None)))
        bacc = result.test_balanced_accuracy if test else result.evaluation_balanced_accuracy
        auc = result.test_roc_auc if test else result.evaluation_roc_auc
        assert bacc is not None and auc is not None
        baccs.append(bacc)
        aucs.append(auc)
        print(f"{domain:<12} {len(part[args.split][0]):>5} {100 * bacc:>6.1f} {100 * auc:>6.1f} {result.threshold:>7.3f} "
              f"{seconds:>6.2f}", flush=True)
        records += [{"domain": domain, "id": i, "split": x, "label": y, "score": s}
                    for i, x, y, s in zip(rows.ids, split, rows.labels, scores)]
    print(f"{'mean':<12} {'':>5} {100 * sum(baccs) / len(baccs):>6.1f} {100 * sum(aucs) / len(aucs):>6.1f}")
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
