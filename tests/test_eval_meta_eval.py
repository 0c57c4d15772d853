"""Meta-evaluation statistics, the controlled-summaries loader, and the rerank/meta-eval commands."""

import json
from pathlib import Path

import pytest
from conftest import write_controlled

from evenhand.cli import build_parser, main
from evenhand.evaluation.errors import DataError
from evenhand.evaluation.metrics.meta_eval import load_controlled, meta_evaluate

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
CONTROLLED = DATA / "perspective_metric_eval" / "controlled_summaries_dev.json"


def test_perfect_and_reversed_metrics():
    truth = [0.1, 0.5, 0.9, 0.2, 0.8]
    src = [0, 0, 0, 1, 1]
    good = meta_evaluate(truth, truth, src, n_bootstrap=50)
    assert good["spearman"].value == pytest.approx(1.0) and good["winrate"].value == 1.0
    bad = meta_evaluate([-t for t in truth], truth, src, n_bootstrap=50)
    assert bad["spearman"].value == pytest.approx(-1.0) and bad["winrate"].value == 0.0
    assert good["winrate"].low <= good["winrate"].value <= good["winrate"].high


def test_winrate_counts_only_same_source_pairs_by_hand():
    # source 0: truth 0 < 1 < 2, metric orders (0,1) right, (0,2) right, (1,2) wrong -> 2/3
    # source 1: one pair ordered wrong -> 0; total 2 of 4 pairs
    result = meta_evaluate([1.0, 3.0, 2.0, 5.0, 4.0], [0, 1, 2, 0, 1], [0, 0, 0, 1, 1], n_bootstrap=10)
    assert result["winrate"].value == pytest.approx(2 / 4)


def test_load_controlled_flattens_and_names_bad_fields(tmp_path):
    data = load_controlled(write_controlled(tmp_path / "c.json"))
    assert len(data) == 5 and data.source_index == [0, 0, 0, 1, 1]
    assert data.truth["coverage"] == [1.0, 0.5, 0.0, 1.0, 0.5]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"source": ["x"], "summaries": [{"summary": "y", "coverage": 1}]}]))
    with pytest.raises(DataError, match=r"summaries\[0\]: missing field `faithfulness`"):
        load_controlled(bad)


def test_every_command_has_help():
    parser = build_parser()
    for command in ("rerank", "meta-eval"):
        with pytest.raises(SystemExit) as info:
            parser.parse_args([command, "--help"])
        assert info.value.code == 0


def test_meta_eval_command_writes_and_resumes(tmp_path, capsys):
    data = write_controlled(tmp_path / "c.json")
    out = tmp_path / "meta.jsonl"
    args = ["meta-eval", "--data", str(data), "--scorers", "rouge-l-recall,rouge-l-precision",
            "--out", str(out), "--n-bootstrap", "20", "--score-cache", "none"]
    assert main(args) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["scorer"] for r in rows] == ["rouge-l-recall", "rouge-l-precision"]
    assert len(rows[0]["scores"]) == 5 and len(rows[0]["coverage_spearman"]) == 3
    assert "rouge-l-recall" in capsys.readouterr().out
    assert main(args) == 0
    assert "already in" in capsys.readouterr().out
    assert main([*args[:4], "rouge-l-recall,nope", *args[5:]]) == 2
    assert "Unknown scorer 'nope'" in capsys.readouterr().err


def test_rouge_l_recall_tracks_coverage_on_the_shared_set():
    if not CONTROLLED.exists():
        pytest.skip(f"shared data not found at {CONTROLLED}")
    from evenhand.evaluation.scoring.registry import get_scorer

    data = load_controlled(CONTROLLED)
    sources = [data.sources[i] for i in data.source_index]
    scores = get_scorer("rouge-l-recall", progress=False).score(sources, data.summaries)
    result = meta_evaluate(scores, data.truth["coverage"], data.source_index, n_bootstrap=100)
    # the paper reports 0.473 for ROUGE-L recall on coverage (all 50 sources)
    assert 0.40 < result["spearman"].value < 0.55


