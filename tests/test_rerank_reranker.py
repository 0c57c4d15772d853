"""Reranker: the paper's sampling plan, argmax selection, determinism, resumable output."""

import json

import pytest

from evenhand.decoding.config import GenerateConfig
from evenhand.decoding.models import tiny_model
from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.scoring.scorer import Scorer
from evenhand.rerank.reranker import RECIPES, RerankConfig, Reranker, select_best


class CharCount(Scorer):
    """Score = number of characters (a stand-in with a known argmax)."""

    def _score_batch(self, sources, outputs):
        return [{"score": float(len(o))} for o in outputs]


@pytest.fixture(scope="module")
def tiny():
    return tiny_model("causal", seed=0)


def _examples():
    return [
        Example("a", [Document("The mayor praised the plan.", "left"), Document("Critics hated it.", "right")]),
        Example("b", [Document("Prices rose sharply.", "left"), Document("Wages rose too.", "right")]),
    ]


def test_plan_is_equal_thirds_of_the_paper_recipes():
    assert RerankConfig().plan() == ["nucleus", "top-k", "hybrid"] * 3
    assert RerankConfig(candidates=4).plan() == ["nucleus", "top-k", "hybrid", "nucleus"]
    assert RECIPES["hybrid"]["temperature"] == 1.2 and RECIPES["hybrid"]["no_repeat_ngram_size"] == 3
    assert RECIPES["nucleus"]["top_p"] == 0.9 and RECIPES["top-k"]["top_k"] == 100
    with pytest.raises(ValueError, match="unknown sampler"):
        RerankConfig(recipes="nucleus,beam")
    with pytest.raises(ValueError, match="`candidates` must be a positive int"):
        RerankConfig(candidates=0)


def test_select_best_is_argmax_first_on_ties():
    assert select_best([0.1, 0.7, 0.3]) == 1
    assert select_best([0.5, 0.2, 0.5]) == 0
    with pytest.raises(ValueError):
        select_best([])


def test_reranker_keeps_the_argmax_and_is_deterministic(tiny, tmp_path):
    model, tok = tiny
    gen = GenerateConfig(max_new_tokens=6, batch_size=8)
    reranker = Reranker(model, tok, CharCount(), RerankConfig(candidates=6, seed=3), gen)
    records = reranker.rerank(_examples(), out=tmp_path / "out.jsonl", progress=False)
    for record in records:
        scores = [c["score"] for c in record["candidates"]]
        assert len(scores) == 6
        assert record["best_index"] == select_best(scores)
        assert record["summary"] == record["candidates"][record["best_index"]]["text"]
        assert record["best_score"] == max(scores)
        assert [c["recipe"] for c in record["candidates"]] == ["nucleus", "top-k", "hybrid"] * 2
    texts = [c["text"] for c in records[0]["candidates"]]
    assert len(set(texts)) > 1  # distinct seeds and samplers give different candidates
    again = Reranker(model, tok, CharCount(), RerankConfig(candidates=6, seed=3), gen)
    assert again.rerank(_examples(), progress=False) == records
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["a", "b"]


def test_reranker_resumes_without_regenerating(tiny, tmp_path):
    model, tok = tiny
    out = tmp_path / "out.jsonl"
    gen = GenerateConfig(max_new_tokens=4, batch_size=8)
    first = Reranker(model, tok, CharCount(), RerankConfig(candidates=3), gen)
    first.rerank(_examples()[:1], out=out, progress=False)
    calls = []
    second = Reranker(model, tok, CharCount(), RerankConfig(candidates=3), gen)
    second.rerank_one = lambda ex: calls.append(ex.id) or first.rerank_one(ex)
    records = second.rerank(_examples(), out=out, progress=False)
    assert calls == ["b"] and [r["id"] for r in records] == ["a", "b"]
    assert len(out.read_text().splitlines()) == 2


