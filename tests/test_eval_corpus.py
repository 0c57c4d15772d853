import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evenhand.evaluation.metrics.corpus import (
    PairCorpus,
    fragment_scores_corpus,
    mint_batch,
    mint_corpus,
)
from evenhand.evaluation.metrics.fragments import fragment_scores, fragment_scores_tokens
from evenhand.evaluation.metrics.mint import mint, mint_tokens
from tests.conftest import shared_file


def assert_same(corpus_scores, pair_scores, tol=1e-12):
    assert len(corpus_scores) == len(pair_scores)
    for c, p in zip(corpus_scores, pair_scores):
        a, b = c.as_dict(), p.as_dict()
        assert a.keys() == b.keys()
        for key in a:
            assert abs(a[key] - b[key]) <= tol, (key, a[key], b[key])


# sources repeat, a text is both a source and a summary, case and whitespace differ,
# summaries of 1-3 tokens (short-summary denominators), nothing in common, empty source
HAND_PAIRS = [
    ("The cat sat on the mat.", "The cat sat."),
    ("The cat sat on the mat.", "A dog sat on the mat, the cat left."),
    ("The cat sat on the mat.", "mat"),
    ("The cat sat.", "The cat sat on the mat."),
    ("The cat sat on the mat.", "THE CAT  sat\non the MAT."),
    ("a b c d", "a b x"),
    ("a b c d", "c d"),
    ("a b c d", "x y"),
    ("", "a b"),
    ("It's fine, isn't it? Yes: it's fine!", "it's fine"),
    ("a b c d", "a b x"),
]


def test_hand_pairs_equal_per_pair():
    sources, summaries = zip(*HAND_PAIRS)
    assert_same(mint_corpus(sources, summaries), [mint(s, y) for s, y in HAND_PAIRS], tol=0.0)
    assert_same(
        fragment_scores_corpus(sources, summaries),
        [fragment_scores(s, y) for s, y in HAND_PAIRS],
        tol=0.0,
    )


def test_hand_computed_values():
    corpus = PairCorpus(["a b c d", "a b c d"], ["a b x", "c d"])
    # pair 0: unigrams a, b found (2), bigram a-b (1); pair 1: c, d, c-d
    assert corpus.match_counts(3).tolist() == [[2, 1, 0], [2, 1, 0]]
    assert corpus.lcs_lengths().tolist() == [2, 2]
    first = corpus.fragments()[0]
    assert (first.coverage, first.density, first.compression) == pytest.approx((2 / 3, 4 / 3, 4 / 3))
    assert corpus.mint()[1].mint == pytest.approx(mint_tokens("a b c d".split(), "c d".split()).mint)
    assert corpus.mint()[1].lcsr == 1.0
    # every distinct text once: 3 texts, 4 + 3 + 2 tokens
    assert corpus.lengths.tolist() == [4, 3, 2]


def test_mint_batch_uses_corpus_path_and_keeps_values():
    sources, summaries = zip(*HAND_PAIRS)
    assert mint_batch(sources, summaries) == [mint(s, y) for s, y in HAND_PAIRS]


def test_shared_tokens_across_pairs_are_not_confused():
    # the same summary under two sources, and a source that is another pair's summary
    sources = ["x y z", "a b c", "a b"]
    summaries = ["a b", "a b", "x y"]
    assert_same(mint_corpus(sources, summaries), [mint(s, y) for s, y in zip(sources, summaries)], 0.0)


def test_errors():
    with pytest.raises(ValueError, match="same length"):
        mint_corpus(["a"], [])
    with pytest.raises(ValueError, match="summary 1 has no tokens"):
        mint_corpus(["a", "b"], ["a", ""])
    with pytest.raises(ValueError, match="`n_jobs`"):
        mint_corpus(["a"], ["a"], n_jobs=0)
    assert mint_corpus([], []) == []


tokens = st.lists(st.sampled_from("abcde"), max_size=30)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(tokens, min_size=1, max_size=3),
    st.lists(st.tuples(st.integers(0, 2), st.lists(st.sampled_from("abcdef"), min_size=1, max_size=20)), min_size=1, max_size=6),
)
def test_from_tokens_equals_mint_tokens(source_pool, picks):
    sources = [source_pool[i % len(source_pool)] for i, _ in picks]
    summaries = [summary for _, summary in picks]
    corpus = PairCorpus.from_tokens(sources, summaries)
    assert_same(corpus.mint(), [mint_tokens(s, y) for s, y in zip(sources, summaries)], tol=0.0)
    assert_same(
        corpus.fragments(), [fragment_scores_tokens(s, y) for s, y in zip(sources, summaries)], tol=0.0
    )


def _fairsumm_pairs():
    pairs = []
    for name in ("amazon_gold.json", "yelp_gold.json"):
        data = json.loads(shared_file(f"perspectivesumm/{name}").read_text(encoding="utf-8"))
        pairs += [("\n".join(u["text"] for u in s["units"]), r) for s in data for r in s["gold_summary"]]
    return pairs


def test_fairsumm_golds_equal_per_pair():
    pairs = _fairsumm_pairs()  # 480 pairs, 160 sources: each source 3 times
    sources, summaries = zip(*pairs)
    assert len(set(sources)) * 3 == len(pairs)
    assert_same(mint_corpus(sources, summaries), [mint(s, y) for s, y in pairs])
    assert_same(fragment_scores_corpus(sources, summaries), [fragment_scores(s, y) for s, y in pairs])


