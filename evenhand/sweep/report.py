"""The sweep report: per data set plots (PNG), the CSV table behind each plot, one HTML page.

Sections of ``index.html``, per data set (a plot whose data the results lack
is skipped with a note on the page):

1. *Abstractiveness vs factuality*: each row's (MINT, factuality) point, each
   cell's mean, and per *system* (cells equal up to the abstractiveness
   settings :data:`TRADEOFF_KEYS`) the least-squares trend line with its F@50
   (``evenhand.evaluation.metrics.factuality.factuality_at``); the table adds the
   MINT-adjusted factuality mF = (2·F + MINT) / 3 of each cell. The
   factuality scorer and its backend are named.
2. *Fairness*: BUR (share of unfair summaries), UER and Equal Coverage (when
   an ``equal-coverage`` scorer ran) against every numeric setting that varies
   across the cells (fairness strength α, temperature, length...), one line per
   combination of the other settings.
3. *Reranking*: metric means against the number of candidates N, and the gain
   over N = 1 of the same other settings.
4. *Bradley–Terry ranking* of the cells (systems) on a per-row score
   (mF when factuality exists, else MINT), 95% bootstrap intervals
   (``evenhand.evaluation.metrics.ranking.bradley_terry``) over (example, seed) documents.

Plus ``cells.csv``: every cell's mean metrics per data set.
"""

from __future__ import annotations

import html
import json
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evenhand.evaluation.errors import DataError, OutputError
from evenhand.evaluation.io.atomic import atomic_folder, atomic_open, atomic_write_bytes
from evenhand.evaluation.io.csv_file import write_csv
from evenhand.evaluation.io.locks import output_lock
from evenhand.evaluation.scoring.legend import legend_lines
from evenhand.sweep.store import ResultRow, StoredResults, read_results

#: Settings that move a system along its abstractiveness-factuality line.
TRADEOFF_KEYS = ("abstractiveness", "extractiveness")
#: Fairness columns: stored metric -> label.
FAIRNESS_COLUMNS = {
    "fairsumm_unfair": "BUR (share unfair)",
    "fairsumm_uer": "UER",
    "equal-coverage.ec": "Equal Coverage (EC)",
}
#: Settings never used as a fairness x axis.
NOT_AXES = ("candidates", "batch_size", "model", "scorers")
#: Strength settings whose unset value means off (0): the unconstrained cell is their x = 0 point.
OFF_AXES = ("fairness_strength", "fair_beam", "fair_meaning", "abstractiveness", "extractiveness")
#: Preferred x axes, in this order, before other varying numeric settings.
PREFERRED_AXES = ("fairness_strength", "temperature", "max_new_tokens", "fairness_tau")
#: Metrics plotted against N.
RERANK_COLUMNS = ("factuality", "mint", "fairsumm_uer", "rerank_score")


@dataclass
class Section:
    """One part of the page: a title, an image (or a note why not), its CSV and text."""

    title: str
    image: str | None = None
    csv: str | None = None
    note: str | None = None
    text: list[str] = field(default_factory=list)


def row_values(row: ResultRow) -> dict[str, float]:
    """A row's numbers: its metrics, factuality, mF and the reranker's best score."""
    from evenhand.evaluation.metrics.factuality import mint_adjusted_factuality

    values = {k: float(v) for k, v in row.metrics.items()}
    if row.factuality is not None:
        values["factuality"] = float(row.factuality)
        if "mint" in values:
            values["mF"] = mint_adjusted_factuality(values["factuality"], values["mint"])
    if row.rerank and isinstance(row.rerank.get("best_score"), (int, float)):
        values["rerank_score"] = float(row.rerank["best_score"])
    return values


def _mean(values: Sequence[float]) -> float:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return float(np.mean(finite)) if finite else float("nan")


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4g}"
    return "" if value is None else str(value)


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    write_csv(path, [{k: _fmt(v) for k, v in r.items()} for r in rows])