class WordCount(Scorer):
    """Score = number of words (a stand-in floor scorer)."""

    def _score_batch(self, sources, outputs):
        return [{"score": float(len(o.split()))} for o in outputs]


def test_select_best_skips_ineligible_candidates():
    assert select_best([0.1, 0.7, 0.3], eligible=[True, False, True]) == 2
    with pytest.raises(ValueError, match="no eligible"):
        select_best([0.1], eligible=[False])


def test_floor_excludes_candidates_below_plain_by_more_than_the_margin():
    from evenhand.rerank.reranker import score_and_select

    example = _examples()[0]
    candidates = [
        {"text": "x" * 40, "recipe": "nucleus", "index": 0},  # most characters, 1 word: below the floor
        {"text": "a b c d e f", "recipe": "top-k", "index": 1},  # 11 characters, 6 words
        {"text": "ab cd ef gh", "recipe": "beam", "index": 2},  # plain: 11 characters, 4 words
    ]
    best = score_and_select(example, candidates, CharCount(), {"words": 2.0}, {"words": WordCount()})
    assert best == 1  # the 40-character one has 1 word < 4 - 2; ties at 11 go to the first
    assert [c["eligible"] for c in candidates] == [False, True, True]
    assert [c["floors"]["words"] for c in candidates] == [1.0, 6.0, 4.0]
    # a margin of 3 lets it win; no floors: plain argmax
    for cand in candidates:
        cand.pop("floors")
    assert score_and_select(example, candidates, CharCount(), {"words": 3.0}, {"words": WordCount()}) == 0
    assert score_and_select(example, [dict(c) for c in candidates], CharCount()) == 0
    with pytest.raises(ValueError, match="recipe 'beam'"):
        score_and_select(example, candidates[:2], CharCount(), {"words": 1.0}, {"words": WordCount()})


def test_a_writing_floor_reads_the_written_part_the_others_the_whole_text(monkeypatch):
    import evenhand.rerank.reranker as reranker_module
    from evenhand.rerank.reranker import WRITING_FLOORS, score_and_select

    monkeypatch.setattr(reranker_module, "WRITING_FLOORS", frozenset({"words"}))
    example = _examples()[0]
    quoted = {"text": 'ab cd. One wrote: "x"', "recipe": "beam+quote", "index": 0, "written": "ab cd"}
    plain = {"text": "ab cd ef", "recipe": "beam", "index": 1}
    # words (a writing floor here) reads "ab cd": 2 >= 3 - 1 -> eligible; chars reads the whole text
    best = score_and_select(example, [quoted, plain], CharCount(), {"words": 1.0, "chars": 0.0},
                            {"words": WordCount(), "chars": CharCount()})
    assert best == 0 and quoted["floors"] == {"words": 2.0, "chars": 21.0} and quoted["eligible"]
    # read whole, the quoted candidate's 4 words would pass too; with margin 0 the written 2 words fail
    quoted.pop("floors")
    assert score_and_select(example, [quoted, plain], CharCount(), {"words": 0.0},
                            {"words": WordCount()}) == 1 and quoted["below"] == ["words"]
    assert WRITING_FLOORS == frozenset({"fluency"})  # the shipped set (the patch is this test's)


def test_reranker_with_a_floor_adds_the_plain_summary_and_it_qualifies(tiny, monkeypatch):
    import evenhand.rerank.reranker as reranker_module

    model, tok = tiny
    monkeypatch.setattr(reranker_module, "build_floor_scorers", lambda scorer, floors: {"words": WordCount()})
    gen = GenerateConfig(max_new_tokens=6, batch_size=2)
    reranker = Reranker(model, tok, CharCount(), RerankConfig(candidates=3, seed=1, floors={"words": 0.0}), gen)
    record = reranker.rerank_one(_examples()[0])
    recipes = [c["recipe"] for c in record["candidates"]]
    assert recipes == ["nucleus", "top-k", "hybrid", "beam"]
    plain = record["candidates"][3]
    assert plain["eligible"] and plain["floors"]["words"] == len(plain["text"].split())
    chosen = record["candidates"][record["best_index"]]
    assert chosen["eligible"] and chosen["floors"]["words"] >= plain["floors"]["words"]
    with pytest.raises(ValueError, match="margin of 'words' must be a non-negative"):
        RerankConfig(floors={"words": -1.0})


