"""The DPO+RR experiment's evaluation helpers: paired bootstrap, comparison table, split, recipe configs."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.errors import DataError
from evenhand.evaluation.metrics.bootstrap import paired_bootstrap
from evenhand.training.experiment import (
    check_split,
    comparison_table,
    evaluate_summaries,
    format_table,
    truncate_words,
)

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def _example(i: int, topic: str = "t", target: str = "left") -> Example:
    # content words under both FairSumm text pipelines (the authors' stop words cover number words)
    prompt = "Summarize the Left.\n\nLeft:\napple banana cherry grape\n\nRight:\nriver stone cloud forest"
    return Example(
        id=f"x{i}", documents=[Document("apple banana cherry grape", "left"), Document("river stone cloud forest", "right")],
        attribute="stance", group_values=["left", "right"], prompt=prompt, target=target,
        meta={"topic": topic, "document": "apple banana cherry grape"},
    )


# ------------------------------------------------------------------ paired bootstrap


def test_paired_bootstrap_constant_shift_has_a_point_interval() -> None:
    base = np.array([0.1, 0.5, 0.9, 0.3])
    assert paired_bootstrap(base + 0.25, base) == pytest.approx((0.25, 0.25, 0.25))
    assert paired_bootstrap(base, base) == (0.0, 0.0, 0.0)


def test_paired_bootstrap_pairs_examples_and_is_seeded() -> None:
    # large between-example spread, tiny constant within-pair gain: paired interval excludes 0
    base = np.array([0.0, 10.0, 20.0, 30.0, 40.0])
    diff, lower, upper = paired_bootstrap(base + np.array([0.9, 1.1, 1.0, 0.95, 1.05]), base)
    assert diff == pytest.approx(1.0)
    assert 0.9 <= lower <= 1.0 <= upper <= 1.1
    # the mean of +1/-1 differences: interval spans 0, bounds are means of resamples in [-1, 1]
    d, lo, hi = paired_bootstrap([1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], n_resamples=500, seed=3)
    assert d == 0.0 and -1.0 <= lo < 0.0 < hi <= 1.0
    assert paired_bootstrap([1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], n_resamples=500, seed=3) == (d, lo, hi)


def test_paired_bootstrap_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="aligned"):
        paired_bootstrap([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="NaN"):
        paired_bootstrap([1.0, math.nan], [1.0, 2.0])
    with pytest.raises(ValueError, match="`n_resamples`"):
        paired_bootstrap([1.0], [1.0], n_resamples=0)


# ------------------------------------------------------------------ comparison table


def _rows(values: dict[str, list[float]]) -> list[dict]:
    n = len(next(iter(values.values())))
    return [{"id": f"x{i}", **{k: v[i] for k, v in values.items()}} for i in range(n)]


def test_comparison_table_values_and_verdicts() -> None:
    base = _rows({"composite": [0.1, 0.2, 0.3, 0.4], "words": [10, 10, 10, 10], "fairsumm_uer": [0.1, 0.2, 0.1, 0.2],
                  "ec": [0.1, math.nan, 0.1, 0.1], "fluency": [-2.0, -2.0, -2.0, -2.0]})
    system = _rows({"composite": [0.3, 0.4, 0.5, 0.6], "words": [12, 12, 12, 12], "fairsumm_uer": [0.2, 0.1, 0.2, 0.1],
                    "ec": [0.2, 0.2, 0.2, 0.2], "fluency": [-3.0, -3.0, -3.0, -3.0]})
    system.reverse()  # rows are matched by id, not position
    table = comparison_table({"a": system, "zero": base}, [("a", "zero")],
                             ["composite", "words", "fairsumm_uer", "ec", "fluency"], n_resamples=200)
    by = {r["metric"]: r for r in table}
    assert by["composite"]["diff"] == pytest.approx(0.2)
    assert by["composite"]["lower"] == pytest.approx(0.2) and by["composite"]["verdict"] == "better"
    assert by["composite"]["system_mean"] == pytest.approx(0.45)
    assert by["composite"]["baseline_mean"] == pytest.approx(0.25)
    assert by["words"]["verdict"] == "higher"  # descriptive: a direction, not a judgement
    assert by["fluency"]["verdict"] == "worse" and by["fluency"]["diff"] == pytest.approx(-1.0)
    assert by["fairsumm_uer"]["diff"] == pytest.approx(0.0) and by["fairsumm_uer"]["verdict"] == "tie"
    assert by["ec"]["n"] == 3 and by["ec"]["diff"] == pytest.approx(0.1)  # the NaN article is left out
    text = format_table(table)
    assert "| a | zero | composite | 0.4500 | 0.2500 | +0.2000 [+0.2000, +0.2000] | better |" in text
    with pytest.raises(ValueError, match="no rows for system 'b'"):
        comparison_table({"a": system}, [("a", "b")], ["composite"])


# ------------------------------------------------------------------ data helpers


def test_truncate_words_rebuilds_prompt_and_target_article() -> None:
    ex = truncate_words(_example(0), 2)
    assert [d.text for d in ex.documents] == ["apple banana", "river stone"]
    assert ex.prompt == "Summarize the Left.\n\nLeft:\napple banana\n\nRight:\nriver stone"
    assert ex.meta["document"] == "apple banana" and ex.meta["topic"] == "t"
    with pytest.raises(ValueError, match="`words`"):
        truncate_words(_example(0), 0)


def test_check_split_rejects_a_shared_topic() -> None:
    check_split([_example(0, "a")], [_example(1, "b")], "topic")
    with pytest.raises(DataError, match=r"\['b'\]"):
        check_split([_example(0, "a"), _example(2, "b")], [_example(1, "b")], "topic")


class _Fluency:
    def score(self, sources, outputs):  # noqa: ANN001, ANN201
        return [-float(len(o)) for o in outputs]


class _EC:
    def score_details(self, sources, outputs):  # noqa: ANN001, ANN201
        return [{"ec": 0.2, "group_diffs": {"left": 0.2, "right": -0.2}}, {"ec": None, "group_diffs": {}}]


def test_evaluate_summaries_rows() -> None:
    dev = [_example(0), _example(1, target="right")]
    records = [{"id": "x0", "summary": "apple banana cherry", "composite": 0.5, "scores": {"c": 0.4, "f": 0.6}},
               {"id": "x1", "summary": "river stone", "composite": 0.1, "scores": {"c": 0.0, "f": 0.2}}]
    rows = evaluate_summaries(dev, records, _Fluency(), _EC())
    assert rows[0]["composite"] == 0.5 and rows[0]["c"] == 0.4 and rows[0]["f"] == 0.6
    assert rows[0]["words"] == 3.0 and rows[1]["words"] == 2.0
    assert rows[0]["fluency"] == -19.0  # the stub: minus the summary's length
    assert rows[0]["ec"] == 0.2 and rows[0]["ec_target"] == 0.2
    assert math.isnan(rows[1]["ec"]) and math.isnan(rows[1]["ec_target"])
    assert 0.0 <= rows[0]["mint"] <= 1.0 and 0.0 <= rows[0]["fairsumm_uer"] <= 1.0
    # a summary made of the left article's words only: all its matches are from the left group
    assert rows[0]["mint"] < 0.5
    with pytest.raises(DataError, match="not aligned"):
        evaluate_summaries(dev, records[::-1], _Fluency(), _EC())


# ------------------------------------------------------------------ the recipe's configs


def _script():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("dpo_rr_experiment", SCRIPTS / "dpo_rr_experiment.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module's annotations through it
    spec.loader.exec_module(module)
    return module


def test_shipped_experiment_configs_load(tmp_path: Path) -> None:
    script = _script()
    configs = sorted(SCRIPTS.glob("dpo_rr_*.yaml"))
    assert {p.name for p in configs} >= {"dpo_rr_cpu.yaml", "dpo_rr_paper.yaml"}
    for path in configs:
        args = script.build_parser().parse_args(["--config", str(path), "--out", str(tmp_path)])
        experiment, run = script.load_configs(args)
        assert run.iterations >= 3 and run.candidates >= 6 and run.dev_size >= 40
        assert run.split_key == "topic" and run.score_source == "target"
        assert (run.lora_r, run.lora_alpha, run.target_modules) == (8, 16, ["q_proj", "v_proj"])
        assert run.scorer_names == ["calibrated:coverage", "calibrated:faithfulness"]
        assert run.out_dir == str(tmp_path / "dpo_rr")
    args = script.build_parser().parse_args(
        ["--config", str(SCRIPTS / "dpo_rr_cpu.yaml"), "--out", str(tmp_path), "--iterations", "5"])
    assert script.load_configs(args)[1].iterations == 5  # flags win over the file
    bad = tmp_path / "bad.yaml"
    bad.write_text("iterations: 3\nlearning_rte: 0.1\n")
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['learning_rte'\]"):
        script.load_configs(script.build_parser().parse_args(["--config", str(bad), "--out", str(tmp_path)]))


# ------------------------------------------------------------------ dev passes after training (tiny model)


def _review(i: int) -> Example:
    return Example(
        id=f"e{i}",
        documents=[Document(f"Review {i}: the food was good and fresh.", "pos"),
                   Document(f"Review {i}: the service was slow and rude.", "neg")],
        attribute="sentiment", meta={"topic": f"t{i}"},
    )


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, tiny_causal):  # noqa: ANN001, ANN201
    from evenhand.training import DPORRConfig, train_dpo_rr

    model, tok = tiny_causal
    tiny = tmp_path_factory.mktemp("tiny-model")
    model.save_pretrained(tiny)
    tok.save_pretrained(tiny)
    out = tmp_path_factory.mktemp("exp")
    config = DPORRConfig(
        model=str(tiny), out_dir=str(out / "dpo_rr"), iterations=1, prompts_per_iteration=2, candidates=3,
        max_new_tokens=6, batch_size=2, learning_rate=1e-2, scorers="rouge-l-recall", progress=False,
        generate_batch_size=4, seed=3, device="cpu",
    )
    dev = [_review(7), _review(8)]
    train_dpo_rr(config, train=[_review(i) for i in range(4)], dev=dev)
    return config, dev, out


def test_greedy_dev_matches_the_loops_dev_pass(tiny_run) -> None:  # noqa: ANN001
    from evenhand.evaluation.io.jsonl import read_jsonl
    from evenhand.training.experiment import greedy_dev

    config, dev, out = tiny_run
    run = Path(config.out_dir)
    for name, model, inside in (("zero-shot", None, run / "iter_0"),
                                ("dpo-rr-1", str(run / "iter_1" / "adapter"), run / "iter_1")):
        loop = read_jsonl(inside / "dev.jsonl")
        after = greedy_dev(config, dev, model, out / "dev" / name)
        assert [r["summary"] for r in after] == [r["summary"] for r in loop]
        assert [r["composite"] for r in after] == pytest.approx([r["composite"] for r in loop])
        assert (out / "dev" / name / "summary.json").is_file()
    # stored: a second call reads the files and loads no model (a missing model would raise)
    again = greedy_dev(dataclasses_replace(config, model="/nonexistent"), dev, None, out / "dev" / "zero-shot")
    assert [r["summary"] for r in again] == [r["summary"] for r in read_jsonl(run / "iter_0" / "dev.jsonl")]


def test_rerank_baseline_keeps_the_best_candidate(tiny_run) -> None:  # noqa: ANN001
    from evenhand.rerank.scorers.composite import set_composite
    from evenhand.training.experiment import rerank_baseline

    config, dev, out = tiny_run
    records = rerank_baseline(config, dev, out / "rerank", progress=False)
    assert [r["id"] for r in records] == ["e7", "e8"]
    for r in records:
        assert len(r["candidates"]) == 3 and r["summary"] == r["candidates"][r["best_index"]]
        assert r["composite"] == pytest.approx(r["scores"]["rouge-l-recall"])  # one scorer: composite = raw
    from evenhand.evaluation.scoring.registry import get_scorer
    from evenhand.training.scoring import scoring_source

    scorer = get_scorer("rouge-l-recall", progress=False)
    for ex, r in zip(dev, records):
        raw = scorer.score([scoring_source(ex)] * 3, r["candidates"])
        norm = set_composite({"rouge-l-recall": raw}, {"rouge-l-recall": 1.0}, "minmax")
        assert norm[r["best_index"]] == max(norm)
    stored = rerank_baseline(dataclasses_replace(config, model="/nonexistent"), dev, out / "rerank")
    assert stored == records


def dataclasses_replace(config, **changes):  # noqa: ANN001, ANN201
    import dataclasses

    return dataclasses.replace(config, **changes)