def _slug(text: str) -> str:
    """A file-name stem for ``text``, distinct for distinct texts.

    Letters, digits and ``_`` are kept; a text with any other character (``a-b``,
    ``a b``) gets those replaced by ``_`` and a hash of the whole text appended
    (``a_b-1c2d3e4f``), so ``a-b`` and ``a_b`` never share a plot file.
    """
    import hashlib

    slug = "".join(c if c.isalnum() and c.isascii() else "_" for c in text)
    if slug == text and slug:
        return slug
    return f"{slug.strip('_')[:40] or 'x'}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def _label(settings: dict[str, Any], drop: Sequence[str], varying: Sequence[str]) -> str:
    parts = [f"{k}={settings[k]}" for k in varying if k not in drop and settings.get(k) is not None]
    return ",".join(parts) or "defaults"


class _Dataset:
    """Per-cell aggregates of one data set's rows."""

    def __init__(self, name: str, rows: list[ResultRow], cells: dict[str, tuple[str, dict[str, Any]]]):
        self.name = name
        self.rows = rows
        self.by_cell: dict[str, list[ResultRow]] = defaultdict(list)
        for r in rows:
            self.by_cell[r.cell_id].append(r)
        self.cells = {c: cells.get(c, (c, {})) for c in self.by_cell}
        keys = sorted({k for _, s in self.cells.values() for k in s})
        self.varying = [
            k for k in keys if len({json.dumps(s.get(k), default=str) for _, s in self.cells.values()}) > 1
        ]
        self.values = {c: [row_values(r) for r in rs] for c, rs in self.by_cell.items()}

    def settings(self, cell: str) -> dict[str, Any]:
        return self.cells[cell][1]

    def mean(self, cell: str, column: str) -> float:
        return _mean([v[column] for v in self.values[cell] if column in v])

    def has(self, column: str) -> bool:
        return any(column in v for vals in self.values.values() for v in vals)

    def table(self) -> list[dict[str, Any]]:
        columns = sorted({k for vals in self.values.values() for v in vals for k in v})
        out = []
        for cell, (name, settings) in self.cells.items():
            rows = self.by_cell[cell]
            record: dict[str, Any] = {"dataset": self.name, "cell_id": cell, "cell": name}
            record.update({k: settings.get(k) for k in self.varying})
            record["rows"] = len(rows)
            record["errors"] = sum(r.error is not None for r in rows)
            record.update({c: self.mean(cell, c) for c in columns})
            record["seconds_per_row"] = _mean([r.seconds for r in rows if r.seconds is not None])
            out.append(record)
        return out


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["text.parse_math"] = False  # cell and data set names are user text: `$x$` is no formula

    return plt


