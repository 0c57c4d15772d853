"""FairSumm's released word processing, offline and exact (psunlpgroup/FairSumm ``metrics/eval.py``).

The authors' code turns a text into content tokens as follows (``eval.py``,
``score/basic.py``), with NLTK's code and data:

1. lowercase, ``nltk.word_tokenize`` (Punkt sentences, then the Treebank word
   tokenizer ``NLTKWordTokenizer`` per sentence);
2. drop every token in ``ST_WORDS`` = the single characters of
   ``string.punctuation`` + ``stopwords.words()`` (the stop words of *all* NLTK
   languages: 10,405 entries, 9,380 distinct) + ``||``, ``people``, ``''``,
   ````` ``, ``...``, ``..``;
3. ``get_lemma``: tag the token *alone* with ``nltk.pos_tag([token])``, map
   NN*/JJ*/VB*/RB* to WordNet's n/a/v/r, lemmatize with ``WordNetLemmatizer``
   (noun when the tag maps to none);
4. Porter-stem (``PorterStemmer()``, NLTK's code, no data).

NLTK's data is not on PyPI, so the package ships what those steps read
(``evaluation/data/fairsumm``, built by ``scripts/build_fairsumm_nltk_tables.py``
with NLTK 3.10.4 and its data):

* ``stopwords.txt`` — the distinct entries of ``stopwords.words()``;
* ``lemmas.tsv.gz`` — every string whose step 3 differs from itself, with its
  lemma. Any other string is unchanged by step 3, provably:
  ``WordNetLemmatizer.lemmatize`` returns the word unless ``_morphy`` finds a
  WordNet form, and ``_morphy(w, pos)`` only tries ``w``, its exception-list
  entries (when ``w`` is an exception key) and ``w`` with one suffix rule
  applied; so only WordNet lemma names, exception keys and lemma names with a
  rule undone can change, a finite set (391,055 strings) that the build script
  tags and lemmatizes one by one exactly as the authors' code does
  (172,477 change);
* ``punkt_english/`` — NLTK's ``punkt_tab`` English model (the parameters
  ``word_tokenize`` splits sentences with), read into NLTK's own
  ``PunktSentenceTokenizer``.

Tokenization follows NLTK 3.10.4 whatever NLTK is installed (3.8 and 3.9 split a
leading apostrophe, dashes and closing curly quotes differently, which moved 85 of the
480 gold summaries' UER): the Treebank word tokenizer is ours
(:mod:`~evenhand.evaluation.text.treebank_words`), and the patterns Punkt reads from
its language variables are 3.10.4's, pinned here (:func:`_language_vars`). Punkt's
decisions from the shipped parameters and ``PorterStemmer`` run NLTK's code: the
stemmer's changes from 3.8 to 3.10.4 are speed-ups and a lookup that differs only for
uppercase input (read in the releases' code; our tokens are lowercase), and Punkt gives
the same sentences, and the whole pipeline the same content tokens, on every gold text
under nltk 3.8, 3.8.1, 3.9.1, 3.9.4, 3.10.0 and 3.10.4. Nothing is downloaded.

Data licences: WordNet 3.0 (Princeton; permissive, the notice in
``data/fairsumm/LICENSE-WordNet`` must accompany copies); the NLTK stop-word
lists (from the Snowball project and contributors, redistributed by NLTK; no
licence declared in NLTK's data index); Punkt English parameters (Kiss &
Strunk's model distributed with NLTK; no licence declared in NLTK's data index).
The perceptron tagger itself is not shipped: only the lemmas it leads to.
"""

from __future__ import annotations

import gzip
import re
import string
from functools import lru_cache
from pathlib import Path
from typing import Any

from .tokens import import_nltk
from .treebank_words import treebank_words

#: Where the shipped tables live.
#: The package data FairSumm's word processing reads (``evaluation/data/fairsumm``).
DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "fairsumm"

#: The NLTK version whose behaviour (tokenizer, tagger, lemmatizer, data) the tables follow.
NLTK_VERSION = "3.10.4"

#: The authors' additions to the stop words (``score/basic.py``: ``ST_WORDS``).
EXTRA_FILTER_WORDS = ("||", "people", "''", "``", "...", "..")


def _read_lines(path: Path) -> list[str]:
    """Lines of a UTF-8 text file (gzipped when the name ends in .gz), each without its newline."""
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line[:-1] if line.endswith("\n") else line for line in f]


@lru_cache(maxsize=1)
def filter_words() -> frozenset[str]:
    """``ST_WORDS``: punctuation characters, every NLTK language's stop words, the authors' extras."""
    return frozenset(
        [*string.punctuation, *_read_lines(DATA_DIR / "stopwords.txt"), *EXTRA_FILTER_WORDS]
    )


@lru_cache(maxsize=1)
def lemma_table() -> dict[str, str]:
    """Every form whose tag-alone WordNet lemma differs from itself -> that lemma."""
    table = {}
    for line in _read_lines(DATA_DIR / "lemmas.tsv.gz"):
        form, lemma = line.split("\t")
        table[form] = lemma
    return table


