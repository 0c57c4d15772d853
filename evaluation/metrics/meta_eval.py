"""Meta-evaluation of scorers on controlled summaries (Ri, Deas & McKeown 2025, Table 2).

Input (``load_annotated``): the controlled-summaries JSON list of
``{"source": [text, ...], "summaries": [{"summary", "coverage", "faithfulness",
...}]}``, or a generic JSONL file with one summary per line,
``{"source": text or [text, ...], "summary": text, "<target>": number}``
(lines with the same source form one source). Per scorer and ground truth
(coverage, faithfulness):

- Spearman's ρ between the scorer and the truth over all summaries;
- winrate: the share of same-source summary pairs with different ground
  truth that the scorer orders correctly (ties count as wrong);
- 95% intervals from a bootstrap over sources (the sources are resampled with
  replacement, their summaries kept together; ``n_bootstrap`` draws, seeded).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data.checks import check_number, expect
from ..errors import DataError
from ..io.parsing import parse_json

TRUTHS = ("coverage", "faithfulness")


@dataclass
class ControlledSet:
    """Flattened controlled summaries: one entry per summary."""

    sources: list[list[str]]
    source_index: list[int]
    summaries: list[str]
    truth: dict[str, list[float]]

    def __len__(self) -> int:
        return len(self.summaries)

    def first_sources(self, limit: int) -> None:
        """Keep only the summaries of the first ``limit`` sources (in place)."""
        keep = [i for i, s in enumerate(self.source_index) if s < limit]
        self.summaries = [self.summaries[i] for i in keep]
        self.source_index = [self.source_index[i] for i in keep]
        self.truth = {t: [v[i] for i in keep] for t, v in self.truth.items()}


def load_controlled(path: str | Path) -> ControlledSet:
    """Read a controlled-summaries JSON file; errors name the entry and field."""
    from ..io.limits import check_text_size
    from ..io.utf8 import read_utf8

    path = Path(path)
    data = parse_json(read_utf8(path, "--data"), str(path))
    if not isinstance(data, list) or not data:
        raise DataError(f"{path}: expected a non-empty JSON list of {{source, summaries}} entries")
    out = ControlledSet([], [], [], {t: [] for t in TRUTHS})
    for i, entry in enumerate(data):
        where = f"{path}[{i}]"
        if not isinstance(entry, dict) or "source" not in entry or "summaries" not in entry:
            raise DataError(f"{where}: needs fields `source` (list of texts) and `summaries`")
        source = entry["source"]
        if isinstance(source, str):
            source = [source]
        if not isinstance(source, list) or not source or not all(isinstance(t, str) and t.strip() for t in source):
            raise DataError(f"{where}: `source` must be a non-empty list of non-empty strings")
        check_text_size("".join(source), where, "source")
        summaries = expect(entry["summaries"], list, where, "summaries", "a list of {summary, coverage, faithfulness}")
        out.sources.append(source)
        for j, summary in enumerate(summaries):
            expect(summary, dict, where, f"summaries[{j}]", "an object {summary, coverage, faithfulness}")
            for key in ("summary", *TRUTHS):
                if key not in summary:
                    raise DataError(f"{where}.summaries[{j}]: missing field `{key}`")
            out.source_index.append(i)
            out.summaries.append(expect(summary["summary"], str, where, f"summaries[{j}].summary"))
            check_text_size(out.summaries[-1], where, f"summaries[{j}].summary")
            for t in TRUTHS:  # proportions of key points (README of the release)
                value = check_number(summary[t], f"summaries[{j}].{t}", low=0, high=1, where=where)
                out.truth[t].append(float(value))
    if not out.summaries:
        raise DataError(f"{path}: holds no summaries; every entry's `summaries` is empty")
    return out


def check_spread(data: ControlledSet, targets: Sequence[str], where: str) -> None:
    """Refuse human scores that cannot be correlated: fewer than two summaries, or all equal.

    Spearman's ρ and the winrate are undefined then (a division by zero).
    """
    if len(data.summaries) < 2:
        raise DataError(
            f"{where}: {len(data.summaries)} summary; correlating with human scores needs at least two"
        )
    for t in targets:
        if len(set(data.truth[t])) < 2:
            raise DataError(
                f"{where}: every summary has the same `{t}` ({data.truth[t][0]:g}); correlating "
                "with human scores needs summaries scored differently"
            )


def load_annotated(path: str | Path, targets: Sequence[str] = TRUTHS) -> ControlledSet:
    """Human-scored summaries from a controlled-summaries ``.json`` or a generic ``.jsonl``.

    In a JSONL file every line needs ``source``, ``summary`` and each of
    ``targets``; errors name the file, line and field.
    """
    path = Path(path)
    if path.suffix != ".jsonl":
        data = load_controlled(path)
        return data
    from ..io.jsonl import read_jsonl

    rows = read_jsonl(path)
    if not rows:
        raise DataError(f"{path}: no summaries; each line needs `source`, `summary` and a human score")
    out = ControlledSet([], [], [], {t: [] for t in targets})
    index: dict[tuple[str, ...], int] = {}
    for lineno, row in enumerate(rows, start=1):
        where = f"{path}:{lineno}"
        if not isinstance(row, dict):
            raise DataError(f"{where}: expected a JSON object with `source`, `summary` and scores")
        for key in ("source", "summary", *targets):
            if key not in row:
                raise DataError(f"{where}: missing field `{key}`")
        source = [row["source"]] if isinstance(row["source"], str) else row["source"]
        if not isinstance(source, list) or not source or not all(isinstance(s, str) and s.strip() for s in source):
            raise DataError(f"{where}: `source` must be a non-empty text or list of texts")
        if not isinstance(row["summary"], str):
            raise DataError(f"{where}: `summary` must be a string")
        from ..io.limits import check_text_size

        check_text_size("".join(source), where, "source")
        check_text_size(row["summary"], where, "summary")
        key = tuple(source)
        if key not in index:
            index[key] = len(out.sources)
            out.sources.append(source)
        out.source_index.append(index[key])
        out.summaries.append(row["summary"])
        for t in targets:
            out.truth[t].append(float(check_number(row[t], t, where=where)))
    return out


@dataclass(frozen=True)
class Correlation:
    """A statistic with its bootstrap interval."""

    value: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


def _stats(metric: Any, truth: Any, groups: Any) -> tuple[float, float]:
    from .ranking import pairwise_winrate, spearman

    return spearman(metric, truth), pairwise_winrate(metric, truth, groups)


def meta_evaluate(
    scores: Sequence[float], truth: Sequence[float], source_index: Sequence[int],
    n_bootstrap: int = 1000, seed: int = 0, confidence: float = 0.95,
) -> dict[str, Correlation]:
    """Spearman ρ and winrate of ``scores`` against ``truth`` with source-bootstrap intervals."""
    import numpy as np

    from .bootstrap import percentile_interval

    m, t, src = np.asarray(scores, float), np.asarray(truth, float), np.asarray(source_index)
    if not (len(m) == len(t) == len(src)):
        raise ValueError("`scores`, `truth` and `source_index` must have equal lengths")
    rho, win = _stats(m, t, src)
    ids = np.unique(src)
    members = {s: np.flatnonzero(src == s) for s in ids}
    rng = np.random.default_rng(seed)
    boot = []
    for _ in range(n_bootstrap):
        draw = rng.choice(ids, size=len(ids), replace=True)
        rows = np.concatenate([members[s] for s in draw])
        labels = np.concatenate([np.full(len(members[s]), k) for k, s in enumerate(draw)])
        try:
            boot.append(_stats(m[rows], t[rows], labels))
        except ValueError:
            continue  # a draw without a usable pair
    lo, hi = percentile_interval(np.asarray(boot, float).reshape(-1, 2), confidence, ignore_nan=True)
    return {
        "spearman": Correlation(float(rho), float(lo[0]), float(hi[0])),
        "winrate": Correlation(float(win), float(lo[1]), float(hi[1])),
    }
