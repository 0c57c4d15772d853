"""``evenhand sweep``: run a YAML grid of decoding settings × data sets × seeds into SQLite.

    evenhand sweep --config scripts/sweep_tradeoff.yaml
    accelerate launch -m evenhand.cli sweep --config scripts/sweep_tradeoff.yaml   # N processes

Rerunning skips finished rows. See ``evenhand.sweep.config`` for the YAML schema.
"""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "sweep"
HELP = "Run a YAML grid of generation settings x data sets x seeds into a resumable SQLite store."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Config file, results file override, listing."""
    parser.add_argument("--config", required=True, help="Sweep YAML (schema: evenhand.sweep.config).")
    parser.add_argument("--results", default=None, help="Results SQLite file (default: the YAML's `results`).")
    parser.add_argument("--list", action="store_true", help="Print the expanded cells and exit.")
    parser.add_argument("--quiet", action="store_true", help="No progress bar.")
    parser.add_argument(
        "--merge", action="store_true",
        help="Add this sweep's cells to a --results file that holds another sweep's (refused without it).",
    )


def run(args: argparse.Namespace) -> int:
    """Expand the grid and run every unfinished row."""
    from evenhand.sweep.config import load_sweep
    from evenhand.sweep.runner import run_sweep

    config = load_sweep(args.config)
    if args.list:
        for cell in config.cells:
            print(f"{cell.id}  {cell.name}  {cell.settings}")
        print(f"{len(config.cells)} cells x {len(config.datasets)} data sets x {len(config.seeds)} seeds")
        return 0
    summary = run_sweep(config, results=args.results, progress=not args.quiet, merge=args.merge)
    if summary.process_index == 0:
        print(cell_table(summary.results))
    rescored = f", scored {summary.rescored} finished rows with the metrics they lacked" if summary.rescored else ""
    print(
        f"process {summary.process_index}/{summary.num_processes}: wrote {summary.written} rows, "
        f"skipped {summary.skipped} finished{rescored}, into {summary.results}"
    )
    return 0


def cell_table(results: str | Path) -> str:
    """Rows and mean MINT / factuality / UER per data set and cell, as aligned text."""
    import math

    from evenhand.sweep.report import row_values
    from evenhand.sweep.store import read_results

    stored = read_results(results)
    groups: dict[tuple[str, str], list[dict[str, float]]] = {}
    for row in stored.rows:
        groups.setdefault((row.dataset, row.cell_id), []).append(row_values(row))
    columns = ("mint", "factuality", "fairsumm_uer")
    lines = [f"{'data set':12s} {'cell':36s} {'rows':>5s} " + " ".join(f"{c:>12s}" for c in columns)]
    for (dataset, cell_id), values in sorted(groups.items()):
        name = stored.cells.get(cell_id, (cell_id, {}))[0]
        means = []
        for c in columns:
            xs = [v[c] for v in values if c in v and math.isfinite(v[c])]
            means.append(f"{sum(xs) / len(xs):12.4f}" if xs else f"{'-':>12s}")
        lines.append(f"{dataset[:12]:12s} {name[:36]:36s} {len(values):5d} " + " ".join(means))
    return "\n".join(lines)
