"""Binary meta-evaluation (SummEdits' protocol): balanced accuracy, threshold choice, ROC AUC, the loader,
and `evenhand meta-eval` on labelled files."""

import json
from pathlib import Path

import pytest

from evenhand.cli import main
from evenhand.evaluation.errors import DataError
from evenhand.evaluation.metrics.binary_meta_eval import (
    balanced_accuracy,
    check_labelled,
    choose_threshold,
    evaluate_labelled,
    evaluate_protocol,
    first_rows,
    load_labelled,
    roc_auc,
)

# sorted: 0.1 (0), 0.35 (1), 0.4 (0), 0.8 (1)
SCORES = [0.1, 0.4, 0.35, 0.8]
LABELS = [0, 0, 1, 1]


def test_balanced_accuracy_by_hand():
    # >= 0.3: 0.4, 0.35, 0.8 predicted consistent -> TPR 2/2, TNR 1/2
    assert balanced_accuracy(SCORES, LABELS, 0.3) == pytest.approx(0.75)
    # >= 0.4: 0.4 and 0.8 -> TPR 1/2, TNR 1/2
    assert balanced_accuracy(SCORES, LABELS, 0.4) == pytest.approx(0.5)
    assert balanced_accuracy(SCORES, LABELS, 0.0) == pytest.approx(0.5)  # all consistent


def test_threshold_maximizes_balanced_accuracy_and_ties_take_the_lowest():
    # cuts: 0.1 -> 0.5; (0.1+0.35)/2 = 0.225 -> 0.75; 0.375 -> 0.5; 0.6 -> 0.75: the lowest of the tie
    assert choose_threshold(SCORES, LABELS) == pytest.approx(0.225)
    assert choose_threshold([0.8, 0.35, 0.4, 0.1], [1, 1, 0, 0]) == pytest.approx(0.225)  # order-free


def test_threshold_never_splits_equal_scores():
    # 0.5 (0), 0.5 (1), 0.5 (0), 0.9 (1): a cut between the 0.5s is not a threshold; 0.7 -> TPR 1/2, TNR 1
    assert choose_threshold([0.5, 0.5, 0.5, 0.9], [0, 1, 0, 1]) == pytest.approx(0.7)
    # no cut beats chance: the lowest score (every row consistent)
    assert choose_threshold([0.9, 0.1], [0, 1]) == pytest.approx(0.1)


def test_roc_auc_by_hand_with_ties():
    # positive-negative pairs: (0.35, 0.1) won, (0.35, 0.4) lost, (0.8, *) won -> 3/4
    assert roc_auc(SCORES, LABELS) == pytest.approx(0.75)
    # (0.5 vs 0.5) x2 count one half each, (0.9 vs *) won -> (1 + 2) / 4
    assert roc_auc([0.5, 0.5, 0.5, 0.9], [0, 1, 0, 1]) == pytest.approx(0.75)
    assert roc_auc([0.2, 0.1], [0, 1]) == 0.0


def test_protocol_chooses_on_evaluation_and_reports_test():
    # threshold 0.225 from evaluation; test >= 0.225: 0.25 (1), 0.9 (1) -> TPR 1, TNR 1
    result = evaluate_protocol(SCORES, LABELS, [0.25, 0.2, 0.9, 0.1], [1, 0, 1, 0])
    assert result.threshold == pytest.approx(0.225)
    assert result.evaluation_balanced_accuracy == pytest.approx(0.75)
    assert result.evaluation_roc_auc == pytest.approx(0.75)
    assert result.test_balanced_accuracy == pytest.approx(1.0) and result.test_roc_auc == pytest.approx(1.0)
    assert (result.n_evaluation, result.n_test) == (4, 4)
    only = evaluate_protocol(SCORES, LABELS)
    assert only.test_balanced_accuracy is None and "test_balanced_accuracy" not in only.as_row()


def test_printed_table_puts_the_published_rows_beside_with_their_means():
    from evenhand.commands.meta_eval import labelled_table

    rows = [{"scorer": "s", "domain": d, "test_balanced_accuracy": v, "test_roc_auc": 0.5}
            for d, v in (("news", 0.5), ("sales_email", 0.6), ("qmsumm", 0.7), ("ectsum", 0.8))]
    table = labelled_table(rows, ["news", "sales_email", "qmsumm", "ectsum"], "test")
    assert table.splitlines()[2].split() == ["s", "50.0", "60.0", "70.0", "80.0", "65.0"]
    qafacteval = next(line for line in table.splitlines() if "QAFactEval" in line)
    assert qafacteval.split() == ["QAFactEval", "74.4", "63.6", "62.4", "72.6", "68.3"]  # 68.25 rounds up


