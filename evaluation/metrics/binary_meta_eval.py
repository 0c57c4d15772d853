"""Meta-evaluation on binary consistency labels: SummEdits' protocol (Laban et al. 2023), FRANK-style files.

A scorer's score becomes a yes/no verdict through a threshold: a summary is
predicted consistent when ``score >= threshold``. The published SummEdits
protocol for a non-LLM scorer, per domain:

1. choose the threshold on the ``evaluation`` split: the one maximizing
   balanced accuracy there (:func:`choose_threshold`);
2. report balanced accuracy, ``(TPR + TNR) / 2`` with "consistent" (label 1)
   as the positive class, on the ``test`` split at that threshold
   (:func:`evaluate_protocol`).

ROC AUC (threshold-free; ties count one half) is reported beside it.

Threshold candidates and tie-breaking (deterministic, documented): the lowest
evaluation score (every row predicted consistent, balanced accuracy 0.5), and
the midpoint between each pair of consecutive distinct evaluation scores. The
candidate with the highest balanced accuracy wins; among equals, the lowest
threshold. Balanced accuracies are compared exactly (as integer numerators
``TP * N + TN * P``), so float rounding cannot reorder tied candidates.

Input (:func:`load_labelled`): a JSON list or a ``.jsonl`` file of rows with a
document (``doc``, ``document``, ``article`` or ``source``; the first present),
a summary (``summary`` or ``claim``), ``label`` (1 / "1" / true: consistent;
0 / "0" / false: inconsistent), ``split`` (``evaluation``, or its aliases
``validation``/``valid``/``val``/``dev``; or ``test``), and optionally ``id``
and ``domain`` (default: the file name without ``.json``/``.jsonl`` and a
leading ``summedits_``). SummEdits files read as they are; FRANK's
``Factuality`` must first be made binary (1.0 -> 1, below -> 0, as SummaC and
AlignScore do).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DataError

#: The splits of the protocol: the threshold is chosen on the first, reported on the second.
SPLITS = ("evaluation", "test")
SPLIT_ALIASES = {"evaluation": "evaluation", "validation": "evaluation", "valid": "evaluation",
                 "val": "evaluation", "dev": "evaluation", "test": "test"}
DOCUMENT_FIELDS = ("doc", "document", "article", "source")
SUMMARY_FIELDS = ("summary", "claim")
LABELS = {1: 1, 0: 0, "1": 1, "0": 0}  # true / false and 1.0 / 0.0 hash as 1 / 0

#: Published balanced accuracy (percent) on SummEdits' test split, factualNLG README (commit 0da1dfa).
PUBLISHED: dict[str, dict[str, float]] = {
    "DAE": {"news": 60.9, "sales_email": 53.6, "qmsumm": 52.0, "ectsum": 58.3},
    "SummaC-Conv": {"news": 61.9, "sales_email": 53.7, "qmsumm": 53.5, "ectsum": 57.9},
    "QAFactEval": {"news": 74.4, "sales_email": 63.6, "qmsumm": 62.4, "ectsum": 72.6},
    "GPT-4": {"news": 83.3, "sales_email": 79.5, "qmsumm": 79.6, "ectsum": 87.0},
    "human": {"news": 90.0, "sales_email": 87.4, "qmsumm": 90.7, "ectsum": 95.4},
}


def _arrays(scores: Sequence[float], labels: Sequence[int]) -> tuple[Any, Any]:
    import numpy as np

    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=int)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError(f"`scores` and `labels` must be equal-length lists, got {s.shape} and {y.shape}")
    if not np.isfinite(s).all():
        raise ValueError("`scores` must be finite numbers")
    if not set(np.unique(y).tolist()) <= {0, 1}:
        raise ValueError("`labels` must be 0 (inconsistent) or 1 (consistent)")
    if y.sum() == 0 or y.sum() == len(y):
        raise ValueError("`labels` need both classes (0 and 1): balanced accuracy and ROC AUC are undefined otherwise")
    return s, y


def balanced_accuracy(scores: Sequence[float], labels: Sequence[int], threshold: float) -> float:
    """``(TPR + TNR) / 2`` predicting consistent (1) when ``score >= threshold``."""
    s, y = _arrays(scores, labels)
    predicted = s >= threshold
    tpr = float((predicted & (y == 1)).sum()) / float((y == 1).sum())
    tnr = float((~predicted & (y == 0)).sum()) / float((y == 0).sum())
    return (tpr + tnr) / 2


def choose_threshold(scores: Sequence[float], labels: Sequence[int]) -> float:
    """The threshold maximizing balanced accuracy on (``scores``, ``labels``); ties: the lowest.

    Candidates: the lowest score and the midpoints between consecutive distinct
    scores (module docstring).
    """
    import numpy as np

    s, y = _arrays(scores, labels)
    order = np.argsort(s, kind="stable")
    s, y = s[order], y[order]
    n_pos, n_neg = int(y.sum()), int(len(y) - y.sum())
    # cut k: rows k.. predicted consistent; valid where k == 0 or the score changes at k
    pos_below = np.concatenate([[0], np.cumsum(y)])[:-1]  # positives before position k
    tp = n_pos - pos_below
    tn = np.arange(len(y)) - pos_below  # negatives before k
    numerator = tp * n_neg + tn * n_pos  # balanced accuracy * 2 * P * N, exact
    valid = np.concatenate([[True], s[1:] > s[:-1]])
    numerator = np.where(valid, numerator, -1)
    k = int(np.argmax(numerator))  # first maximum: the lowest threshold among ties
    if k == 0:
        return float(s[0])
    mid = float((s[k - 1] + s[k]) / 2)
    return mid if s[k - 1] < mid <= s[k] else float(s[k])  # adjacent floats: the midpoint rounds down


def roc_auc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under the ROC curve of ``scores`` for label 1 (Mann-Whitney U / (P * N), ties count 1/2)."""
    import numpy as np

    s, y = _arrays(scores, labels)
    _, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
    upper = np.cumsum(counts)
    mid_rank = upper - (counts - 1) / 2  # 1-based average rank of each distinct value
    ranks = mid_rank[inverse]
    n_pos, n_neg = int(y.sum()), int(len(y) - y.sum())
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