def _tradeoff(ds: _Dataset, out: Path) -> Section:
    from evenhand.evaluation.metrics.factuality import factuality_at, mint_adjusted_factuality

    section = Section("Abstractiveness (MINT) vs factuality")
    if not ds.has("factuality"):
        section.note = "skipped: no factuality scores in the results (the sweep ran with `factuality: none`)."
        return section
    if not ds.has("mint"):
        section.note = "skipped: no MINT scores in the results (add `mint` to the sweep's `metrics`)."
        return section
    scorers = sorted({f"{r.factuality_scorer} (backend: {r.factuality_backend})" for r in ds.rows
                      if r.factuality is not None})
    section.text.append("Factuality scorer: " + "; ".join(scorers))
    families: dict[str, list[str]] = defaultdict(list)
    for cell in ds.cells:
        families[_label(ds.settings(cell), TRADEOFF_KEYS, ds.varying)].append(cell)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 5))
    table = []
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    seen_y: list[float] = []
    for i, (family, cells) in enumerate(sorted(families.items())):
        color = colors[i % len(colors)]
        points = [(ds.mean(c, "mint"), ds.mean(c, "factuality"), c) for c in cells]
        points = [p for p in points if math.isfinite(p[0]) and math.isfinite(p[1])]
        for cell in cells:
            xs = [v["mint"] for v in ds.values[cell] if "mint" in v and "factuality" in v]
            ys = [v["factuality"] for v in ds.values[cell] if "mint" in v and "factuality" in v]
            ax.scatter(xs, ys, s=8, alpha=0.25, color=color)
            seen_y += [y for y in ys if math.isfinite(y)]
        seen_y += [p[1] for p in points]
        f50, extrapolated = float("nan"), False
        if len({round(p[0], 12) for p in points}) >= 2:
            f50 = factuality_at([p[0] for p in points], [p[1] for p in points], at=0.5)
            slope, intercept = np.polyfit([p[0] for p in points], [p[1] for p in points], 1)
            lo, hi = min(p[0] for p in points), max(p[0] for p in points)
            extrapolated = not lo <= 0.5 <= hi
            grid = np.linspace(lo, hi, 50)
            ax.plot(grid, intercept + slope * grid, color=color, lw=1.2)
            if extrapolated:  # dashed from the data's MINT range to MINT 0.5
                reach = np.linspace(min(lo, 0.5), max(hi, 0.5), 50)
                ax.plot(reach, intercept + slope * reach, color=color, lw=1, ls="--")
        ys_seen = [p[1] for p in points]
        outside = bool(ys_seen) and math.isfinite(f50) and not min(ys_seen) <= f50 <= max(ys_seen)
        label = f"{family}: F@50={_fmt(f50) or 'n/a'}" + (" (extrapolated)" if extrapolated else "") + (
            f" (a trend-line value outside the cells' factuality {_fmt(min(ys_seen))}..{_fmt(max(ys_seen))})"
            if outside else "")
        if outside:
            section.text.append(
                f"{family}: F@50={_fmt(f50)} is where the trend line reaches MINT 0.5, outside the factuality "
                f"its cells scored ({_fmt(min(ys_seen))}..{_fmt(max(ys_seen))}): read it as a direction, not a score"
            )
        ax.scatter([p[0] for p in points], [p[1] for p in points], s=50, color=color,
                   edgecolor="black", label=label, zorder=3)
        for x, y, cell in points:
            name = ds.cells[cell][0]
            ax.annotate(name, (x, y), fontsize=7, xytext=(4, 4), textcoords="offset points")
            table.append({
                "dataset": ds.name, "system": family, "cell": name, "mint": x, "factuality": y,
                "mF": mint_adjusted_factuality(y, x), "F@50": f50,
                "F@50_extrapolated": extrapolated, "rows": len(ds.by_cell[cell]),
            })
    far = sorted({r["system"] for r in table if r["F@50_extrapolated"]})
    if far:
        section.text.append(
            "F@50 is extrapolated (MINT 0.5 lies outside the cells' MINT range) for: " + "; ".join(far)
        )
    if seen_y:  # keep the axes on the data: an extrapolated trend line may leave the scorer's range
        lo, hi = min(seen_y), max(seen_y)
        pad = 0.1 * (hi - lo) or 0.05
        ax.set_ylim(lo - pad, hi + pad)
    ax.axvline(0.5, color="grey", ls=":", lw=1)
    ax.set_xlim(0, 1)
    ax.set_xlabel("MINT abstractiveness (mean per cell; dots: summaries)")
    names = sorted({r.factuality_scorer for r in ds.rows if r.factuality_scorer})
    ax.set_ylabel(f"factuality ({', '.join(names)})")
    ax.set_title(f"{ds.name}: abstractiveness-factuality tradeoff")
    ax.legend(fontsize=7, loc="best")
    return _save(fig, plt, section, out, ds, "tradeoff", table)


def _save(fig: Any, plt: Any, section: Section, out: Path, ds: _Dataset, kind: str,
          table: list[dict[str, Any]]) -> Section:
    stem = f"{_slug(ds.name)}_{kind}"
    import io

    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(out / f"{stem}.png", image.getvalue())
    _write_csv(out / f"{stem}.csv", table)
    section.image, section.csv = f"{stem}.png", f"{stem}.csv"
    return section


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _baseline_for(ds: _Dataset, line: str, baselines: list[str], axis: str) -> str | None:
    """The unconstrained cell a line starts from: the one with the line's other settings, or the only one."""
    same = [c for c in baselines if _label(ds.settings(c), (axis,), ds.varying) == line]
    if same:
        return same[0]
    return baselines[0] if len(baselines) == 1 else None


