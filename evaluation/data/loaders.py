"""Loaders for the supported data formats, all returning ``list[Example]``.

Formats (chosen by ``load_examples`` from the file's content and suffix):

- FairSumm PerspectiveSumm JSON: a list of samples with ``units``/``value_mapping``.
- TheFlipSide JSON: a list of records with ``topic``/``stance``/``input``/``document``.
- Generic JSONL: one example per line, ``{"id", "documents": [{"text", "group"}], ...}``
  (documents may also be plain strings).
- Generic CSV: one document per row with columns ``example_id``, ``text`` and the
  groups (a column ``group``, one named by ``--attribute``, or one named after a
  known attribute such as ``rating``); rows of one example are consecutive or not,
  order kept.
- A ``datasets.Dataset`` with the generic JSONL columns (``from_dataset``).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..io.jsonl import write_jsonl
from .checks import expect, json_type
from .schema import Document, Example

_EXAMPLE_FIELDS = (
    "id", "documents", "attribute", "group_values", "instruction", "prompt",
    "references", "target", "meta",
)


def _group(value: Any, where: str = "", field: str = "group") -> str | None:
    """A group label: a string or a number (ratings), as a string; null or ``""`` is no label."""
    if value is None or value == "":
        return None
    expect(value, (str, int, float), where, field, "a string or a number (a group label)")
    return str(value)


def _text(value: Any, where: str, field: str) -> str | None:
    """An optional text field: a string or null."""
    return expect(value, (str, type(None)), where, field, "a string or null")


def _strings(value: Any, where: str, field: str, numbers: bool = False) -> list[str]:
    """A list of strings (``numbers``: or numbers, as strings); a bare string is no list."""
    expect(value, list, where, field, "a list of strings")
    kinds: tuple[type, ...] = (str, int, float) if numbers else (str,)
    for i, item in enumerate(value):
        expect(item, kinds, where, f"{field}[{i}]", "a string or a number" if numbers else "a string")
    return [str(v) for v in value]


def example_from_dict(record: Mapping[str, Any], where: str, index: int) -> Example:
    """Build and validate an Example from a generic record; ``where`` names it in errors.

    Every field is checked with its JSON type (a string where text is expected,
    a list of strings for ``references`` and ``group_values``, an object for
    ``meta``...); a wrong type raises DataError naming ``where`` and the field.
    """
    if not isinstance(record, Mapping):
        raise DataError(f"{where}: expected a JSON object, got {json_type(record)}")
    unknown = set(record) - set(_EXAMPLE_FIELDS) - {"summary"}
    if unknown:
        raise DataError(
            f"{where}: unknown field(s) {sorted(unknown)}; allowed: {', '.join(_EXAMPLE_FIELDS)}"
        )
    if "documents" not in record:
        raise DataError(f"{where}: missing field `documents` (a list of {{\"text\", \"group\"}})")
    raw_docs = record["documents"]
    if not isinstance(raw_docs, list):
        raise DataError(f"{where}: field `documents` must be a list, got {json_type(raw_docs)}")
    docs = []
    for j, raw in enumerate(raw_docs):
        if isinstance(raw, str):
            docs.append(Document(raw))
            continue
        expect(raw, dict, where, f"documents[{j}]", 'an object {"text", "group"} or a string')
        if "text" not in raw:
            raise DataError(f"{where}: `documents[{j}]` is missing field `text`")
        text = expect(raw["text"], str, where, f"documents[{j}].text")
        docs.append(Document(text, _group(raw.get("group"), where, f"documents[{j}].group")))
    raw_id = record.get("id", index)
    expect(raw_id, (str, int), where, "id", "a string or an integer")
    references = record.get("references")
    if isinstance(references, str):
        references = [references]
    references = _strings(references, where, "references") if references is not None else []
    values = record.get("group_values")
    meta = record.get("meta")
    expect(meta, (dict, type(None)), where, "meta", "an object")
    example = Example(
        id=str(raw_id),
        documents=docs,
        attribute=_text(record.get("attribute"), where, "attribute"),
        group_values=_strings(values, where, "group_values", numbers=True) if values is not None else None,
        instruction=_text(record.get("instruction"), where, "instruction"),
        prompt=_text(record.get("prompt"), where, "prompt"),
        references=references,
        target=_group(record.get("target"), where, "target"),
        meta=dict(meta or {}),
    )
    example.location = where
    return example.validate(where)


def load_jsonl(path: str | Path) -> list[Example]:
    """Generic JSONL: one example per non-empty line."""
    from ..io.jsonl import iter_jsonl

    path = Path(path)
    examples = [
        example_from_dict(record, f"{path}:{lineno}", lineno - 1)
        for lineno, record in iter_jsonl(path)
    ]
    return _unique(examples, path)


#: Attributes a CSV column may be named after (its cells are then the groups), as the prompt kinds know them.
KNOWN_ATTRIBUTES = ("rating", "sentiment", "speaker", "stance", "party", "gender")


def _csv_group_column(path: Path, columns: list[str], attribute: str | None) -> str | None:
    """The column holding the group labels: ``attribute``'s, else ``group``, else the one known attribute."""
    if attribute is not None and attribute in columns:
        return attribute
    if "group" in columns:
        return "group"
    if attribute is not None:
        raise DataError(
            f"{path}: no column `{attribute}` (--attribute) and no `group` column; columns: "
            f"{', '.join(columns)}; name the column that holds the groups with --attribute"
        )
    known = [c for c in columns if c.strip().lower() in KNOWN_ATTRIBUTES]
    if len(known) > 1:
        raise DataError(
            f"{path}: columns {' and '.join(f'`{c}`' for c in known)} could each hold the groups; "
            f"name one with --attribute (e.g. --attribute {known[0]})"
        )
    return known[0] if known else None