def test_one_class_is_refused():
    with pytest.raises(ValueError, match="both classes"):
        choose_threshold([0.1, 0.2], [1, 1])


def _summedits(path: Path, rows: list[tuple[str, str, str, str]]) -> Path:
    path.write_text(json.dumps([
        {"id": f"r{i}", "doc": doc, "summary": summary, "label": label, "split": split,
         "original_summary": "", "edit_types": []}
        for i, (doc, summary, label, split) in enumerate(rows)
    ]))
    return path


DOC = "The cat sat on the mat all afternoon while the rain fell outside."
TOY = [
    (DOC, "The cat sat on the mat.", "1", "evaluation"),
    (DOC, "A dog ran through the park in the sun.", "0", "evaluation"),
    (DOC, "The rain fell outside.", "1", "evaluation"),
    (DOC, "A bird sang loudly in a tree.", "0", "evaluation"),
    (DOC, "The cat sat all afternoon.", "1", "test"),
    (DOC, "Two dogs barked at a mailman.", "0", "test"),
    (DOC, "The cat sat outside.", "1", "test"),
    (DOC, "The sun shone on a beach.", "0", "test"),
]


def test_loader_reads_summedits_and_frank_style_rows(tmp_path):
    data = load_labelled(_summedits(tmp_path / "summedits_toy.json", TOY[:3]))
    assert data.labels == [1, 0, 1] and data.splits == ["evaluation"] * 3
    assert data.domains == ["toy"] * 3 and data.ids == ["r0", "r1", "r2"]
    assert data.summaries[1] == TOY[1][1] and data.documents[0] == DOC
    frank = tmp_path / "frank.jsonl"
    frank.write_text(
        json.dumps({"article": "A b.", "summary": "A.", "label": True, "split": "valid"}) + "\n"
        + json.dumps({"article": "C d.", "summary": "E.", "label": 0, "split": "test", "domain": "xsum"}) + "\n"
    )
    data = load_labelled(frank)
    assert data.labels == [1, 0] and data.splits == ["evaluation", "test"]
    assert data.domains == ["frank", "xsum"] and data.ids == ["0", "1"] and data.documents == ["A b.", "C d."]
    assert data.rows("frank") == [0] and data.rows("xsum", "test") == [1]


@pytest.mark.parametrize("row, message", [
    ({"doc": "d", "summary": "s", "label": 0.5, "split": "test"}, r"`label` is 0\.5; give 1"),
    ({"doc": "d", "summary": "s", "label": "1"}, "missing field `split`"),
    ({"doc": "d", "summary": "s", "label": "1", "split": "train"}, r"`split` is 'train'"),
    ({"summary": "s", "label": "1", "split": "test"}, r"\[0\]: missing field `doc`"),
    ({"doc": "d", "summary": "", "label": "1", "split": "test"}, "`summary` must be a non-empty string"),
])
def test_loader_names_the_row_and_field(tmp_path, row, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([row]))
    with pytest.raises(DataError, match=message):
        load_labelled(path)


def test_a_split_without_both_classes_is_refused(tmp_path):
    data = load_labelled(_summedits(tmp_path / "summedits_toy.json", TOY[:4] + [TOY[4]]))
    check_labelled(data, ["evaluation"], "--data")
    with pytest.raises(DataError, match=r"'toy' has only label 1 in split `test`.*--split evaluation"):
        check_labelled(data, ["evaluation", "test"], "--data")