def _fairness(ds: _Dataset, out: Path) -> list[Section]:
    columns = [c for c in FAIRNESS_COLUMNS if ds.has(c)]
    if not columns:
        return [Section("Fairness", note="skipped: no fairness scores (add `fairsumm` to `metrics` and "
                        "data with group labels, or the `equal-coverage` extra scorer).")]
    axes = [k for k in ds.varying if k not in NOT_AXES
            and all(_numeric(ds.settings(c).get(k)) or ds.settings(c).get(k) is None for c in ds.cells)
            and any(_numeric(ds.settings(c).get(k)) for c in ds.cells)]
    axes.sort(key=lambda k: (PREFERRED_AXES.index(k) if k in PREFERRED_AXES else len(PREFERRED_AXES), k))
    if not axes:
        section = Section("Fairness", note="no numeric setting varies across cells: table only.")
        table = [{"dataset": ds.name, "cell": ds.cells[c][0],
                  **{FAIRNESS_COLUMNS[k]: ds.mean(c, k) for k in columns}} for c in ds.cells]
        _write_csv(out / f"{_slug(ds.name)}_fairness.csv", table)
        section.csv = f"{_slug(ds.name)}_fairness.csv"
        return [section]
    sections = []
    plt = _plt()
    for axis in axes:
        section = Section(f"Fairness against {axis}")
        lines: dict[str, list[str]] = defaultdict(list)
        baselines = [c for c in ds.cells if ds.settings(c).get(axis) is None]
        for cell in ds.cells:
            if _numeric(ds.settings(cell).get(axis)):
                lines[_label(ds.settings(cell), (axis,), ds.varying)].append(cell)
        fig, subplots = plt.subplots(1, len(columns), figsize=(4.2 * len(columns), 3.8), squeeze=False)
        table = []
        for ax, column in zip(subplots[0], columns):
            for line, cells in sorted(lines.items()):
                cells = sorted(cells, key=lambda c: ds.settings(c)[axis])
                xs = [ds.settings(c)[axis] for c in cells]
                ys = [ds.mean(c, column) for c in cells]
                start = _baseline_for(ds, line, baselines, axis) if axis in OFF_AXES and 0 not in xs else None
                if start is not None:  # the unconstrained cell is this line's α = 0 point
                    ax.plot([0, xs[0]], [ds.mean(start, column), ys[0]], ls="--", color="grey", lw=1)
                ax.plot(xs, ys, marker="o", label=line)
                for c, x, y in zip(cells, xs, ys):
                    table.append({"dataset": ds.name, "measure": FAIRNESS_COLUMNS[column], axis: x,
                                  "others": line, "cell": ds.cells[c][0], "value": y,
                                  "rows": len(ds.by_cell[c])})
            for c in baselines:
                y = ds.mean(c, column)
                name = f"{ds.cells[c][0]} ({axis} unset)"
                if axis in OFF_AXES:
                    ax.scatter([0], [y], marker="*", s=120, color="black", zorder=3, label=name)
                else:
                    ax.axhline(y, color="black", ls=":", lw=1, label=name)
                table.append({"dataset": ds.name, "measure": FAIRNESS_COLUMNS[column],
                              axis: 0 if axis in OFF_AXES else None, "others": "baseline",
                              "cell": ds.cells[c][0], "value": y, "rows": len(ds.by_cell[c])})
            ax.set_xlabel(axis + (" (unset = 0: off)" if axis in OFF_AXES and baselines else ""))
            ax.set_ylabel(FAIRNESS_COLUMNS[column] + " (lower is fairer)")
        subplots[0][0].legend(fontsize=6, loc="best")
        fig.suptitle(f"{ds.name}: fairness against {axis}")
        sections.append(_save(fig, plt, section, out, ds, f"fairness_{_slug(axis)}", table))
    return sections


