"""Scorer base (validation, cache), registry, ROUGE, composite, AlignScore and EC aggregation."""

from dataclasses import dataclass, field

import pytest

from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.errors import DataError
from evenhand.evaluation.scoring.registry import (
    UnknownScorerError,
    available,
    get_scorer,
    register,
    unregister,
)
from evenhand.evaluation.scoring.scorer import Scorer, ScorerConfig, as_example
from evenhand.rerank.judge_scores import expected_digit, parse_score
from evenhand.rerank.scorers.alignscore import max_mean
from evenhand.rerank.scorers.composite import CompositeScorer, normalize


@dataclass
class LenConfig(ScorerConfig):
    scale: float = field(default=1.0, metadata={"help": "multiplier"})


class LenScorer(Scorer):
    """Score = scale * number of words; counts its model calls."""

    Config = LenConfig

    def __init__(self, config=None, cache_dir=None):
        super().__init__(config, cache_dir)
        self.calls = 0
        self.seen = 0

    def _score_batch(self, sources, outputs):
        self.calls += 1
        self.seen += len(outputs)
        return [{"score": self.config.scale * len(o.split())} for o in outputs]


class TablePairs:
    """A stub alignment backend: p from a (premise, hypothesis) table, 0 elsewhere."""

    name = "stub"

    def __init__(self, table):
        self.table = table
        self.calls = []

    def pair_probs(self, premises, hypotheses, batch_size=16):
        self.calls.append(len(premises))
        return [self.table.get((p, h), 0.0) for p, h in zip(premises, hypotheses)]


# -- registry -------------------------------------------------------------------------
def test_builtin_scorers_are_registered():
    names = available()
    for name in ("llm-coverage", "llm-faithfulness", "alignscore", "equal-coverage", "rouge",
                 "rouge-l-recall", "rouge-l-precision", "composite"):
        assert name in names


def test_unknown_scorer_lists_the_available_ones():
    with pytest.raises(UnknownScorerError) as info:
        get_scorer("nope")
    shown = [f"{n}:PATH" if n == "calibrated" else n for n in available()]
    assert str(info.value) == "Unknown scorer 'nope'. Available: " + ", ".join(shown)
    with pytest.raises(UnknownScorerError, match="'rouge' takes no argument"):
        get_scorer("rouge:x")
    with pytest.raises(UnknownScorerError, match="write calibrated:PATH"):
        get_scorer("calibrated")


def test_register_rejects_duplicates_and_unknown_options():
    register("test-len")(LenScorer)
    try:
        with pytest.raises(ValueError, match="already registered"):
            register("test-len")(LenScorer)
        with pytest.raises(TypeError, match="has no option"):
            get_scorer("test-len", colour="red")
        assert get_scorer("test-len", scale=2.0).score(["a b"], ["x y z"]) == [6.0]
    finally:
        unregister("test-len")
    with pytest.raises(TypeError, match="Scorer subclass"):
        register("not-a-scorer")(dict)


def test_config_validation_names_the_field():
    with pytest.raises(ValueError, match="`batch_size` must be a positive int, got 0"):
        get_scorer("rouge", batch_size=0)
    with pytest.raises(ValueError, match="`measure` must be one of"):
        get_scorer("rouge", measure="f1")
    with pytest.raises(ValueError, match="`mode` must be 'expected' or 'parse'"):
        get_scorer("llm-coverage", mode="sample")


# -- base class -----------------------------------------------------------------------
def test_sources_may_be_examples_strings_or_lists():
    s = LenScorer()
    ex = Example("e", [Document("a b", "x"), Document("c", "y")])
    assert s.score([ex, "one doc", ["two", "docs"]], ["a", "b c", "d e f"]) == [1.0, 2.0, 3.0]
    assert as_example(["first", "  ", "second"]).texts == ["first", "second"]
    with pytest.raises(DataError, match="sources\\[0\\] is empty"):
        s.score([""], ["x"])
    with pytest.raises(DataError, match="differ in length"):
        s.score(["a", "b"], ["x"])
    with pytest.raises(DataError, match="list of strings, got one str"):
        s.score(["a"], "x")
    with pytest.raises(DataError, match="expected an Example, a str or a list of str"):
        s.score([3], ["x"])


