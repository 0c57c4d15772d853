"""A sweep whose later model's prompts exceed its context stops before the first row (issue 34).

Tiny random 2-layer models with the real tokenizer and different context lengths:
``long`` (2048 positions) runs first, ``short`` (128) second; the sweep must refuse at
once, naming the example, the model and the limit, with no row written and no
progress bar started.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from evenhand.evaluation.errors import DataError

SHORT = 128


@pytest.fixture(scope="module")
def short_causal(tokenizer):
    from evenhand.decoding.models import tiny_model

    return tiny_model("causal", seed=1, tokenizer=tokenizer, max_position_embeddings=SHORT)


def _data(tmp_path):
    path = tmp_path / "reviews.jsonl"
    words = " ".join(["The staff were friendly and the breakfast was fresh every day."] * 8)
    path.write_text("".join(json.dumps({"id": f"ex{i}", "documents": [
        {"text": f"{words} {i}", "group": "pos"}, {"text": "The rooms were bad.", "group": "neg"}]}) + "\n"
        for i in range(3)))
    return path


def _rows(results):
    if not results.exists():
        return 0
    with sqlite3.connect(results) as conn:
        count = conn.execute("SELECT COUNT(*) FROM rows").fetchone()[0]
    conn.close()
    return count


def test_a_later_models_long_prompt_fails_before_any_row(tmp_path, tiny_causal, short_causal, monkeypatch):
    from evenhand.evaluation.io import progress
    from evenhand.sweep.config import parse_sweep
    from evenhand.sweep.runner import run_sweep

    bars = []
    real = progress.Progress
    monkeypatch.setattr(progress, "Progress", lambda *a, **k: bars.append(a) or real(*a, **k))
    models = {"long": tiny_causal, "short": short_causal}
    calls = []

    def load(name):
        calls.append(name)
        return models[name]

    config = parse_sweep({"datasets": {"reviews": str(_data(tmp_path))}, "seeds": [0], "metrics": ["mint"],
                          "base": {"max_new_tokens": 4, "num_beams": 1, "batch_size": 2},
                          "grid": {"model": ["long", "short"]}}, tmp_path, "t")
    assert [c.model for c in config.cells] == ["long", "short"]
    results = tmp_path / "r.sqlite"
    with pytest.raises(DataError) as err:
        run_sweep(config, results, load_model=load, progress=False)
    message = str(err.value)
    assert "\n" not in message
    assert "(model short, data set 'reviews')" in message and "example 'ex0'" in message, message
    assert f"context allows ({SHORT} tokens minus 4 new)" in message, message
    assert calls == ["long", "short"]  # checked one after the other, nothing generated
    assert _rows(results) == 0 and bars == []


def test_prompts_that_fit_every_model_still_run(tmp_path, tiny_causal, short_causal):
    from evenhand.sweep.config import parse_sweep
    from evenhand.sweep.runner import run_sweep

    data = tmp_path / "short.jsonl"
    data.write_text(json.dumps({"id": "a", "documents": [{"text": "Good.", "group": "pos"},
                                                        {"text": "Bad.", "group": "neg"}]}) + "\n")
    config = parse_sweep({"datasets": {"d": str(data)}, "seeds": [0], "metrics": ["mint"],
                          "base": {"max_new_tokens": 2, "num_beams": 1, "batch_size": 1},
                          "grid": {"model": ["long", "short"]}}, tmp_path, "t")
    models = {"long": tiny_causal, "short": short_causal}
    summary = run_sweep(config, tmp_path / "r.sqlite", load_model=models.__getitem__, progress=False)
    assert summary.written == 2 and _rows(tmp_path / "r.sqlite") == 2


def test_sweep_cli_probes_each_model_folder_before_the_bar(tmp_path, tiny_causal, short_causal, capsys, monkeypatch):
    """The CLI's default loader: each model folder's context read from its config, no weights loaded."""
    from evenhand.cli import main
    from evenhand.decoding import models as model_loading

    folders = {}
    for name, (model, tok) in {"long": tiny_causal, "short": short_causal}.items():
        folders[name] = tmp_path / name
        model.save_pretrained(str(folders[name]))
        tok.save_pretrained(str(folders[name]))
    capsys.readouterr()  # save_pretrained's own bar
    loaded = []
    real = model_loading.load_generator
    monkeypatch.setattr(model_loading, "load_generator", lambda name, **k: loaded.append(name) or real(name, **k))
    results = tmp_path / "r.sqlite"
    sweep = tmp_path / "s.yaml"
    sweep.write_text(
        f"datasets:\n  reviews: {_data(tmp_path)}\nseeds: [0]\nmetrics: [mint]\nresults: {results}\n"
        "base:\n  max_new_tokens: 4\n  num_beams: 1\n  batch_size: 2\n"
        f"grid:\n  model: [{folders['long']}, {folders['short']}]\n"
    )
    assert main(["sweep", "--config", str(sweep)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err and "sweep:" not in captured.out, captured
    assert err.startswith("evenhand sweep: error: cell ") and f"(model {folders['short']}, " in err, err
    assert "example 'ex0'" in err and f"({SHORT} tokens minus 4 new)" in err, err
    assert loaded == [] and _rows(results) == 0  # no weights loaded, nothing written