def _reranking(ds: _Dataset, out: Path) -> Section:
    section = Section("Reranking gain against N")
    n_of = {c: int(ds.settings(c).get("candidates") or 1) for c in ds.cells}
    if len(set(n_of.values())) < 2:
        section.note = "skipped: the cells do not vary the number of candidates N."
        return section
    columns = [c for c in RERANK_COLUMNS if ds.has(c)]
    if not columns:
        section.note = "skipped: no metric to compare across N."
        return section
    groups: dict[str, list[str]] = defaultdict(list)
    for cell in ds.cells:
        groups[_label(ds.settings(cell), ("candidates", "scorers"), ds.varying)].append(cell)
    plt = _plt()
    fig, subplots = plt.subplots(1, len(columns), figsize=(4.2 * len(columns), 3.8), squeeze=False)
    table = []
    for ax, column in zip(subplots[0], columns):
        for group, cells in sorted(groups.items()):
            cells = sorted(cells, key=lambda c: n_of[c])
            base = next((ds.mean(c, column) for c in cells if n_of[c] == 1), float("nan"))
            xs = [n_of[c] for c in cells]
            ys = [ds.mean(c, column) for c in cells]
            ax.plot(xs, ys, marker="o", label=group)
            for c, n, y in zip(cells, xs, ys):
                table.append({"dataset": ds.name, "metric": column, "N": n, "others": group,
                              "scorers": ds.settings(c).get("scorers"), "value": y, "gain_over_N1": y - base})
        ax.set_xlabel("candidates N")
        ax.set_ylabel(column)
        ax.set_xticks(sorted(set(n_of.values())))
    subplots[0][0].legend(fontsize=6, loc="best")
    fig.suptitle(f"{ds.name}: reranking against N")
    return _save(fig, plt, section, out, ds, "reranking", table)


def _ranking(ds: _Dataset, out: Path, rank_by: str, n_bootstrap: int, seed: int) -> Section:
    from evenhand.evaluation.metrics.ranking import bradley_terry

    column = rank_by if rank_by != "auto" else ("mF" if ds.has("mF") else "mint")
    section = Section(f"Bradley–Terry ranking of systems by {column}")
    cells = list(ds.cells)
    if len(cells) < 2:
        section.note = "skipped: one system only."
        return section
    per_cell = {c: {(r.example_id, r.seed): v.get(column) for r, v in zip(ds.by_cell[c], ds.values[c])}
                for c in cells}
    docs = sorted(set.intersection(*(
        {k for k, v in d.items() if v is not None and math.isfinite(v)} for d in per_cell.values()
    )))
    if not docs:
        section.note = f"skipped: no (example, seed) has `{column}` for every system."
        return section
    scores = np.array([[per_cell[c][d] for c in cells] for d in docs])
    names = [ds.cells[c][0] for c in cells]
    bt = bradley_terry(scores, names, n_bootstrap=n_bootstrap, seed=seed)
    order = np.argsort(bt.abilities)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(cells) + 1.5))
    ab = np.asarray(bt.abilities)[order]
    lo, hi = np.asarray(bt.lower)[order], np.asarray(bt.upper)[order]
    # a percentile interval need not contain the estimate (rounding or skew): clip the
    # bars at the point, which matplotlib requires to be non-negative
    xerr = np.clip([ab - lo, hi - ab], 0.0, None)
    ax.errorbar(ab, range(len(cells)), xerr=xerr, fmt="o", capsize=3)
    ax.set_yticks(range(len(cells)), [names[i] for i in order], fontsize=7)
    ax.axvline(0, color="grey", ls=":", lw=1)
    ax.set_xlabel(f"Bradley–Terry ability (log-odds), 95% bootstrap interval; {len(docs)} documents")
    ax.set_title(f"{ds.name}: systems ranked by {column}")
    table = [{"dataset": ds.name, "rank": rank + 1, "cell": names[i], "ability": bt.abilities[i],
              "lower95": bt.lower[i], "upper95": bt.upper[i], f"mean_{column}": float(scores[:, i].mean()),
              "documents": len(docs)} for rank, i in enumerate(order[::-1])]
    return _save(fig, plt, section, out, ds, "ranking", table)


