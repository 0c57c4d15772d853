"""Tokenizers, stop words and word normalization shared by the metrics.

Two tokenizers, each matching the implementation a metric was published with:

* :func:`spacy_tokens` — spaCy's rule-based English tokenizer
  (``spacy.blank("en")``, the tokenizer of ``en_core_web_sm`` without a
  model), lowercased, punctuation and whitespace tokens kept. Used by MINT
  (Dreyer et al. 2023) and the extractive fragments. :func:`spacy_lower_hashes`
  gives the same tokens as spaCy's 64-bit string hashes, without building
  Python strings (the many-pair path, ``evenhand.evaluation.metrics.corpus``).
* :func:`word_tokens` — NLTK's Treebank-style ``NLTKWordTokenizer`` (what
  ``nltk.word_tokenize`` runs per sentence). ``word_tokenize`` first splits
  sentences with the Punkt model, whose data cannot be downloaded here; we
  split sentences at whitespace after ``.``, ``!`` or ``?`` instead, which
  agrees with Punkt on ordinary prose but splits after abbreviations such as
  "Mr." that Punkt keeps whole. Used by FairSumm (Zhang et al. 2024).

Normalization for FairSumm (:func:`normalize_word`): lemma then Porter stem.
The authors lemmatize with WordNet after tagging each token *in isolation*
with NLTK's perceptron tagger; neither model's data can be downloaded here.
We use lemminflect's bundled tables instead and take the noun lemma when the
word has one, else the verb, adjective, adverb lemma, else the word itself —
which mimics the tagger's preference for nouns on isolated words. The Porter
stem applied afterwards hides most differences (both ``run`` and ``running``
stem to ``run``); what remains are irregular forms the two tables treat
differently.

Importing spaCy without torch: spaCy imports thinc, and thinc imports torch
when it is installed (about 3 s of a 4.5 s ``import spacy`` here), although
the rule-based tokenizer never uses it. When neither torch nor thinc is
imported yet, :func:`import_spacy` imports spaCy with ``import torch`` made to
fail for the duration, so thinc records "no torch" and the import takes about
1.5 s; torch itself stays importable afterwards. In that process thinc's torch
layers are unavailable (spaCy pipelines that run on torch, such as
``spacy-transformers`` models, would fail to load): set
``EVENHAND_SPACY_TORCH=1`` to import spaCy as usual. NLTK likewise: :func:`import_nltk`
imports it without the scipy.stats / scikit-learn / pandas parts it never uses here
(``EVENHAND_NLTK_FULL=1`` to import it as usual).
"""

from __future__ import annotations

import importlib.abc
import os
import re
import string
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

# NLTK's English stop-word list (nltk_data ``corpora/stopwords/english``, the
# 179-word version shipped 2015-2023), written out because the data package
# cannot be downloaded here. Public factual data.
NLTK_ENGLISH_STOP_WORDS: frozenset[str] = frozenset(
    """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
    yourselves he him his himself she she's her hers herself it it's its itself they them
    their theirs themselves what which who whom this that that'll these those am is are was
    were be been being have has had having do does did doing a an the and but if or because
    as until while of at by for with about against between into through during before after
    above below to from up down in out on off over under again further then once here there
    when where why how all any both each few more most other some such no nor not only own
    same so than too very s t can will just don don't should should've now d ll m o re ve y
    ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven
    haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn
    shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
    """.split()
)

# FairSumm's filter list (``metrics/score/basic.py``: ``ST_WORDS``): every
# single ASCII punctuation character, the stop words, the separator ``||``,
# "people", Treebank quote tokens and dot runs. The authors pass
# ``stopwords.words()`` — the stop words of *all* NLTK languages, a few
# thousand words, which also drops English-looking tokens such as "man",
# "son" or "die"; we use the English list only.
FAIRSUMM_FILTER_WORDS: frozenset[str] = (
    NLTK_ENGLISH_STOP_WORDS
    | frozenset(string.punctuation)
    | frozenset({"||", "people", "''", "``", "...", ".."})
)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class _Refuse(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path``: ``import <name>`` raises ImportError, as if it were not installed."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r} (refused for this import)", name=fullname)
        return None


@contextmanager
def _refusing(*names: str) -> Iterator[None]:
    """For the duration, ``import name`` (not yet imported) raises ImportError for each of ``names``;
    afterwards they import as usual."""
    finder = _Refuse(names)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


#: Environment variable: "1" imports spaCy with thinc's torch support (see module doc).
SPACY_TORCH_ENV = "EVENHAND_SPACY_TORCH"


def import_spacy() -> Any:
    """The ``spacy`` module, imported without torch where possible (see module doc)."""
    if (
        "spacy" in sys.modules
        or "torch" in sys.modules
        or "thinc" in sys.modules
        or os.environ.get(SPACY_TORCH_ENV, "") == "1"
    ):
        import spacy

        return spacy
    with _refusing("torch"):
        import spacy
    return spacy


#: Environment variable: "1" imports NLTK with its optional scipy / scikit-learn / pandas parts (see
#: :func:`import_nltk`).
NLTK_FULL_ENV = "EVENHAND_NLTK_FULL"
#: What NLTK imports only for parts evenhand never runs (association measures' Fisher test, the
#: approximate-randomization test, ``SklearnClassifier``), ``scipy.stats`` even when scipy is loaded.
_NLTK_OPTIONAL = ("scipy", "scipy.stats", "sklearn", "pandas")


