"""Calibration of scorers to human scores: ridge, transforms, grouped CV, JSON round trip, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_file

from evenhand.evaluation.errors import DataError
from evenhand.evaluation.scoring.calibration import (
    Calibration,
    _transform,
    cross_validate,
    fit_calibration,
    fold_of_groups,
    ridge,
)


def test_ridge_matches_hand_computed_values() -> None:
    z = np.array([[0.0], [1.0], [2.0]])
    y = np.array([1.0, 3.0, 5.0])
    w, b = ridge(z, y, 0.0)
    assert w.tolist() == pytest.approx([2.0]) and b == pytest.approx(1.0)
    # centred z = (-1, 0, 1): w = z'y / (z'z + alpha) = 4 / (2 + 2) = 1; b = mean(y) - w mean(z) = 3 - 1
    w, b = ridge(z, y, 2.0)
    assert w.tolist() == pytest.approx([1.0]) and b == pytest.approx(2.0)


def test_fixed_weights_fit_the_rest_to_the_residual() -> None:
    # z-scores equal the raw values (means 0, std 1); unconstrained, y = 3 + 2 z1 + 1 z2 exactly
    x1, x2 = np.array([-1.0, -1.0, 1.0, 1.0]), np.array([-1.0, 1.0, -1.0, 1.0])
    y = np.array([0.0, 2.0, 4.0, 6.0])
    groups = [0, 1, 2, 3]
    free = fit_calibration({"a": x1, "b": x2}, y, groups, "t", alpha=0.0)
    assert [free.weights["a"], free.weights["b"], free.intercept] == pytest.approx([2.0, 1.0, 3.0])
    # b held at 0.5: residual y - 0.5 z2 = (0.5, 1.5, 4.5, 5.5); w_a = z1'r_c / z1'z1 = 8 / 4; b = mean r = 3
    cal = fit_calibration({"a": x1, "b": x2}, y, groups, "t", alpha=0.0, fixed={"b": 0.5})
    assert [cal.weights["a"], cal.weights["b"], cal.intercept] == pytest.approx([2.0, 0.5, 3.0])
    assert cal.scorers == ["a", "b"]
    # ridge shrinks only the free weight: 8 / (4 + 4)
    cal = fit_calibration({"a": x1, "b": x2}, y, groups, "t", alpha=4.0, fixed={"b": 0.5})
    assert [cal.weights["a"], cal.weights["b"], cal.intercept] == pytest.approx([1.0, 0.5, 3.0])
    # every weight fixed: only the intercept is fitted, the mean residual 3 - 0 - 0
    cal = fit_calibration({"a": x1, "b": x2}, y, groups, "t", alpha=0.0, fixed={"a": -1.0, "b": 0.5})
    assert [cal.weights["a"], cal.weights["b"], cal.intercept] == pytest.approx([-1.0, 0.5, 3.0])
    with pytest.raises(ValueError, match="not features"):
        fit_calibration({"a": x1}, y, groups, "t", fixed={"b": 0.5})


def test_cross_validation_keeps_fixed_weights_in_every_fold() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=40), rng.normal(size=40)
    y = a + 0.1 * rng.normal(size=40)
    groups = np.repeat(np.arange(8), 5).tolist()
    # b fixed at 5 dominates every fold's prediction, so out-of-fold predictions follow b, not y
    pred = cross_validate({"a": a, "b": b}, y, groups, alpha=0.0, folds=4, fixed={"b": 5.0})
    free = cross_validate({"a": a, "b": b}, y, groups, alpha=0.0, folds=4)
    assert np.corrcoef(pred, b)[0, 1] > 0.95 and np.corrcoef(free, y)[0, 1] > 0.95
    fold = fold_of_groups(groups, 4, 0)
    test = fold == 0
    cal = fit_calibration({"a": a[~test], "b": b[~test]}, y[~test], [], "t", alpha=0.0, fixed={"b": 5.0})
    assert pred[test].tolist() == pytest.approx(cal.predict({"a": a[test], "b": b[test]}).tolist())


def test_rank_transform_is_the_interpolated_distribution_function() -> None:
    t = {"quantiles": [0.0, 1.0, 2.0, 4.0]}
    x = np.array([-5.0, 0.0, 0.5, 2.0, 3.0, 4.0, 9.0])
    assert _transform(x, "rank", t).tolist() == pytest.approx([0, 0, 1 / 6, 2 / 3, 5 / 6, 1, 1])
    # tied quantiles map to the middle of their levels
    tied = {"quantiles": [0.0, 1.0, 1.0, 1.0, 2.0]}
    assert _transform(np.array([1.0]), "rank", tied).tolist() == pytest.approx([0.5])
    assert _transform(np.array([3.0]), "zscore", {"mean": 1.0, "std": 2.0}).tolist() == [1.0]


def test_fit_recovers_a_monotone_relation_and_round_trips_through_json() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    noise = rng.normal(size=200)
    truth = 1 / (1 + np.exp(-2 * x))
    groups = np.repeat(np.arange(20), 10)
    cal = fit_calibration({"a": x, "noise": noise}, truth, groups, "faithfulness", "rank", alpha=0.01)
    assert cal.weights["a"] > 0.8 and abs(cal.weights["noise"]) < 0.1
    pred = cal.predict({"a": x, "noise": noise})
    assert np.corrcoef(pred, truth)[0, 1] > 0.95
    back = Calibration.from_dict(json.loads(json.dumps(cal.to_dict())))
    assert back.predict({"a": x, "noise": noise}).tolist() == pytest.approx(pred.tolist())
    assert back.target == "faithfulness" and back.scorers == ["a", "noise"]


def test_zscore_calibration_is_plain_linear_regression() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])
    y = 3 * x + 1
    cal = fit_calibration({"x": x}, y, [0, 0, 1, 1], "t", normalize="zscore", alpha=0.0)
    assert cal.predict({"x": np.array([10.0])}).tolist() == pytest.approx([31.0])
    assert cal.weights["x"] == pytest.approx(3 * x.std())


def test_folds_keep_sources_together_and_are_seeded() -> None:
    groups = ["a", "a", "b", "c", "c", "d", "e", "e", "f"]
    folds = fold_of_groups(groups, 3, seed=1)
    for g in set(groups):
        assert len({f for f, h in zip(folds, groups) if h == g}) == 1
    assert sorted(np.bincount([folds[groups.index(g)] for g in "abcdef"]).tolist()) == [2, 2, 2]
    assert (fold_of_groups(groups, 3, seed=1) == folds).all()
    with pytest.raises(DataError, match="at least 7 sources"):
        fold_of_groups(groups, 7)


def test_cross_validated_predictions_come_from_fits_without_their_fold() -> None:
    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(10), 4)
    x, y = rng.normal(size=40), rng.normal(size=40)
    truth = x + 0.5 * y + rng.normal(size=40)
    oof = cross_validate({"x": x, "y": y}, truth, groups, normalize="zscore", alpha=1.0, folds=5, seed=2)
    folds = fold_of_groups(list(groups), 5, seed=2)
    for k in range(5):
        test = folds == k
        cal = fit_calibration({"x": x[~test], "y": y[~test]}, truth[~test], groups[~test], "t", "zscore", 1.0)
        assert oof[test].tolist() == pytest.approx(cal.predict({"x": x[test], "y": y[test]}).tolist())
    # a feature unrelated to the truth cannot be fitted out of fold
    noise = cross_validate({"n": rng.normal(size=40)}, truth, groups, folds=5)
    assert abs(np.corrcoef(noise, truth)[0, 1]) < 0.5


def test_bad_calibration_files_name_the_field() -> None:
    good = fit_calibration({"a": [0.0, 1.0, 2.0, 3.0]}, [0, 1, 2, 3], [0, 0, 1, 1], "t", "rank", alpha=1.0).to_dict()
    with pytest.raises(DataError, match="not an evenhand calibration"):
        Calibration.from_dict({"weights": {}})
    with pytest.raises(DataError, match="missing field `intercept`"):
        Calibration.from_dict({k: v for k, v in good.items() if k != "intercept"})
    with pytest.raises(DataError, match="`normalize`"):
        Calibration.from_dict({**good, "normalize": "minmax"})
    with pytest.raises(DataError, match="quantiles"):
        Calibration.from_dict({**good, "transforms": {"a": {"quantiles": [2.0, 1.0]}}})
    with pytest.raises(DataError, match="version"):
        Calibration.from_dict({**good, "version": 99})


def _annotated(path: Path) -> Path:
    rows = []
    for s in range(6):
        source = f"Topic {s}: the council cut the bus budget. Riders protested at the hall. Fares rose."
        for k, summary in enumerate([
            "The council cut the bus budget, riders protested and fares rose.",
            "The council cut the bus budget.",
            "Aliens opened a bakery on the moon.",
        ]):
            rows.append({"source": source, "summary": summary, "faithfulness": [1.0, 1.0, 0.0][k],
                         "coverage": [1.0, 0.4, 0.0][k]})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_calibrate_cli_fits_writes_and_is_usable_as_a_scorer(tmp_path: Path, capsys) -> None:
    from evenhand.cli import main
    from evenhand.evaluation.scoring.registry import get_scorer

    data = _annotated(tmp_path / "human.jsonl")
    out = tmp_path / "cal.json"
    args = ["calibrate", "--data", str(data), "--target", "coverage", "--scorers",
            "rouge-l-recall,rouge-l-precision", "--out", str(out), "--folds", "3",
            "--n-bootstrap", "20", "--score-cache", "none"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "calibrated (3-fold CV)" in printed and "rouge-l-recall" in printed
    cal = json.loads(out.read_text())
    assert cal["target"] == "coverage" and cal["scorers"] == ["rouge-l-recall", "rouge-l-precision"]
    assert cal["meta"]["summaries"] == 18 and cal["meta"]["sources"] == 6
    assert "fixed_weights" not in cal["meta"]
    from evenhand.commands.calibrate import parse_fixed

    assert parse_fixed("none", ["checker"]) == {} and parse_fixed("checker=0.1", ["checker"]) == {"checker": 0.1}
    fixed_out = tmp_path / "fixed.json"
    assert main([*args[:8], str(fixed_out), *args[9:], "--fix", "rouge-l-precision=0.2"]) == 0
    assert "rouge-l-precision +0.200 (fixed)" in capsys.readouterr().out
    fixed = json.loads(fixed_out.read_text())
    assert fixed["weights"]["rouge-l-precision"] == 0.2 and fixed["meta"]["fixed_weights"] == {"rouge-l-precision": 0.2}
    assert fixed["weights"]["rouge-l-recall"] != cal["weights"]["rouge-l-recall"]
    scorer = get_scorer(f"calibrated:{out}", progress=False)
    full, short, alien = scorer.score(["The council cut the bus budget. Riders protested. Fares rose."] * 3, [
        "The council cut the bus budget, riders protested and fares rose.",
        "The council cut the bus budget.", "Aliens opened a bakery on the moon."])
    assert full > short > alien
    # usable in meta-eval like any registered scorer
    meta = tmp_path / "meta.jsonl"
    controlled = tmp_path / "controlled.json"
    controlled.write_text(json.dumps([{"source": ["A cat sat. A dog ran."], "summaries": [
        {"summary": "A cat sat and a dog ran.", "coverage": 1.0, "faithfulness": 1.0},
        {"summary": "A cat sat.", "coverage": 0.5, "faithfulness": 1.0},
        {"summary": "A cow flew.", "coverage": 0.0, "faithfulness": 0.0}]}]))
    assert main(["meta-eval", "--data", str(controlled), "--scorers", f"calibrated:{out}", "--out", str(meta),
                 "--n-bootstrap", "5", "--score-cache", "none"]) == 0
    assert json.loads(meta.read_text().splitlines()[0])["scorer"] == f"calibrated:{out}"



def test_a_calibration_fitted_on_older_scorer_code_warns(tmp_path: Path) -> None:
    import warnings

    from evenhand.evaluation.scoring.registry import get_scorer, scorer_class
    from evenhand.rerank.scorers.calibrated import load_calibration

    version = scorer_class("checker").score_version
    assert version >= 3
    shipped = load_calibration("faithfulness")  # refitted whenever the checker's code changes
    assert shipped.meta["score_versions"] == {"lm-pmi": 0, "rouge-1-precision": 0, "checker": version,
                                              "sentiment-agreement": 0}
    cal = {"format": "evenhand-calibration", "version": 1, "target": "coverage",
           "scorers": ["rouge-l-recall", "checker"], "normalize": "zscore",
           "transforms": {"rouge-l-recall": {"mean": 0.5, "std": 0.1}, "checker": {"mean": 0.2, "std": 0.1}},
           "weights": {"rouge-l-recall": 1.0, "checker": 0.1}, "intercept": 0.0, "alpha": 1.0,
           "scorer_options": {}, "meta": {}}
    old = tmp_path / "old.json"  # written before score versions existed: both features fitted at version 0
    old.write_text(json.dumps(cal))
    with pytest.warns(UserWarning, match=rf"fitted on scores of checker \(0 -> {version}\) from older scorer code"):
        get_scorer(f"calibrated:{old}", progress=False)
    cal["meta"]["score_versions"] = {"rouge-l-recall": 0, "checker": version}
    current = tmp_path / "current.json"
    current.write_text(json.dumps(cal))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        get_scorer(f"calibrated:{current}", progress=False)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--target", "fluency"], "--target must be one of"),
        (["--scorers", "composite"], "cannot be a feature"),
        (["--scorers", "rouge-l-recall,rouge-l-recall"], "twice"),
        (["--scorers", "nope"], "Unknown scorer 'nope'"),
        (["--alpha", "-1"], "--alpha must be"),
        (["--folds", "1"], "--folds must be an int >= 2"),
        (["--out", "cal.txt"], "--out must be a .json"),
        (["--fix", "checker=0.1"], "--fix names 'checker', which is not in --scorers"),
        (["--fix", "rouge-l-recall=high"], "--fix must be NAME=WEIGHT"),
    ],
)
def test_calibrate_rejects_bad_flags_before_touching_files(tmp_path: Path, capsys, extra, message) -> None:
    from evenhand.cli import main

    data = _annotated(tmp_path / "human.jsonl")
    args = {"--data": str(data), "--target": "coverage", "--scorers": "rouge-l-recall",
            "--out": str(tmp_path / "cal.json")}
    for flag, value in zip(extra[::2], extra[1::2]):
        args[flag] = value if flag != "--out" else str(tmp_path / value)
    argv = ["calibrate", *[x for kv in args.items() for x in kv], "--score-cache", "none"]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "cal.json").exists() and not (tmp_path / "cal.txt").exists()


def test_annotated_jsonl_errors_name_line_and_field(tmp_path: Path) -> None:
    from evenhand.evaluation.metrics.meta_eval import load_annotated

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"source": "a b", "summary": "a", "coverage": 1}\n{"source": "a b", "summary": "b"}\n')
    with pytest.raises(DataError, match=r"bad.jsonl:2: missing field `coverage`"):
        load_annotated(bad, targets=["coverage"])
    bad.write_text('{"source": "a b", "summary": "a", "coverage": "high"}\n')
    with pytest.raises(DataError, match=r"bad.jsonl:1: `coverage` must be a finite float"):
        load_annotated(bad, targets=["coverage"])


def test_shipped_calibrations_load_and_name_their_components() -> None:
    from evenhand.rerank.scorers.calibrated import SHIPPED, load_calibration

    for name in SHIPPED:
        cal = load_calibration(name)
        assert cal.target == name and cal.scorers
        assert cal.meta["cross_validated"]["spearman"][0] > 0.4


def test_dev_half_loads_as_annotated_data() -> None:
    from evenhand.evaluation.metrics.meta_eval import load_annotated

    data = load_annotated(shared_file("perspective_metric_eval/controlled_summaries_dev.json"))
    assert len(data) == 186 and len(data.sources) == 25
