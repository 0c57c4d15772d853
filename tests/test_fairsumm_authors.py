"""``fairsumm`` against the authors' released code (psunlpgroup/FairSumm ``metrics/eval.py``).

``tests/data/fairsumm_authors_reference.json`` holds the numbers the authors'
code printed and saved for the 480 gold summaries of the shared PerspectiveSumm
gold sets (its header names the code, command, NLTK and data used): per summary
the source counts, target counts, UER and unfair flag, per gold the corpus BUR,
UER and SOF. No text of theirs is in it.
"""

import json
import string
from pathlib import Path

import pytest

from evenhand.evaluation.data.loaders import load_examples
from evenhand.evaluation.metrics.fairsumm import ngram_target, sample_fairness
from evenhand.evaluation.scoring.registry import get_scorer
from evenhand.evaluation.scoring.scorers.fairsumm import source_profile
from evenhand.evaluation.text.fairsumm_words import (
    EXTRA_FILTER_WORDS,
    content_tokens,
    filter_words,
    lemma_table,
    normalize,
    word_tokenize,
)
from tests.conftest import shared_file

REFERENCE = json.loads((Path(__file__).parent / "data" / "fairsumm_authors_reference.json").read_text())
SETS = ("amazon", "yelp")


@pytest.fixture(scope="module")
def gold_sets():
    return {name: load_examples(shared_file(f"perspectivesumm/{name}_gold.json")) for name in SETS}


def test_reference_file_is_complete():
    for name, n in (("amazon", 60), ("yelp", 100)):
        for g in range(3):
            gold = REFERENCE[name][f"gold{g}"]
            assert len(gold["samples"]) == n
            # BUR is the share of unfair samples, UER the mean of the per-sample UERs
            assert gold["bur"] == sum(s[3] for s in gold["samples"]) / n
            assert gold["uer"] == pytest.approx(sum(s[2] for s in gold["samples"]) / n, abs=1e-15)
    assert [REFERENCE[n][f"gold{g}"]["bur"] for n in SETS for g in range(3)] == [
        0.7, 0.7, 0.65, 0.26, 0.32, 0.25
    ]


@pytest.mark.parametrize("name", SETS)
def test_every_gold_summary_matches_the_authors(gold_sets, name):
    examples = gold_sets[name]
    scorer = get_scorer("fairsumm")
    for g in range(3):
        reference = REFERENCE[name][f"gold{g}"]
        summaries = [ex.references[g] for ex in examples]
        rows = scorer.score_details(examples, summaries)
        for ex, summary, row, (src, tgt, uer, unfair) in zip(examples, summaries, rows, reference["samples"]):
            counts, vocab = source_profile(ex)
            assert [counts[v] for v in ex.groups] == src, ex.id
            target = ngram_target(vocab, content_tokens(summary))
            assert [target[v] for v in ex.groups] == (tgt or [0] * len(src)), ex.id
            assert bool(row["fairsumm_unfair"]) is unfair, ex.id
            assert abs(row["fairsumm_uer"] - uer) < 1e-12, ex.id
        corpus = scorer.aggregate(rows)
        assert corpus["fairsumm_bur"] == reference["bur"]
        assert abs(corpus["fairsumm_uer"] - reference["uer"]) < 1e-12
        assert abs(corpus["fairsumm_sof"] - reference["sof"]) < 1e-12
        assert corpus["fairsumm_skipped"] == 0.0


def test_the_float_cutoff_decides_samples_of_the_gold_sets():
    # samples whose kept values include one without source tokens (the float sum stopped
    # short of 1): the tolerant cutoff would drop it and can flip the flag
    flipped = 0
    for name in SETS:
        for g in range(3):
            for src, tgt, uer, unfair in REFERENCE[name][f"gold{g}"]["samples"]:
                authors = sample_fairness(src, tgt or [0] * len(src), cumulative="float")
                assert authors.unfair is unfair and abs(authors.uer - uer) < 1e-12
                tolerant = sample_fairness(src, tgt or [0] * len(src))
                flipped += tolerant.unfair != unfair
    assert flipped > 0


