"""Fair beam search, the LM scorers and the judges through a real in-process vLLM engine.

Marked ``vllm``: they run where vLLM is installed (``make setup-vllm``, ``make test``
runs them with ``.venv-vllm``) on the embedded SmolLM2 in float32, and skip elsewhere.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.vllm
pytest.importorskip("vllm")
vllm_engine = pytest.importorskip("evenhand.decoding.engines.vllm_engine")

from evenhand.decoding.config import GenerateConfig  # noqa: E402
from evenhand.decoding.engines.beam_loop import fair_beam_generate  # noqa: E402
from evenhand.decoding.engines.vllm_engine import VllmNextToken  # noqa: E402
from evenhand.decoding.generate import generate  # noqa: E402
from evenhand.demo import demo_examples  # noqa: E402
from evenhand.evaluation.errors import DataError  # noqa: E402
from evenhand.evaluation.scoring.registry import get_scorer  # noqa: E402

MODEL = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def engine():
    return vllm_engine.VllmEngine.open(MODEL)  # float32 on CPU, max_logprobs 64; shared in this process


#: fair beam search on the headphones reviews: plain beam search (beta 0) and the fair one
PLAIN = GenerateConfig(max_new_tokens=12, num_beams=4)
FAIR = GenerateConfig(max_new_tokens=12, num_beams=4, fairness="ratio", fair_beam=3.0)


def _headphones() -> list:
    return [ex for ex in demo_examples() if ex.id == "headphones"]


@pytest.fixture(scope="module")
def in_process(smollm2):
    """The in-process summaries of ``PLAIN`` and ``FAIR`` (both vLLM runs below are compared to them)."""
    model, tok = smollm2
    return {name: generate(model, tok, _headphones(), config, progress=False)
            for name, config in (("plain", PLAIN), ("fair", FAIR))}


def _scorer(name: str, **config: Any) -> Any:
    return get_scorer(name, progress=False, **config)


def _uer(examples, summaries):
    return [-s for s in get_scorer("fairsumm", progress=False).score(examples, summaries)]


def test_fair_beam_on_vllm_equals_in_process_and_lowers_uer(engine, in_process):
    examples = _headphones()
    nt = VllmNextToken(engine)
    # plain beam search through `generate --engine vllm` is the same step loop at beta 0
    plain = generate(engine, None, examples, PLAIN, progress=False)
    fair = fair_beam_generate(nt, engine.tokenizer, examples, FAIR, engine.vocab_size, progress=False)
    # float32 on both sides: the log-probs agree, so the searches take the same steps
    assert fair == in_process["fair"]
    assert plain == in_process["plain"]
    # 12 tokens: plain "praised the noise-cancellation technology, while others criticized" (UER 0.081),
    # fair "praised the sound, while others complained about the battery, the" (0.060)
    assert sum(_uer(examples, fair)) < sum(_uer(examples, plain))
    # the group bonus cannot be applied to raw candidates: refused before any request
    calls = nt.calls
    with pytest.raises(DataError, match="--fair-strength"):
        fair_beam_generate(nt, engine.tokenizer, examples,
                           GenerateConfig(num_beams=4, fairness="ratio", fair_beam=1.0, fairness_strength=1.0),
                           engine.vocab_size, progress=False)
    assert nt.calls == calls


def test_lm_scorers_on_vllm_agree_with_in_process(engine, smollm2, tmp_path, capsys):
    from evenhand.cli import main
    from evenhand.rerank import lm_prefix

    model, tok = smollm2
    examples = [ex for ex in demo_examples() if ex.id in ("headphones", "pizzeria")]
    summaries = ["Some reviewers praised the sound; others said the cushions get warm.",
                 "The pizza was good but the service was slow.", ""]
    sources = [examples[0], examples[1], examples[1]]
    for name in ("lm-pmi", "lm-likelihood", "fluency"):
        here = _scorer(name).use_model(model, tok, "here").score(sources, summaries)
        there = _scorer(name, engine="vllm").use_model(engine, engine.tokenizer, "there")
        values = there.score(sources, summaries)
        assert values == pytest.approx(here, abs=1e-3)
    # the command line: evaluate --metrics lm-pmi --engine vllm, per summary within 1e-3 nats/token
    assert lm_prefix.vllm_engine_for(MODEL) is engine  # the scorers of --engine vllm use this engine
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(ex.to_dict()) + "\n" for ex in examples))
    outs = tmp_path / "summaries.jsonl"
    outs.write_text("".join(json.dumps({"id": ex.id, "summary": s}) + "\n" for ex, s in zip(examples, summaries)))
    rows = {}
    for engine_name in ("transformers", "vllm"):
        out = tmp_path / f"{engine_name}.jsonl"
        assert main(["evaluate", "--data", str(data), "--summaries", str(outs), "--metrics", "lm-pmi",
                     "--engine", engine_name, "--score-cache", "none", "--out", str(out), "--quiet"]) == 0
        rows[engine_name] = [json.loads(line)["lm-pmi"] for line in out.read_text().splitlines()]
    assert rows["vllm"] == pytest.approx(rows["transformers"], abs=1e-3)
    capsys.readouterr()


def test_judges_on_vllm_agree_with_in_process(engine, smollm2):
    model, tok = smollm2
    examples = _headphones()
    summaries = ["Some reviewers praised the sound; others said the cushions get warm.", "Aliens landed."]
    for name in ("llm-coverage", "llm-faithfulness"):
        here = _scorer(name).use_model(model, tok, "here").score(examples * 2, summaries)
        there = _scorer(name, engine="vllm").use_model(engine, engine.tokenizer, "there")
        assert there.score(examples * 2, summaries) == pytest.approx(here, abs=1e-3)


def test_generate_command_runs_fair_beam_on_vllm(in_process, tmp_path, capsys):
    from evenhand.cli import main

    examples = _headphones()
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps(examples[0].to_dict()) + "\n")
    out = tmp_path / "fair.jsonl"
    common = ["generate", "--engine", "vllm", "--data", str(data), "--fair", "ratio", "--fair-beam", "3",
              "--max-new-tokens", "12", "--num-beams", "4"]
    # the group bonus with fair beam on vLLM: exit 2 and one line, before any engine is built
    assert main([*common, "--fair-strength", "1", "--out", str(tmp_path / "no.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert "--fair-strength" in err and len(err.splitlines()) == 1
    assert main([*common, "--out", str(out)]) == 0
    summary = json.loads(out.read_text().splitlines()[0])["summary"]
    assert summary == in_process["fair"][0]  # the --fair ratio --fair-beam 3 flags above are FAIR
