"""Help texts and documented defaults, tested against what the code does with no flag given."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import pytest

from evenhand.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _effective(action: argparse.Action, help_default: str) -> str:
    """What a command uses when the flag is absent: the parser's default, else (dataclass fields) the help's."""
    if action.default is None:
        return help_default  # dataclass fields: the help is generated from the field's default
    value = action.default
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def test_every_help_default_is_the_parsers_default():
    checked = 0
    for name, sub in _subparsers().items():
        for action in sub._actions:
            found = re.search(r"\(default: ([^)]*)\)", action.help or "")
            if not found or isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
                continue
            assert _effective(action, found.group(1)) == found.group(1), (name, action.option_strings)
            checked += 1
    assert checked > 50


def test_dataclass_help_defaults_are_the_fields_defaults():
    from evenhand.decoding.config import GenerateConfig

    sub = _subparsers()["generate"]
    helps = {a.dest: a.help for a in sub._actions}
    config = GenerateConfig()
    for field in ("num_beams", "max_new_tokens", "repetition_penalty", "no_repeat_ngram_size", "prompt_kind"):
        assert f"(default: {getattr(config, field)})" in helps[field]


def _claims() -> dict[tuple[str, str], str]:
    """`--flag` (default X) claims in README.md and the docs the CLI's flags answer to."""
    pattern = re.compile(r"`(--[a-z][a-z-]*)(?: [A-Z_]+)?`,? \(?default:? `?([^`),;]+)")
    out = {}
    for path in (ROOT / "README.md", ROOT / "docs" / "serving.md", ROOT / "docs" / "training.md"):
        for m in pattern.finditer(path.read_text()):
            out[(path.name, m.group(1))] = m.group(2).strip()
    return out


def test_documented_defaults_are_what_runs():
    """Each documented default, checked against the object that applies it (a new claim must be added)."""
    from evenhand.decoding.config import GenerateConfig
    from evenhand.evaluation.scoring.registry import get_scorer
    from evenhand.rerank.reranker import DEFAULT_FLOORS
    from evenhand.training.config import DPORRConfig

    judge = get_scorer("llm-coverage")
    behaviour = {
        ("README.md", "--prompt-kind"): ("auto", GenerateConfig().prompt_kind),
        ("README.md", "--floors"): ("on", "on" if DEFAULT_FLOORS else "off"),
        ("serving.md", "--max-concurrency"): ("4", str(judge.config.max_concurrency)),
        ("serving.md", "--scorer-batch-size"): ("8", str(judge.config.batch_size)),
        ("serving.md", "--server-timeout"): ("120", f"{judge.config.timeout:g}"),
        ("training.md", "--weights"): ("equal", "equal" if DPORRConfig().weights is None else "set"),
        ("training.md", "--normalize"): ("min–max over the group", {"minmax": "min–max over the group"}.get(
            DPORRConfig().normalize, DPORRConfig().normalize)),
    }
    claims = _claims()
    assert set(claims) == set(behaviour)
    for key, (claimed, actual) in behaviour.items():
        assert claims[key] == claimed, key  # the doc says this ...
        assert actual == claimed, key  # ... and the code does it


def test_response_prefix_help_names_the_prefixes_in_use():
    from evenhand.decoding.prompts.templates import response_prefix
    from evenhand.evaluation.data.schema import Document, Example

    helps = {a.dest: a.help for a in _subparsers()["generate"]._actions}
    for attribute in ("rating", "speaker", "stance", "party", None):
        ex = Example("x", [Document("a", "1"), Document("b", "2")], attribute=attribute)
        used = response_prefix(ex, None, None, "auto")
        assert f"'{used}'" in helps["response_prefix"]


def test_engine_help_says_vllm_has_fair_beam_search():
    engine = next(a.help for a in _subparsers()["generate"]._actions if a.dest == "engine")
    assert "no fair beam" not in engine and "plain and fair" in engine and "decodes greedily" in engine


def test_vllm_logs_are_quiet_unless_verbose(monkeypatch, tmp_path):
    for name in ("VLLM_LOGGING_LEVEL", "EVENHAND_VERBOSE"):  # recorded, so both are restored afterwards
        monkeypatch.setenv(name, "0")
        monkeypatch.delenv(name)
    main(["evaluate", "--data", str(tmp_path / "none.jsonl"), "--summaries", "references", "--out",
          str(tmp_path / "o.jsonl")])
    assert os.environ["VLLM_LOGGING_LEVEL"] == "CRITICAL"  # its ERROR lines too: a failed load is our one line
    monkeypatch.delenv("VLLM_LOGGING_LEVEL")
    main(["evaluate", "-v", "--data", str(tmp_path / "none.jsonl"), "--summaries", "references", "--out",
          str(tmp_path / "o.jsonl")])
    assert "VLLM_LOGGING_LEVEL" not in os.environ


@pytest.mark.parametrize("flag", ["--attribute"])
def test_data_commands_take_the_attribute(flag):
    for name in ("generate", "rerank", "evaluate", "compare"):
        assert any(flag in a.option_strings for a in _subparsers()[name]._actions), name