def test_quote_adds_plain_plus_one_attributed_quote_after_the_plain_summary(tiny, monkeypatch):
    import evenhand.rerank.reranker as reranker_module
    from evenhand.decoding.quote import quoted_summary

    model, tok = tiny
    monkeypatch.setattr(reranker_module, "build_floor_scorers", lambda scorer, floors: {"words": WordCount()})
    example = Example("tent", [Document("The tent stayed dry in the storm.", "5"),
                               Document("The zipper broke on the second night out.", "1")], attribute="rating")
    plain = "The tent stayed dry."
    monkeypatch.setattr(Reranker, "plain_candidate",
                        lambda self, ex, index: {"text": plain, "recipe": "beam", "index": index})
    config = RerankConfig(candidates=2, seed=1, floors={"words": 10.0}, quote=True)
    reranker = Reranker(model, tok, CharCount(), config, GenerateConfig(max_new_tokens=4, batch_size=2))
    record = reranker.rerank_one(example)
    assert [c["recipe"] for c in record["candidates"]] == ["nucleus", "top-k", "beam", "beam+quote"]
    quote = record["candidates"][3]
    assert quote["text"] == quoted_summary(example, plain) == (
        'The tent stayed dry. The one-star reviewer wrote: "The zipper broke on the second night out."')
    assert quote["written"] == plain and quote["index"] == 3
    # CharCount picks the longest; the words floor (a margin of 10) lets every candidate through
    assert record["best_index"] == max(range(4), key=lambda i: (len(record["candidates"][i]["text"]), -i))
    with pytest.raises(ValueError, match="`quote` appends a quotation to the plain summary"):
        RerankConfig(quote=True)
    with pytest.raises(ValueError, match="`quote` must be true or false"):
        RerankConfig(quote="yes", floors={"words": 1.0})


def test_rerank_quote_without_floors_exits_2(tmp_path, capsys):
    from evenhand.cli import main

    data = tmp_path / "d.jsonl"
    data.write_text('{"id": "a", "documents": [{"text": "x y", "group": "1"}, {"text": "z w", "group": "2"}]}\n',
                    encoding="utf-8")
    assert main(["rerank", "--data", str(data), "--out", str(tmp_path / "o.jsonl"), "--quote",
                 "--floors", "none"]) == 2
    err = capsys.readouterr().err
    assert "quote" in err and "floors" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.slow
def test_coverage_floor_keeps_a_fair_by_vacuity_candidate_from_winning():
    """Equal Coverage alone prefers a summary that says nothing; the calibrated-coverage floor does not."""
    from evenhand.evaluation.scoring.registry import get_scorer
    from evenhand.rerank.reranker import score_and_select

    example = Example("tram-levy", [
        Document("The tram levy will double ridership and cut downtown traffic within five years.", "Mayor Lind"),
        Document("Tram fares must stay low, so the levy is the only fair way to pay for the line.", "Mayor Lind"),
        Document("The levy raises property taxes for families who will never ride the tram.", "Councillor Ode"),
        Document("Small shops on Main Street lose parking and customers during two years of works.", "Shop owner Vey"),
    ], attribute="speaker")
    candidates = [
        {"text": "This report highlights a critical issue in the transportation sector and the need for "
                 "thoughtful planning.", "recipe": "nucleus", "index": 0},
        {"text": "Mayor Lind says the tram levy will double ridership and keep fares low, while Councillor Ode "
                 "objects that it raises property taxes and Shop owner Vey fears lost parking and customers.",
         "recipe": "beam", "index": 1},
    ]
    fairness = get_scorer("equal-coverage", progress=False)
    assert score_and_select(example, [dict(c) for c in candidates], fairness) == 0  # EC alone: vacuity wins
    best = score_and_select(example, candidates, fairness, {"calibrated:coverage": 0.1})
    assert best == 1 and candidates[0]["eligible"] is False
    assert candidates[0]["floors"]["calibrated:coverage"] < candidates[1]["floors"]["calibrated:coverage"] - 0.1


