"""The demo-defaults sweep (issue 33): its offline selection equals the demo's rule on hand-set
scores, its pools follow the demo's candidate order, and its table counts what it says."""

from __future__ import annotations

import pytest

from benchmarks.demo_defaults import (
    FLOOR_GRID,
    dev_examples,
    pool_recipes,
    select,
    settings,
    summarize,
)


def _row(recipe: str, cov: float, faith: float, ec: float, fluency: float, checker: float, **extra: float):
    return {"recipe": recipe, "calibrated:coverage": cov, "calibrated:faithfulness": faith,
            "equal-coverage": ec, "fluency": fluency, "checker": checker, **extra}


# min-max over the pool: coverage [1/3, 1, 0], faithfulness [0, 1, 0.5], EC [1, 0, 0.5]
# -> composites 4/9, 2/3, 1/3: the sample wins unless a floor excludes it
POOL = [
    _row("fair-beam β=1", 0.5, 0.2, -0.1, -2.0, 0.1),
    _row("nucleus", 0.9, 0.6, -0.3, -3.0, 0.3),
    _row("beam", 0.3, 0.4, -0.2, -2.2, 0.2),
]


def test_select_is_the_demo_rule_on_hand_set_scores():
    assert select(POOL, {}) == 1
    # fluency: the sample is 0.8 below plain (> 0.5) -> out; the fair beam is 0.2 above -> kept
    assert select(POOL, FLOOR_GRID["default"]) == 0
    # checker margin 0: the fair beam (0.1 < plain's 0.2) is out too -> plain
    assert select(POOL, FLOOR_GRID["default+checker=0"]) == 2
    # margin 0.05 still excludes it (0.1 < 0.2 - 0.05)
    assert select(POOL, FLOOR_GRID["default+checker=0.05"]) == 2
    assert select(POOL, FLOOR_GRID["fluency+checker=0"]) == 2


def test_pools_follow_the_demo_order_and_the_grid_is_complete():
    grid = settings()
    # 6 steerings × β{1}, β{1,3}; 2 fair-prompt steerings × β{}+beam, β{1}(+beam), β{1,3}(+beam);
    # groupwise, interleaved and quote × β{}+gw/+il/+q, β{1}+.., β{1,3}+.. (without it, their settings are
    # none's); × N × floors
    assert len(grid) == (6 * 2 + 2 * 5 + 3 * 3) * 3 * 5 and len({s["name"] for s in grid}) == len(grid)
    by_name = {s["name"]: s for s in grid}
    assert pool_recipes(by_name["none β{1,3} N3 default"]) == [
        "fair-beam β=1", "fair-beam β=3", "nucleus", "top-k", "hybrid", "beam"]
    assert pool_recipes(by_name["λ4 β{1} N2 default"]) == ["fair-beam β=1", "nucleus", "top-k", "beam"]
    assert pool_recipes(by_name["λ4 β{1} N0 default"]) == ["fair-beam β=1", "beam"]
    assert pool_recipes(by_name["ext2 β{1,3} N0 default"]) == ["fair-beam β=1", "fair-beam β=3", "beam"]
    assert pool_recipes(by_name["labels β{1,3}+beam N0 default"]) == [
        "fair-beam β=1", "fair-beam β=3", "beam+labels", "beam"]
    assert pool_recipes(by_name["definition β{1,3}+beam N2 default"]) == [
        "fair-beam β=1", "fair-beam β=3", "beam+definition", "nucleus", "top-k", "beam"]
    assert pool_recipes(by_name["labels β{1} N0 default"]) == ["fair-beam β=1", "beam"]
    assert pool_recipes(by_name["definition β{}+beam N0 default"]) == ["beam+definition", "beam"]
    assert "none β{}+beam N0 default" not in by_name and "none β{} N0 default" not in by_name
    assert pool_recipes(by_name["groupwise β{1,3}+gw N0 default"]) == [
        "fair-beam β=1", "fair-beam β=3", "group-wise", "beam"]
    assert pool_recipes(by_name["groupwise β{}+gw N0 default"]) == ["group-wise", "beam"]
    assert pool_recipes(by_name["groupwise β{1}+gw N0 default"]) == ["fair-beam β=1", "group-wise", "beam"]
    assert "groupwise β{1} N0 default" not in by_name
    assert pool_recipes(by_name["interleaved β{1,3}+il N0 default"]) == [
        "fair-beam β=1", "fair-beam β=3", "beam+interleaved", "beam"]
    assert pool_recipes(by_name["interleaved β{}+il N0 default"]) == ["beam+interleaved", "beam"]
    assert pool_recipes(by_name["quote β{1,3}+q N0 default"]) == [
        "fair-beam β=1", "fair-beam β=3", "beam+quote", "beam"]


