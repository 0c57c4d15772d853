"""How a summary names a group of documents by its label: the phrase that writes it (group-wise
summaries: "The five-star reviewers", "The supporters") and the aliases that read it (the checker:
"five-star", "supporters", "in favour" all name the ``favor`` group).

Ratings are named by their number ("five-star"); sentiment, stance and party labels by the table
``LABEL_NAMES``; any other label (a speaker's name) by itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from .numbers import number_word


@dataclass(frozen=True)
class LabelName:
    """The names of one known label: a phrase for one document and for several, and the lower-case
    phrases a summary may use for its group."""

    singular: str
    plural: str
    aliases: tuple[str, ...]


def _support(label: str) -> LabelName:
    return LabelName("supporter", "supporters", (label, "in favor", "in favour", "supporters", "proponents",
                                                 "advocates", "those for", "backers"))


#: Sentiment, stance and party labels -> their names.
LABEL_NAMES: dict[str, LabelName] = {
    "pos": LabelName("positive reviewer", "positive reviewers",
                     ("pos", "positive", "happy", "satisfied", "favourable", "favorable", "enthusiastic", "fans")),
    "neg": LabelName("negative reviewer", "negative reviewers",
                     ("neg", "negative", "unhappy", "dissatisfied", "critical", "critics", "disappointed",
                      "complaining")),
    "neu": LabelName("neutral reviewer", "neutral reviewers",
                     ("neu", "neutral", "mixed", "lukewarm", "middling", "ambivalent", "balanced")),
    "favor": _support("favor"),
    "favour": _support("favour"),
    "against": LabelName("opponent", "opponents",
                         ("against", "opponents", "critics", "sceptics", "skeptics", "those opposed",
                          "opposed")),
    "left": LabelName("left-leaning post", "left-leaning posts",
                      ("left-leaning", "left-wing", "the left", "liberal", "liberals", "progressive", "progressives",
                       "democrats", "democratic")),
    "right": LabelName("right-leaning post", "right-leaning posts",
                       ("right-leaning", "right-wing", "the right", "conservative", "conservatives", "republicans",
                        "republican")),
}


def rating_name(value: str, plural: bool) -> str:
    """The reviewers of one rating: "five-star reviewers" ("4.5-star reviewer").

    >>> rating_name("5", True), rating_name("4.5", False)
    ('five-star reviewers', '4.5-star reviewer')
    """
    return f"{number_word(value)}-star reviewer" + ("s" if plural else "")


def rating_aliases(value: str) -> tuple[str, ...]:
    """How a summary may name the reviewers of one rating (lower case).

    >>> rating_aliases("5")
    ('5-star', '5 star', 'five-star', 'five star', 'rated 5', 'rated five')
    """
    word = number_word(value)
    return (f"{value}-star", f"{value} star", f"{word}-star", f"{word} star", f"rated {value}", f"rated {word}")
