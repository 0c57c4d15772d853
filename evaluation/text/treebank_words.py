"""The word tokenizer of ``nltk.word_tokenize`` as NLTK 3.10.4 runs it, in our own code.

``nltk.word_tokenize`` splits each Punkt sentence with ``NLTKWordTokenizer``
(the improved Penn Treebank tokenizer, default options): a fixed list of
regular-expression substitutions, then a split on white space. NLTK changed
that list between releases, and with it the tokens of real reviews:

* 3.10 splits a leading apostrophe only before a word character that does not
  start a clitic (``'em`` -> ``'``, ``em``), where 3.8 and 3.9 kept ``'em``
  whole and split ``'90s`` differently;
* 3.10 pads the figure dash, en dash, em dash and horizontal bar
  (U+2012 to U+2015) as tokens of their own;
* 3.10 runs the patterns on the third-party ``regex`` engine behind a timeout.

FairSumm's reference numbers (``tests/data/fairsumm_authors_reference.json``)
were made with NLTK 3.10.4, so :func:`treebank_words` follows 3.10.4's rules,
whatever NLTK is installed (it imports nothing of NLTK), on the standard
library's ``re`` (the patterns are linear; the one possessive run of 3.10.4 is
written greedy: a run of a class followed by ``\\s*$`` can only match at its
longest, so the spans are the same, and Python 3.10's ``re`` has no possessive
quantifiers). ``tests/test_fairsumm_words.py`` checks it token for token
against the installed NLTK when that is 3.10.x and on hand-made vectors always.
"""

from __future__ import annotations

import re

_Step = tuple[re.Pattern[str], str]


def _steps(*pairs: tuple[str, str], flags: int = 0) -> list[_Step]:
    return [(re.compile(pattern, flags), replacement) for pattern, replacement in pairs]


#: Opening quotes: guillemets, curly and backtick quotes padded; a " that opens the
#: sentence or follows a space or bracket becomes ``; a leading ' before a word
#: character that does not start a clitic ('re 've 'll 'm 't 's 'd 'n) is split off.
_OPENING = _steps(
    ("([«“‘„]|[`]+)", r" \1 "),
    (r'^"', "``"),
    ("(``)", r" \1 "),
    (r"""([ (\[{<])("|'{2})""", r"\1 `` "),
    (r"(?i)(?<!\w)(')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)", r"\1 "),
)

#: Punctuation: the sentence-final period (with closing quotes/brackets after it),
#: colons and commas not before a digit, ellipses, ; @ # $ % &, the dashes U+2012-U+2015,
#: ? and !, a ' before a space, and *.
_PUNCTUATION = _steps(
    (r"""([^.])(\.)([\])}>"'»”’ ]*)\s*$""", r"\1 \2 \3 "),
    (r"([:,])([^\d])", r" \1 \2"),
    (r"([:,])$", r" \1 "),
    (r"\.{2,}", r" \g<0> "),
    (r"[;@#$%&]", r" \g<0> "),
    ("[\u2012-\u2015]", r" \g<0> "),
    (r"""([^.])(\.)([\])}>"']*)\s*$""", r"\1 \2\3 "),
    (r"[?!]", r" \g<0> "),
    (r"([^'])' ", r"\1 ' "),
    (r"[*]", r" \g<0> "),
    (r"[\]\[(){}<>]", r" \g<0> "),  # brackets of every kind
    (r"--", r" -- "),
)

#: Closing quotes and clitics (run on the text padded with a space at each end):
#: closing guillemet and curly quotes padded, '' and " become '', white space
#: collapsed, then 's 'm 'd ' and 'll 're 've n't split from the word before.
_CLOSING = _steps(
    ("([»”’])", r" \1 "),
    ("''", " '' "),
    ('"', " '' "),
    (r"\s+", " "),
    (r"([^' ])('[sS]|'[mM]|'[dD]|') ", r"\1 \2 "),
    (r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", r"\1 \2 "),
)

#: Two-part words split in two (MacIntyre's list as NLTK keeps it): cannot, d'ye,
#: gimme, gonna, gotta, lemme, more'n, wanna (before a space), 'tis and 'twas.
_TWO_PART = _steps(
    *[(rf"\b({a})({b})\b", r" \1 \2 ")
      for a, b in (("can", "not"), ("d", "'ye"), ("gim", "me"), ("gon", "na"),
                   ("got", "ta"), ("lem", "me"), ("more", "'n"))],
    (r"\b(wan)(na)(?=\s)", r" \1 \2 "),
    (r" ('t)(is)\b", r" \1 \2 "),
    (r" ('t)(was)\b", r" \1 \2 "),
    flags=re.IGNORECASE,
)


def _substitute(steps: list[_Step], text: str) -> str:
    for pattern, replacement in steps:
        text = pattern.sub(replacement, text)
    return text


def treebank_words(sentence: str) -> list[str]:
    """The tokens ``NLTKWordTokenizer().tokenize(sentence)`` gives under NLTK 3.10.4.

    >>> treebank_words("They'll say 'em shoes cost $3.88 – gonna buy.")
    ['They', "'ll", 'say', "'", 'em', 'shoes', 'cost', '$', '3.88', '–', 'gon', 'na', 'buy', '.']
    """
    text = _substitute(_PUNCTUATION, _substitute(_OPENING, sentence))
    return _substitute(_TWO_PART, _substitute(_CLOSING, f" {text} ")).split()
