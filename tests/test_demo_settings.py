"""The demo says in one line which settings its evenhand column used and why (issue 33)."""

from typing import Any

import pytest

from evenhand.demo import (
    DEFAULTS_WHY,
    DemoConfig,
    explain_text,
    prompted_beam_recipe,
    settings_line,
    steering_label,
)


def test_settings_line_names_every_setting_and_the_count():
    config = DemoConfig(abstractiveness=4.0, fairness_strength=3.0, fair_beams=(1.0, 3.0), candidates=3,
                        floors={"fluency": 0.5, "checker": 0.1})
    assert settings_line(config) == (
        "evenhand demo: smollm2-135m-instruct; λ4, α=3, fair beam β∈{1,3} + quote + 3 samples; "
        "up to 7 candidates with plain; floors fluency,checker; why: --explain"
    )
    assert "\n" not in settings_line(DemoConfig()) and DEFAULTS_WHY.strip()
    assert DEFAULTS_WHY in " ".join(explain_text(config).split())  # the reasons: on request


def test_no_constraint_and_no_floors_are_said_so():
    config = DemoConfig(abstractiveness=None, floors={})
    assert steering_label(config) == "no λ"
    assert "; no λ, " in settings_line(config) and "floors none;" in settings_line(config)


def test_the_default_settings_line_is_what_the_dev_sweep_chose():
    assert settings_line(DemoConfig(), "/models/smollm2") == (
        "evenhand demo: smollm2; no λ, α=3, fair beam β∈{1,3} + quote; up to 4 candidates with plain; "
        "floors fluency,coverage,checker; why: --explain"
    )
    assert "benchmarks/demo_defaults.py" in DEFAULTS_WHY
    assert "margin 0.1" in explain_text(DemoConfig())


def test_the_settings_line_names_the_fair_prompt_and_its_prompted_beam():
    config = DemoConfig(fair_prompt="labels", floors={}, quote=False)
    assert settings_line(config) == (
        "evenhand demo: smollm2-135m-instruct; no λ, α=3, fair beam β∈{1,3} + fair prompt labels; "
        "4 candidates with plain; floors none; why: --explain"
    )
    assert "fair prompt" not in settings_line(DemoConfig())  # default: none, and not named
    assert "(beam+labels)" in explain_text(config)
    assert prompted_beam_recipe("definition") == "beam+definition"


def test_the_settings_line_names_the_groupwise_candidate():
    config = DemoConfig(groupwise=True, floors={}, quote=False)
    assert settings_line(config) == (
        "evenhand demo: smollm2-135m-instruct; no λ, α=3, fair beam β∈{1,3} + group-wise; "
        "4 candidates with plain; floors none; why: --explain"
    )
    assert "group-wise" not in settings_line(DemoConfig())  # default: off


def test_groupwise_adds_its_candidate_before_plain(tmp_path, model_dir):
    import json

    from evenhand.cli import main
    from evenhand.decoding.config import GenerateConfig
    from evenhand.decoding.engines.base import open_engine
    from evenhand.decoding.groupwise import groupwise_summary
    from evenhand.demo import demo_examples

    out = tmp_path / "d.jsonl"
    assert main(["demo", "--model", str(model_dir), "--example", "museum", "--max-new-tokens", "4",
                 "--groupwise", "--no-quote", "--out", str(out)]) == 0
    (row,) = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [c["recipe"] for c in row["candidates"]] == ["fair-beam β=1", "fair-beam β=3", "group-wise", "beam"]
    assert row["config"]["groupwise"] is True
    engine = open_engine(str(model_dir))
    (museum,) = [ex for ex in demo_examples() if ex.id == "museum"]
    expected = groupwise_summary(engine, engine.tokenizer, museum, GenerateConfig(max_new_tokens=4, seed=0))
    assert row["candidates"][2]["text"] == expected


def test_interleave_adds_plain_beam_search_over_the_interleaved_documents(tmp_path, model_dir):
    import json

    from evenhand.cli import main
    from evenhand.decoding.config import GenerateConfig
    from evenhand.decoding.document_order import INTERLEAVED_RECIPE, interleave_groups
    from evenhand.decoding.engines.base import open_engine
    from evenhand.decoding.generate import generate
    from evenhand.demo import demo_examples

    assert "interleaved" not in settings_line(DemoConfig())  # default: off
    assert " + interleaved" in settings_line(DemoConfig(interleave=True))
    out = tmp_path / "d.jsonl"
    assert main(["demo", "--model", str(model_dir), "--example", "museum", "--max-new-tokens", "4",
                 "--interleave", "--no-quote", "--out", str(out)]) == 0
    (row,) = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [c["recipe"] for c in row["candidates"]] == ["fair-beam β=1", "fair-beam β=3", INTERLEAVED_RECIPE, "beam"]
    assert row["config"]["interleave"] is True
    engine = open_engine(str(model_dir))
    (museum,) = [ex for ex in demo_examples() if ex.id == "museum"]
    config = GenerateConfig(max_new_tokens=4, seed=0, num_beams=4)
    expected = generate(engine, engine.tokenizer, [interleave_groups(museum)], config, progress=False)[0]
    assert row["candidates"][2]["text"] == expected