def build_report(
    results: str | Path | StoredResults, out: str | Path, rank_by: str = "auto",
    n_bootstrap: int = 500, seed: int = 0,
) -> Path:
    """Write ``index.html``, the PNGs and CSVs into ``out``; return the HTML path.

    Args:
        results: a results file (``evenhand sweep``) or already read results.
        out: output folder (created).
        rank_by: the per-row score the Bradley–Terry ranking uses (``auto``: mF when
            factuality exists, else ``mint``; or any stored metric column).
        n_bootstrap: bootstrap resamples of the ranking's intervals.
        seed: seeds the ranking's tie-breaking and bootstrap.
    """
    from evenhand.evaluation.data.checks import check_count, check_seed

    check_count(n_bootstrap, "--bootstrap")
    check_seed(seed, "--seed")
    stored = results if isinstance(results, StoredResults) else read_results(results)
    if not stored.rows:
        raise DataError(f"{results}: the results hold no rows yet; run `evenhand sweep` first")
    if rank_by != "auto":
        columns = sorted({k for r in stored.rows for k in row_values(r)})
        if rank_by not in columns:
            raise DataError(
                f"--rank-by {rank_by!r} is no metric of these results; use auto or one of: "
                + ", ".join(columns)
            )
    out = Path(out)
    check_report_dir(out)
    with output_lock(out, "--out"):  # a second report into the same folder exits 2
        return _build(stored, results, out, rank_by, n_bootstrap, seed)


#: What a report writes into --out: the page, its plots and tables.
REPORT_SUFFIXES = (".html", ".png", ".csv")


def check_report_dir(out: Path) -> None:
    """``--out`` must be a writable folder (or absent) whose page, plots and tables are regular files."""
    from evenhand.evaluation.io.locks import lock_path
    from evenhand.evaluation.io.output_checks import check_output_dir, check_output_path

    check_output_dir(out, "--out", files=("index.html", "cells.csv"))
    check_output_path(lock_path(out), "--out")
    if out.is_dir():  # replaced whole: only an earlier report's files may be in it
        for entry in sorted(out.iterdir()):
            if entry.suffix not in REPORT_SUFFIXES or entry.is_symlink() or not entry.is_file():
                raise OutputError(
                    f"--out {out}: holds {entry.name}, which no report writes, and the report replaces the "
                    "folder whole; give a new or empty folder, or an earlier report's folder"
                )


def _build(stored: StoredResults, results: str | Path | StoredResults, out: Path, rank_by: str,
           n_bootstrap: int, seed: int) -> Path:
    """The report written into a new folder that replaces ``out`` whole (no earlier plot or table stays)."""
    with atomic_folder(out, prefix=f".{out.name}.report-") as staging:
        _write_report(stored, results, staging, rank_by, n_bootstrap, seed)
    return out / "index.html"


def _write_report(stored: StoredResults, results: str | Path | StoredResults, out: Path, rank_by: str,
                  n_bootstrap: int, seed: int) -> None:
    datasets: dict[str, list[ResultRow]] = defaultdict(list)
    for r in stored.rows:
        datasets[r.dataset].append(r)
    overview: list[dict[str, Any]] = []
    parts: list[tuple[_Dataset, list[Section]]] = []
    for name, rows in sorted(datasets.items()):
        ds = _Dataset(name, rows, stored.cells)
        overview.extend(ds.table())
        sections = [_tradeoff(ds, out), *_fairness(ds, out), _reranking(ds, out),
                    _ranking(ds, out, rank_by, n_bootstrap, seed)]
        parts.append((ds, sections))
    _write_csv(out / "cells.csv", overview)
    page = _html(stored, parts, overview, results if not isinstance(results, StoredResults) else None)
    with atomic_open(out / "index.html") as f:
        f.write(page)


