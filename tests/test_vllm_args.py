"""The client side of evenhand's vLLM processors, without vLLM: request settings, checks, CLI refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.errors import DataError

DEMO = Path(__file__).resolve().parents[1] / "evenhand" / "data" / "demo.jsonl"


def _example() -> Example:
    return Example("e1", [Document("Great battery, it lasts two days.", "pos"),
                          Document("The screen cracked after a week.", "neg")], attribute="sentiment")


def test_spans_give_the_in_process_source_ids(tokenizer):
    """The documents' token spans in the prompt select exactly what the in-process table holds."""
    from evenhand.decoding.config import GenerateConfig
    from evenhand.decoding.engines.vllm_settings import request_settings
    from evenhand.decoding.prompts.plan import plan_prompts, prompt_token_ids
    from evenhand.decoding.prompts.source_tokens import prompt_source_ids
    from evenhand.decoding.prompts.templates import build_prompt, chat_prompt

    ex = _example()
    config = GenerateConfig(num_beams=1, abstractiveness=2.0)
    [plan] = plan_prompts([ex], config)
    [ids] = prompt_token_ids(tokenizer, [plan])
    text, prefix = plan.text(tokenizer), plan.prefix
    assert prefix and text.endswith(prefix)
    settings = request_settings(config, tokenizer, ex, text, ids, len(tokenizer))
    part = settings["abstractiveness"]
    assert part["h"] == 2.0 and part["reward"] is False and len(part["spans"]) == 2
    source: list[int] = []
    for start, end in part["spans"]:
        source += ([-1] if source else []) + ids[start:end]
    chat = chat_prompt(tokenizer, build_prompt(ex, None, None, "auto"))
    assert source == prompt_source_ids(tokenizer, chat, ex.texts)
    # the decoding controls travel too: the generated-only penalty and the n-gram ban
    assert settings["repetition_penalty"] == 1.2 and settings["no_repeat_ngram_size"] == 3


def test_coverage_settings_are_the_group_vocabulary(tokenizer):
    from evenhand.decoding.config import GenerateConfig
    from evenhand.decoding.engines.vllm_settings import check, request_settings
    from evenhand.decoding.processors.group_vocab import build_group_vocab

    ex = _example()
    config = GenerateConfig(num_beams=1, fairness="equal", fairness_strength=3.0, repetition_penalty=1.0,
                            no_repeat_ngram_size=0)
    settings = request_settings(config, tokenizer, ex, "unused", [], len(tokenizer))
    assert set(settings) == {"coverage"}
    c = settings["coverage"]
    vocab = build_group_vocab(ex, tokenizer)
    assert c["token_ids"] == vocab.token_ids.tolist() and c["target"] == [0.5, 0.5]
    assert c["alpha"] == 3.0 and c["tau"] == 0.8 and len(c["member"]) == 2
    check(json.loads(json.dumps(settings)))  # the wire form passes the processor's check


@pytest.mark.parametrize("settings, field", [
    ({"abstractiveness": {"h": 1.0, "spans": [[3, 1]]}}, "abstractiveness.spans"),
    ({"coverage": {"alpha": 1.0, "token_ids": [1, 2], "member": [[1, 0]], "specificity": [[0.5, 2.0]],
                   "target": [1.0]}}, "coverage.specificity"),
    ({"no_repeat_ngram_size": 2.5}, "no_repeat_ngram_size"),
    ({"v": 2}, "version"),
])
def test_malformed_settings_name_the_field(settings, field):
    from evenhand.decoding.engines.vllm_settings import parse

    with pytest.raises(ValueError, match="evenhand") as err:
        parse({"evenhand": json.dumps(settings)})
    assert field in str(err.value)
    assert parse(None) is None and parse({"other": 1}) is None


def test_what_vllm_cannot_take_is_refused_by_its_capabilities():
    """Fair beam search runs on vLLM as the step loop, but not with a token-raising processor;
    caller processor builders are refused (the engine's class is read: vLLM is not imported)."""
    from evenhand.decoding.config import GenerateConfig
    from evenhand.decoding.engines.base import engine_class, refuse_unsupported

    capabilities = engine_class("vllm").capabilities
    refuse_unsupported(capabilities, GenerateConfig(fairness="ratio", fair_beam=1.0))  # the step loop runs it
    with pytest.raises(DataError, match="cannot be combined with --fair-beam/--fair-meaning on vLLM"):
        refuse_unsupported(capabilities, GenerateConfig(fairness="ratio", fair_beam=1.0, fairness_strength=1.0))
    with pytest.raises(DataError, match="processor_builders"):
        refuse_unsupported(capabilities, GenerateConfig(), [lambda batch: []])


def test_merged_batches_keep_the_data_indices():
    from evenhand.commands.generate import merged_batches

    batches = [(0, ["a", "b"]), (2, ["c", "d"]), (6, ["g", "h"]), (8, ["i"])]
    assert merged_batches(batches, 3) == [(0, ["a", "b"]), (2, ["c", "d"]), (6, ["g", "h", "i"])]
    assert merged_batches(batches, 64) == [(0, ["a", "b", "c", "d"]), (6, ["g", "h", "i"])]


def test_engine_vllm_without_vllm_exits_2_with_the_fix(tmp_path, capsys):
    from evenhand.cli import main
    from evenhand.decoding.engines.vllm_engine import vllm_available

    if vllm_available():
        pytest.skip("vLLM is installed here")
    out = tmp_path / "out.jsonl"
    rc = main(["generate", "--engine", "vllm", "--data", str(DEMO), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and not out.exists() and "\n" not in err
    assert "needs vLLM" in err and "make setup-vllm" in err


def test_server_processors_flag_is_needed_for_processors(tmp_path, capsys):
    """Without --server-processors a URL keeps today's refusal, naming the way out."""
    from evenhand.cli import main
    from evenhand.decoding.engines.launch import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    rc = main(["generate", "--data", str(DEMO), "--out", str(tmp_path / "o.jsonl"), "--model", url,
               "--abstractiveness", "2"])
    assert rc == 2 and "--server-processors" in capsys.readouterr().err
    rc = main(["generate", "--data", str(DEMO), "--out", str(tmp_path / "o.jsonl"), "--model", url,
               "--engine", "vllm"])
    assert rc == 2


def test_sweep_engine_is_a_checked_setting(tmp_path):
    from evenhand.sweep.config import parse_sweep

    base = {"datasets": {"demo": str(DEMO)}, "seeds": [0]}
    sweep = parse_sweep({**base, "grid": {"engine": ["transformers", "vllm"]}, "base": {"num_beams": 1}}, tmp_path)
    assert sorted(c.engine for c in sweep.cells) == ["transformers", "vllm"]
    assert len({c.id for c in sweep.cells}) == 2
    with pytest.raises(DataError, match="`engine` must be one of"):
        parse_sweep({**base, "base": {"engine": "tgi"}}, tmp_path)
    # fair beam search runs on vLLM as the step loop; with the group bonus it cannot (exit 2)
    fair = parse_sweep({**base, "base": {"engine": "vllm", "fairness": "ratio", "fair_beam": 1.0}}, tmp_path)
    assert fair.cells[0].generate_config(0).fair_beam == 1.0
    with pytest.raises(DataError, match="--fair-strength"):
        parse_sweep({**base, "base": {"engine": "vllm", "fairness": "ratio", "fair_beam": 1.0,
                                      "fairness_strength": 2.0}}, tmp_path)
