"""The one scorer registry: metrics and rerank scorers alike, corpus aggregators, every command's choices."""

import json

import pytest

from evenhand.cli import main
from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.scoring.registry import (
    UnknownScorerError,
    available,
    get_scorer,
    register,
    unregister,
)
from evenhand.evaluation.scoring.report import Scored, evaluate
from evenhand.evaluation.scoring.scorer import Scorer


class WordCount(Scorer):
    """Score = words in the summary; corpus statistics: the largest and the total count."""

    def _score_batch(self, sources, outputs):
        return [{"score": float(len(o.split()))} for o in outputs]

    def aggregate(self, records):
        values = [r["score"] for r in records]
        return {"wordcount_max": max(values), "wordcount_total": sum(values)}


@pytest.fixture
def wordcount():
    register("wordcount")(WordCount)
    yield WordCount
    unregister("wordcount")


def example(id_: str) -> Example:
    return Example(id=id_, documents=[Document("Great shoes, great fit.", "pos"), Document("Bad shoes.", "neg")])


def test_metrics_and_rerank_scorers_share_one_registry():
    names = set(available())
    assert {"mint", "fragments", "fairsumm", "alignscore", "llm-coverage", "rouge-l-recall"} <= names
    from evenhand.rerank import available as rerank_available

    assert rerank_available() == available()  # evenhand.rerank's public name is the same registry
    # a metric is a scorer: score(sources, outputs) -> list[float], higher is better
    mint = get_scorer("mint")
    copied, fresh = mint.score(["the cat sat on the mat", "the cat sat on the mat"],
                               ["the cat sat on the mat", "a dog ran in a park"])
    assert copied == 0.0 and fresh == 1.0  # all copied: MINT 0; nothing shared: MINT 1
    fairsumm = get_scorer("fairsumm")
    # source (authors' text): pos great, shoe, great, fit; neg shoe ("bad" is a Hinglish stop word)
    # -> s = (4, 1)/5; the summary hits great, shoe, great, fit -> t = (4, 1)/5: fair, -UER = 0
    assert fairsumm.score([example("e")], ["Great shoes, great fit."]) == [0.0]
    # "Great shoes." -> t = (2, 1)/3: pos falls short by 0.8 - 2/3, UER = (0.8 - 2/3)/2
    assert fairsumm.score([example("e")], ["Great shoes."]) == [pytest.approx(-(0.8 - 2 / 3) / 2)]


def test_evaluate_calls_the_corpus_aggregator(wordcount):
    items = [Scored("a", example("e1"), "Great shoes."), Scored("b", example("e2"), "Bad laces, great fit.")]
    report = evaluate(items, "wordcount,fairsumm")
    assert [r["wordcount"] for r in report.rows] == [2.0, 4.0]
    corpus = {r["metric"]: r["value"] for r in report.corpus}
    assert corpus["wordcount_max"] == 4.0 and corpus["wordcount_total"] == 6.0
    assert "wordcount" not in corpus  # the scorer's aggregate replaces the default mean
    # fairsumm's aggregate: BUR over the corpus is the share of unfair summaries
    assert corpus["fairsumm_bur"] == pytest.approx(sum(r["fairsumm_unfair"] for r in report.rows) / 2)
    assert not any(k.startswith("_") or k == "score" for r in report.rows for k in r)


def test_default_aggregate_is_the_mean_under_the_scorers_name():
    items = [Scored("a", example("e1"), "Great shoes."), Scored("b", example("e2"), "Nothing.")]
    report = evaluate(items, ["rouge-1-recall"])
    values = [r["rouge-1-recall"] for r in report.rows]
    assert report.corpus == [{"metric": "rouge-1-recall", "value": sum(values) / 2, "n": 2}]