def test_each_steering_is_a_demo_setting():
    from benchmarks.demo_defaults import STEERINGS, steering_config
    from evenhand.demo import DemoConfig, steering_label

    configs = [steering_config(name) for name in STEERINGS]
    assert [steering_label(c) for c in configs] == [
        "no λ", "λ4", "extraction reward h=2", "extraction reward h=1", "no λ", "no λ", "no λ", "no λ", "no λ",
        "no λ", "no λ"]
    assert [c.fairness_strength for c in configs] == [3.0, 3.0, 3.0, 3.0, 1.0, 6.0, 3.0, 3.0, 3.0, 3.0, 3.0]
    assert [c.fair_prompt for c in configs] == [None] * 6 + ["labels", "definition", None, None, None]
    assert [c.groupwise for c in configs] == [False] * 8 + [True, False, False]
    assert [c.interleave for c in configs] == [False] * 9 + [True, False]
    assert [c.quote for c in configs] == [False] * 10 + [True]
    with pytest.raises(ValueError, match="not both"):
        DemoConfig(abstractiveness=4.0, extractiveness=2.0)


def test_summarize_counts_kept_and_worse_than_plain():
    rows = []
    for steer in ("none", "λ4"):
        for recipe, r in (("fair-beam β=1", POOL[0]), ("fair-beam β=3", POOL[0]), ("nucleus", POOL[1]),
                          ("top-k", POOL[1]), ("hybrid", POOL[1])):
            rows.append({**r, "id": "a", "steer": steer, "recipe": recipe, "lm-likelihood": -1.0,
                         "rouge-l-precision": 0.5, "uer": 0.1})
    rows.append({**POOL[2], "id": "a", "steer": "plain", "lm-likelihood": -1.5, "rouge-l-precision": 0.4,
                 "uer": 0.3})
    table = {r["setting"]: r for r in summarize(rows, ["a"])}
    assert len(table) == 60
    kept = table["none β{1} N0 default"]  # the fair beam is kept: checker 0.1 < plain 0.2, UER 0.1 < 0.3
    assert (kept["not_plain"], kept["checker_below_plain"], kept["lm_likelihood_below_plain"]) == (1, 1, 0)
    assert (kept["uer_below_plain"], kept["uer_above_plain"]) == (1, 0)
    assert kept["checker"] == pytest.approx(0.1) and kept["uer"] == pytest.approx(0.1)
    plain = table["none β{1} N0 default+checker=0"]  # the checker floor keeps plain
    assert (plain["not_plain"], plain["checker_below_plain"], plain["uer"]) == (0, 0, pytest.approx(0.3))
    assert summarize(rows, ["a", "missing"]) == []  # an unfinished set leaves no partial means


def _pool_with(beam_steer: str, steer: str, recipe: str, uer: float) -> list[dict]:
    """Set "a": two fair beams of ``beam_steer`` that fail the fluency floor (-3.0 vs plain's -2.2), one
    ``recipe`` candidate of ``steer`` that clears every floor and beats plain on all three components
    (UER ``uer``), and plain (UER 0.3)."""
    rows = [{**POOL[1], "id": "a", "steer": beam_steer, "recipe": beam, "lm-likelihood": -1.0,
             "rouge-l-precision": 0.5, "uer": 0.2} for beam in ("fair-beam β=1", "fair-beam β=3")]
    rows.append({**_row(recipe, 0.35, 0.45, -0.15, -2.1, 0.25), "id": "a", "steer": steer,
                 "lm-likelihood": -1.2, "rouge-l-precision": 0.45, "uer": uer})
    rows.append({**POOL[2], "id": "a", "steer": "plain", "lm-likelihood": -1.5, "rouge-l-precision": 0.4,
                 "uer": 0.3})
    return rows


