"""Sweeps over decoding settings × data sets × seeds, their SQLite results store and HTML report.

* :mod:`evenhand.sweep.config` — the YAML schema, grid expansion into cells;
* :mod:`evenhand.sweep.store` — the SQLite results store (resumable, sharded per process);
* :mod:`evenhand.sweep.runner` — running the cells (``evenhand sweep``);
* :mod:`evenhand.sweep.hookups` — links to ``evenhand.rerank`` (reranking, factuality scorers);
* :mod:`evenhand.sweep.report` — plots, CSV tables and the HTML page (``evenhand report``).
"""

from evenhand.sweep.config import Cell, SweepConfig, expand_cells, load_sweep, parse_sweep
from evenhand.sweep.store import ResultRow, ResultStore, merge_shards, read_results

__all__ = [
    "Cell", "ResultRow", "ResultStore", "SweepConfig", "expand_cells", "load_sweep", "merge_shards",
    "parse_sweep", "read_results",
]
