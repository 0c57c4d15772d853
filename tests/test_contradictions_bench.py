"""benchmarks/contradictions.py: the hand-written pairs are well formed and the win table counts right."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # benchmarks/ is a folder of the checkout, not an installed package

from benchmarks import contradictions  # noqa: E402


def assert_eight_per_kind_and_one_edit(rows):
    """8 pairs of each kind; each contradicted summary is its faithful one with the one edit."""
    assert Counter(r["kind"] for r in rows) == {k: 8 for k in contradictions.KINDS}
    for row in rows:
        old, new = row["edit"]
        assert row["faithful"].count(old) == 1 and row["contradicted"] == row["faithful"].replace(old, new)


def test_pairs_have_eight_of_each_kind_and_one_edit():
    rows = contradictions.read_pairs()
    assert_eight_per_kind_and_one_edit(rows)
    assert all(len({d["group"] for d in row["source"]["documents"]}) >= 2 for row in rows)


def test_win_table_on_three_pairs(capsys):
    rows = [r for r in contradictions.read_pairs() if r["id"] in
            ("ski-rental-number", "e-reader-number", "yoga-studio-negation")]
    scores = {"rouge-l-precision": contradictions.score_pairs("rouge-l-precision", rows)}
    good, bad = scores["rouge-l-precision"][0]
    # "within 15 minutes" -> "within 50 minutes": "50" is in no review, so fewer summary tokens match the source
    assert rows[0]["id"] == "ski-rental-number" and good > bad
    table = contradictions.win_table(rows, scores)
    assert table["rouge-l-precision"]["all"][1] == 3 and table["rouge-l-precision"]["number"][1] == 2
    manual = sum(contradictions.win(g, b) for g, b in scores["rouge-l-precision"])
    assert table["rouge-l-precision"]["all"][0] == manual
    text = contradictions.format_table({"x": {"number": (1.5, 2), "all": (1.5, 2)}})
    assert text.splitlines()[1].split() == ["number", "1.5/2"] and text.splitlines()[-1].split() == ["all", "1.5/2"]


def test_dev_pairs_are_well_formed_and_share_no_source_with_the_held_out_set():
    from evenhand.rerank.checker.model import read_corpus

    dev = contradictions.read_pairs(contradictions.DEV)
    assert_eight_per_kind_and_one_edit(dev)
    texts = {d["text"] for r in dev for d in r["source"]["documents"]}
    held_out = {d["text"] for r in contradictions.read_pairs() for d in r["source"]["documents"]}
    corpus = {d["text"] for ex in read_corpus() for d in ex["documents"]}
    assert len({r["source"]["id"] for r in dev}) == 8 and not texts & held_out and not texts & corpus


def test_second_held_out_set_is_well_formed_and_new():
    from evenhand.demo import demo_examples
    from evenhand.rerank.checker.model import read_corpus

    rows = contradictions.read_pairs(contradictions.HELD_OUT_2)
    assert_eight_per_kind_and_one_edit(rows)
    ids = {r["source"]["id"] for r in rows}
    texts = {d["text"] for r in rows for d in r["source"]["documents"]}
    others = [contradictions.read_pairs(), contradictions.read_pairs(contradictions.DEV)]
    assert len(ids) == 12
    for other in others:
        assert not ids & {r["source"]["id"] for r in other}
        assert not texts & {d["text"] for r in other for d in r["source"]["documents"]}
    corpus = read_corpus()
    assert not ids & {ex["id"] for ex in corpus} and not texts & {d["text"] for ex in corpus for d in ex["documents"]}
    assert not ids & {ex.id for ex in demo_examples()}


@pytest.mark.parametrize(("path", "earlier"), [  # each set against the pairs and every set written before it
    (path, (contradictions.DATA, contradictions.DEV, *contradictions.HELD_OUT_SETS[:i]))
    for i, path in enumerate(contradictions.HELD_OUT_SETS) if i >= 1
], ids=["third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh",
        "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth",
        "seventeenth", "eighteenth", "nineteenth", "twentieth", "twenty-first", "twenty-second",
        "twenty-third", "twenty-fourth", "twenty-fifth", "twenty-sixth", "twenty-seventh", "twenty-eighth",
        "twenty-ninth"])
def test_later_held_out_sets_are_well_formed_and_new(path, earlier):
    from evenhand.demo import demo_examples
    from evenhand.evaluation.text.sentences import split_sentences
    from evenhand.rerank.checker.model import read_corpus

    rows = contradictions.read_pairs(path)
    assert_eight_per_kind_and_one_edit(rows)
    by_source: dict[str, list[dict]] = {}
    for row in rows:
        by_source.setdefault(row["source"]["id"], []).append(row)
    assert len(by_source) == 12 and Counter(r["source"]["attribute"] for r in rows)["rating"] == 6 * 4
    for group in by_source.values():  # one source and one faithful summary per source set, several groups in it
        assert len({repr(r["source"]) for r in group}) == 1 and len({r["faithful"] for r in group}) == 1
        assert len({d["group"] for d in group[0]["source"]["documents"]}) >= 2
        assert len({r["kind"] for r in group}) == len(group) == 4  # 4 pairs of 4 different kinds
    ids = set(by_source)
    # no sentence copied from an earlier set (interjections of 1-3 words, "No thanks.", recur by chance)
    sentences = {s for r in rows for d in r["source"]["documents"] for s in split_sentences(d["text"])
                 if len(s.split()) >= 4}
    others = [(r["source"]["id"], [d["text"] for d in r["source"]["documents"]])
              for other in earlier for r in contradictions.read_pairs(other)]
    others += [(ex["id"], [d["text"] for d in ex["documents"]]) for ex in read_corpus()]
    others += [(ex.id, [d.text for d in ex.documents]) for ex in demo_examples()]
    assert len(others) > len(earlier) * 48 + 30
    assert not ids & {sid for sid, _ in others}
    assert not sentences & {s for _, docs in others for text in docs for s in split_sentences(text)}