def test_sampled_candidates_drop_fair_beam_the_beam_candidate_keeps_it():
    """Fair beam search is a beam search: the samplers keep α and λ, the base config keeps β and W."""
    base = GenerateConfig(num_beams=4, fairness="ratio", fair_beam=1.0, fair_meaning=2.0, fairness_strength=0.5)
    reranker = Reranker(None, None, None, RerankConfig(candidates=2), generate_config=base)  # type: ignore[arg-type]
    nucleus = reranker.recipe_config("nucleus", 0)
    assert (nucleus.do_sample, nucleus.num_beams, nucleus.fair_beam, nucleus.fair_meaning) == (True, 1, 0.0, 0.0)
    assert nucleus.fairness_strength == 0.5 and nucleus.fairness == "ratio"
    assert reranker.generate_config.fair_beam == 1.0  # plain_candidate decodes with it


def test_rerank_fair_beam_without_floors_exits_2(tmp_path, capsys):
    from evenhand.cli import main

    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "a", "documents": [{"text": "good", "group": "pos"},
                                                          {"text": "bad", "group": "neg"}]}) + "\n")
    out = tmp_path / "o.jsonl"
    rc = main(["rerank", "--data", str(data), "--out", str(out), "--fairness", "ratio", "--fair-beam", "1",
               "--floors", "none"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and not out.exists() and "\n" not in err and "--floors" in err


def test_rerank_progress_moves_through_every_step_and_reaches_the_end_only_when_done(monkeypatch, capsys):
    """Each sampler, the plain beam, the scoring and each floor is a step of the example's bar (issue 49)."""
    import evenhand.decoding.generate as generating
    from evenhand.evaluation.io import progress

    seen: list[tuple[str, float, float]] = []

    def note(phase):
        bar = progress._OPEN[-1]
        seen.append((phase, bar.shown, float(bar.bar.total)))

    def fake_generate(model, tokenizer, examples, config, *args, **kwargs):
        phase = "beam" if not config.do_sample else f"sample top_k={config.top_k} t={config.temperature}"
        for step in range(2):
            note(phase)
            progress.report_fraction((step + 1) / 2)
        return [f"text {len(seen)}" for _ in examples]

    class Noted(Scorer):
        def __init__(self, phase):
            super().__init__()
            self.phase = phase

        def _score_batch(self, sources, outputs):
            note(self.phase)
            return [{"score": float(len(o))} for o in outputs]

    monkeypatch.setattr(generating, "generate", fake_generate)
    floors = {"fluency": 0.5, "checker": 0.0}
    reranker = Reranker(None, None, Noted("scoring"), RerankConfig(candidates=3, floors=floors),
                        floor_scorers={"fluency": Noted("fluency"), "checker": Noted("checker")})
    assert reranker.progress_parts() == 3 + 1 + 1 + 2
    reranker.rerank(_examples()[:1])
    phases = list(dict.fromkeys(p for p, _, _ in seen))
    assert len(phases) == 7 and phases[3:] == ["beam", "scoring", "fluency", "checker"]
    starts = [next(shown for p, shown, _ in seen if p == phase) for phase in phases]
    assert starts == pytest.approx([i / 7 for i in range(7)])  # one seventh of the example per step
    assert all(shown < total for _, shown, total in seen)
    assert "floor checker" in capsys.readouterr().err  # each step named on the line
