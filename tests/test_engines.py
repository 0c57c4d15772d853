"""Engines behind one protocol: a toy engine registered from this module serves ``generate`` and the
CLI; what an engine cannot do is refused in one place; vLLM is imported only when asked for."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from evenhand.decoding.config import GenerateConfig
from evenhand.decoding.engines.base import (
    NEEDS_VLLM,
    Capabilities,
    SummaryCollector,
    batches,
    engine_class,
    engine_names,
    open_engine,
    refuse_unsupported,
    register_engine,
    unregister_engine,
)
from evenhand.decoding.generate import generate
from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.errors import DataError

DEMO = Path(__file__).resolve().parents[1] / "evenhand" / "data" / "demo.jsonl"
EXAMPLES = [
    Example("a", [Document("The soup was cold.", "neg"), Document("Lovely staff.", "pos")], attribute="sentiment"),
    Example("b", [Document("Battery died.", "1")], attribute="rating"),
    Example("c", [Document("Great screen.", "5"), Document("Too heavy.", "2"), Document("Fine.", "3")],
            attribute="rating"),
]


class EchoEngine:
    """A whole engine in a dozen lines: each summary names its example, its documents and its seed."""

    kind: ClassVar[str] = "echo"
    capabilities: ClassVar[Capabilities] = Capabilities(
        processor_builders="`processor_builders`: the echo engine has no logits", chunk=2,
    )
    tokenizer = None

    def __init__(self, model: str) -> None:
        self.model, self.prepared = model, 0

    @classmethod
    def open(cls, model: str, **_: Any) -> EchoEngine:
        return cls(model)

    def prepare(self, config: GenerateConfig) -> None:
        self.prepared += 1

    def check_prompts(self, examples: Sequence[Example], config: GenerateConfig) -> None:
        pass

    def shared_model(self) -> tuple[Any, Any] | None:
        return None

    def summarize(
        self, examples: Sequence[Example], config: GenerateConfig, processor_builders: Sequence[Any] = (),
        progress: bool = True, on_batch: Callable[[list[Example], list[str]], None] | None = None,
        lora_request: Any = None,
    ) -> list[str]:
        summaries = SummaryCollector(len(examples), config, on_batch, progress)
        for start, batch in batches(examples, config.batch_size):
            summaries.add(batch, [f"{self.model} read {len(ex.documents)} documents of {ex.id} with seed "
                                  f"{config.seed + start + k}." for k, ex in enumerate(batch)])
        return summaries.close()

    def close(self) -> None:
        pass


@pytest.fixture
def echo():
    register_engine("echo", EchoEngine)
    yield
    unregister_engine("echo")


def test_a_toy_engine_registered_here_serves_generate(echo):
    assert engine_names() == ("transformers", "vllm", "echo")
    engine = open_engine("m", "echo")
    seen = []
    out = generate(engine, None, EXAMPLES, GenerateConfig(batch_size=2, seed=5), progress=False,
                   on_batch=lambda batch, texts: seen.append([ex.id for ex in batch]))
    assert out == ["m read 2 documents of a with seed 5.", "m read 1 documents of b with seed 6.",
                   "m read 3 documents of c with seed 7."]
    assert seen == [["a", "b"], ["c"]]


def test_a_lazy_entry_imports_its_module_on_first_use():
    register_engine("echo-lazy", f"{__name__}:EchoEngine")
    try:
        assert engine_class("echo-lazy") is EchoEngine
    finally:
        unregister_engine("echo-lazy")
    with pytest.raises(ValueError, match="'package.module:Class'"):
        register_engine("echo-bad", "no_colon_here")
    with pytest.raises(ValueError, match="already registered"):
        register_engine("transformers", EchoEngine)


def test_an_unknown_engine_names_the_choices():
    with pytest.raises(DataError, match=r"--engine must be one of transformers, vllm, got 'nope'"):
        open_engine("m", "nope")


def test_capabilities_are_refused_in_one_place(echo):
    engine = open_engine("m", "echo")
    with pytest.raises(DataError, match="the echo engine has no logits"):
        generate(engine, None, EXAMPLES, GenerateConfig(), processor_builders=[lambda batch: []])
    with pytest.raises(ValueError, match="`lora_request` is a vLLM LoRA request"):
        generate(engine, None, EXAMPLES, GenerateConfig(), lora_request=object())
    assert Capabilities().lora_request == NEEDS_VLLM
    # a server's refusals, by the same function: message templates filled with the field
    from evenhand.decoding.engines.server import PLAIN, WITH_PROCESSORS

    with pytest.raises(DataError, match="`extractiveness` cannot run through a server URL"):
        refuse_unsupported(PLAIN, GenerateConfig(extractiveness=2.0))
    with pytest.raises(DataError, match=r"`response_prefix` 'The' cannot be used with a server URL"):
        refuse_unsupported(PLAIN, GenerateConfig(response_prefix="The"))
    refuse_unsupported(WITH_PROCESSORS, GenerateConfig(abstractiveness=2.0))  # the server runs them


def test_the_cli_runs_a_registered_engine(echo, tmp_path):
    from evenhand.cli import main

    out = tmp_path / "out.jsonl"
    assert main(["generate", "--data", str(DEMO), "--out", str(out), "--engine", "echo", "--model", "m",
                 "--limit", "3", "--batch-size", "1", "--seed", "2"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["engine"] for r in rows] == ["echo"] * 3
    assert [r["summary"].rsplit(" ", 1)[1] for r in rows] == ["2.", "3.", "4."]


def test_vllm_is_imported_only_when_asked_for():
    code = (
        "import sys\n"
        "from evenhand.decoding.engines.base import engine_class, engine_names\n"
        "from evenhand.decoding.generate import generate\n"
        "import evenhand.args, evenhand.cli\n"
        "assert engine_names() == ('transformers', 'vllm')\n"
        "engine_class('vllm').capabilities\n"  # the class and what it declares: vLLM itself stays out
        "assert not [m for m in sys.modules if m == 'vllm' or m.startswith('vllm.')], 'vllm imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_one_prompt_builder_names_file_and_line_past_the_context(tokenizer):
    """Every engine tokenizes the plan's prompts; one too long for the context names the example's
    file:line (the vLLM engines' error lost it before)."""
    from evenhand.decoding.prompts.plan import plan_prompts, prompt_token_ids
    from evenhand.decoding.prompts.templates import build_prompt, chat_prompt
    from evenhand.evaluation.data.loaders import load_examples

    [ex] = load_examples(DEMO)[:1]
    [plan] = plan_prompts([ex], GenerateConfig())
    assert plan.text(tokenizer) == chat_prompt(tokenizer, build_prompt(ex)) + plan.prefix and plan.prefix
    assert plan.messages()[1] == {"role": "user", "content": build_prompt(ex)}
    [ids] = prompt_token_ids(tokenizer, [plan])
    assert ids == tokenizer(plan.text(tokenizer), add_special_tokens=False)["input_ids"]
    with pytest.raises(DataError, match=rf"demo\.jsonl:1: example {ex.id!r}: `documents` take {len(ids)} prompt "
                                        r"tokens, more than the model's context allows \(64 tokens minus 8 new\)"):
        prompt_token_ids(tokenizer, [plan], limit=64, max_new_tokens=8)


def test_a_model_that_is_no_engine_is_named():
    from evenhand.decoding.engines.http import ServerClient

    with pytest.raises(TypeError, match=r"`model` must be an engine .* got ServerClient; for a server URL use open_engine"):
        generate(ServerClient("http://127.0.0.1:9/v1#m"), None, EXAMPLES, GenerateConfig())
