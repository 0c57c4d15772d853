"""The data schema: documents with optional group labels, grouped into examples.

A *document* is one unit of the source (a review, a tweet, an article, a
speaker turn) with an optional *group* label: the value of the example's
social attribute (rating ``"5"``, sentiment ``"neg"``, party ``"left"``,
speaker ``"Alice"``...). An *example* is what one summary is written for.
Group labels are always strings, so ratings 1..5 become ``"1"``..``"5"``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import DataError


@dataclass(frozen=True)
class Document:
    """One source unit.

    Args:
        text: the document's text; must be non-empty.
        group: the value of the example's attribute for this document, or None.
    """

    text: str
    group: str | None = None


@dataclass
class Example:
    """One multi-document summarization input.

    Args:
        id: unique identifier within its data set.
        documents: the source documents, in order.
        attribute: the social attribute the groups are values of (``rating``,
            ``sentiment``, ``party``, ``speaker``, ``stance``...), or None.
        group_values: every value the attribute can take, in a fixed order
            (FairSumm's ``value_mapping``); values without documents are kept
            so fairness metrics see them. Defaults to the groups present.
        instruction: an optional task instruction for the summarizer.
        prompt: an optional complete prompt that replaces the built one
            (TheFlipSide ships the paper's zero-shot prompt).
        references: reference summaries, possibly empty.
        target: a target perspective (TheFlipSide ``left``/``right``), or None.
        meta: anything else the source file carried.
    """

    id: str
    documents: list[Document]
    attribute: str | None = None
    group_values: list[str] | None = None
    instruction: str | None = None
    prompt: str | None = None
    references: list[str] = field(default_factory=list)
    target: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    #: Where the example was read (``data.jsonl:3``, ``yelp_gold.json[2]``), set by the loaders;
    #: not a field (never written out), used by errors found later (fairness, prompt length).
    location = ""

    def where(self, fallback: str = "") -> str:
        """The file:line the example came from, or ``fallback`` (``examples[3]``) when unknown."""
        return self.location or fallback

    @property
    def groups(self) -> list[str]:
        """Group values in their fixed order: ``group_values`` or order of first appearance."""
        if self.group_values is not None:
            return list(self.group_values)
        seen: dict[str, None] = {}
        for doc in self.documents:
            if doc.group is not None:
                seen.setdefault(doc.group, None)
        return list(seen)

    @property
    def labels(self) -> list[str | None]:
        """The group label of each document, in document order."""
        return [doc.group for doc in self.documents]

    @property
    def texts(self) -> list[str]:
        """The text of each document, in document order."""
        return [doc.text for doc in self.documents]

    def source_text(self, separator: str = "\n\n") -> str:
        """All document texts joined by ``separator``."""
        return separator.join(self.texts)

    def group_texts(self, separator: str = " ") -> dict[str, str]:
        """Per group value, its documents' texts joined (``""`` for a value without any)."""
        out = {g: [] for g in self.groups}
        for doc in self.documents:
            if doc.group is not None:
                out.setdefault(doc.group, []).append(doc.text)
        return {g: separator.join(ts) for g, ts in out.items()}

    def require_groups(self, where: str = "") -> list[str]:
        """Check the example is usable for group fairness; return its groups.

        Raises DataError when a document lacks a group label or fewer than two
        groups have documents.
        """
        loc = f"{where}: " if where else ""
        missing = [i for i, d in enumerate(self.documents) if d.group is None]
        if missing:
            raise DataError(
                f"{loc}example {self.id!r}: documents {missing[:5]} have no `group` label; "
                "fairness needs a group for every document (add a `group` field to each)"
            )
        present = {d.group for d in self.documents}
        if len(present) < 2:
            raise DataError(
                f"{loc}example {self.id!r}: only one group ({sorted(map(str, present))}) in `documents`; "
                "fairness across groups needs documents from at least two groups"
            )
        return self.groups

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict in the generic JSONL format read by ``load_examples``."""
        d = asdict(self)
        d["documents"] = [{"text": doc.text, "group": doc.group} for doc in self.documents]
        return {k: v for k, v in d.items() if v not in (None, [], {})}

    def validate(self, where: str = "") -> Example:
        """Raise DataError naming ``where`` and the field if the example is malformed."""
        loc = f"{where}: " if where else ""
        if not isinstance(self.id, str) or not self.id:
            raise DataError(f"{loc}field `id` must be a non-empty string, got {self.id!r}")
        if not self.documents:
            raise DataError(
                f"{loc}example {self.id!r}: field `documents` is empty; give at least one document"
            )
        from ..io.limits import check_text_size, is_blank

        for i, doc in enumerate(self.documents):
            if not isinstance(doc.text, str) or is_blank(doc.text):
                raise DataError(
                    f"{loc}example {self.id!r}: `documents[{i}].text` is empty (or only invisible characters); "
                    "every document needs non-empty text"
                )
            if doc.group is not None and not isinstance(doc.group, str):
                raise DataError(
                    f"{loc}example {self.id!r}: `documents[{i}].group` must be a string, "
                    f"got {type(doc.group).__name__}"
                )
        check_text_size(self.source_text(), f"{loc}example {self.id!r}", "documents")
        if self.group_values is not None:
            unknown = {d.group for d in self.documents if d.group is not None} - set(
                self.group_values
            )
            if unknown:
                raise DataError(
                    f"{loc}example {self.id!r}: groups {sorted(unknown)} are not in "
                    f"`group_values` {self.group_values}; add them there"
                )
        return self
