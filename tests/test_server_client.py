"""The server backend without a model: URL parsing, retries and concurrency against a stdlib
HTTP server in a thread, the judge's reading of top_logprobs, the request parameters of the
sampling recipes, and the exit-2 refusals that happen before any request."""

from __future__ import annotations

import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from evenhand.decoding.config import GenerateConfig
from evenhand.decoding.engines.base import refuse_unsupported
from evenhand.decoding.engines.http import ServerClient, ServerConfig, ServerUrl, is_server_url
from evenhand.decoding.engines.launch import free_port
from evenhand.decoding.engines.server import PLAIN, ServerEngine, sampling_parameters
from evenhand.evaluation.errors import DataError
from evenhand.rerank.reranker import RECIPES
from evenhand.rerank.server_judge import digit_probs, first_top_logprobs, read_judgement

DEMO = Path(__file__).resolve().parents[1] / "evenhand" / "data" / "demo.jsonl"


# ---------------------------------------------------------------- URLs

def test_url_parsing():
    assert ServerUrl.parse("http://h:8000/v1") == ServerUrl("http://h:8000/v1", None)
    assert ServerUrl.parse("http://h:8000/v1/#org/M-7B") == ServerUrl("http://h:8000/v1", "org/M-7B")
    assert str(ServerUrl.parse("https://x.org/v1#m")) == "https://x.org/v1#m"
    assert is_server_url("http://h/v1") and not is_server_url("smollm2") and not is_server_url(None)
    for bad in ("ftp://h/v1", "http:///v1", "http://h:99999/v1", "http://h/v1?x=1"):
        with pytest.raises(DataError, match="server URL"):
            ServerUrl.parse(bad)


def test_server_config_validates():
    with pytest.raises(ValueError, match="max_concurrency"):
        ServerConfig(max_concurrency=0)
    with pytest.raises(ValueError, match="timeout"):
        ServerConfig(timeout=0)


# ---------------------------------------------------------------- a stub server