@lru_cache(maxsize=1)
def _sentence_tokenizer() -> Any:
    """NLTK's Punkt tokenizer with the English ``punkt_tab`` parameters (as ``PunktTokenizer`` loads them)."""
    import_nltk()
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    folder = DATA_DIR / "punkt_english"
    params = PunktParameters()
    params.collocations = {tuple(line.split("\t")) for line in _read_lines(folder / "collocations.tab")}
    params.sent_starters = set(_read_lines(folder / "sent_starters.txt"))
    params.abbrev_types = set(_read_lines(folder / "abbrev_types.txt"))
    for line in _read_lines(folder / "ortho_context.tab.gz"):
        word, flags = line.split("\t")
        params.ortho_context[word] = int(flags)
    tokenizer = PunktSentenceTokenizer(lang_vars=_language_vars())
    tokenizer._params = params
    return tokenizer


#: Closing quotes and brackets that Punkt moves onto the sentence before them; NLTK 3.10
#: added the curly quotes and guillemets (3.8 and 3.9 left them to open the next sentence).
_REALIGN = "[\"')\\]}\u2018\u2019\u201c\u201d\xab\xbb]+?(?:\\s+|(?=--)|$)"

#: Characters that cannot appear within a Punkt word, ``.`` excepted (3.10 added the curly
#: quotes and guillemets, so a period right before one still ends a sentence).
_NON_WORD = "(?:[)\";}\\]\\*:@\\'\\({\\[\u2018\u2019\u201c\u201d\xab\xbb?!])"


def _language_vars() -> Any:
    """NLTK's English ``PunktLanguageVars`` with NLTK 3.10.4's patterns, whatever NLTK is installed.

    The patterns Punkt reads from its language variables changed in NLTK 3.10
    (:data:`_REALIGN`, :data:`_NON_WORD`) and moved onto the ``regex`` engine;
    here they are 3.10.4's, compiled with ``re``. The rest of Punkt (the
    decisions from the shipped parameters) is NLTK's code, which gave the same
    sentences on every gold text under 3.8 to 3.10.4 (``tests/test_fairsumm_words.py``
    records the versions checked).
    """
    import_nltk()
    from nltk.tokenize.punkt import PunktLanguageVars

    class LanguageVars(PunktLanguageVars):
        sent_end_chars = (".", "?", "!")
        re_boundary_realignment = re.compile(_REALIGN, re.MULTILINE)

        @property
        def _re_non_word_chars(self) -> str:
            return _NON_WORD

        def _word_tokenizer_re(self) -> Any:
            return _PUNKT_WORD

        def period_context_re(self) -> Any:
            return _PUNKT_PERIOD

    return LanguageVars()


#: Punkt's word splitter (punctuation other than the period split off): multi-character
#: punctuation, or a run of non-space characters that may start a word up to a word end,
#: or any single non-space character.
_PUNKT_WORD = re.compile(
    rf"""(
        (?:\-{{2,}}|\.{{2,}}|(?:\.\s){{2,}}\.)
        |
        (?=[^\(\"\`{{\[:;&\#\*@\)}}\]\-,])\S+?
        (?=\s|$|{_NON_WORD}|(?:\-{{2,}}|\.{{2,}}|(?:\.\s){{2,}}\.)
            |,(?=$|\s|{_NON_WORD}|(?:\-{{2,}}|\.{{2,}}|(?:\.\s){{2,}}\.)))
        |
        \S
    )""",
    re.VERBOSE,
)

#: A potential sentence end (. ? !) and, ahead of it, either more punctuation or white
#: space and the next token (groups ``after_tok`` and ``next_tok``).
_PUNKT_PERIOD = re.compile(
    rf"""[.?!](?=(?P<after_tok>{_NON_WORD}|\s+(?P<next_tok>\S+)))""", re.VERBOSE
)


def word_tokenize(text: str) -> list[str]:
    """``nltk.word_tokenize(text)`` as NLTK 3.10.4 runs it: Punkt English sentences, then
    Treebank words in each (:func:`~evenhand.evaluation.text.treebank_words.treebank_words`)."""
    return [token for sentence in _sentence_tokenizer().tokenize(text) for token in treebank_words(sentence)]


@lru_cache(maxsize=1)
def _stem() -> Any:
    import_nltk()
    from nltk.stem import PorterStemmer

    return PorterStemmer().stem


@lru_cache(maxsize=200_000)
def normalize(token: str) -> str:
    """``ps.stem(get_lemma(token))``: the tag-alone WordNet lemma (shipped table), Porter-stemmed."""
    return _stem()(lemma_table().get(token, token))


def content_tokens(text: str) -> list[str]:
    """The authors' content tokens of ``text``, every occurrence, in order.

    Lowercase, ``word_tokenize``, drop :func:`filter_words`, lemmatize, stem.

    >>> content_tokens("The shoes were running great!")
    ['shoe', 'run', 'great']
    """
    drop = filter_words()
    return [normalize(t) for t in word_tokenize(text.lower()) if t not in drop]
