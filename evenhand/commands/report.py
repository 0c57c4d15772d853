"""``evenhand report``: an HTML page with plots and CSV tables from a sweep's results store.

    evenhand report --results runs/tradeoff.sqlite --out runs/tradeoff-report

Open ``runs/tradeoff-report/index.html``; see ``evenhand.sweep.report`` for what it shows.
"""

from __future__ import annotations

import argparse

NAME = "report"
HELP = "Build an HTML report (PNG plots + CSV tables) from a sweep's SQLite results."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Results file, output folder, ranking options."""
    parser.add_argument("--results", required=True, help="Results SQLite file written by `evenhand sweep`.")
    parser.add_argument("--out", required=True, help="Folder for index.html, the PNGs and CSVs.")
    parser.add_argument(
        "--rank-by", default="auto",
        help="Per-row score for the Bradley-Terry ranking: auto (mF if factuality, else mint) or a metric column.",
    )
    parser.add_argument("--bootstrap", type=int, default=500, help="Bootstrap resamples for the 95%% intervals.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the ranking bootstrap.")


def run(args: argparse.Namespace) -> int:
    """Read the results and write the page."""
    from evenhand.sweep.report import build_report

    path = build_report(args.results, args.out, args.rank_by, args.bootstrap, args.seed)
    print(f"wrote {path}")
    return 0
