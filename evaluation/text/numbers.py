"""English number words, one table for what reads them (the checker's number rule) and what writes
them (a rating group's name, "the five-star reviewers")."""

from __future__ import annotations

#: The words of 0 to 19, each at its value.
UNIT_WORDS: tuple[str, ...] = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
)
#: The words of the tens, each at its value divided by ten (no word for 0 and 10).
TENS_WORDS: tuple[str, ...] = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")


def number_word(digits: str) -> str:
    """The word of a whole number from 0 to 19 written in digits; any other text as it is.

    >>> number_word("5"), number_word("12"), number_word("4.5"), number_word("20")
    ('five', 'twelve', '4.5', '20')
    """
    return UNIT_WORDS[int(digits)] if digits.isdigit() and int(digits) < len(UNIT_WORDS) else digits
