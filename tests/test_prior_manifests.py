"""A prior run's manifest edited or damaged (NaN, inf, wrong types, not JSON): one line, exit 2, before any model.

Covers the train run folder's ``manifest.json`` (``training.store.read_run_manifest``),
the resumable outputs' ``<out>.manifest.json`` under ``--force-resume`` and the sweep
store's stored meta (issue 34).
"""

from __future__ import annotations

import json
import math

import pytest

from evenhand.training.config import DPORRConfig
from evenhand.training.store import RunStore, read_run_manifest

FIX = "the run folder's manifest was edited or damaged"

#: manifest.json text -> what the one line must name
DAMAGED = {
    "not_json": ("{", "invalid JSON"),
    "a_list": ("[1, 2]", "must hold a JSON object (config, inputs, iterations), got list"),
    "config_list": ('{"config": [1]}', "`config` must be a JSON object, got list"),
    "inputs_str": ('{"inputs": "x"}', "`inputs` must be a JSON object, got str"),
    "lr_nan": ('{"config": {"learning_rate": NaN}}', "`config.learning_rate` is not a finite number"),
    "beta_inf": ('{"config": {"beta": Infinity}}', "`config.beta` is not a finite number"),
    "rank_overflow": ('{"config": {"lora_r": 1e400}}', "`config.lora_r` is not a finite number"),
    "weights_nan": ('{"config": {"weights": [1.0, -Infinity]}}', "`config.weights[1]` is not a finite number"),
    "inputs_nan": ('{"inputs": {"model": {"size": NaN}}}', "`inputs.model.size` is not a finite number"),
    "lr_type": ('{"config": {"learning_rate": "fast"}}', "`learning_rate` must be float, got 'fast'"),
    "lr_range": ('{"config": {"learning_rate": 5}}', "`learning_rate` must be a float in (0, 1], got 5"),
    "method": ('{"config": {"method": "ppo"}}', "`method` must be one of"),
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_a_damaged_run_manifest_is_one_line_naming_the_file_and_field(tmp_path, case):
    text, named = DAMAGED[case]
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(ValueError) as err:
        RunStore(tmp_path).check_resumable(DPORRConfig())
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path / 'manifest.json'}: "), message
    assert named in message and FIX in message and "choose another --out" in message, message


def test_a_run_manifest_as_written_still_resumes_with_nan_dev_means(tmp_path):
    store = RunStore(tmp_path)
    config = DPORRConfig(iterations=2, weights=[2.0, 1.0], scorers=["rouge-l-recall", "equal-coverage"])
    # an iteration whose dev scores were undefined: write_json writes NaN, and that is no damage
    store.write_manifest({"config": config.to_dict(), "iterations": [{"iteration": 1, "dev": {"x": math.nan}}]})
    stored = read_run_manifest(tmp_path, DPORRConfig)
    assert stored is not None and math.isnan(stored["iterations"][0]["dev"]["x"])
    store.check_resumable(DPORRConfig(iterations=3, weights=[2.0, 1.0], scorers=["rouge-l-recall", "equal-coverage"]))
    assert read_run_manifest(tmp_path / "absent") is None


def _train_argv(tmp_path, model_dir):
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": f"e{i}", "documents": [
        {"text": f"The food was good {i}.", "group": "pos"}, {"text": "The rooms were bad.", "group": "neg"}],
        "attribute": "sentiment"}) + "\n" for i in range(4)))
    return ["train", "--data", str(data), "--out", str(tmp_path / "run"), "--model", str(model_dir),
            "--iterations", "1", "--dev-size", "1", "--prompts-per-iteration", "2", "--scorers", "rouge-l-recall"]


@pytest.mark.parametrize("text", ['{"config": {"learning_rate": NaN}}', '{"config": [1]}', "{"])
def test_train_refuses_a_damaged_manifest_before_any_model_loads(tmp_path, model_dir, monkeypatch, capsys, text):
    from evenhand.cli import main
    from evenhand.training import context, loop

    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded before the manifest was checked")

    monkeypatch.setattr(loop, "open_run", no_model)
    monkeypatch.setattr(context, "open_run", no_model)
    (tmp_path / "run").mkdir()
    manifest = tmp_path / "run" / "manifest.json"
    manifest.write_text(text)
    assert main(_train_argv(tmp_path, model_dir)) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err, err
    assert err.startswith(f"evenhand train: error: {manifest}: ") and FIX in err, err
    assert manifest.read_text() == text  # nothing rewritten


def test_train_refuses_other_settings_before_any_model_loads(tmp_path, model_dir, monkeypatch, capsys):
    from evenhand.cli import main
    from evenhand.training import loop

    monkeypatch.setattr(loop, "open_run", lambda *a, **k: (_ for _ in ()).throw(AssertionError("model loaded")))
    RunStore(tmp_path / "run").write_manifest({"config": DPORRConfig(learning_rate=0.5).to_dict()})
    assert main(_train_argv(tmp_path, model_dir)) == 2
    err = capsys.readouterr().err.strip()
    assert "holds a run with other settings" in err and "learning_rate: 0.5 -> " in err, err