def test_theflipside_equals_per_pair():
    data = json.loads(shared_file("theflipside/test.json").read_text(encoding="utf-8"))[:12]
    # the prompt (both articles) against the target article, and reversed (summary longer)
    pairs = [(r["input"], r["document"]) for r in data] + [(r["document"], r["input"]) for r in data[:4]]
    sources, summaries = zip(*pairs)
    assert_same(mint_corpus(sources, summaries), [mint(s, y) for s, y in pairs])
    assert_same(fragment_scores_corpus(sources, summaries), [fragment_scores(s, y) for s, y in pairs])


def test_worker_processes_give_the_same_scores():
    sources, summaries = zip(*HAND_PAIRS)
    assert mint_corpus(sources, summaries, n_jobs=2) == mint_corpus(sources, summaries)
    assert fragment_scores_corpus(sources, summaries, n_jobs=2) == fragment_scores_corpus(sources, summaries)


def _modules_after(code, **env):
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
    )
    return set(out.stdout.split())


def test_import_evaluation_imports_neither_torch_nor_spacy():
    modules = _modules_after("import evenhand.evaluation")
    assert "evenhand.evaluation" in modules
    assert not {"torch", "spacy", "thinc"} & modules


def test_mint_tokenizer_does_not_import_torch():
    modules = _modules_after(
        "from evenhand.evaluation import mint\n"
        "assert mint('The cat sat.', 'the cat').lcsr == 1.0\n"
        "import thinc.compat\n"
        "assert not thinc.compat.has_torch",
        EVENHAND_SPACY_TORCH="",
    )
    assert "spacy" in modules
    assert "torch" not in modules


def test_fairsumm_lemmas_do_not_import_spacy_and_leave_it_importable():
    # lemminflect imports spaCy only for its token extensions; the lemma tables are the same without
    modules = _modules_after(
        "import sys\n"
        "from evenhand.evaluation.text.tokens import lemma, normalize_word\n"
        "assert (lemma('cats'), lemma('mice'), lemma('ran'), normalize_word('running')) == "
        "('cat', 'mouse', 'run', 'run')\n"
        "assert 'spacy' not in sys.modules and 'lemminflect' in sys.modules\n"
        "import spacy\n"
        "assert [t.text for t in spacy.blank('en')('Cats ran.')] == ['Cats', 'ran', '.']"
    )
    assert {"spacy", "lemminflect"} <= modules


_NLTK_RUN = (
    "import json, os, sys\n"
    "from evenhand.evaluation.text.tokens import word_tokens, normalize_word\n"
    "from evenhand.evaluation.text.fairsumm_words import content_tokens, word_tokenize\n"
    "from evenhand.rerank.scorers.rouge import RougeScorer\n"
    "text = 'Mr. Okafor wants forty spaces removed. The riders disagree! Running costs rose.'\n"
    "r = RougeScorer()._rouge.score(text, 'Okafor wants spaces removed; riders running')\n"
    "json.dump([word_tokens(text), word_tokenize(text), content_tokens(text), normalize_word('running'), "
    "str(r)], open(os.environ['VALUES'], 'w'))\n"
)
_NLTK_OPTIONAL = {"scipy", "scipy.stats", "sklearn", "pandas"}


def test_nltk_is_imported_without_scipy_sklearn_pandas_and_gives_the_same_values(tmp_path):
    """NLTK's package ``__init__`` imports scipy.stats, scikit-learn and pandas for parts evenhand never
    runs; ``import_nltk`` refuses them for the duration (they stay importable afterwards), and the
    tokens, Punkt sentences, Porter stems and ROUGE (rouge_score's stemmer) equal a full import's."""
    lean, full = tmp_path / "lean.json", tmp_path / "full.json"
    # scipy already imported, as in any process that loads a model (transformers imports scipy.optimize):
    # scipy.stats is refused all the same
    modules = _modules_after(
        "import scipy.optimize\n" + _NLTK_RUN
        + f"assert not {_NLTK_OPTIONAL - {'scipy'}!r} & set(sys.modules), sorted(sys.modules)\n"
        "import sklearn.feature_extraction, scipy.stats, pandas\n",
        EVENHAND_NLTK_FULL="", VALUES=str(lean),
    )
    assert {"nltk", "rouge_score"} | _NLTK_OPTIONAL <= modules  # importable afterwards
    full_modules = _modules_after(_NLTK_RUN, EVENHAND_NLTK_FULL="1", VALUES=str(full))
    assert {"sklearn", "scipy.stats"} <= full_modules  # the opt-out imports NLTK as usual
    assert lean.read_text() == full.read_text()
    values = json.loads(lean.read_text())
    assert values[1][:4] == ["Mr.", "Okafor", "wants", "forty"] and values[3] == "run"


def test_mint_tokenizer_torch_opt_out():
    pytest.importorskip("torch")
    modules = _modules_after(
        "from evenhand.evaluation import mint\nmint('a', 'a')", EVENHAND_SPACY_TORCH="1"
    )
    assert "torch" in modules