@pytest.mark.parametrize("name", SETS)
def test_evaluate_references_all_cli_matches_the_authors(tmp_path, name):
    # the command users run, default options: every gold summary of the set against the authors
    from evenhand.cli import main

    data = shared_file(f"perspectivesumm/{name}_gold.json")
    out = tmp_path / "E.jsonl"
    code = main(
        ["evaluate", "--data", str(data), "--summaries", "references:all", "--metrics", "fairsumm",
         "--out", str(out), "--quiet"]
    )
    assert code in (0, None)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    n = len(REFERENCE[name]["gold0"]["samples"])
    assert len(rows) == 3 * n
    seen, differ = set(), []
    for row in rows:
        index = int(row["example_id"].rsplit("-", 1)[1])
        gold = int(row["id"].rsplit("#ref", 1)[1])
        seen.add((index, gold))
        _, _, uer, unfair = REFERENCE[name][f"gold{gold}"]["samples"][index]
        if bool(row["fairsumm_unfair"]) is not unfair or abs(row["fairsumm_uer"] - uer) >= 1e-12:
            differ.append((index, gold, row["fairsumm_uer"], uer))
    assert len(seen) == 3 * n
    assert differ == [], f"{len(differ)} of {3 * n} differ from the authors (sample, gold, ours, theirs)"
    corpus = {
        row["metric"]: row["value"]
        for row in map(json.loads, out.with_suffix(".corpus.jsonl").read_text().splitlines())
    }
    golds = [REFERENCE[name][f"gold{g}"] for g in range(3)]
    assert corpus["fairsumm_bur"] == pytest.approx(sum(g["bur"] for g in golds) / 3, abs=1e-12)
    assert corpus["fairsumm_uer"] == pytest.approx(sum(g["uer"] for g in golds) / 3, abs=1e-12)


def test_text_evenhand_keeps_the_earlier_pipeline():
    from evenhand.evaluation.data.schema import Document, Example

    ex = Example(id="e", documents=[Document("Great shoes, great fit.", "pos"), Document("Bad shoes.", "neg")])
    summary = "Great shoes but a bad price."
    earlier = get_scorer("fairsumm", text="evenhand").score_details([ex], [summary])[0]
    authors = get_scorer("fairsumm").score_details([ex], [summary])[0]
    # evenhand: s = (4, 2)/6, t = (2, 2)/4 -> terms (1/6, 0); authors drop "bad" (Hinglish):
    # s = (4, 1)/5, t = (2, 1)/3 -> terms (2/15, 0)
    assert earlier["fairsumm_uer"] == pytest.approx(1 / 12)
    assert authors["fairsumm_uer"] == pytest.approx(1 / 15)
    with pytest.raises(ValueError, match="`text`"):
        get_scorer("fairsumm", text="nltk")


def test_skip_empty_leaves_empty_summaries_out_of_the_corpus():
    from evenhand.evaluation.data.schema import Document, Example

    ex = Example(id="e", documents=[Document("Great shoes.", "pos"), Document("Awful shoes.", "neg")])
    scorer = get_scorer("fairsumm")
    rows = scorer.score_details([ex, ex], ["Great shoes.", "  "])
    corpus = scorer.aggregate(rows)
    # only the first counts: s = (2, 2)/4, t = (2, 1)/3 -> terms (0, 1/6), mean 1/12
    assert corpus["fairsumm_skipped"] == 1.0
    assert corpus["fairsumm_uer"] == pytest.approx(1 / 12)
    earlier = get_scorer("fairsumm", text="evenhand")
    assert earlier.aggregate(earlier.score_details([ex, ex], ["Great shoes.", "  "]))["fairsumm_skipped"] == 0.0
    assert scorer.aggregate(scorer.score_details([ex], [""])) == {"fairsumm_skipped": 1.0}