#: <out>.manifest.json text -> what the one line must name (generate / rerank with --force-resume)
OUT_MANIFESTS = {
    "options_nan": ('{"command": "generate", "options": {"temperature": NaN}}', "`NaN` is not valid JSON"),
    "options_inf": ('{"options": {"top_p": -Infinity}}', "`-Infinity` is not valid JSON"),
    "a_list": ("[1]", "must hold a JSON object of settings, got list"),
    "torn": ('{"options": {"temperature": 0.7', "invalid JSON"),
}


@pytest.mark.parametrize("command", ["generate", "rerank"])
@pytest.mark.parametrize("case", sorted(OUT_MANIFESTS))
def test_force_resume_with_a_damaged_output_manifest_is_one_line_before_any_model(
    tmp_path, model_dir, monkeypatch, capsys, command, case,
):
    from evenhand.cli import main
    from evenhand.decoding import models

    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded before the manifest was checked")

    monkeypatch.setattr(models, "load_generator", no_model)
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"id": "a", "attribute": "sentiment", "documents": [
        {"text": "The food was good.", "group": "pos"}, {"text": "The rooms were bad.", "group": "neg"}]}) + "\n")
    out = tmp_path / "o.jsonl"
    out.write_text('{"id": "a", "summary": "Food good."}\n')
    text, named = OUT_MANIFESTS[case]
    manifest = tmp_path / "o.jsonl.manifest.json"
    manifest.write_text(text)
    flags = ["--do-sample", "--num-beams", "1", "--temperature", "0.7"] if command == "generate" else [
        "--scorers", "rouge-l-recall", "--floors", "none"]
    code = main([command, "--data", str(data), "--out", str(out), "--model", str(model_dir), "--force-resume", *flags])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert err.count("\n") == 0 and "Traceback" not in err, err
    assert err.startswith(f"evenhand {command}: error: {manifest}: ") and named in err, err
    # the fix is one the user has not tried yet: --force-resume was given
    assert "fix or delete o.jsonl.manifest.json" in err and "--no-resume" in err, err
    assert "or --force-resume to keep" not in err, err
    assert manifest.read_text() == text and out.read_text() == '{"id": "a", "summary": "Food good."}\n'


#: meta key -> (stored text, what the one line must name)
SWEEP_META = {
    "scoring_nan": ("scoring", '{"metrics": ["mint"], "factuality_options": {"x": NaN}}', "`NaN` is not valid JSON"),
    "scoring_metrics": ("scoring", '{"metrics": "mint"}', "`metrics` must be a list of names, got 'mint'"),
    "scoring_factuality": ("scoring", '{"factuality": 3}', "`factuality` must be a scorer name or null, got 3"),
    "datasets_list": ("datasets", "[1]", "must be a JSON object, got list"),
    "datasets_inf": ("datasets", '{"reviews": Infinity}', "`Infinity` is not valid JSON"),
    "models_torn": ("models", '{"tiny": {"name": ', "invalid JSON"),
}


@pytest.mark.parametrize("case", sorted(SWEEP_META))
def test_a_sweep_store_with_damaged_stored_settings_is_one_line_before_any_model(tmp_path, tiny_causal, case):
    import sqlite3

    from evenhand.evaluation.errors import DataError
    from evenhand.sweep.config import parse_sweep
    from evenhand.sweep.runner import run_sweep

    data = tmp_path / "reviews.jsonl"
    data.write_text("".join(json.dumps({"id": f"ex{i}", "documents": [
        {"text": f"The food was good {i}.", "group": "pos"}, {"text": "The rooms were bad.", "group": "neg"}]})
        + "\n" for i in range(2)))
    config = parse_sweep({"datasets": {"reviews": str(data)}, "seeds": [0], "metrics": ["mint"],
                          "base": {"max_new_tokens": 2, "num_beams": 1, "batch_size": 2}}, tmp_path, "t")
    results = tmp_path / "r.sqlite"
    run_sweep(config, results, load_model=lambda name: tiny_causal, progress=False)
    key, text, named = SWEEP_META[case]
    with sqlite3.connect(results) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = ?", (text, key))
        conn.execute("DELETE FROM rows WHERE example_id = 'ex1'")  # one row left to generate
    conn.close()

    def no_model(name):
        raise AssertionError("a model was loaded before the stored settings were checked")

    with pytest.raises(DataError) as err:
        run_sweep(config, results, load_model=no_model, progress=False)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{results}: meta `{key}`"), message
    assert named in message and "write to a new --results file" in message, message
