"""Loaders for the supported data formats, all returning ``list[Example]``.

Formats (chosen by ``load_examples`` from the file's content and suffix):

- FairSumm PerspectiveSumm JSON: a list of samples with ``units``/``value_mapping``.
- TheFlipSide JSON: a list of records with ``topic``/``stance``/``input``/``document``.
- Generic JSONL: one example per line, ``{"id", "documents": [{"text", "group"}], ...}``
  (documents may also be plain strings).
- Generic CSV: one document per row with columns ``example_id``, ``text`` and
  optional ``group``; rows of one example are consecutive or not, order kept.
- A ``datasets.Dataset`` with the generic JSONL columns (``from_dataset``).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .schema import DataError, Document, Example

_EXAMPLE_FIELDS = (
    "id", "documents", "attribute", "group_values", "instruction", "prompt",
    "references", "target", "meta",
)


def _group(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def example_from_dict(record: Mapping[str, Any], where: str, index: int) -> Example:
    """Build and validate an Example from a generic record; ``where`` names it in errors."""
    if not isinstance(record, Mapping):
        raise DataError(f"{where}: expected a JSON object, got {type(record).__name__}")
    unknown = set(record) - set(_EXAMPLE_FIELDS) - {"summary"}
    if unknown:
        raise DataError(
            f"{where}: unknown field(s) {sorted(unknown)}; allowed: {', '.join(_EXAMPLE_FIELDS)}"
        )
    if "documents" not in record:
        raise DataError(f"{where}: missing field `documents` (a list of {{\"text\", \"group\"}})")
    raw_docs = record["documents"]
    if not isinstance(raw_docs, list):
        raise DataError(f"{where}: field `documents` must be a list, got {type(raw_docs).__name__}")
    docs = []
    for j, raw in enumerate(raw_docs):
        if isinstance(raw, str):
            docs.append(Document(raw))
            continue
        if not isinstance(raw, Mapping) or "text" not in raw:
            raise DataError(f"{where}: `documents[{j}]` is missing field `text`")
        docs.append(Document(raw["text"], _group(raw.get("group"))))
    references = record.get("references") or []
    if isinstance(references, str):
        references = [references]
    values = record.get("group_values")
    example = Example(
        id=str(record.get("id", index)),
        documents=docs,
        attribute=record.get("attribute"),
        group_values=[str(v) for v in values] if values is not None else None,
        instruction=record.get("instruction"),
        prompt=record.get("prompt"),
        references=list(references),
        target=_group(record.get("target")),
        meta=dict(record.get("meta") or {}),
    )
    return example.validate(where)


def load_jsonl(path: str | Path) -> list[Example]:
    """Generic JSONL: one example per non-empty line."""
    from .jsonl import iter_jsonl

    path = Path(path)
    examples = [
        example_from_dict(record, f"{path}:{lineno}", lineno - 1)
        for lineno, record in iter_jsonl(path)
    ]
    return _unique(examples, path)


def load_csv(path: str | Path) -> list[Example]:
    """Generic CSV: one document per row (``example_id``, ``text``, optional ``group``)."""
    path = Path(path)
    grouped: dict[str, list[Document]] = {}
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        columns = set(reader.fieldnames or [])
        for column in ("example_id", "text"):
            if column not in columns:
                raise DataError(
                    f"{path}: missing column `{column}`; a CSV needs `example_id`, `text` "
                    "and optionally `group`"
                )
        for lineno, row in enumerate(reader, start=2):
            text = row.get("text") or ""
            if not text.strip():
                raise DataError(f"{path}:{lineno}: field `text` is empty")
            doc = Document(text, _group(row.get("group")))
            grouped.setdefault(row["example_id"], []).append(doc)
    return [Example(id=k, documents=v).validate(str(path)) for k, v in grouped.items()]


def load_fairsumm(path: str | Path) -> list[Example]:
    """FairSumm PerspectiveSumm JSON (``amazon_gold.json``, ``yelp_gold.json``)."""
    path = Path(path)
    data = _read_json(path)
    examples = []
    for i, sample in enumerate(data):
        where = f"{path}[{i}]"
        for key in ("units", "value_mapping"):
            if key not in sample:
                raise DataError(f"{where}: missing field `{key}` (FairSumm format)")
        mapping = sample["value_mapping"]
        if len(mapping) != 1:
            raise DataError(f"{where}: `value_mapping` must hold one attribute, got {list(mapping)}")
        attribute, values = next(iter(mapping.items()))
        docs = []
        for j, unit in enumerate(sample["units"]):
            if "text" not in unit:
                raise DataError(f"{where}: `units[{j}]` is missing field `text`")
            value = (unit.get("value") or {}).get(attribute)
            docs.append(Document(unit["text"], _group(value)))
        meta = dict(sample.get("meta") or {})
        examples.append(
            Example(
                id=f"{path.stem}-{i}",
                documents=docs,
                attribute=attribute,
                group_values=[str(v) for v in values],
                references=list(sample.get("gold_summary") or []),
                meta=meta,
            ).validate(where)
        )
    return examples


_FLIPSIDE_SPLIT = re.compile(r"^(Left|Right):\s*$", re.MULTILINE)


def load_theflipside(path: str | Path, use_prompt: bool = True) -> list[Example]:
    """TheFlipSide perspective test set: two documents (left, right), target = stance.

    The articles are parsed out of the paper's zero-shot prompt (``input``), which
    is kept as the example's ``prompt`` when ``use_prompt`` (the paper's setting).
    """
    path = Path(path)
    data = _read_json(path)
    examples = []
    for i, record in enumerate(data):
        where = f"{path}[{i}]"
        for key in ("topic", "stance", "input", "document"):
            if key not in record:
                raise DataError(f"{where}: missing field `{key}` (TheFlipSide format)")
        parts = _FLIPSIDE_SPLIT.split(record["input"])
        docs = [
            Document(parts[k + 1].strip(), parts[k].lower())
            for k in range(1, len(parts) - 1, 2)
            if parts[k + 1].strip()
        ]
        if not docs:
            docs = [Document(record["document"], record["stance"])]
        examples.append(
            Example(
                id=f"{path.stem}-{i}",
                documents=docs,
                attribute="stance",
                group_values=["left", "right"],
                prompt=record["input"] if use_prompt else None,
                target=record["stance"],
                meta={"topic": record["topic"], "document": record["document"]},
            ).validate(where)
        )
    return examples


def from_dataset(dataset: Iterable[Mapping[str, Any]]) -> list[Example]:
    """Examples from a ``datasets.Dataset`` (or any iterable of generic records)."""
    return [example_from_dict(dict(r), f"dataset[{i}]", i) for i, r in enumerate(dataset)]


def _read_json(path: Path) -> list[Any]:
    from .files import read_utf8

    try:
        data = json.loads(read_utf8(path))
    except json.JSONDecodeError as err:
        raise DataError(f"{path}: invalid JSON at line {err.lineno} ({err.msg})") from None
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of samples, got {type(data).__name__}")
    return data


def _unique(examples: list[Example], path: Path) -> list[Example]:
    seen: set[str] = set()
    for ex in examples:
        if ex.id in seen:
            raise DataError(f"{path}: duplicate example id {ex.id!r}; ids must be unique")
        seen.add(ex.id)
    return examples


def detect_format(path: Path) -> str:
    """``jsonl``, ``csv``, ``fairsumm`` or ``theflipside`` from the suffix and first record."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    if suffix == ".json":
        head = path.read_text(encoding="utf-8", errors="replace")[:20000]
        if '"units"' in head and '"value_mapping"' in head:
            return "fairsumm"
        if '"stance"' in head and '"topic"' in head:
            return "theflipside"
        raise DataError(
            f"{path}: unrecognized JSON layout; use JSONL (one example per line) or the "
            "FairSumm / TheFlipSide formats"
        )
    raise DataError(f"{path}: unknown file type {suffix!r}; use .jsonl, .csv or .json")


LOADERS = {
    "jsonl": load_jsonl,
    "csv": load_csv,
    "fairsumm": load_fairsumm,
    "theflipside": load_theflipside,
}


def load_examples(path: str | Path, format: str | None = None) -> list[Example]:
    """Load examples from ``path``; ``format`` one of LOADERS' keys, or detected."""
    from .files import read_utf8

    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file; check the path given to --data")
    fmt = format or detect_format(path)
    if fmt not in LOADERS:
        raise DataError(f"unknown data format {fmt!r}; available: {', '.join(LOADERS)}")
    read_utf8(path)  # non-UTF-8 bytes: one error naming the file and line, from every loader
    examples = LOADERS[fmt](path)
    if not examples:
        raise DataError(f"{path}: holds no examples; give a file with at least one")
    return examples
