"""GenerateConfig's typed parts, and the one path through which every part adds its processors."""

import dataclasses

import pytest

from evenhand.decoding.config import (
    AbstractivenessSettings,
    DecodingSettings,
    FairnessSettings,
    GenerateConfig,
    PromptSettings,
)
from evenhand.decoding.engines.transformers import encode_prompts
from evenhand.decoding.generate import generate
from evenhand.decoding.processors.builders import (
    BatchHooks,
    PromptBatch,
    config_builders,
    constraint_builders,
)
from evenhand.evaluation.data.schema import Document, Example

EXAMPLES = [
    Example("a", [Document("The soup was cold.", "neg"), Document("Lovely staff.", "pos")],
            attribute="sentiment"),
    Example("b", [Document("Battery died.", "1"), Document("Great screen.", "5")], attribute="rating"),
]


def test_the_flat_fields_are_the_parts_fields_in_order():
    flat = [f.name for f in dataclasses.fields(GenerateConfig)]
    parts = [f.name for p in (DecodingSettings, PromptSettings, AbstractivenessSettings, FairnessSettings)
             for f in dataclasses.fields(p)]
    assert flat == parts and len(flat) == 26
    config = GenerateConfig(num_beams=1, abstractiveness=2.0, prompt_kind="reviews")
    got = config.parts()
    assert got["decoding"] == DecodingSettings(num_beams=1)
    assert got["prompting"] == PromptSettings(prompt_kind="reviews")
    assert got["abstractiveness"] == AbstractivenessSettings(abstractiveness=2.0)
    assert got["fairness"] == FairnessSettings()
    assert GenerateConfig.from_parts(*got.values()) == config
    assert GenerateConfig.from_parts(DecodingSettings(num_beams=1), seed=3) == GenerateConfig(num_beams=1, seed=3)


def test_each_part_checks_its_own_fields():
    with pytest.raises(ValueError, match="`max_new_tokens` must be a positive int, got 0"):
        DecodingSettings(max_new_tokens=0)
    with pytest.raises(ValueError, match="set only one of them"):
        AbstractivenessSettings(abstractiveness=1.0, extractiveness=1.0)
    with pytest.raises(ValueError, match="`prompt_kind`"):
        PromptSettings(prompt_kind="poems")
    with pytest.warns(UserWarning, match="`fairness` has no effect unless"):
        assert FairnessSettings(fairness='{"pos": 1, "neg": 1}').fairness == {"pos": 1.0, "neg": 1.0}
    # a fair beam search alone is fine; with sampling decoding settings it is not
    assert FairnessSettings(fairness="ratio", fair_beam=1.0).active
    with pytest.raises(ValueError, match="`fair_beam` is a beam search"):
        GenerateConfig(fairness="ratio", fair_beam=1.0, num_beams=1)


def test_every_part_adds_its_processors_through_one_path_in_order(tiny_causal):
    from transformers import RepetitionPenaltyLogitsProcessor

    from evenhand.decoding.processors.abstractiveness import AbstractivenessProcessor
    from evenhand.decoding.processors.group_coverage import GroupCoverageProcessor

    model, tok = tiny_causal
    config = GenerateConfig(max_new_tokens=3, abstractiveness=2.0, fairness="ratio",
                            fairness_strength=1.0, fair_beam=0.5)

    def mine(batch):
        return ["mine"]

    enc = encode_prompts(model, tok, EXAMPLES, config)
    batch = PromptBatch(EXAMPLES, enc["input_ids"], enc["attention_mask"], tok, model, config)
    hooks = BatchHooks()
    for build in config_builders(config, [mine]):
        hooks.add(build(batch))
    kinds = [type(p) for p in hooks.processors]
    assert kinds == [RepetitionPenaltyLogitsProcessor, str, AbstractivenessProcessor, GroupCoverageProcessor]
    assert set(hooks.generate_kwargs) == {"custom_generate", "fair_beam"}
    # the constraint parts alone, and nothing when they are off
    assert len(constraint_builders(config)) == 2
    plain = GenerateConfig(repetition_penalty=1.0)
    assert config_builders(plain) == [] and constraint_builders(plain) == []


def test_two_builders_cannot_set_one_generate_argument():
    hooks = BatchHooks()
    hooks.add(BatchHooks(["p"], {"custom_generate": 1}))
    hooks.add(["q"])
    assert hooks.processors == ["p", "q"]
    with pytest.raises(ValueError, match=r"generate\(\) argument\(s\) \['custom_generate'\]"):
        hooks.add(BatchHooks([], {"custom_generate": 2}))


def test_a_builder_may_return_hooks(tiny_causal):
    """A caller's builder returning BatchHooks is applied like the fairness part's."""
    model, tok = tiny_causal
    calls = []

    class Count:
        def __call__(self, input_ids, scores):
            calls.append(int(input_ids.shape[0]))
            return scores

    config = GenerateConfig(max_new_tokens=2, num_beams=1, batch_size=2)
    out = generate(model, tok, EXAMPLES, config, processor_builders=[lambda b: BatchHooks([Count()])],
                   progress=False)
    assert len(out) == 2 and calls == [2, 2]  # one call per new token, both rows at once