def load_csv(path: str | Path, attribute: str | None = None) -> list[Example]:
    """Generic CSV: one document per row (``example_id``, ``text``, and the groups).

    The groups (ratings, speakers...) are in the column named by ``attribute``
    (``--attribute``), else in a column ``group``, else in the one column named after a
    known attribute (``rating``, ``sentiment``, ``speaker``, ``stance``, ``party``,
    ``gender``). The attribute's name is ``attribute``, else that column's name, else an
    optional column ``attribute`` (its value on the example's first row). Other columns
    are ignored with one warning naming them.

    A UTF-8 byte-order mark (what spreadsheets write) is skipped; a malformed row
    (a NUL byte, a field past the csv module's size limit) names its line.
    """
    import warnings

    path = Path(path)
    grouped: dict[str, list[Document]] = {}
    first_line: dict[str, int] = {}
    attributes: dict[str, str | None] = {}
    lineno = 1
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f)
            header = list(reader.fieldnames or [])
            columns = set(header)
            for column in ("example_id", "text"):
                if column not in columns:
                    raise DataError(
                        f"{path}: missing column `{column}`; a CSV needs `example_id`, `text` "
                        "and optionally `group` (or a column named by --attribute)"
                    )
            group_column = _csv_group_column(path, header, attribute)
            named = attribute or (group_column if group_column not in (None, "group") else None)
            ignored = [c for c in header if c not in {"example_id", "text", "attribute", group_column}]
            if ignored:
                warnings.warn(
                    f"{path}: column(s) {', '.join(ignored)} ignored; a CSV reads example_id, text, "
                    f"{group_column or 'group'} (the groups) and attribute; name the groups' column "
                    "with --attribute", UserWarning, stacklevel=2,
                )
            for row in reader:
                lineno = reader.line_num
                if None in row:
                    raise DataError(f"{path}:{lineno}: more cells than the header's {len(columns)} columns")
                example_id = (row.get("example_id") or "").strip()
                if not example_id:
                    raise DataError(f"{path}:{lineno}: field `example_id` is empty")
                text = row.get("text") or ""
                if not text.strip():
                    raise DataError(f"{path}:{lineno}: field `text` is empty")
                group = row.get(group_column) if group_column else None
                doc = Document(text, _group(group.strip() if isinstance(group, str) else group))
                grouped.setdefault(row["example_id"], []).append(doc)
                first_line.setdefault(row["example_id"], lineno)
                attributes.setdefault(row["example_id"], named or (row.get("attribute") or "").strip() or None)
    except csv.Error as err:
        raise DataError(f"{path}:{lineno + 1}: malformed CSV ({err})") from None
    examples = []
    for k, docs in grouped.items():
        example = Example(id=k, documents=docs, attribute=attributes[k])
        example.location = f"{path}:{first_line[k]}"
        examples.append(example.validate(example.location))
    return _unique(examples, path)  # ids that differ only by invisible characters


