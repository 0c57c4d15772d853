"""Build the NLTK-derived tables that FairSumm's released word processing needs, offline.

The authors' ``metrics/eval.py`` (psunlpgroup/FairSumm) filters tokens with
``stopwords.words()`` (every NLTK language) and lemmatizes each token with
WordNet after tagging it alone with ``nltk.pos_tag`` (``score/basic.py``:
``get_lemma``). NLTK's data is not on PyPI, so evenhand ships what that needs,
computed here with NLTK's own code and data (run where NLTK data is installed,
e.g. ``NLTK_DATA=/path/to/nltk_data``):

* ``stopwords.txt``: the set of ``stopwords.words()`` entries, one per line, sorted;
* ``lemmas.tsv.gz``: ``form<TAB>lemma`` for every string whose
  ``get_lemma`` (tag alone, map the Penn tag to a WordNet POS, ``WordNetLemmatizer``)
  differs from the string itself. Every other string is provably unchanged:
  ``lemmatize`` returns the word unless ``_morphy`` finds a WordNet form, and
  ``_morphy(w, pos)`` only looks at ``w`` itself, its exception-list entries
  (when ``w`` is an exception key) or ``w`` with one suffix substitution; so a
  string outside {lemma names} ∪ {exception keys} ∪ {lemma with a
  substitution undone} gets nothing back for any POS. That candidate set is
  finite; every candidate is tagged and lemmatized here exactly as the authors'
  code does;
* ``punkt_english/``: the four files of NLTK's ``punkt_tab`` English model that
  ``nltk.word_tokenize`` splits sentences with (copied as they are; the big one
  gzipped).

Usage: ``NLTK_DATA=... python scripts/build_fairsumm_nltk_tables.py [OUT_DIR]``
(default ``evaluation/data/fairsumm``). Prints what it wrote and the versions used.
"""

from __future__ import annotations

import gzip
import shutil
import sys
import time
from pathlib import Path

PENN_TO_WORDNET = {"NN": "n", "JJ": "a", "VB": "v", "RB": "r"}


def authors_lemma(token: str, pos_tag, lemmatizer) -> str:  # noqa: ANN001
    """``score/basic.py``'s ``get_lemma``: tag the token alone, map NN/JJ/VB/RB, lemmatize (noun otherwise)."""
    tag = pos_tag([token])[0][1]
    pos = PENN_TO_WORDNET.get(tag[:2], "")
    return lemmatizer.lemmatize(token) if pos == "" else lemmatizer.lemmatize(token, pos=pos)


def lemma_candidates(wn) -> set[str]:  # noqa: ANN001
    """Every string for which some POS's ``_morphy`` can return a form other than the string."""
    subs = wn.MORPHOLOGICAL_SUBSTITUTIONS
    out: set[str] = set()
    for exceptions in wn._exception_map.values():
        out.update(exceptions)
    for name, by_pos in wn._lemma_pos_offset_map.items():
        out.add(name)
        for pos in by_pos:
            for old, new in subs.get(pos, ()):
                if name.endswith(new):
                    out.add(name[: len(name) - len(new)] + old)
    return out


def main(out_dir: str = "evaluation/data/fairsumm") -> None:
    import nltk
    from nltk.corpus import stopwords
    from nltk.corpus import wordnet as wn
    from nltk.data import find
    from nltk.stem import WordNetLemmatizer

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    words = stopwords.words()
    assert all(w and "\n" not in w for w in words)
    (out / "stopwords.txt").write_text("\n".join(sorted(set(words))) + "\n", encoding="utf-8")
    print(f"stopwords: {len(words)} entries, {len(set(words))} distinct, {len(stopwords.fileids())} languages")

    lemmatizer = WordNetLemmatizer()
    lemmatizer.lemmatize("dogs")  # loads WordNet
    candidates = sorted(lemma_candidates(wn))
    start = time.perf_counter()
    rows = []
    for form in candidates:
        lemma = authors_lemma(form, nltk.pos_tag, lemmatizer)
        if lemma != form:
            assert "\t" not in form + lemma and "\n" not in form + lemma
            rows.append(f"{form}\t{lemma}\n")
    with gzip.GzipFile(out / "lemmas.tsv.gz", "wb", mtime=0) as f:
        f.write("".join(rows).encode("utf-8"))
    print(
        f"lemmas: {len(candidates)} candidates tagged and lemmatized in {time.perf_counter() - start:.0f} s, "
        f"{len(rows)} change; WordNet {wn.get_version()}"
    )

    punkt = Path(str(find("tokenizers/punkt_tab/english/")))
    target = out / "punkt_english"
    target.mkdir(exist_ok=True)
    for name in ("abbrev_types.txt", "collocations.tab", "sent_starters.txt"):
        shutil.copyfile(punkt / name, target / name)
    with open(punkt / "ortho_context.tab", "rb") as src, gzip.GzipFile(
        target / "ortho_context.tab.gz", "wb", mtime=0
    ) as dst:
        shutil.copyfileobj(src, dst)
    print(f"punkt: {punkt} -> {target}; nltk {nltk.__version__}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
