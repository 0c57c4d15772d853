"""SummEdits' four shared domains under today's cheap faithfulness scorers, by the published protocol.

One command reproduces the table: per domain (news, sales_email, qmsumm,
ectsum from ``../shared/data/summedits``), each scorer's threshold is chosen on
the ``evaluation`` split and balanced accuracy reported on ``test``, with ROC
AUC beside it and the published DAE / SummaC-Conv / QAFactEval / GPT-4 /
human rows (``evenhand.evaluation.metrics.binary_meta_eval``). It is
``evenhand meta-eval`` on the four files; results are resumable, so an
interrupted run picks up at the next (scorer, domain).

    .venv/bin/python -m benchmarks.summedits                       # checker, rouge-l-precision, alignscore
    .venv/bin/python -m benchmarks.summedits --split evaluation    # choose settings without touching test
    .venv/bin/python -m benchmarks.summedits --scorers checker --out /tmp/checker.jsonl

The default scorers are the ones cheap enough for 2,531 summaries on 2 CPU
cores: ``checker`` (the shipped build), ``rouge-l-precision``
and ``alignscore`` with its offline fallback (the embedded MiniLM). SmolLM2-based
scorers take seconds per summary; run them with ``--limit``. Run it with ``-m``
from the repository root, so it imports this checkout's evenhand.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "summedits"
DOMAINS = ("news", "sales_email", "qmsumm", "ectsum")
SCORERS = "checker,rouge-l-precision,alignscore"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="SummEdits balanced accuracy of evenhand's scorers (published protocol).")
    parser.add_argument("--scorers", default=SCORERS, help=f"Comma-separated registered scorers (default: {SCORERS}).")
    parser.add_argument("--data-dir", type=Path, default=DATA, help=f"Folder of summedits_<domain>.json (default: {DATA}).")
    parser.add_argument("--out", default="results/summedits.jsonl", help="Results JSONL (resumable; table in <out>.csv).")
    parser.add_argument("--split", choices=("test", "evaluation"), default="test",
                        help="test: threshold from evaluation, reported on test; evaluation: evaluation rows only.")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N rows of each domain and split.")
    args, rest = parser.parse_known_args(argv)  # the rest goes to meta-eval (--align-model, --no-resume...)
    files = [args.data_dir / f"summedits_{d}.json" for d in DOMAINS]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        print(f"SummEdits files not found: {', '.join(missing)}; pass --data-dir", file=sys.stderr)
        return 2
    from evenhand.cli import main as evenhand

    command = ["meta-eval", "--data", *map(str, files), "--scorers", args.scorers, "--out", args.out,
               "--split", args.split, *(["--limit", str(args.limit)] if args.limit is not None else []), *rest]
    return evenhand(command)


if __name__ == "__main__":
    sys.exit(main())