def test_rerank_command_end_to_end_on_a_tiny_model(tmp_path, capsys):
    from evenhand.decoding.models import tiny_model
    from evenhand.evaluation.data.loaders import write_examples
    from evenhand.evaluation.data.schema import Document, Example

    model, tok = tiny_model("causal", seed=0)
    model.save_pretrained(tmp_path / "tiny")
    tok.save_pretrained(tmp_path / "tiny")
    data = write_examples(tmp_path / "ex.jsonl", [
        Example("a", [Document("The mayor praised the plan.", "left"), Document("Critics hated it.", "right")]),
    ])
    out = tmp_path / "rr.jsonl"
    code = main(["rerank", "--data", str(data), "--out", str(out), "--candidates", "3",
                 "--scorers", "rouge-l-recall,rouge-l-precision", "--weights", "2,1",
                 "--model", str(tmp_path / "tiny"), "--max-new-tokens", "4", "--device", "cpu",
                 "--score-cache", "none", "--floors", "none"])
    assert code == 0
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    scores = [c["score"] for c in record["candidates"]]
    assert len(scores) == 3 and record["best_score"] == max(scores)
    assert set(record["candidates"][0]["components"]) == {"rouge-l-recall", "rouge-l-precision"}
    printed = capsys.readouterr().out
    won = record["candidates"][record["best_index"]]["recipe"]
    counts = {r: int(r == won) for r in ("nucleus", "top-k", "hybrid")}
    assert f"kept (of 1 examples): nucleus {counts['nucleus']}, top-k {counts['top-k']}, hybrid {counts['hybrid']}" in printed
    assert "mean composite: selected" not in printed  # min-max per set: a "gain" by construction
    assert f"kept minus the set's mean composite {record['best_score'] - sum(scores) / 3:+.3f}" in printed
    # with a fluency floor the plain beam-search summary joins, and the winner clears the floor
    floored = tmp_path / "floored.jsonl"
    code = main(["rerank", "--data", str(data), "--out", str(floored), "--candidates", "3",
                 "--scorers", "rouge-l-recall", "--floors", "fluency=0.25",
                 "--model", str(tmp_path / "tiny"), "--lm-model", str(tmp_path / "tiny"),
                 "--max-new-tokens", "4", "--device", "cpu", "--score-cache", "none"])
    assert code == 0
    (record,) = [json.loads(line) for line in floored.read_text().splitlines()]
    cands = record["candidates"]
    assert [c["recipe"] for c in cands] == ["nucleus", "top-k", "hybrid", "beam"]
    plain = cands[3]["floors"]["fluency"]
    assert all(c["eligible"] == (c["recipe"] == "beam" or c["floors"]["fluency"] >= plain - 0.25) for c in cands)
    assert cands[record["best_index"]]["eligible"]
    printed = capsys.readouterr().out
    if cands[record["best_index"]]["recipe"] == "beam":
        assert "plain beam search kept for 1 of 1 examples: reranking changed no summary" in printed
    else:
        gain = record["best_score"] - cands[3]["score"]
        assert f"where another candidate replaced plain beam search (1 of 1): composite {gain:+.3f} over plain" in printed


@pytest.mark.parametrize(
    ("floors", "message"),
    [("fluency", "NAME=MARGIN"), ("fluency=-1", "non-negative"), ("nope=0.1", "--floors: Unknown scorer 'nope'")],
)
def test_rerank_rejects_bad_floors_before_loading_anything(tmp_path, capsys, floors, message):
    out = tmp_path / "rr.jsonl"
    code = main(["rerank", "--data", str(tmp_path / "missing.jsonl"), "--out", str(out), "--floors", floors])
    assert code == 2 and message in capsys.readouterr().err and not out.exists()


def test_first_sources_keeps_the_summaries_of_the_first_sources(tmp_path):
    data = load_controlled(write_controlled(tmp_path / "c.json"))
    data.first_sources(1)
    assert data.source_index == [0, 0, 0] and len(data.summaries) == 3
    assert data.truth["coverage"] == [1.0, 0.5, 0.0] and data.summaries[2] == "Aliens landed."