@dataclass(frozen=True)
class ProtocolResult:
    """One scorer on one domain: the threshold from evaluation, balanced accuracy and ROC AUC per split.

    The ``test_*`` fields are None when only the evaluation split was scored.
    ``evaluation_balanced_accuracy`` is measured where the threshold was chosen (optimistic).
    """

    threshold: float
    evaluation_balanced_accuracy: float
    evaluation_roc_auc: float
    n_evaluation: int
    test_balanced_accuracy: float | None = None
    test_roc_auc: float | None = None
    n_test: int = 0

    def as_row(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict (test fields left out when absent)."""
        row = {k: v for k, v in self.__dict__.items() if v is not None}
        if not self.n_test:
            row.pop("n_test")
        return row


def evaluate_protocol(
    evaluation_scores: Sequence[float], evaluation_labels: Sequence[int],
    test_scores: Sequence[float] | None = None, test_labels: Sequence[int] | None = None,
) -> ProtocolResult:
    """SummEdits' protocol: threshold chosen on evaluation, balanced accuracy and ROC AUC on test.

    Pass only the evaluation split to choose settings without touching test.
    Labels: 1 consistent, 0 inconsistent; each split needs both.
    """
    threshold = choose_threshold(evaluation_scores, evaluation_labels)
    result = ProtocolResult(
        threshold=threshold,
        evaluation_balanced_accuracy=balanced_accuracy(evaluation_scores, evaluation_labels, threshold),
        evaluation_roc_auc=roc_auc(evaluation_scores, evaluation_labels),
        n_evaluation=len(evaluation_scores),
    )
    if test_scores is None or test_labels is None:
        return result
    return ProtocolResult(
        **{**result.__dict__, "test_balanced_accuracy": balanced_accuracy(test_scores, test_labels, threshold),
           "test_roc_auc": roc_auc(test_scores, test_labels), "n_test": len(test_scores)},
    )


@dataclass
class LabelledSet:
    """Binary-labelled (document, summary) rows of one or more files, in file order."""

    ids: list[str] = field(default_factory=list)
    documents: list[str] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    splits: list[str] = field(default_factory=list)
    domains: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.summaries)

    def domain_names(self) -> list[str]:
        """The domains in order of first appearance."""
        return list(dict.fromkeys(self.domains))

    def rows(self, domain: str, split: str | None = None) -> list[int]:
        """Indices of the rows of ``domain`` (and ``split`` when given), in file order."""
        return [i for i, (d, s) in enumerate(zip(self.domains, self.splits))
                if d == domain and (split is None or s == split)]

    def rows_of_split(self, split: str) -> list[int]:
        """Indices of every row of ``split`` (all domains), in file order."""
        return [i for i, s in enumerate(self.splits) if s == split]

    def select(self, keep: Sequence[int]) -> LabelledSet:
        """A new set holding only the rows ``keep``, in that order."""
        return LabelledSet(*([getattr(self, f)[i] for i in keep]
                             for f in ("ids", "documents", "summaries", "labels", "splits", "domains")))


def evaluate_labelled(
    data: LabelledSet, scores: Sequence[float], splits: Sequence[str] = SPLITS,
) -> dict[str, ProtocolResult]:
    """Per domain of ``data``, :func:`evaluate_protocol` of ``scores`` (one per row of ``data``, in order).

    ``splits``: ``("evaluation", "test")`` (the published protocol) or ``("evaluation",)``
    to choose settings without touching test; rows of other splits are ignored.
    To score only the evaluation rows: ``data.select(data.rows_of_split("evaluation"))``.
    """
    if len(scores) != len(data):
        raise ValueError(f"{len(scores)} scores for {len(data)} rows; give one score per row, in order")
    if tuple(splits) not in (SPLITS, SPLITS[:1]):
        raise ValueError(f"`splits` must be {SPLITS} or {SPLITS[:1]}, got {tuple(splits)}")
    out = {}
    for domain in data.domain_names():
        parts = [([scores[i] for i in data.rows(domain, s)], [data.labels[i] for i in data.rows(domain, s)])
                 for s in splits]
        out[domain] = evaluate_protocol(*parts[0], *(parts[1] if len(parts) > 1 else (None, None)))
    return out


def domain_of(path: str | Path) -> str:
    """A file's default domain: its name without the suffix and a leading ``summedits_``."""
    stem = Path(path).name.removesuffix(".jsonl").removesuffix(".json")
    return stem.removeprefix("summedits_")


def read_rows(path: str | Path, flag: str = "--data") -> list[tuple[str, Any]]:
    """``(where, row)`` for each row of a JSON list or a ``.jsonl`` file."""
    from ..io.parsing import parse_json
    from ..io.utf8 import read_utf8

    path = Path(path)
    if path.suffix == ".jsonl":
        from ..io.jsonl import iter_jsonl

        if not path.is_file():
            raise DataError(f"{flag} {path}: no such file")
        return [(f"{path}:{lineno}", row) for lineno, row in iter_jsonl(path)]
    data = parse_json(read_utf8(path, flag), str(path))
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of rows (or a .jsonl file), got a JSON {type(data).__name__}")
    return [(f"{path}[{i}]", row) for i, row in enumerate(data)]


def _field(row: dict[str, Any], names: Sequence[str], where: str) -> str:
    from ..io.limits import check_text_size

    for name in names:
        if name in row:
            value = row[name]
            if not isinstance(value, str) or not value.strip():
                raise DataError(f"{where}: `{name}` must be a non-empty string")
            check_text_size(value, where, name)
            return value
    raise DataError(f"{where}: missing field `{names[0]}` (or {', '.join(f'`{n}`' for n in names[1:])})")


def load_labelled(paths: str | Path | Sequence[str | Path], flag: str = "--data") -> LabelledSet:
    """Read binary-labelled rows from one or more files; errors name the file, row and field."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    out = LabelledSet()
    for path in paths:
        rows = read_rows(path, flag)
        if not rows:
            raise DataError(f"{path}: holds no rows; each needs a document, `summary`, `label` and `split`")
        default_domain = domain_of(path)
        for n, (where, row) in enumerate(rows):
            if not isinstance(row, dict):
                raise DataError(f"{where}: expected an object with a document, `summary`, `label` and `split`")
            document = _field(row, DOCUMENT_FIELDS, where)
            summary = _field(row, SUMMARY_FIELDS, where)
            if "label" not in row:
                raise DataError(f"{where}: missing field `label` (1: consistent, 0: inconsistent)")
            label = row["label"]
            if isinstance(label, float) and label in (0.0, 1.0):
                label = int(label)
            if not isinstance(label, (str, int, bool)) or label not in LABELS:
                raise DataError(f"{where}: `label` is {label!r}; give 1 (consistent) or 0 (inconsistent) "
                                "(make graded scores such as FRANK's Factuality binary first: 1.0 -> 1, below -> 0)")
            split = row.get("split")
            if split is None:
                raise DataError(f"{where}: missing field `split`; give `evaluation` (the threshold is chosen "
                                "there) or `test` (balanced accuracy is reported there)")
            if not isinstance(split, str) or split.strip().lower() not in SPLIT_ALIASES:
                raise DataError(f"{where}: `split` is {split!r}; give `evaluation` (or validation, dev) or `test`")
            domain = row.get("domain", default_domain)
            if not isinstance(domain, str) or not domain.strip():
                raise DataError(f"{where}: `domain` must be a non-empty string")
            out.ids.append(str(row.get("id", n)))
            out.documents.append(document)
            out.summaries.append(summary)
            out.labels.append(LABELS[label])
            out.splits.append(SPLIT_ALIASES[split.strip().lower()])
            out.domains.append(domain)
    return out


def first_rows(data: LabelledSet, limit: int) -> LabelledSet:
    """The first ``limit`` rows of each domain and split, in file order."""
    keep = sorted(i for d in data.domain_names() for s in SPLITS for i in data.rows(d, s)[:limit])
    return data.select(keep)


def check_labelled(data: LabelledSet, splits: Sequence[str], where: str) -> None:
    """Refuse a domain whose ``splits`` lack a row or a class: balanced accuracy is undefined there."""
    for domain in data.domain_names():
        for split in splits:
            labels = {data.labels[i] for i in data.rows(domain, split)}
            if labels != {0, 1}:
                have = "no rows" if not labels else f"only label {labels.pop()}"
                raise DataError(
                    f"{where}: domain {domain!r} has {have} in split `{split}`; the protocol needs consistent (1) "
                    f"and inconsistent (0) rows in {' and '.join(splits)}"
                    + (" (or pass --split evaluation)" if split == "test" else "")
                )