def test_unknown_name_lists_the_available_ones():
    with pytest.raises(UnknownScorerError) as info:
        get_scorer("nope")
    message = str(info.value)
    assert message.startswith("Unknown scorer 'nope'. Available: alignscore, calibrated:PATH, checker, composite")
    assert "fairsumm" in message and "mint" in message
    assert isinstance(info.value, ValueError) and isinstance(info.value, KeyError)


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "--data", "d.jsonl", "--summaries", "references", "--out", "o.jsonl", "--metrics", "mint,nope"],
        ["rerank", "--data", "d.jsonl", "--out", "o.jsonl", "--scorers", "nope"],
        ["meta-eval", "--data", "d.json", "--out", "o.jsonl", "--scorers", "nope"],
        ["calibrate", "--data", "d.json", "--target", "coverage", "--out", "c.json", "--scorers", "nope"],
        ["train", "--data", "d.jsonl", "--out", "run", "--scorers", "rouge-l-recall,nope"],
    ],
)
def test_every_command_rejects_an_unknown_name_with_exit_2(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # nothing is read or written before the names are checked
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Unknown scorer 'nope'. Available: alignscore" in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_one_decorator_makes_a_scorer_every_commands_choice(wordcount, tmp_path, capsys):
    # the help of every command that takes scorer names lists it (a name argparse cannot wrap)
    for command in ("evaluate", "rerank", "meta-eval", "calibrate", "train"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "wordcount" in capsys.readouterr().out, command
    # and evaluate scores with it, the sweep config accepts it
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "e1", "documents": [{"text": "A b c."}], "references": ["A b."]}) + "\n")
    out = tmp_path / "o.jsonl"
    args = ["evaluate", "--data", str(data), "--summaries", "references", "--out", str(out)]
    assert main([*args, "--metrics", "wordcount", "--score-cache", "none"]) == 0
    assert json.loads(out.read_text())["wordcount"] == 2.0
    from evenhand.sweep.config import parse_sweep

    sweep = parse_sweep({"datasets": {"d": "x"}, "metrics": ["wordcount"], "extra_scorers": "wordcount"}, tmp_path)
    assert sweep.metrics == ["wordcount"] and sweep.extra_scorers == ["wordcount"]


def test_cli_flags_reach_scorers_through_their_declared_options():
    import argparse

    from evenhand.commands._scoring import scorer_options

    args = argparse.Namespace(judge_model="j", align_model="a", align_base="b", lm_model="l",
                              scorer_batch_size=3, device="cpu")
    options = scorer_options(args, ["llm-coverage", "alignscore", "lm-pmi", "mint"])
    assert options == {
        "llm-coverage": {"model": "j", "device": "cpu", "batch_size": 3},
        "alignscore": {"model": "a", "base_model": "b", "device": "cpu", "batch_size": 3},
        "lm-pmi": {"model": "l", "device": "cpu", "batch_size": 3},
        "mint": {"batch_size": 3},
    }


def test_a_scorer_named_with_an_argument_keeps_that_name_in_the_tables(tmp_path, capsys):
    from tests.test_eval_calibration import _annotated

    cal = tmp_path / "cal.json"
    assert main(["calibrate", "--data", str(_annotated(tmp_path / "human.jsonl")), "--target", "coverage",
                 "--scorers", "rouge-l-recall,rouge-l-precision", "--out", str(cal), "--folds", "3",
                 "--n-bootstrap", "20", "--score-cache", "none"]) == 0
    source = "The council cut the bus budget. Riders protested."
    items = [Scored("a", Example("e", [Document(source)]), "The council cut the bus budget."),
             Scored("b", Example("f", [Document(source)]), "Aliens opened a bakery.")]
    name = f"calibrated:{cal}"
    report = evaluate(items, [get_scorer(name, progress=False), "rouge-l-recall"])
    assert list(report.rows[0])[:3] == ["id", "example_id", name] and "rouge-l-recall" in report.rows[0]
    assert report.rows[0][name] > report.rows[1][name]
    assert [r["metric"] for r in report.corpus] == [name, "rouge-l-recall"]
