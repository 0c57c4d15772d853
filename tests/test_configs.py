"""The one config loader: list[...] fields from YAML lists or comma strings, unknown keys, flags over YAML."""

import json

import pytest

from evenhand.cli import main
from evenhand.evaluation.data.configs import as_list, list_fields, load_config
from evenhand.rerank.reranker import RerankConfig
from evenhand.rerank.scorers.composite import CompositeConfig
from evenhand.training.config import DPORRConfig


def test_list_fields_are_typed():
    assert list_fields(DPORRConfig) == {"recipes": str, "scorers": str, "weights": float, "lora_target": str}
    assert list_fields(RerankConfig) == {"recipes": str}
    assert list_fields(CompositeConfig) == {"scorers": str, "weights": float}


def test_yaml_list_and_comma_string_load_equal(tmp_path):
    listed, comma = tmp_path / "a.yaml", tmp_path / "b.yaml"
    listed.write_text("scorers: [rouge-1-recall, rouge-l-recall]\nweights: [2, 1]\nrecipes: [nucleus]\n"
                      "lora_target: [q_proj, k_proj]\n")
    comma.write_text("scorers: rouge-1-recall, rouge-l-recall\nweights: '2,1'\nrecipes: nucleus\n"
                     "lora_target: q_proj,k_proj\n")
    a, b = DPORRConfig.from_yaml(listed), load_config(DPORRConfig, comma)
    assert a == b
    assert (a.scorers, a.weights, a.recipes) == (["rouge-1-recall", "rouge-l-recall"], [2.0, 1.0], ["nucleus"])
    assert a.target_modules == ["q_proj", "k_proj"]
    # the same for the other configs with list fields
    assert RerankConfig(recipes="nucleus, top-k") == RerankConfig(recipes=["nucleus", "top-k"])
    assert CompositeConfig(scorers="rouge,rouge-l-f", weights="3,1").weights == [3.0, 1.0]


def test_unknown_key_and_bad_list_values_name_the_field(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("iterations: 3\nbetta: 0.2\n")
    with pytest.raises(ValueError, match=r"run.yaml: unknown key\(s\) \['betta'\]; valid keys: data, "):
        load_config(DPORRConfig, path)
    with pytest.raises(ValueError, match=r"`weights` must be float numbers \(a list or comma-separated\), got 'a,b'"):
        DPORRConfig(weights="a,b")
    with pytest.raises(ValueError, match="`recipes` must be a list or a comma-separated string, got 3"):
        RerankConfig(recipes=3)
    assert as_list(None, "x") is None and as_list(" a, ,b ", "x") == ["a", "b"]


def test_flags_override_the_yaml(tmp_path, monkeypatch):
    import evenhand.training.loop

    seen = {}

    def fake(config):
        seen["config"] = config
        return {"iterations": []}

    monkeypatch.setattr(evenhand.training.loop, "train_dpo_rr", fake)
    path = tmp_path / "run.yaml"
    path.write_text("data: d.jsonl\nout_dir: runs/a\nscorers: [rouge-1-recall]\nweights: [1]\nbeta: 0.2\n")
    assert main(["train", "--config", str(path), "--scorers", "rouge-1-recall,rouge-l-recall",
                 "--weights", "2,1", "--out", "runs/b"]) == 0
    c = seen["config"]
    assert (c.scorers, c.weights, c.out_dir) == (["rouge-1-recall", "rouge-l-recall"], [2.0, 1.0], "runs/b")
    assert (c.data, c.beta) == ("d.jsonl", 0.2)  # not given as flags: the YAML's values
    assert main(["train", "--config", str(path)]) == 0
    assert (seen["config"].scorers, seen["config"].weights) == (["rouge-1-recall"], [1.0])


def test_old_comma_string_manifest_still_resumes(tmp_path):
    from evenhand.training.loop import MANIFEST, check_resumable

    config = DPORRConfig(scorers=["rouge-1-recall", "rouge-l-recall"], weights=[2, 1], out_dir=str(tmp_path))
    old = {**config.to_dict(), "scorers": "rouge-1-recall,rouge-l-recall", "weights": "2,1",
           "recipes": "nucleus,top-k,hybrid", "lora_target": "q_proj,v_proj"}
    (tmp_path / MANIFEST).write_text(json.dumps({"config": old}))
    check_resumable(tmp_path, config)  # the same run, stored with comma strings
    (tmp_path / MANIFEST).write_text(json.dumps({"config": {**old, "weights": "1,1"}}))
    with pytest.raises(ValueError, match=r"weights: \[1.0, 1.0\] -> \[2.0, 1.0\]"):
        check_resumable(tmp_path, config)