def load_fairsumm(path: str | Path) -> list[Example]:
    """FairSumm PerspectiveSumm JSON (``amazon_gold.json``, ``yelp_gold.json``).

    Each sample's fields are checked with their types (``units`` a list of
    ``{"text", "value": {attribute: value}}``, ``value_mapping`` one attribute
    with a list of values, ``gold_summary`` a list of strings); errors name the
    file and the JSON path (``yelp_gold.json[3].units[2].text``).
    """
    path = Path(path)
    data = _read_json(path)
    examples = []
    for i, sample in enumerate(data):
        where = f"{path}[{i}]"
        expect(sample, dict, str(path), f"[{i}]", "an object (a FairSumm sample)")
        for key in ("units", "value_mapping"):
            if key not in sample:
                raise DataError(f"{where}: missing field `{key}` (FairSumm format)")
        mapping = expect(sample["value_mapping"], dict, where, "value_mapping", "an object {attribute: [values]}")
        if len(mapping) != 1:
            raise DataError(f"{where}: `value_mapping` must hold one attribute, got {list(mapping)}")
        attribute, values = next(iter(mapping.items()))
        values = _strings(values, where, f"value_mapping.{attribute}", numbers=True)
        units = expect(sample["units"], list, where, "units", "a list of {\"text\", \"value\"} objects")
        docs = []
        for j, unit in enumerate(units):
            expect(unit, dict, where, f"units[{j}]", 'an object {"text", "value"}')
            if "text" not in unit:
                raise DataError(f"{where}: `units[{j}]` is missing field `text`")
            text = expect(unit["text"], str, where, f"units[{j}].text")
            value = expect(unit.get("value"), (dict, type(None)), where, f"units[{j}].value",
                           "an object {attribute: value}")
            docs.append(Document(text, _group((value or {}).get(attribute), where, f"units[{j}].value.{attribute}")))
        gold = sample.get("gold_summary")
        references = _strings(gold, where, "gold_summary") if gold is not None else []
        meta = expect(sample.get("meta"), (dict, type(None)), where, "meta", "an object")
        example = Example(
            id=f"{path.stem}-{i}",
            documents=docs,
            attribute=str(attribute),
            group_values=values,
            references=references,
            meta=dict(meta or {}),
        )
        example.location = where
        examples.append(example.validate(where))
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
        expect(record, dict, str(path), f"[{i}]", "an object (a TheFlipSide record)")
        for key in ("topic", "stance", "input", "document"):
            if key not in record:
                raise DataError(f"{where}: missing field `{key}` (TheFlipSide format)")
            expect(record[key], str, where, key)
        if record["stance"] not in ("left", "right"):
            raise DataError(f"{where}: `stance` must be 'left' or 'right', got {record['stance']!r}")
        parts = _FLIPSIDE_SPLIT.split(record["input"])
        docs = [
            Document(parts[k + 1].strip(), parts[k].lower())
            for k in range(1, len(parts) - 1, 2)
            if parts[k + 1].strip()
        ]
        if not docs:
            docs = [Document(record["document"], record["stance"])]
        example = Example(
            id=f"{path.stem}-{i}",
            documents=docs,
            attribute="stance",
            group_values=["left", "right"],
            prompt=record["input"] if use_prompt else None,
            target=record["stance"],
            meta={"topic": record["topic"], "document": record["document"]},
        )
        example.location = where
        examples.append(example.validate(where))
    return examples


def from_dataset(dataset: Iterable[Mapping[str, Any]]) -> list[Example]:
    """Examples from a ``datasets.Dataset`` (or any iterable of generic records)."""
    return [example_from_dict(dict(r), f"dataset[{i}]", i) for i, r in enumerate(dataset)]


def _read_json(path: Path) -> list[Any]:
    from ..io.parsing import parse_json
    from ..io.utf8 import read_utf8

    data = parse_json(read_utf8(path), str(path))
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of samples, got {json_type(data)}")
    return data


def _unique(examples: list[Example], path: Path) -> list[Example]:
    from ..io.limits import visible

    seen: dict[str, str] = {}
    for ex in examples:
        if ex.id in seen:
            raise DataError(f"{path}: duplicate example id {ex.id!r}; ids must be unique")
        shown = visible(ex.id)
        if shown in seen:
            raise DataError(f"{path}: example ids {seen[shown]!r} and {ex.id!r} differ only by invisible "
                            "characters, so they print the same; make the ids differ visibly")
        seen[ex.id] = ex.id
        seen.setdefault(shown, ex.id)
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


def load_examples(path: str | Path, format: str | None = None, attribute: str | None = None) -> list[Example]:
    """Load examples from ``path``; ``format`` one of LOADERS' keys, or detected.

    ``attribute`` (``--attribute``) names what the groups are (``rating``, ``speaker``...):
    a CSV's groups column (``load_csv``), and the attribute of every example that has none;
    an example whose own attribute differs is an error naming it.
    """
    from ..io.utf8 import read_utf8

    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file; check the path given to --data")
    fmt = format or detect_format(path)
    if fmt not in LOADERS:
        raise DataError(f"unknown data format {fmt!r}; available: {', '.join(LOADERS)}")
    read_utf8(path)  # non-UTF-8 bytes: one error naming the file and line, from every loader
    examples = load_csv(path, attribute) if fmt == "csv" else LOADERS[fmt](path)
    if not examples:
        raise DataError(f"{path}: holds no examples; give a file with at least one")
    if attribute is not None:
        attribute = attribute.strip()
        if not attribute:
            raise DataError("--attribute is empty; give the attribute's name (rating, speaker...)")
        for ex in examples:
            if ex.attribute is None:
                ex.attribute = attribute
            elif ex.attribute != attribute:
                raise DataError(
                    f"{ex.where(str(path))}: the example's attribute is {ex.attribute!r} but --attribute "
                    f"is {attribute!r}; drop --attribute or correct the file"
                )
    return examples


def write_examples(path: str | Path, examples: Iterable[Example]) -> Path:
    """Examples in the generic JSONL format (readable by ``load_examples``)."""
    return write_jsonl(path, (ex.to_dict() for ex in examples))
