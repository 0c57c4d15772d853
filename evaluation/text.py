"""Tokenizers, stop words and word normalization shared by the metrics.

Two tokenizers, each matching the implementation a metric was published with:

* :func:`spacy_tokens` — spaCy's rule-based English tokenizer
  (``spacy.blank("en")``, the tokenizer of ``en_core_web_sm`` without a
  model), lowercased, punctuation and whitespace tokens kept. Used by MINT
  (Dreyer et al. 2023) and the extractive fragments.
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
"""

from __future__ import annotations

import re
import string
from functools import lru_cache

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


@lru_cache(maxsize=1)
def _spacy_english():
    import spacy

    return spacy.blank("en")


@lru_cache(maxsize=1)
def _nltk_word_tokenizer():
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


@lru_cache(maxsize=1)
def _porter_stemmer():
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


def word_tokens(text: str) -> list[str]:
    """NLTK Treebank word tokens of ``text``, sentence by sentence (see module doc)."""
    tok = _nltk_word_tokenizer()
    out: list[str] = []
    for sentence in _SENTENCE_END.split(text.strip()):
        if sentence:
            out.extend(tok.tokenize(sentence))
    return out


@lru_cache(maxsize=200_000)
def lemma(word: str) -> str:
    """Dictionary lemma of a lowercased word: noun, else verb, adjective, adverb, else itself."""
    from lemminflect import getAllLemmas

    lemmas = getAllLemmas(word)
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
