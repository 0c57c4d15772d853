"""The sweep report from a small stored result set (rows written straight into the store)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from evenhand.sweep.config import Cell
from evenhand.sweep.store import ResultRow, ResultStore

H = [None, 4, 2, 1]
MINT_OF_H = {None: 0.2, 4: 0.3, 2: 0.5, 1: 0.7}


def _rows(cell: Cell, dataset: str, mint: float, factuality: float | None, n: int = 4, **metrics):
    return [
        ResultRow(
            cell.id, dataset, 0, f"ex{i}", i, f"summary {i}",
            # per-example spread around the cell mean, zero-sum so the cell mean is exact
            {"mint": mint + (0.02 if i % 2 else -0.02), **metrics},
            factuality=None if factuality is None else factuality + (0.01 if i % 2 else -0.01),
            factuality_scorer=None if factuality is None else "alignscore",
            factuality_backend=None if factuality is None else "token-overlap fallback",
            seconds=0.5,
        )
        for i in range(n)
    ]


@pytest.fixture()
def results(tmp_path: Path) -> Path:
    """Tradeoff cells on F = 0.9 - 0.4 * MINT, fairness cells over temperature, reranking over N."""
    path = tmp_path / "results.sqlite"
    store = ResultStore(path)
    store.set_meta("name", "unit")
    rows = []
    cells = []
    for h in H:
        cell = Cell({"abstractiveness": h} if h else {}, f"h={h}")
        cells.append(cell)
        rows += _rows(cell, "news", MINT_OF_H[h], 0.9 - 0.4 * MINT_OF_H[h])
    for t, unfair in ((0.5, 0.25), (1.0, 0.5), (1.5, 0.75)):
        cell = Cell({"temperature": t, "do_sample": True}, f"t={t}")
        cells.append(cell)
        rows += _rows(cell, "reviews", 0.4, None, fairsumm_unfair=unfair, fairsumm_uer=unfair / 10)
    for n, fact in ((1, 0.6), (3, 0.72), (9, 0.75)):
        cell = Cell({"candidates": n, "scorers": "alignscore"}, f"N={n}")
        cells.append(cell)
        rows += _rows(cell, "news", 0.45, fact)
    store.add_cells(cells)
    store.write(rows)
    store.close()
    return path


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_report_plots_tables_and_page(results: Path, tmp_path: Path) -> None:
    from evenhand.sweep.report import build_report

    out = tmp_path / "report"
    page = build_report(results, out, n_bootstrap=10).read_text(encoding="utf-8")
    images = re.findall(r"<img src='([^']+)'", page)
    assert set(images) == {
        "news_tradeoff.png", "news_reranking.png", "news_ranking.png",
        "reviews_fairness_temperature.png", "reviews_ranking.png",
    }
    for name in images:
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
        assert f"href='{name[:-4]}.csv'" in page
    # missing data: a note, not an error
    assert "skipped: no factuality scores" in page  # reviews has none
    assert "skipped: no fairness scores" in page  # news has no fairsumm columns
    assert "backend: token-overlap fallback" in page
    # the numbers come with their meaning, and a few summaries stand beside them
    assert "mint: 0-1, descriptive" in page
    assert page.count("<h3>Sample summaries</h3>") == 2
    sample = page.split("<h2>Data set: news</h2>")[1].split("<h3>Sample summaries</h3>")[1]
    # every news cell's summaries of ex0 and ex1 (per-example MINT = cell mean -/+ 0.02), no ex2
    assert "<td>h=2</td><td>0</td><td>summary 0</td><td>0.48</td>" in sample
    assert "<td>ex1</td><td>h=2</td><td>0</td><td>summary 1</td><td>0.52</td>" in sample
    assert "summary 2" not in sample.split("</table>")[0]

    tradeoff = _csv(out / "news_tradeoff.csv")
    h_line = [r for r in tradeoff if r["cell"].startswith("h=")]
    assert len(h_line) == 4 and {r["system"] for r in h_line} == {"defaults"}
    assert float(h_line[0]["F@50"]) == pytest.approx(0.9 - 0.4 * 0.5)
    h2 = next(r for r in h_line if r["cell"] == "h=2")
    assert float(h2["mF"]) == pytest.approx((2 * 0.7 + 0.5) / 3, abs=1e-4)

    fairness = _csv(out / "reviews_fairness_temperature.csv")
    bur = {float(r["temperature"]): float(r["value"]) for r in fairness if r["measure"].startswith("BUR")}
    assert bur == {0.5: 0.25, 1.0: 0.5, 1.5: 0.75}

    rerank = [r for r in _csv(out / "news_reranking.csv") if r["metric"] == "factuality" and r["scorers"]]
    gains = {int(r["N"]): float(r["gain_over_N1"]) for r in rerank}
    assert gains == pytest.approx({1: 0.0, 3: 0.12, 9: 0.15})

    ranking = _csv(out / "reviews_ranking.csv")  # by MINT: equal everywhere, so abilities tie near 0
    assert len(ranking) == 3
    for r in ranking:
        assert float(r["lower95"]) <= float(r["ability"]) <= float(r["upper95"])
    cells = _csv(out / "cells.csv")
    assert len(cells) == 10 and {r["dataset"] for r in cells} == {"news", "reviews"}


def test_ranking_orders_clearly_better_systems_first(results: Path, tmp_path: Path) -> None:
    from evenhand.sweep.report import build_report

    out = tmp_path / "r"
    build_report(results, out, rank_by="factuality", n_bootstrap=10)
    ranking = _csv(out / "news_ranking.csv")
    # factuality means: h=None .82, h=4 .78, N=9 .75, N=3 .72, h=2 .70, h=1 .62, N=1 .60,
    # the same order on every example, so Bradley-Terry must rank them so
    means = {r["cell"]: float(r["mean_factuality"]) for r in ranking}
    assert [r["cell"] for r in ranking] == sorted(means, key=lambda c: -means[c])
    assert ranking[0]["cell"] == "h=None" and ranking[-1]["cell"] == "N=1"


def test_report_cli_and_empty_results(results: Path, tmp_path: Path) -> None:
    from evenhand.cli import main
    from evenhand.sweep.report import build_report

    assert main(["report", "--results", str(results), "--out", str(tmp_path / "cli"), "--bootstrap", "5"]) == 0
    assert (tmp_path / "cli" / "index.html").is_file()
    assert main(["report", "--results", str(tmp_path / "nope.sqlite"), "--out", str(tmp_path / "x")]) == 2
    empty = tmp_path / "empty.sqlite"
    ResultStore(empty).close()
    with pytest.raises(ValueError, match="no rows"):
        build_report(empty, tmp_path / "e")


def test_fairness_plot_keeps_the_unconstrained_cell_and_f50_says_extrapolated(tmp_path: Path) -> None:
    """A `fairness: null` baseline is the α = 0 point of the α line; F@50 outside the cells'
    MINT range is marked extrapolated and the y axis stays on the data."""
    from PIL import Image

    from evenhand.sweep.report import build_report

    path = tmp_path / "results.sqlite"
    store = ResultStore(path)
    store.set_meta("name", "unit")
    cells, rows = [], []
    for alpha, unfair in ((None, 0.6), (1.0, 0.4), (3.0, 0.2)):
        settings = {"fairness": "ratio", "fairness_strength": alpha} if alpha else {"fairness": None}
        cell = Cell(settings, f"a={alpha}")
        cells.append(cell)
        rows += _rows(cell, "reviews", 0.4, None, fairsumm_unfair=unfair, fairsumm_uer=unfair / 10)
    for h, mint in ((4, 0.08), (2, 0.1), (1, 0.12)):
        # steep line F = 0.2 + 4 * MINT over MINT 0.08..0.12: F@50 = 2.2 lies outside [0, 1]
        cell = Cell({"abstractiveness": h}, f"h={h}")
        cells.append(cell)
        rows += _rows(cell, "news", mint, 0.2 + 4 * mint)
    store.add_cells(cells)
    store.write(rows)
    store.close()
    out = tmp_path / "report"
    build_report(path, out, n_bootstrap=10)
    fairness = _csv(out / "reviews_fairness_fairness_strength.csv")
    bur = {float(r["fairness_strength"]): float(r["value"]) for r in fairness if r["measure"].startswith("BUR")}
    assert bur == {0.0: 0.6, 1.0: 0.4, 3.0: 0.2}
    assert {r["others"] for r in fairness if r["cell"] == "a=None"} == {"baseline"}
    tradeoff = _csv(out / "news_tradeoff.csv")
    assert {r["F@50_extrapolated"] for r in tradeoff} == {"True"}
    assert float(tradeoff[0]["F@50"]) == pytest.approx(2.2)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "F@50 is extrapolated" in page
    # 2.2 for a 0-1 scorer: said to be a trend-line value beyond the cells' 0.52..0.68
    assert "F@50=2.2 is where the trend line reaches MINT 0.5, outside the factuality its cells scored" in page
    assert Image.open(out / "news_tradeoff.png").size[0] > 0
