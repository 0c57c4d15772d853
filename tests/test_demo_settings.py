"""The demo says in one line which settings its evenhand column used and why (issue 33)."""

from evenhand.demo import DEFAULTS_WHY, DemoConfig, settings_line, steering_label


def test_settings_line_names_every_setting_and_the_reason():
    config = DemoConfig(abstractiveness=4.0, fairness_strength=3.0, fair_beams=(1.0, 3.0), candidates=3,
                        floors={"fluency": 0.5, "checker": 0.1})
    assert settings_line(config) == (
        "evenhand settings: λ4, α=3, fair beam β∈{1,3}, 3 sampled candidates + plain, "
        f"floors fluency=0.5,checker=0.1; why: {DEFAULTS_WHY}"
    )
    assert "\n" not in settings_line(DemoConfig()) and DEFAULTS_WHY.strip()


def test_no_constraint_and_no_floors_are_said_so():
    config = DemoConfig(abstractiveness=None, floors={})
    assert steering_label(config) == "no λ"
    assert settings_line(config).startswith("evenhand settings: no λ, ") and "floors none;" in settings_line(config)


def test_the_default_settings_line_is_what_the_dev_sweep_chose():
    assert settings_line(DemoConfig()) == (
        "evenhand settings: no λ, α=3, fair beam β∈{1,3}, 0 sampled candidates + plain, "
        f"floors fluency=0.5,calibrated:coverage=0.1,checker=0; why: {DEFAULTS_WHY}"
    )
    assert "benchmarks/demo_defaults.py" in DEFAULTS_WHY


def test_negative_candidates_exit_2_before_the_model_loads(capsys):
    from evenhand.cli import main

    assert main(["demo", "--candidates", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--candidates" in err and "-1" in err and "loading" not in err


def test_default_demo_pool_is_the_fair_beams_and_plain(tmp_path, model_dir):
    import json

    from evenhand.cli import main

    out = tmp_path / "d.jsonl"
    assert main(["demo", "--model", str(model_dir), "--example", "museum", "--max-new-tokens", "4",
                 "--out", str(out)]) == 0
    (row,) = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [c["recipe"] for c in row["candidates"]] == ["fair-beam β=1", "fair-beam β=3", "beam"]
    assert row["config"]["candidates"] == 0 and row["config"]["abstractiveness"] is None
    assert sum(bool(c.get("kept")) for c in row["candidates"]) == 1