_CSS = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;font-size:12px;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
th{background:#f2f2f2}td:nth-child(-n+2){text-align:left}img{max-width:100%;border:1px solid #ddd}
.note{color:#8a5a00;background:#fff6e0;padding:4px 8px}h2{border-bottom:2px solid #444}"""


def _html_table(rows: list[dict[str, Any]], skip: Sequence[str] = ()) -> str:
    if not rows:
        return ""
    columns = [c for c in dict.fromkeys(k for r in rows for k in r) if c not in skip]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_fmt(r.get(c)))}</td>" for c in columns) + "</tr>" for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


#: Columns shown beside each sample summary.
SAMPLE_COLUMNS = ("mint", "factuality", "fairsumm_uer", "equal-coverage.ec")


def sample_rows(ds: _Dataset, examples: int = 2) -> list[dict[str, Any]]:
    """Every cell's summary of the data set's first ``examples`` examples (seed order), with its numbers.

    So a reader can check the means against text: the same examples for every cell.
    """
    firsts = sorted({(r.example_index, r.example_id) for r in ds.rows})[:examples]
    wanted = {eid for _, eid in firsts}
    out = []
    for r in sorted(ds.rows, key=lambda r: (r.example_index, ds.cells[r.cell_id][0], r.seed)):
        if r.example_id not in wanted:
            continue
        values = row_values(r)
        record: dict[str, Any] = {"example": r.example_id, "cell": ds.cells[r.cell_id][0], "seed": r.seed,
                                  "summary": r.summary if r.error is None else f"(error: {r.error})"}
        record.update({c: values[c] for c in SAMPLE_COLUMNS if c in values})
        out.append(record)
    return out


def _sample_summaries(ds: _Dataset) -> str:
    rows = sample_rows(ds)
    if not rows:
        return ""
    return ("<h3>Sample summaries</h3><p>Every cell's summary of the same examples, beside the numbers "
            "the means above are made of.</p>" + _html_table(rows))


def _html(stored: StoredResults, parts: list[tuple[_Dataset, list[Section]]],
          overview: list[dict[str, Any]], source: Any) -> str:
    name = stored.meta.get("name", "sweep")
    keep = ("cell", "rows", "errors", "mint", "factuality", "mF", "fairsumm_unfair", "fairsumm_uer",
            "equal-coverage.ec", "rerank_score", "seconds_per_row")
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>evenhand report: {html.escape(name)}</title>"
           f"<style>{_CSS}</style></head><body>",
           f"<h1>evenhand sweep report: {html.escape(name)}</h1>",
           f"<p>{len(stored.rows)} rows, {len(stored.cells)} cells, {len(parts)} data set(s)"
           + (f" from <code>{html.escape(str(source))}</code>" if source else "")
           + ". Every plot links the CSV behind it; <a href='cells.csv'>cells.csv</a> has every cell's means.</p>"]
    for ds, sections in parts:
        rows = [r for r in overview if r["dataset"] == ds.name]
        short = [{k: r[k] for k in (*keep[:1], *ds.varying, *keep[1:]) if k in r} for r in rows]
        out.append(f"<h2>Data set: {html.escape(ds.name)}</h2>")
        out.append(_html_table(short))
        shown = [c for c in dict.fromkeys(k for r in short for k in r)]
        legend = legend_lines(shown)
        if legend:
            out.append("<p class='note'>Columns: " + "<br>".join(html.escape(x.strip()) for x in legend) + "</p>")
        out.append(_sample_summaries(ds))
        for s in sections:
            out.append(f"<h3>{html.escape(s.title)}</h3>")
            out.extend(f"<p>{html.escape(t)}</p>" for t in s.text)
            if s.note:
                out.append(f"<p class='note'>{html.escape(s.note)}</p>")
            if s.image:
                out.append(f"<img src='{html.escape(s.image)}' alt='{html.escape(s.title)}'>")
            if s.csv:
                out.append(f"<p>Table: <a href='{html.escape(s.csv)}'>{html.escape(s.csv)}</a></p>")
    if stored.meta.get("config"):
        out.append("<h2>Sweep config</h2><pre>" + html.escape(stored.meta["config"]) + "</pre>")
    out.append("</body></html>")
    return "\n".join(out)
