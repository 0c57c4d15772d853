"""The static HTML page of ``evenhand compare``: the paired differences, then summaries side by side.

One self-contained file (inline CSS, no scripts, every text escaped), readable offline.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

from evenhand.evaluation.scoring.legend import meaning

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:75em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}.better{background:#e6f4e6}.worse{background:#fbe7e7}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:1em}.pair div{border:1px solid #ddd;padding:.6em}
.small{color:#666;font-size:.9em}
"""


def _num(value: Any) -> str:
    return "" if not isinstance(value, (int, float)) or math.isnan(value) else f"{value:.4f}"


def _scores(row: Mapping[str, Any], metrics: Sequence[str]) -> str:
    cells = "".join(f"<tr><td>{html.escape(m)}</td><td class=num>{_num(row.get(m))}</td></tr>" for m in metrics)
    return f"<table class=small>{cells}</table>"


def compare_page(
    names: tuple[str, str], table: Sequence[Mapping[str, Any]], examples: Sequence[Any],
    summaries: tuple[Mapping[str, str], Mapping[str, str]], rows: tuple[Mapping[str, Mapping[str, Any]],
                                                                      Mapping[str, Mapping[str, Any]]],
    metrics: Sequence[str], note: str,
) -> str:
    """The page: ``table`` (``paired_table`` rows, A minus B), then each of ``examples`` with both summaries.

    ``summaries``/``rows``: per system, example id -> summary text / per-example metric row.
    """
    a, b = (html.escape(n) for n in names)
    head = ("<tr><th>metric</th><th>range, direction</th><th>A mean</th><th>B mean</th>"
            "<th>A − B</th><th>95% interval</th><th>verdict (A vs B)</th><th>n</th></tr>")
    body = []
    for r in table:
        found = meaning(r["metric"])
        verdict = html.escape(r["verdict"])
        body.append(
            f"<tr class={verdict}><td>{html.escape(r['metric'])}</td><td>{html.escape(found.short() if found else '')}</td>"
            f"<td class=num>{_num(r['system_mean'])}</td><td class=num>{_num(r['baseline_mean'])}</td>"
            f"<td class=num>{_num(r['diff'])}</td><td class=num>[{_num(r['lower'])}, {_num(r['upper'])}]</td>"
            f"<td>{verdict}</td><td class=num>{r['n']}</td></tr>"
        )
    parts = [
        "<!doctype html><html><head><meta charset=utf-8><title>evenhand compare</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>A = {a}<br>B = {b}</h1><p class=small>{html.escape(note)}</p>",
        f"<table>{head}{''.join(body)}</table>",
        "<h2>Summaries side by side</h2>",
    ]
    for ex in examples:
        docs = "".join(f"<li>{html.escape(('[' + d.group + '] ') if d.group else '')}{html.escape(d.text)}</li>"
                       for d in ex.documents)
        parts.append(
            f"<h3>{html.escape(ex.id)}</h3><details><summary>{len(ex.documents)} source documents"
            f"{' by ' + html.escape(ex.attribute) if ex.attribute else ''}</summary><ul>{docs}</ul></details>"
            "<div class=pair>"
            f"<div><b>A</b><p>{html.escape(summaries[0][ex.id])}</p>{_scores(rows[0][ex.id], metrics)}</div>"
            f"<div><b>B</b><p>{html.escape(summaries[1][ex.id])}</p>{_scores(rows[1][ex.id], metrics)}</div>"
            "</div>"
        )
    parts.append("</body></html>\n")
    return "".join(parts)