def test_evaluate_labelled_per_domain_and_on_evaluation_only(tmp_path):
    data = load_labelled(_summedits(tmp_path / "summedits_toy.json", TOY))
    scores = [0.9, 0.1, 0.8, 0.2, 0.7, 0.3, 0.15, 0.6]
    [(domain, result)] = evaluate_labelled(data, scores).items()
    # evaluation: consistent 0.9, 0.8, inconsistent 0.1, 0.2 -> threshold (0.2 + 0.8) / 2
    assert domain == "toy" and result.threshold == pytest.approx(0.5)
    assert result.evaluation_balanced_accuracy == 1.0
    # test >= 0.5: 0.7 (consistent), 0.6 (inconsistent) -> TPR 1/2, TNR 1/2; AUC: 0.7 beats both, 0.15 none
    assert result.test_balanced_accuracy == pytest.approx(0.5) and result.test_roc_auc == pytest.approx(0.5)
    evaluation = data.select(data.rows_of_split("evaluation"))
    only = evaluate_labelled(evaluation, scores[:4], ("evaluation",))["toy"]
    assert only.threshold == pytest.approx(0.5) and only.test_balanced_accuracy is None
    with pytest.raises(ValueError, match="4 scores for 8 rows"):
        evaluate_labelled(data, scores[:4])


def test_first_rows_keeps_the_first_of_each_split(tmp_path):
    data = first_rows(load_labelled(_summedits(tmp_path / "summedits_toy.json", TOY)), 2)
    assert data.ids == ["r0", "r1", "r4", "r5"]


def test_meta_eval_on_labelled_files_writes_resumes_and_prints_the_table(tmp_path, capsys):
    toy = _summedits(tmp_path / "summedits_toy.json", TOY)
    news = _summedits(tmp_path / "summedits_news.json", TOY)
    out = tmp_path / "m.jsonl"
    args = ["meta-eval", "--data", str(toy), str(news), "--scorers", "rouge-l-precision",
            "--out", str(out), "--score-cache", "none"]
    assert main(args) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["run"] for r in rows] == ["rouge-l-precision on toy", "rouge-l-precision on news"]
    # every consistent summary copies the document (precision 1), no inconsistent one does
    assert rows[0]["test_balanced_accuracy"] == 1.0 and rows[0]["test_roc_auc"] == 1.0
    assert rows[0]["ids"] == [f"r{i}" for i in range(8)] and len(rows[0]["scores"]) == 8
    assert rows[0]["scores"][0] == 1.0 and rows[0]["threshold"] < 1.0
    printed = capsys.readouterr().out
    assert "SummaC-Conv" in printed and "61.9" in printed  # the published row for news
    table = (tmp_path / "m.jsonl.csv").read_text()
    assert "rouge-l-precision,toy,measured" in table and "SummaC-Conv,news," in table
    assert main(args) == 0
    assert "already in" in capsys.readouterr().out
    evaluation = tmp_path / "e.jsonl"
    assert main([*args[:-3], str(evaluation), "--split", "evaluation", "--score-cache", "none"]) == 0
    row = json.loads(evaluation.read_text().splitlines()[0])
    assert len(row["scores"]) == 4 and "test_balanced_accuracy" not in row


def test_meta_eval_labelled_errors_exit_2_before_any_scorer(tmp_path, capsys, monkeypatch):
    import evenhand.commands._scoring as scoring

    def refuse(*_: object) -> None:
        raise AssertionError("a scorer was built")

    monkeypatch.setattr(scoring, "build_scorers", refuse)
    one_class = _summedits(tmp_path / "summedits_toy.json", TOY[:5])
    out = str(tmp_path / "m.jsonl")
    assert main(["meta-eval", "--data", str(one_class), "--scorers", "checker", "--out", out]) == 2
    assert "has only label 1 in split `test`" in capsys.readouterr().err
    unknown = tmp_path / "x.json"
    unknown.write_text(json.dumps([{"text": "a"}]))
    assert main(["meta-eval", "--data", str(unknown), "--scorers", "checker", "--out", out]) == 2
    assert "[0]: needs fields `source`" in capsys.readouterr().err  # not labelled: read as controlled
    from conftest import write_controlled

    controlled = write_controlled(tmp_path / "c.json")
    assert main(["meta-eval", "--data", str(controlled), "--scorers", "checker", "--out", out,
                 "--split", "evaluation"]) == 2
    assert "--split applies to labelled files" in capsys.readouterr().err
    assert main(["meta-eval", "--data", str(controlled), str(controlled), "--scorers", "checker",
                 "--out", out]) == 2
    assert "from one file, got 2" in capsys.readouterr().err
    assert main(["meta-eval", "--data", str(one_class), "--format", "controlled", "--scorers", "checker",
                 "--out", out]) == 2
    assert "needs fields `source`" in capsys.readouterr().err