def test_cache_scores_each_distinct_pair_once_and_batches():
    s = LenScorer(LenConfig(batch_size=2, progress=False))
    out = s.score(["src"] * 5, ["a", "a b", "a", "a b c", "a b"])
    assert out == [1.0, 2.0, 1.0, 3.0, 2.0]
    assert s.seen == 3 and s.calls == 2  # 3 distinct pairs in batches of 2
    assert s.score(["src"], ["a b c"]) == [3.0] and s.seen == 3  # cached
    assert s.score(["other"], ["a b c"]) == [3.0] and s.seen == 4  # new source, new key


def test_disk_cache_is_reused_across_instances(tmp_path):
    first = LenScorer(cache_dir=tmp_path)
    first.score(["src", "src"], ["a b", "c"])
    second = LenScorer(cache_dir=tmp_path)
    assert second.score(["src", "src"], ["a b", "c"]) == [2.0, 1.0]
    assert second.seen == 0
    changed = LenScorer(LenConfig(scale=3.0), cache_dir=tmp_path)  # other config, other key
    assert changed.score(["src"], ["a b"]) == [6.0] and changed.seen == 1
    with (tmp_path / "scorer.jsonl").open("a") as f:
        f.write('{"key": "torn')  # a killed run's half line is skipped
    assert LenScorer(cache_dir=tmp_path).score(["src"], ["c"]) == [1.0]


def test_a_scorers_code_version_keys_its_cache(tmp_path):
    class LenScorerV2(LenScorer):  # same name and config, new code: its scores are not reused
        score_version = 2

        def _score_batch(self, sources, outputs):
            return [{"score": 10.0 * r["score"]} for r in super()._score_batch(sources, outputs)]

    LenScorer(cache_dir=tmp_path).score(["src"], ["a b"])
    newer = LenScorerV2(cache_dir=tmp_path)
    assert newer.score(["src"], ["a b"]) == [20.0] and newer.seen == 1
    assert LenScorer(cache_dir=tmp_path).score(["src"], ["a b"]) == [2.0]  # the old records stay the old code's
    # version 0 leaves the key as it was before versions existed: caches of unchanged scorers stay valid
    assert "score_version" not in LenScorer()._fingerprint()
    assert '{"score_version": 2}' in newer._fingerprint()


# -- rouge --------------------------------------------------------------------------
def test_rouge_l_against_the_source_by_hand():
    src, out = "the cat sat on the mat", "the cat sat"
    assert get_scorer("rouge-l-recall").score([src], [out]) == [pytest.approx(3 / 6)]
    assert get_scorer("rouge-l-precision").score([src], [out]) == [pytest.approx(1.0)]
    f = 2 * 0.5 * 1.0 / 1.5
    assert get_scorer("rouge-l-f").score([src], [out]) == [pytest.approx(f)]
    assert get_scorer("rouge", rouge_type="rouge1", measure="recall").score([src], ["mat cat"]) == [
        pytest.approx(2 / 6)
    ]


# -- judge arithmetic -----------------------------------------------------------------
def test_expected_digit_by_hand():
    value, argmax = expected_digit([0.1, 0.2, 0.3, 0.2, 0.2])
    assert value == pytest.approx(1 * 0.1 + 2 * 0.2 + 3 * 0.3 + 4 * 0.2 + 5 * 0.2)  # 3.2
    assert argmax == 3
    half = expected_digit([0.05, 0.1, 0.15, 0.1, 0.1])  # renormalized over the digits
    assert half[0] == pytest.approx(3.2) and half[1] == 3
    assert expected_digit([0, 0, 0, 0, 1.0]) == (5.0, 5)
    with pytest.raises(ValueError):
        expected_digit([0, 0, 0, 0, 0])