class Stub:
    """A threaded HTTP server answering from a script of (status, body) and counting calls."""

    def __init__(self, script=None, delay=0.0):
        self.script = list(script or [])
        self.delay = delay
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.bodies = []
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _answer(self, status, body, headers=()):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._answer(200, {"data": [{"id": "stub-model"}, {"id": "other"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with stub.lock:
                    stub.calls += 1
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                    stub.bodies.append(body)
                    step = stub.script.pop(0) if stub.script else None
                time.sleep(stub.delay)
                with stub.lock:
                    stub.in_flight -= 1
                if step is not None:
                    self._answer(*step)
                else:  # echo the request's seed as the reply
                    self._answer(200, {"choices": [{"message": {"content": str(body.get("seed"))}}]})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_model_discovery_and_key():
    with Stub() as stub:
        client = ServerClient(stub.url)
        assert client.model == "stub-model"  # the first entry of /v1/models
        assert client.key == f"{stub.url}#stub-model"
        named = ServerClient(stub.url + "#other")
        assert named.key == f"{stub.url}#other"


def test_retries_on_503_and_429_then_succeeds():
    ok = (200, {"choices": [{"message": {"content": "fine"}}]})
    with Stub([(503, {"error": {"message": "busy"}}), (429, {"error": {"message": "slow down"}}), ok]) as stub:
        client = ServerClient(stub.url + "#m", ServerConfig(retries=3, backoff=0.01))
        [answer] = client.chat([{"messages": []}])
        assert answer["choices"][0]["message"]["content"] == "fine"
        assert stub.calls == 3 and client.stats.retries == 2 and client.stats.requests == 3
        assert stub.bodies[0]["model"] == "m"


def test_retries_spent_and_client_errors_raise_dataerror():
    with Stub([(503, {"error": {"message": "busy"}})] * 3) as stub:
        client = ServerClient(stub.url + "#m", ServerConfig(retries=2, backoff=0.0))
        with pytest.raises(DataError, match=r"HTTP 503: busy \(after 3 tries\)"):
            client.chat([{"messages": []}])
        assert stub.calls == 3
    with Stub([(400, {"error": {"message": "maximum context length is 2048 tokens"}})]) as stub:
        client = ServerClient(stub.url + "#m", ServerConfig(retries=3, backoff=0.0))
        with pytest.raises(DataError, match="HTTP 400: maximum context length"):
            client.chat([{"messages": []}])
        assert stub.calls == 1  # a 4xx other than 429 is not retried


def test_unreachable_server_names_url_and_fix():
    url = f"http://127.0.0.1:{free_port()}/v1"
    client = ServerClient(url, ServerConfig(retries=1, backoff=0.0))
    with pytest.raises(DataError, match=r"is unreachable .* after 2 tries; start the server") as err:
        client.model  # noqa: B018
    assert url in str(err.value)


def test_concurrency_is_bounded_and_order_kept():
    with Stub(delay=0.05) as stub:
        client = ServerClient(stub.url + "#m", ServerConfig(max_concurrency=3))
        answers = client.chat([{"messages": [], "seed": i} for i in range(9)])
        assert [a["choices"][0]["message"]["content"] for a in answers] == [str(i) for i in range(9)]
        assert stub.max_in_flight == 3


# ---------------------------------------------------------------- judge parsing

def _chat_response(reply, top):
    content = [{"token": reply[:1], "logprob": -0.1, "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top]}]
    return {"choices": [{"message": {"content": reply}, "logprobs": {"content": content}}]}


def test_expected_digit_from_top_logprobs():
    top = [("4", math.log(0.5)), (" 2", math.log(0.25)), ("The", math.log(0.2)), ("12", math.log(0.05))]
    assert digit_probs(top) == pytest.approx([0.0, 0.25, 0.0, 0.5, 0.0])
    record = read_judgement(_chat_response("4", top), "expected", "srv#m")
    # (2 * 0.25 + 4 * 0.5) / 0.75
    assert record == {"score": pytest.approx(10 / 3), "argmax": 4, "digit_mass": pytest.approx(0.75), "judge": "srv#m"}
    legacy = {"choices": [{"message": {"content": "3"}, "logprobs": {"top_logprobs": [{"3": 0.0}]}}]}
    assert first_top_logprobs(legacy) == [("3", 0.0)]
    assert read_judgement(legacy, "expected", "j")["score"] == 3.0


def test_fallback_to_parsed_text():
    no_logprobs = {"choices": [{"message": {"content": "Score: 4 out of 5"}}]}
    assert read_judgement(no_logprobs, "expected", "j") == {
        "score": 4.0, "argmax": 4, "judge": "j", "reply": "Score: 4 out of 5", "digit_mass": None,
        "fallback": "parse",
    }
    no_digit = _chat_response("I think 7", [("I", -0.1), ("The", -2.0)])
    record = read_judgement(no_digit, "expected", "j")
    assert (record["score"], record["digit_mass"], record["fallback"]) == (1.0, 0.0, "parse")  # 7 is out of range
    assert read_judgement(no_logprobs, "parse", "j")["score"] == 4.0
    with pytest.raises(DataError, match="without choices"):
        read_judgement({"error": "x"}, "expected", "j")


# ---------------------------------------------------------------- sampling recipes

def _recipe(name):
    return GenerateConfig(**{**RECIPES[name], "max_new_tokens": 50})


def test_recipes_map_to_request_parameters():
    nucleus = sampling_parameters(_recipe("nucleus"))
    assert (nucleus["temperature"], nucleus["top_p"], nucleus["top_k"], nucleus["max_tokens"]) == (1.0, 0.9, 0, 50)
    top_k = sampling_parameters(_recipe("top-k"))
    assert (top_k["temperature"], top_k["top_p"], top_k["top_k"]) == (1.0, 1.0, 100)
    hybrid = sampling_parameters(_recipe("hybrid"))
    assert (hybrid["temperature"], hybrid["top_p"], hybrid["repetition_penalty"], hybrid["repeat_penalty"]) == (1.2, 0.9, 1.2, 1.2)
    greedy = sampling_parameters(GenerateConfig())
    assert (greedy["temperature"], greedy["top_k"], greedy["min_p"]) == (0.0, 0, 0.0)


def test_generation_sends_seeds_and_the_inprocess_prompt():
    from evenhand.decoding.generate import generate
    from evenhand.decoding.prompts.templates import DEFAULT_SYSTEM, build_prompt
    from evenhand.evaluation.data.loaders import load_examples

    examples = load_examples(DEMO)[:3]
    with Stub() as stub:
        client = ServerClient(stub.url + "#m", ServerConfig(max_concurrency=2))
        config = GenerateConfig(do_sample=True, num_beams=1, top_p=0.9, seed=10, batch_size=1,
                                no_repeat_ngram_size=0, clean=False)
        texts = generate(ServerEngine(client), None, examples, config, progress=False)
    assert texts == ["10", "11", "12"]  # request i is seeded seed + i (the stub echoes seeds)
    sent = sorted(stub.bodies, key=lambda b: b["seed"])
    assert sent[1]["messages"] == [
        {"role": "system", "content": DEFAULT_SYSTEM}, {"role": "user", "content": build_prompt(examples[1])}
    ]


# ---------------------------------------------------------------- refusals before any request

@pytest.mark.parametrize(
    "fields, match",
    [({"abstractiveness": 2.0}, "`abstractiveness` cannot run through a server"),
     ({"extractiveness": 2.0}, "`extractiveness` cannot run through a server"),
     ({"fairness": "equal", "fairness_strength": 1.0}, "fair decoding"),
     ({"response_prefix": "Reviewers"}, "response_prefix")],
)
def test_processors_are_refused(fields, match):
    with pytest.raises(DataError, match=match):
        refuse_unsupported(PLAIN, GenerateConfig(**fields))  # what a server without evenhand's processors declares


def test_cli_refuses_processors_with_a_url_before_any_request(tmp_path, capsys):
    from evenhand.cli import main

    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens: a request would fail differently
    out = tmp_path / "out.jsonl"
    rc = main(["generate", "--data", str(DEMO), "--out", str(out), "--model", url, "--abstractiveness", "2"])
    assert rc == 2 and not out.exists()
    assert "`abstractiveness` cannot run through a server URL" in capsys.readouterr().err
    rc = main(["rerank", "--data", str(DEMO), "--out", str(out), "--model", url, "--scorers", "rouge-l-recall",
               "--floors", "none", "--fairness", "equal", "--fairness-strength", "1"])
    assert rc == 2 and not out.exists()
    assert "fair decoding" in capsys.readouterr().err


def test_lm_scorers_take_a_url_and_other_lm_backed_scorers_refuse_one():
    from evenhand.evaluation.scoring.registry import get_scorer
    from evenhand.rerank.lm_prefix import LmBackedConfig, LmBackedScorer

    for name in ("lm-likelihood", "fluency", "lm-pmi", "fairsumm-bartscore"):  # built: nothing is sent yet
        scorer: Any = get_scorer(name, model="http://127.0.0.1:1/v1#m", max_concurrency=2)
        assert scorer.server.config.max_concurrency == 2 and scorer.model_id == "http://127.0.0.1:1/v1#m"

    class Local(LmBackedScorer):
        name = "local-only"

    with pytest.raises(DataError, match="does not take from a server"):
        Local(LmBackedConfig(model="http://127.0.0.1:1/v1"))


def test_unreachable_judge_exits_2(tmp_path, capsys):
    from conftest import write_controlled

    from evenhand.cli import main

    data = write_controlled(tmp_path / "c.json")
    url = f"http://127.0.0.1:{free_port()}/v1#m"
    rc = main(["meta-eval", "--data", str(data), "--scorers", "llm-faithfulness", "--judge-model", url,
               "--out", str(tmp_path / "m.jsonl"), "--score-cache", "none", "--n-bootstrap", "10"])
    err = capsys.readouterr().err
    assert rc == 2 and "is unreachable" in err and url.split("#")[0] in err


def test_cache_key_names_url_and_model_not_pacing():
    from evenhand.evaluation.data.schema import Example
    from evenhand.evaluation.scoring.registry import get_scorer

    ex = Example(id="x", documents=[])
    with Stub() as stub:  # answers no prompt log-probs: the judges read chat top_logprobs
        a: Any = get_scorer("llm-faithfulness", model=f"{stub.url}#a")
        b = get_scorer("llm-faithfulness", model=f"{stub.url}#b")
        a4 = get_scorer("llm-faithfulness", model=f"{stub.url}#a", max_concurrency=1, timeout=5.0)
        assert a.model_id == f"{stub.url}#a"
        assert a._key(ex, "s") != b._key(ex, "s")
        assert a._key(ex, "s") == a4._key(ex, "s")
        assert not a.reads_server_prompts() and a._cached_model_content() is None


def test_in_process_loading_refuses_a_url():
    from evenhand.decoding.models import load_generator

    with pytest.raises(DataError, match="is a server URL, but this step runs the model in-process"):
        load_generator("http://127.0.0.1:1/v1")
