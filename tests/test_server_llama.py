"""Against a real llama.cpp server (llama-cpp-python) serving the embedded SmolLM2 GGUF:
`evenhand rerank` and `evenhand meta-eval` through the server, and a server killed mid-run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.server
pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (`make setup-test` builds it)")

DEMO = Path(__file__).resolve().parents[1] / "evenhand" / "data" / "demo.jsonl"


@pytest.fixture(scope="module")
def server():
    """``(url, served model name, process)`` of a llama.cpp server on 127.0.0.1, stopped after the module.

    One thread: on an oversubscribed machine llama.cpp's spinning thread barrier makes two
    threads several times slower than one. The last test kills it.
    """
    from evenhand.decoding.engines.http import ServerClient
    from evenhand.decoding.engines.launch import local_llama_server
    from evenhand.evaluation.errors import DataError

    try:
        with local_llama_server(n_ctx=4096, n_threads=1, startup_timeout=60) as (url, proc):
            yield url, ServerClient(url).model, proc
    except DataError as err:  # e.g. a native build dying with SIGILL: one line, not N failures
        pytest.exit(f"llama.cpp server tests: {err}", returncode=1)


def test_the_library_carries_no_native_cpu_tuning():
    """The build runs on any x86-64 with AVX2: ggml reports no AVX-512 and no AMX kernels.

    A build with ggml's native tuning on a CPU that advertises AVX-512/AMX reports
    ``AVX512 = 1`` and ``AMX_INT8 = 1`` here and died with SIGILL on a VM."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode()
    features = {k.strip(): v.strip() for k, _, v in (p.partition("=") for p in info.split("|")) if v}
    assert features.get("AVX2") == "1", info  # the portable baseline is there
    assert not [k for k in features if "AVX512" in k or "AMX" in k], info
    # tools/llama_no_common.cmake left llama.cpp's unused `common` library out of the build
    libs = sorted(p.name for p in (Path(llama_cpp.__file__).parent / "lib").iterdir())
    assert any(n.startswith("libllama.so") for n in libs) and not any("common" in n for n in libs), libs


def _evenhand(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evenhand.cli", *args], capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def _rerank_args(url: str, out: Path, cache: Path, limit: int = 1, candidates: int = 2) -> list[str]:
    return [
        "rerank", "--data", str(DEMO), "--limit", str(limit), "--out", str(out), "--model", url,
        "--candidates", str(candidates), "--scorers", "llm-faithfulness", "--judge-model", url, "--floors", "none",
        "--max-new-tokens", "24", "--max-concurrency", "2", "--score-cache", str(cache),
    ]


def test_rerank_through_the_server(server, tmp_path):
    url, model, _ = server
    out = tmp_path / "rerank.jsonl"
    done = _evenhand(*_rerank_args(url, out, tmp_path / "cache"))
    assert done.returncode == 0, done.stderr[-2000:]
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["id"] == "headphones"
    assert [c["recipe"] for c in record["candidates"]] == ["nucleus", "top-k"]
    judged = [c["components"]["llm-faithfulness"] for c in record["candidates"]]
    assert all(c["text"].strip() for c in record["candidates"])
    assert all(1.0 <= v <= 5.0 for v in judged)
    assert record["best_index"] == max(range(2), key=lambda i: (judged[i], -i))
    # the score cache keys on URL + model: each candidate's judgement is stored once, naming both
    cached = [json.loads(line)["result"] for line in (tmp_path / "cache" / "llm-faithfulness.jsonl").read_text().splitlines()]
    assert len(cached) == 2
    assert all(r["judge"] == f"{url}#{model}" and r["argmax"] in (1, 2, 3, 4, 5) for r in cached)


def test_meta_eval_judge_through_the_server(server, tmp_path):
    from conftest import shared_file

    data = shared_file("perspective_metric_eval/controlled_summaries_dev.json")
    url, model, _ = server
    out = tmp_path / "meta.jsonl"
    done = _evenhand(
        "meta-eval", "--data", str(data), "--limit", "1", "--scorers", "llm-faithfulness",
        "--judge-model", url, "--out", str(out), "--n-bootstrap", "50", "--score-cache", "none",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    entries = json.loads(Path(data).read_text())
    assert row["n"] == len(entries[0]["summaries"])
    assert row["backend"] == f"{url}#{model}"
    assert all(1.0 <= s <= 5.0 for s in row["scores"])
    assert "llm-faithfulness" in done.stdout


@pytest.mark.slow
def test_server_judge_agrees_with_the_in_process_judge(server):
    """Same GGUF, same prompt: the expected digit through the server matches in-process.

    llama.cpp runs Q4_1 with 8-bit activations and sees only the top 20 tokens; transformers
    runs the de-quantized float32 weights over the whole vocabulary. Measured here: scores
    within 0.06, digit mass within 0.07, same argmax; the bounds leave room for that.
    """
    from evenhand.evaluation.data.loaders import load_examples
    from evenhand.evaluation.scoring.registry import get_scorer

    url, model, _ = server
    example = load_examples(DEMO)[0]
    summaries = [
        "Reviewers praise the noise cancelling and battery, while some find the cushions warm.",
        "Everyone hated these headphones and returned them.",
    ]
    local = get_scorer("llm-faithfulness", progress=False).score_details([example] * 2, summaries)
    remote = get_scorer("llm-faithfulness", model=url, progress=False).score_details([example] * 2, summaries)
    for ours, theirs in zip(local, remote):
        assert "fallback" not in theirs
        assert theirs["argmax"] == ours["argmax"]
        assert abs(theirs["score"] - ours["score"]) < 0.15
        assert abs(theirs["digit_mass"] - ours["digit_mass"]) < 0.1


def test_server_killed_mid_run_exits_2_and_keeps_finished_records(server, tmp_path):
    """Runs last: it kills the module's server."""
    from evenhand.decoding.engines.launch import stop

    url, _, proc = server
    out = tmp_path / "rerank.jsonl"
    run = subprocess.Popen(
        [sys.executable, "-m", "evenhand.cli", *_rerank_args(url, out, tmp_path / "cache", limit=4, candidates=2)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    try:
        deadline = time.monotonic() + 240
        while not (out.exists() and out.read_text().count("\n") >= 1):
            assert run.poll() is None, run.stderr.read()[-2000:] if run.stderr else ""
            assert time.monotonic() < deadline, "no record within 240 s"
            time.sleep(0.2)
        stop(proc)  # the server dies while the run works on the next examples
        _, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 2, err[-2000:]
    assert "is unreachable" in err and url in err and "Traceback" not in err
    lines = out.read_text().splitlines()
    assert 1 <= len(lines) < 4  # what was finished before the kill is kept, whole
    ids = [json.loads(line)["id"] for line in lines]
    assert ids[0] == "headphones" and len(set(ids)) == len(ids)