def test_parse_score_takes_the_first_number_else_one():
    assert parse_score("4") == 4
    assert parse_score("Score: 3 out of 5") == 3
    assert parse_score("I'd say 7") == 1
    assert parse_score("none") == 1


# -- alignscore aggregation ------------------------------------------------------------
def test_max_over_chunks_mean_over_sentences():
    assert max_mean([[0.2, 0.9], [0.6, 0.1]]) == pytest.approx(0.75)
    assert max_mean([[0.3]]) == pytest.approx(0.3)


def test_alignscore_aggregates_chunk_sentence_pairs_by_hand():
    source = "Aa bb. Cc dd. Ee ff. Gg hh."  # 8 words, chunk_words=3 -> n=3, k=1: 4 chunks
    table = {("Aa bb.", "Xx."): 0.9, ("Cc dd.", "Xx."): 0.4, ("Ee ff.", "Yy zz."): 0.3,
             ("Gg hh.", "Yy zz."): 0.5, ("Aa bb.", "Yy zz."): 0.1}
    scorer = get_scorer("alignscore", chunk_words=3, progress=False)
    scorer._backend = TablePairs(table)
    details = scorer.score_details([source, source], ["Xx. Yy zz.", "   "])
    assert details[0]["score"] == pytest.approx((0.9 + 0.5) / 2)
    assert details[0]["chunks"] == 4 and details[0]["sentences"] == 2
    assert details[1] == {"score": 0.0, "backend": "stub", "sentences": 0, "chunks": 4, "empty": True}
    assert scorer._backend.calls == [8]  # one backend call for the batch, no pairs for the empty one


# -- equal coverage ---------------------------------------------------------------------
def test_equal_coverage_by_hand():
    ex = Example("e", [Document("Aa bb.", "left"), Document("Cc dd.", "right")])
    table = {("Aa bb.", "Ss one."): 0.8, ("Aa bb.", "Ss two."): 0.2, ("Cc dd.", "Ss two."): 0.4}
    scorer = get_scorer("equal-coverage", progress=False)
    scorer._backend = TablePairs(table)
    (d,) = scorer.score_details([ex], ["Ss one. Ss two."])
    # P = [[0.8, 0.0], [0.2, 0.4]]; c = (0.5, 0.2), mean 0.35; EC = (0.15 + 0.15) / 2
    assert d["ec"] == pytest.approx(0.15) and d["score"] == pytest.approx(-0.15)
    assert d["group_diffs"] == {"left": pytest.approx(0.15), "right": pytest.approx(-0.15)}
    assert d["groups_from"] == "labels" and not d["undefined"]


def test_equal_coverage_takes_the_best_block_and_handles_unlabelled_sources():
    doc = " ".join(f"Ww{i} " + "xx " * 58 + "yy." for i in range(2))  # two 60-word sentences
    scorer = get_scorer("equal-coverage", progress=False)
    blocks = [f"Ww{i} " + "xx " * 58 + "yy." for i in range(2)]
    scorer._backend = TablePairs({(blocks[0], "Ss."): 0.2, (blocks[1], "Ss."): 0.6})
    matrix, groups, origin = scorer.coverage_matrix(as_example([doc, "Other doc."]), "Ss.")
    assert matrix == [[0.6, 0.0]] and groups == ["doc0", "doc1"] and origin == "documents"
    matrix, groups, origin = scorer.coverage_matrix(as_example(doc), "Ss.")
    assert matrix == [[0.2, 0.6]] and groups == ["block0", "block1"] and origin == "blocks"
    (empty,) = scorer.score_details([["Aa.", "Bb."]], [""])
    assert empty["undefined"] and empty["score"] == -1.0


