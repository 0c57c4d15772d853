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
