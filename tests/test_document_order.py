"""decoding.document_order: the documents interleaved by group, the smallest group first."""

from __future__ import annotations

from evenhand.decoding.document_order import interleave_groups
from evenhand.evaluation.data.schema import Document, Example


def test_groups_take_turns_smallest_first_and_nothing_is_lost():
    docs = [Document(t, g) for t, g in (("a", "5"), ("b", "5"), ("c", "5"), ("d", "1"), ("e", "4"), ("f", "4"),
                                         ("g", None), ("h", "2"))]
    ex = Example("x", docs, attribute="rating", group_values=["1", "2", "3", "4", "5"], references=["r"])
    out = interleave_groups(ex)
    # sizes: 5 -> 3, 1 -> 1, 4 -> 2, 2 -> 1; ties (1 and 2, one each) by first appearance: 1 before 2
    assert [d.text for d in out.documents] == ["d", "h", "e", "a", "f", "b", "c", "g"]
    assert sorted(out.documents, key=lambda d: d.text) == sorted(docs, key=lambda d: d.text)  # same documents
    assert (out.id, out.attribute, out.group_values, out.references) == (ex.id, ex.attribute, ex.group_values,
                                                                         ex.references)
    assert [d.text for d in ex.documents] == list("abcdefgh")  # the input is not changed


def test_one_group_or_none_keeps_the_order():
    same = Example("x", [Document(t, "5") for t in "abc"])
    assert [d.text for d in interleave_groups(same).documents] == ["a", "b", "c"]
    ungrouped = Example("y", [Document(t, None) for t in "abc"])
    assert [d.text for d in interleave_groups(ungrouped).documents] == ["a", "b", "c"]