# -- composite -----------------------------------------------------------------------
def test_normalize_by_hand():
    assert normalize([1.0, 3.0, 2.0]) == [0.0, 1.0, 0.5]
    assert normalize([2.0, 2.0]) == [0.5, 0.5]
    assert normalize([1.0, 3.0], "zscore") == [-1.0, 1.0]
    assert normalize([1.0, 3.0], "none") == [1.0, 3.0]
    with pytest.raises(ValueError, match="`normalize` must be one of"):
        normalize([1.0], "rank")


def test_composite_normalizes_per_candidate_set_and_weights():
    words = LenScorer(LenConfig(progress=False))
    chars = LenScorer(LenConfig(scale=-1.0, progress=False))  # prefers fewer words
    comp = CompositeScorer(
        CompositeScorer.Config(scorers="rouge,rouge-l-f", weights="3,1", progress=False),
        components={"rouge": words, "rouge-l-f": chars},
    )
    sources = ["s1", "s1", "s1", "s2", "s2"]
    outputs = ["a", "a b", "a b c", "x", "x y z w u"]
    details = comp.score_details(sources, outputs)
    # set s1: words 1,2,3 -> 0, .5, 1; negated -> 1, .5, 0; composite (3*n1 + n2) / 4
    assert [d["score"] for d in details[:3]] == pytest.approx([0.25, 0.5, 0.75])
    # set s2 normalized on its own: 1 and 5 words -> 0 and 1
    assert [d["score"] for d in details[3:]] == pytest.approx([0.25, 0.75])
    assert details[4]["components"] == {"rouge": 5.0, "rouge-l-f": -5.0}


def test_composite_config_errors():
    with pytest.raises(ValueError, match="one weight per scorer"):
        get_scorer("composite", scorers="rouge,rouge-l-f", weights="1")
    with pytest.raises(ValueError, match="cannot include 'composite'"):
        get_scorer("composite", scorers="composite")
    with pytest.raises(UnknownScorerError, match="Unknown scorer 'bogus'"):
        get_scorer("composite", scorers="rouge,bogus")


def test_target_only_scores_against_the_target_perspective():
    ex = Example("e", [Document("Left view text.", "left"), Document("Right view text.", "right")],
                 target="right")
    seen = []

    class Recorder(LenScorer):
        def _score_batch(self, sources, outputs):
            seen.extend(s.texts for s in sources)
            return super()._score_batch(sources, outputs)

    Recorder(LenConfig(progress=False)).score([ex], ["a b"])
    assert seen == [["Right view text."]]
    seen.clear()
    Recorder(LenConfig(progress=False, target_only=False)).score([ex], ["a b"])
    assert seen == [["Left view text.", "Right view text."]]
    assert get_scorer("equal-coverage").config.target_only is False


def test_acu_units_parse_bullets_and_fall_back_to_sentences():
    from evenhand.decoding.models import tiny_model
    from evenhand.rerank.scorers.equal_coverage import parse_units

    assert parse_units("- The tax rose.\n2. Critics objected to it.\nok\n* Prices went up too.") == [
        "The tax rose.", "Critics objected to it.", "Prices went up too.",
    ]
    scorer = get_scorer("equal-coverage", units="acus", progress=False)
    scorer.use_acu_model(*tiny_model("causal", seed=0))  # random model: no bullets -> sentences
    units = scorer.units("The tax rose. Critics objected.")
    assert units == ["The tax rose.", "Critics objected."] or all(len(u.split()) >= 3 for u in units)
    scorer._acus["Aa bb. Cc dd."] = ["Aa bb cc.", "Dd ee ff."]
    scorer._backend = TablePairs({("Left.", "Aa bb cc."): 1.0, ("Right.", "Dd ee ff."): 0.5})
    (d,) = scorer.score_details([Example("e", [Document("Left.", "l"), Document("Right.", "r")])],
                                ["Aa bb. Cc dd."])
    # P = [[1, 0], [0, .5]]: c = (.5, .25), mean .375, EC = .125
    assert d["score"] == pytest.approx(-0.125)
    with pytest.raises(ValueError, match="`units` must be 'sentences' or 'acus'"):
        get_scorer("equal-coverage", units="words")