def test_shipped_tables_hand_values():
    words = filter_words()
    assert len(words) == 9417  # 9380 distinct stop words of 30 languages + punctuation + extras
    assert set(string.punctuation) <= words and set(EXTRA_FILTER_WORDS) <= words
    assert {"the", "man", "son", "die", "bad", "em"} <= words and "shoe" not in words
    table = lemma_table()
    assert len(table) == 172477
    # tag alone, then WordNet: "was" (VBD) -> be, "better" (RBR) -> well, "us" (PRP -> noun) -> u
    assert (table["dogs"], table["was"], table["better"], table["us"], table["mice"]) == (
        "dog", "be", "well", "u", "mouse"
    )
    assert "shoe" not in table and normalize("batteries") == "batteri" and normalize("went") == "go"


def _nltk_or_skip():
    nltk = pytest.importorskip("nltk")
    for resource in (
        "corpora/stopwords", "corpora/wordnet", "taggers/averaged_perceptron_tagger_eng/",
        "tokenizers/punkt_tab/english/",
    ):
        try:
            nltk.data.find(resource)
        except (LookupError, OSError) as err:
            pytest.skip(f"NLTK data {resource} is not installed ({type(err).__name__})")
    return nltk


def test_shipped_tables_agree_with_nltk(gold_sets):
    nltk = _nltk_or_skip()
    from nltk.corpus import stopwords
    from nltk.stem import PorterStemmer, WordNetLemmatizer

    assert filter_words() == frozenset(
        [*string.punctuation, *stopwords.words(), *EXTRA_FILTER_WORDS]
    )
    lemmatizer, stemmer = WordNetLemmatizer(), PorterStemmer()
    wn_pos = {"NN": "n", "JJ": "a", "VB": "v", "RB": "r"}

    def authors(token: str) -> str:  # score/basic.py: get_lemma, then ps.stem
        pos = wn_pos.get(nltk.pos_tag([token])[0][1][:2], "")
        lemma = lemmatizer.lemmatize(token, pos=pos) if pos else lemmatizer.lemmatize(token)
        return stemmer.stem(lemma)

    texts = [t for exs in gold_sets.values() for ex in exs for t in [*ex.texts, *ex.references]]
    tokens = set()
    for text in texts:
        ours = word_tokenize(text.lower())
        assert ours == nltk.word_tokenize(text.lower())
        tokens.update(ours)
    table = lemma_table()
    forms = sorted(table)
    checked = sorted(tokens) + forms[:: max(1, len(forms) // 3000)] + ["xyzzies", "qwertying", "wugs"]
    for token in checked:
        assert normalize(token) == authors(token), token
    assert len(tokens) > 5000


def test_cli_text_option(tmp_path, capsys):
    from evenhand.cli import main

    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({
        "id": "e", "documents": [{"text": "Great shoes, great fit.", "group": "pos"},
                                 {"text": "Bad shoes.", "group": "neg"}],
        "references": ["Great shoes but a bad price."],
    }) + "\n")
    args = ["evaluate", "--data", str(data), "--summaries", "references", "--metrics", "fairsumm", "--quiet"]
    assert main([*args, "--out", str(tmp_path / "a.jsonl")]) in (0, None)
    assert main([*args, "--out", str(tmp_path / "b.jsonl"), "--fairsumm-text", "evenhand"]) in (0, None)
    uer = [json.loads((tmp_path / f"{k}.jsonl").read_text())["fairsumm_uer"] for k in "ab"]
    assert uer == [pytest.approx(1 / 15), pytest.approx(1 / 12)]  # see test_text_evenhand_keeps_the_earlier_pipeline
    capsys.readouterr()
    assert main([*args, "--out", str(tmp_path / "c.jsonl"), "--fairsumm-text", "nltk"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "`text` must be one of" in err and "--fairsumm-text" in err
