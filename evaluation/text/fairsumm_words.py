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

Tokenization (Punkt, ``NLTKWordTokenizer``) and stemming run NLTK's code from
the installed ``nltk``: the behaviour followed is NLTK 3.10.4's (earlier
versions split a leading apostrophe differently). Nothing is downloaded.

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


def _unguarded(pattern: Any) -> Any:
    """The compiled pattern inside NLTK 3.10's ``nltk.redos`` timeout guard (the pattern itself elsewhere)."""
    return getattr(pattern, "_rx", pattern)


def _language_vars() -> Any:
    """NLTK's default (English) ``PunktLanguageVars`` whose two per-text regexes skip the timeout guard.

    Same patterns, same engine: only the guard's per-call cost goes (the guard is
    for caller-supplied patterns; these are NLTK's fixed ones).
    """
    from nltk.tokenize.punkt import PunktLanguageVars

    class LanguageVars(PunktLanguageVars):
        def _word_tokenizer_re(self) -> Any:
            return _unguarded(super()._word_tokenizer_re())

        def period_context_re(self) -> Any:
            return _unguarded(super().period_context_re())

    return LanguageVars()


#: Sentences on which :func:`_treebank` checks its steps against ``NLTKWordTokenizer.tokenize``.
_PROBES = (
    "\"Don't,\" she said -- it's 'great' (really) [sic]; can't / won't... $3.88 at 5 p.m.?",
    "i'd buy 'em again!!! gonna wanna lemme... «quoted» “smart” ‘single’ <tag> {x} 10-15%",
    "they'll've paid me... it cost $20.00, 2,000 yen & more@home #1 - ok.",
)


_GROUP_REFERENCE = re.compile(r"\\(?:([1-9])(?!\d)|g<(\d+)>)")


def _expander(template: str) -> Any:
    """A function of a match that expands ``template`` (literal text, ``\\N``, ``\\g<N>``) as
    ``sub`` would, or ``template`` itself when it holds anything else; an unmatched group
    expands to "" in both. Saves parsing the template on every ``sub`` call."""
    pieces: list[str | int] = []
    position = 0
    for ref in _GROUP_REFERENCE.finditer(template):
        pieces += [template[position : ref.start()], int(ref.group(1) or ref.group(2))]
        position = ref.end()
    pieces.append(template[position:])
    if len(pieces) == 1 or any(isinstance(p, str) and "\\" in p for p in pieces):
        return template

    def expand(match: Any) -> str:
        return "".join(p if isinstance(p, str) else (match.group(p) or "") for p in pieces)

    return expand


@lru_cache(maxsize=1)
def _treebank() -> Any:
    """``NLTKWordTokenizer.tokenize`` (default options) as a list of its substitution steps.

    The same compiled patterns, replacements and order as NLTK's method; the
    patterns are called directly (NLTK 3.10 wraps each in ``nltk.redos``'s
    timeout guard, which doubles the cost of these fixed, linear patterns). The
    steps are checked against NLTK's own method on probe sentences at first use;
    where they differ (another NLTK layout), NLTK's method is used as it is.
    """
    from nltk.tokenize import NLTKWordTokenizer

    tokenizer = NLTKWordTokenizer()

    def sub(pattern: Any) -> Any:
        return _unguarded(pattern).sub

    try:
        head = [
            *tokenizer.STARTING_QUOTES, *tokenizer.PUNCTUATION,
            tokenizer.PARENS_BRACKETS, tokenizer.DOUBLE_DASHES,
        ]
        tail = [
            *tokenizer.ENDING_QUOTES,
            *[(p, r" \1 \2 ") for p in tokenizer.CONTRACTIONS2],
            *[(p, r" \1 \2 ") for p in tokenizer.CONTRACTIONS3],
        ]
        first = [(sub(p), _expander(r)) for p, r in head]
        last = [(sub(p), _expander(r)) for p, r in tail]
    except (AttributeError, TypeError, ValueError):
        return tokenizer.tokenize

    def tokenize(text: str) -> list[str]:
        for step, replacement in first:
            text = step(replacement, text)
        text = " " + text + " "
        for step, replacement in last:
            text = step(replacement, text)
        return text.split()

    probes = [*_PROBES, *(p.lower() for p in _PROBES)]
    return tokenize if all(tokenize(p) == tokenizer.tokenize(p) for p in probes) else tokenizer.tokenize


def word_tokenize(text: str) -> list[str]:
    """``nltk.word_tokenize(text)``: Punkt English sentences, then Treebank words in each."""
    words = _treebank()
    return [token for sentence in _sentence_tokenizer().tokenize(text) for token in words(sentence)]


@lru_cache(maxsize=1)
def _stem() -> Any:
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