def import_nltk() -> Any:
    """The ``nltk`` module, imported without its optional scipy / scikit-learn / pandas parts where possible.

    ``import nltk`` runs the package's ``__init__``, which imports its classifiers, metrics and
    taggers and through them scipy.stats, scikit-learn and pandas when installed: measured 4.2 s
    here against 0.9 s without them (13 s when Python compiles them from source, as on a machine
    with ``PYTHONDONTWRITEBYTECODE`` and no ``.pyc`` files), although evenhand only runs NLTK's
    tokenizers, Punkt and the Porter stemmer, which use none of them. When NLTK is not imported yet,
    those of the three not imported either are made to fail for the duration: NLTK records them as
    missing, as it does where they are not installed, and they stay importable afterwards. In that
    process NLTK's ``fisher_exact`` association measure raises ``NotImplementedError``, its
    ``approxrand`` has no ``betai`` and ``nltk.classify.SklearnClassifier`` cannot be built: set
    ``EVENHAND_NLTK_FULL=1`` to import NLTK as usual.
    """
    if "nltk" in sys.modules or os.environ.get(NLTK_FULL_ENV, "") == "1":
        import nltk

        return nltk
    with _refusing(*(name for name in _NLTK_OPTIONAL if name not in sys.modules)):
        import nltk
    return nltk


#: The longest text the spaCy tokenizer takes (``nlp.max_length``, spaCy's default).
MAX_TEXT_CHARS = 1_000_000


@lru_cache(maxsize=1)
def _spacy_english():
    """Blank English pipeline whose vocabulary computes only the ``LOWER`` attribute.

    Tokens read nothing but their text and lowercase form, and spaCy's other
    lexical attributes (shape, stop word, like_num, ...: 25 Python functions
    run on every new word) cost more than tokenizing it. Tokenization itself
    (special cases, prefixes, suffixes, infixes) does not depend on them.
    """
    nlp = import_spacy().blank("en")
    from spacy.attrs import LOWER

    nlp.vocab.lex_attr_getters = {LOWER: nlp.vocab.lex_attr_getters[LOWER]}
    return nlp


@lru_cache(maxsize=1)
def _nltk_word_tokenizer():
    import_nltk()
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


@lru_cache(maxsize=1)
def _porter_stemmer():
    import_nltk()
    from nltk.stem import PorterStemmer

    return PorterStemmer()


def spacy_tokens(text: str, lowercase: bool = True) -> list[str]:
    """spaCy's rule-based English tokens of ``text`` (whitespace tokens kept).

    Example: ``spacy_tokens("It's  fine.")`` is ``["it", "'s", " ", "fine", "."]``.
    """
    return [t.lower_ if lowercase else t.text for t in _spacy_english()(text)]


def spacy_tokens_batch(texts: list[str], lowercase: bool = True) -> list[list[str]]:
    """:func:`spacy_tokens` over many texts with ``nlp.pipe`` (faster than one by one)."""
    nlp = _spacy_english()
    return [[t.lower_ if lowercase else t.text for t in doc] for doc in nlp.pipe(texts)]


def spacy_lower_hashes(texts: Iterable[str]) -> list[Any]:
    """Per text, its :func:`spacy_tokens` as spaCy's 64-bit hashes (``uint64`` numpy arrays).

    Two tokens are equal exactly when their hashes are (spaCy's string store
    identifies strings by these hashes), so n-gram and LCS counts on the
    hashes equal those on the strings. Tokenizes with ``make_doc`` (the blank
    pipeline has no components) and reads the ``LOWER`` attribute in C.
    """
    nlp = _spacy_english()  # first: it imports spaCy (without torch where possible)
    from spacy.attrs import LOWER

    return [nlp.make_doc(text).to_array(LOWER) for text in texts]


def word_tokens(text: str) -> list[str]:
    """NLTK Treebank word tokens of ``text``, sentence by sentence (see module doc)."""
    tok = _nltk_word_tokenizer()
    out: list[str] = []
    for sentence in _SENTENCE_END.split(text.strip()):
        if sentence:
            out.extend(tok.tokenize(sentence))
    return out


@lru_cache(maxsize=1)
def _all_lemmas() -> Any:
    """lemminflect's ``getAllLemmas``, imported without spaCy where spaCy is not imported yet.

    ``import lemminflect`` imports spaCy (and thinc, and their torch layers) only to register
    spaCy token extensions, which evenhand never uses: measured 5.7 of its 5.9 CPU-s. The
    lemma tables do not depend on spaCy. When spaCy is not imported yet, ``import spacy`` is
    made to fail for the duration, so lemminflect skips its hook; spaCy itself stays
    importable afterwards (its tokens then lack lemminflect's ``._.lemma`` extension).
    """
    if "spacy" in sys.modules or "lemminflect" in sys.modules:
        from lemminflect import getAllLemmas

        return getAllLemmas
    with _refusing("spacy"):
        from lemminflect import getAllLemmas
    return getAllLemmas


@lru_cache(maxsize=200_000)
def lemma(word: str) -> str:
    """Dictionary lemma of a lowercased word: noun, else verb, adjective, adverb, else itself."""
    lemmas = _all_lemmas()(word)
    for upos in ("NOUN", "VERB", "ADJ", "ADV", "PROPN"):
        if upos in lemmas:
            return lemmas[upos][0]
    return word


@lru_cache(maxsize=200_000)
def normalize_word(word: str) -> str:
    """FairSumm's normalization of one lowercased token: Porter stem of its lemma."""
    return _porter_stemmer().stem(lemma(word))


def fairsumm_tokens(text: str) -> list[str]:
    """FairSumm's content words of ``text``, every occurrence kept.

    Lowercase, NLTK word tokens, drop :data:`FAIRSUMM_FILTER_WORDS`, lemmatize,
    Porter-stem (``metrics/eval.py`` of the FairSumm release, in that order).
    """
    words = word_tokens(text.lower())
    return [normalize_word(w) for w in words if w not in FAIRSUMM_FILTER_WORDS]
