"""The order the model reads the documents in: groups interleaved, the smallest group first.

A language model summarizing a list of documents gives the first ones more room, and the
documents of a set usually come grouped or in their source's order (five five-star reviews,
then the one complaint). ``interleave_groups`` changes only that order: one document of each
group in turn, the group with the fewest documents first (ties: the group seen first), each
group's documents in their own order, documents without a group last. Every document stays
and none is changed, so a summary of the reordered set is a summary of the same sources; what
changes is which group's documents open the prompt.
"""

from __future__ import annotations

import dataclasses
from itertools import zip_longest

from ..evaluation.data.schema import Document, Example

#: The recipe name of plain beam search over the interleaved documents among reranked candidates (demo:
#: ``DemoConfig.interleave``).
INTERLEAVED_RECIPE = "beam+interleaved"


def interleave_groups(example: Example) -> Example:
    """The example with its documents interleaved by group (see the module docstring).

    >>> from evenhand.evaluation.data.schema import Document, Example
    >>> ex = Example("x", [Document(t, g) for t, g in (("a", "5"), ("b", "5"), ("c", "5"), ("d", "1"),
    ...                                                  ("e", "4"), ("f", "4"), ("g", None))])
    >>> [d.text for d in interleave_groups(ex).documents]
    ['d', 'e', 'a', 'f', 'b', 'c', 'g']
    """
    groups: dict[str, list[Document]] = {}
    ungrouped = []
    for doc in example.documents:
        if doc.group is None:
            ungrouped.append(doc)
        else:
            groups.setdefault(doc.group, []).append(doc)
    first = {g: i for i, g in enumerate(groups)}
    ordered = sorted(groups.values(), key=lambda docs: (len(docs), first[docs[0].group or ""]))
    docs = [d for round_ in zip_longest(*ordered) for d in round_ if d is not None]
    return dataclasses.replace(example, documents=[*docs, *ungrouped])