def test_quote_adds_plain_plus_one_quote_and_its_fluency_floor_reads_plain(tmp_path, model_dir):
    import json

    from evenhand.cli import main
    from evenhand.decoding.quote import QUOTE_RECIPE, quoted_summary
    from evenhand.demo import demo_examples

    assert " + quote; " in settings_line(DemoConfig())  # default: on
    assert "quote" not in settings_line(DemoConfig(quote=False))
    out = tmp_path / "d.jsonl"
    assert main(["demo", "--model", str(model_dir), "--example", "headphones", "--max-new-tokens", "4",
                 "--out", str(out)]) == 0
    (row,) = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert row["config"]["quote"] is True
    (headphones,) = [ex for ex in demo_examples() if ex.id == "headphones"]
    plain = row["candidates"][-1]
    expected = quoted_summary(headphones, plain["text"])
    assert expected is not None  # "Some reviewers" + random tokens leave the five-star group short of its share
    assert [c["recipe"] for c in row["candidates"]] == ["fair-beam β=1", "fair-beam β=3", QUOTE_RECIPE, "beam"]
    quote = row["candidates"][2]
    assert quote["text"] == expected and quote["text"].startswith(plain["text"].rstrip()[:10])
    assert quote["written"] == plain["text"]
    # the fluency floor reads what the model wrote (the plain summary); the checker floor the whole text
    assert quote["floors"]["fluency"] == plain["floors"]["fluency"]
    assert quote["floors"]["checker"] != plain["floors"]["checker"]


def test_candidate_switches_must_be_booleans():
    for name in ("groupwise", "interleave", "quote"):
        wrong: dict[str, Any] = {name: "yes"}  # a wrong type on purpose: the config must refuse it
        with pytest.raises(ValueError, match=rf"`{name}` must be true or false, got 'yes'"):
            DemoConfig(**wrong)
        right: dict[str, Any] = {name: True}
        assert getattr(DemoConfig(**right), name) is True


def test_an_unknown_fair_prompt_is_refused_by_name():
    with pytest.raises(ValueError, match=r"`fair_prompt` must be one of \('definition', 'labels'\).*'label'"):
        DemoConfig(fair_prompt="label")


def test_negative_candidates_exit_2_before_the_model_loads(capsys):
    from evenhand.cli import main

    assert main(["demo", "--candidates", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--candidates" in err and "-1" in err and "loading" not in err


def test_without_the_quote_the_demo_pool_is_the_fair_beams_and_plain(tmp_path, model_dir):
    import json

    from evenhand.cli import main

    out = tmp_path / "d.jsonl"
    assert main(["demo", "--model", str(model_dir), "--example", "museum", "--max-new-tokens", "4",
                 "--no-quote", "--out", str(out)]) == 0
    (row,) = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [c["recipe"] for c in row["candidates"]] == ["fair-beam β=1", "fair-beam β=3", "beam"]
    assert row["config"]["quote"] is False
    assert row["config"]["candidates"] == 0 and row["config"]["abstractiveness"] is None
    assert sum(bool(c.get("kept")) for c in row["candidates"]) == 1


def test_a_fair_prompt_reaches_every_candidate_and_adds_its_plain_beam(tmp_path, model_dir):
    import json

    from evenhand.cli import main
    from evenhand.decoding.config import GenerateConfig
    from evenhand.decoding.engines.base import open_engine
    from evenhand.decoding.generate import generate
    from evenhand.demo import demo_examples

    out = tmp_path / "d.jsonl"
    assert main(["demo", "--model", str(model_dir), "--example", "museum", "--max-new-tokens", "4",
                 "--fair-prompt", "labels", "--no-quote", "--out", str(out)]) == 0
    (row,) = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [c["recipe"] for c in row["candidates"]] == ["fair-beam β=1", "fair-beam β=3", "beam+labels", "beam"]
    assert row["config"]["fair_prompt"] == "labels"
    # the prompted beam is plain beam search (4 beams, no α, β or λ) under the labels prompt
    engine = open_engine(str(model_dir))
    (museum,) = [ex for ex in demo_examples() if ex.id == "museum"]
    prompted = GenerateConfig(max_new_tokens=4, seed=0, num_beams=4, fair_prompt="labels")
    assert row["candidates"][2]["text"] == generate(engine, engine.tokenizer, [museum], prompted, progress=False)[0]
    plain = GenerateConfig(max_new_tokens=4, seed=0, num_beams=4)
    assert row["plain"] == generate(engine, engine.tokenizer, [museum], plain, progress=False)[0]


def test_an_unknown_fair_prompt_exits_2(capsys):
    from evenhand.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--fair-prompt", "label"])
    assert exit_info.value.code == 2 and "--fair-prompt" in capsys.readouterr().err