def test_a_fair_prompt_setting_selects_over_its_prompted_beam():
    # labels: the fair beams fail the fluency floor (-3.0 vs plain's -2.2); the prompted beam clears every
    # floor and beats plain on all three components -> kept only where it is in the pool
    table = {r["setting"]: r for r in summarize(_pool_with("labels", "labels", "beam+labels", 0.1), ["a"])}
    assert len(table) == 5 * 5  # β{}+beam, β{1}, β{1}+beam, β{1,3}, β{1,3}+beam at N0, 5 floor sets
    with_beam = table["labels β{1,3}+beam N0 default+checker=0"]
    assert (with_beam["not_plain"], with_beam["uer"], with_beam["checker"]) == (1, 0.1, 0.25)
    assert table["labels β{}+beam N0 default"]["not_plain"] == 1
    assert table["labels β{1,3} N0 default"]["not_plain"] == 0  # without it: plain
    assert table["labels β{1,3} N0 fluency+checker=0"]["not_plain"] == 0  # fluency excludes the fair beams


def test_dev_sets_are_not_demo_sets():
    from evenhand.demo import demo_examples

    demo_texts = {d.text for ex in demo_examples() for d in ex.documents}
    examples = dev_examples()
    assert [ex.id for ex in examples[:4]] == ["camping-tent", "pool-closure-debate", "dental-clinic",
                                              "pizza-delivery"]
    assert all(d.text not in demo_texts for ex in examples for d in ex.documents)


def test_the_groupwise_steering_reads_the_fair_beams_of_none():
    from benchmarks.demo_defaults import row_steer

    assert (row_steer("groupwise", "fair-beam β=3"), row_steer("groupwise", "group-wise")) == ("none", "groupwise")
    assert (row_steer("labels", "fair-beam β=1"), row_steer("λ4", "beam")) == ("labels", "plain")
    # none's fair beams fail the fluency floor (-3.0 vs plain's -2.2); the group-wise candidate clears every
    # floor and beats plain on all three components -> kept only where it is in the pool
    table = {r["setting"]: r for r in summarize(_pool_with("none", "groupwise", "group-wise", 0.05), ["a"])}
    with_gw = table["groupwise β{1,3}+gw N0 default+checker=0"]
    assert (with_gw["not_plain"], with_gw["uer"], with_gw["checker"]) == (1, 0.05, 0.25)
    assert table["groupwise β{}+gw N0 default"]["uer_below_plain"] == 1
    assert table["none β{1,3} N0 default"]["not_plain"] == 0  # none's fair beams alone: plain
    assert len([name for name in table if name.startswith("groupwise")]) == 3 * 5


def test_the_interleaved_steering_reads_the_fair_beams_of_none():
    from benchmarks.demo_defaults import row_steer

    assert (row_steer("interleaved", "fair-beam β=1"), row_steer("interleaved", "beam+interleaved")) == (
        "none", "interleaved")
    table = {r["setting"]: r for r in summarize(_pool_with("none", "interleaved", "beam+interleaved", 0.05), ["a"])}
    with_il = table["interleaved β{1,3}+il N0 default+checker=0"]
    assert (with_il["not_plain"], with_il["uer"], with_il["checker"]) == (1, 0.05, 0.25)
    assert table["none β{1,3} N0 default"]["not_plain"] == 0


def test_the_quote_steering_reads_the_fair_beams_of_none():
    from benchmarks.demo_defaults import row_steer

    assert (row_steer("quote", "fair-beam β=3"), row_steer("quote", "beam+quote")) == ("none", "quote")
    table = {r["setting"]: r for r in summarize(_pool_with("none", "quote", "beam+quote", 0.05), ["a"])}
    with_q = table["quote β{}+q N0 default+checker=0"]
    assert (with_q["not_plain"], with_q["uer"], with_q["checker"]) == (1, 0.05, 0.25)
    assert table["none β{1,3} N0 default"]["not_plain"] == 0
