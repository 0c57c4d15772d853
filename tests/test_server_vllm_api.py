"""Fair beam search, the LM scorers and the judges through a server URL, against a fake vLLM server.

The fake answers vLLM's OpenAI API the way vLLM 0.32 does (``/v1/models`` with ``root``;
``/v1/completions`` on token-id prompts with ``logprobs`` + ``return_tokens_as_token_ids``
-> ``token_id:N`` keys, ``prompt_logprobs`` -> ``choices[0].prompt_logprobs``, and vLLM's
HTTP 400 past ``--max-logprobs``) from the tiny random model, in a thread. So the client
side is checked without vLLM: the same summaries and scores as in-process, and the exit-2
refusals (a llama.cpp-like server, too small ``--max-logprobs``) before any output.
``tests/test_vllm_engine.py`` runs the same paths against a real vLLM server.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import pytest
import torch

from evenhand.decoding.config import GenerateConfig
from evenhand.evaluation.data.schema import Document, Example
from evenhand.evaluation.errors import DataError

EXAMPLES = [
    Example("e1", [Document("The battery is great and lasts all day.", "pos"),
                   Document("The battery died after a week, awful.", "neg")], attribute="sentiment"),
    Example("e2", [Document("A lovely bright screen.", "pos"), Document("The screen is slow and dim.", "neg")],
            attribute="sentiment"),
]


class FakeVllm:
    """A vLLM-shaped OpenAI server over a transformers model (``flavour``: vllm or llama)."""

    def __init__(self, model: Any, root: str, max_logprobs: int = 64, flavour: str = "vllm") -> None:
        self.model, self.root, self.max_logprobs, self.flavour = model, root, max_logprobs, flavour
        self.bodies: list[dict[str, Any]] = []
        lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                pass

            def _answer(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._answer(200, {"data": [{"id": "tiny", "root": fake.root, "max_model_len": 2048}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with lock:
                    fake.bodies.append(body)
                    status, answer = fake.complete(body)
                self._answer(status, answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def complete(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        ids = body["prompt"]
        k = body.get("logprobs")
        if k is not None and self.flavour == "vllm" and k > self.max_logprobs:
            message = f"Requested sample logprobs of {k}, which is greater than max allowed: {self.max_logprobs}"
            return 400, {"error": {"message": message, "type": "BadRequestError", "code": 400}}
        with torch.no_grad():
            logits = self.model(input_ids=torch.tensor([ids])).logits[0].float()
        lps = torch.log_softmax(logits, -1)
        choice: dict[str, Any] = {"index": 0, "text": "x", "logprobs": None}
        if k is not None:
            top = torch.topk(lps[-1], k=min(k, 20) if self.flavour == "llama" else k)
            ids_out, values = top.indices.tolist(), top.values.tolist()
            if self.flavour == "vllm" and body.get("logprob_token_ids"):  # these tokens, not the top k
                ids_out = body["logprob_token_ids"]
                values = lps[-1, ids_out].tolist()
            as_ids = self.flavour == "vllm" and body.get("return_tokens_as_token_ids")
            keys = [f"token_id:{t}" if as_ids else f"t{t}" for t in ids_out]
            choice["logprobs"] = {"tokens": keys[:1], "top_logprobs": [dict(zip(keys, values))]}
        if self.flavour == "vllm" and body.get("prompt_logprobs") is not None:
            values = lps[:-1].gather(1, torch.tensor(ids[1:])[:, None])[:, 0].tolist()
            choice["prompt_logprobs"] = [None] + [
                {str(t): {"logprob": v, "rank": 1, "decoded_token": ""}} for t, v in zip(ids[1:], values)
            ]
        return 200, {"choices": [choice]}

    def __enter__(self) -> FakeVllm:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def fake(tiny_causal, model_dir):
    with FakeVllm(tiny_causal[0], str(model_dir)) as server:
        yield server


def _data(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(ex.to_dict()) + "\n" for ex in EXAMPLES))
    return path


FAIR = ["--fair", "ratio", "--fair-beam", "3", "--num-beams", "3", "--max-new-tokens", "6", "--batch-size", "2"]


def test_generate_runs_fair_beam_through_the_server(fake, tiny_causal, tmp_path, capsys):
    from evenhand.cli import main
    from evenhand.decoding.beam.step_loop import TransformersNextToken
    from evenhand.decoding.engines.beam_loop import fair_beam_generate
    from evenhand.decoding.generate import generate

    model, tok = tiny_causal
    out = tmp_path / "out.jsonl"
    assert main(["generate", "--data", str(_data(tmp_path)), "--out", str(out), "--model", fake.url, *FAIR]) == 0
    capsys.readouterr()
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["e1", "e2"] and rows[0]["model"] == fake.url
    config = GenerateConfig(fairness="ratio", fair_beam=3.0, num_beams=3, max_new_tokens=6, batch_size=2)
    here = fair_beam_generate(TransformersNextToken(model, pad_token_id=tok.pad_token_id), tok, EXAMPLES, config,
                              len(tok), progress=False)
    assert [r["summary"] for r in rows] == here == generate(model, tok, EXAMPLES, config, progress=False)
    # the requests: one probe past any vocabulary, one on token ids, then one-token steps on token ids
    assert fake.bodies[0]["logprobs"] == 1 << 20 and fake.bodies[1]["return_tokens_as_token_ids"] is True
    steps = fake.bodies[2:]
    assert all(b["max_tokens"] == 1 and isinstance(b["prompt"], list) for b in steps)
    assert {b["logprobs"] for b in steps} == {24}  # 2 x (pool 2 x 2k candidates), the repetition penalty on
    # resumed: nothing more is sent
    sent = len(fake.bodies)
    assert main(["generate", "--data", str(_data(tmp_path)), "--out", str(out), "--model", fake.url, *FAIR]) == 0
    assert "2 already in" in capsys.readouterr().out and len(fake.bodies) == sent + 2  # the probe only


@pytest.mark.parametrize("flavour, max_logprobs, match", [
    ("llama", 64, "does not return top log-probs on token ids"),
    ("vllm", 8, r"returns at most 8 log-probs per token; fair beam search needs 12 .*--max-logprobs 64"),
])
def test_a_server_that_cannot_exits_2_before_any_output(tiny_causal, model_dir, tmp_path, capsys,
                                                       flavour, max_logprobs, match):
    from evenhand.cli import main

    out = tmp_path / "out.jsonl"
    with FakeVllm(tiny_causal[0], str(model_dir), max_logprobs, flavour) as server:
        rc = main(["generate", "--data", str(_data(tmp_path)), "--out", str(out), "--model", server.url, *FAIR])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and not out.exists(), err
    assert len(err.splitlines()) == 1 and server.url in err
    assert re.search(match, err), err


def test_the_group_bonus_with_fair_beam_is_refused_before_any_request(tmp_path, capsys):
    from evenhand.cli import main
    from evenhand.decoding.engines.launch import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens
    rc = main(["generate", "--data", str(_data(tmp_path)), "--out", str(tmp_path / "o.jsonl"), "--model", url,
               *FAIR, "--fair-strength", "1"])
    assert rc == 2 and "--fair-strength" in capsys.readouterr().err


def test_lm_scorers_through_the_server_equal_in_process(fake, tiny_causal):
    from evenhand.evaluation.scoring.registry import get_scorer

    model, tok = tiny_causal
    summaries = ["The battery is great.", "The screen is slow.", ""]
    sources = [EXAMPLES[0], EXAMPLES[1], EXAMPLES[1]]
    for name in ("lm-pmi", "lm-likelihood", "fluency", "fairsumm-bartscore"):
        here = cast(Any, get_scorer(name, progress=False)).use_model(model, tok, "here").score(sources, summaries)
        served = get_scorer(name, progress=False, model=fake.url, max_concurrency=2)
        assert served.score(sources, summaries) == pytest.approx(here, abs=1e-5)
        assert served.model_id == f"{fake.url}#tiny"
    # the request: prompt + summary token ids, prompt log-probs only
    body = fake.bodies[-1]
    assert body["prompt_logprobs"] == 0 and body["max_tokens"] == 1 and isinstance(body["prompt"], list)


def test_lm_pmi_shares_its_passes_with_the_other_lm_scorers_on_a_server(fake):
    from evenhand.evaluation.scoring.registry import get_scorer

    summaries = ["The battery is great.", "The screen is slow."]
    scorers = [get_scorer(n, progress=False, model=fake.url) for n in ("lm-pmi", "lm-likelihood", "fluency")]
    before = len(fake.bodies)
    for s in scorers:
        s.score(EXAMPLES, summaries)
    # lm-pmi's passes (2 conditional + 1 unconditional prompt per summary) serve the other two
    assert len(fake.bodies) - before == 1 + 2 * 2  # one probe of the fresh client, then 4 prompts


def test_judges_through_the_server_read_exact_digit_probabilities(fake, tiny_causal):
    from evenhand.evaluation.scoring.registry import get_scorer

    model, tok = tiny_causal
    summaries = ["The battery is great.", "Aliens landed."]
    for name in ("llm-coverage", "llm-faithfulness"):
        here = cast(Any, get_scorer(name, progress=False)).use_model(model, tok, "here").score(EXAMPLES, summaries)
        served = get_scorer(name, progress=False, model=fake.url)
        before = len(fake.bodies)
        assert served.score(EXAMPLES, summaries) == pytest.approx(here, abs=1e-5)
        # one request per summary: its prompt's token ids, the five digits' log-probs after it
        probe, *sent = fake.bodies[before:]  # the client's one probe first
        assert probe["prompt"] == [0] and probe["logprob_token_ids"] == [0]
        assert len(sent) == 2 and all(len(b["logprob_token_ids"]) == 5 and b["logprobs"] == 5 for b in sent)


def test_server_scores_are_keyed_by_the_served_model(fake, tiny_causal, model_dir):
    from evenhand.evaluation.scoring.registry import get_scorer

    served = get_scorer("lm-pmi", model=fake.url)
    local = get_scorer("lm-pmi", model=str(model_dir))
    content, local_content = served._cached_model_content(), local._cached_model_content()
    assert content is not None and local_content is not None
    assert content[:2] == [f"served:{model_dir}", "prompt_logprobs"]
    # the served folder's digest is the one the local path gets: same files, same digest
    assert content[2] == local_content[0]
    assert served._key(EXAMPLES[0], "s") != local._key(EXAMPLES[0], "s")
    paced = get_scorer("lm-pmi", model=fake.url, max_concurrency=1, timeout=5.0)
    assert paced._key(EXAMPLES[0], "s") == served._key(EXAMPLES[0], "s")


def test_a_server_without_prompt_logprobs_exits_2_before_any_output(tiny_causal, model_dir, tmp_path, capsys):
    from evenhand.cli import main

    data = _data(tmp_path)
    summaries = tmp_path / "s.jsonl"
    summaries.write_text("".join(json.dumps({"id": ex.id, "summary": "x"}) + "\n" for ex in EXAMPLES))
    out = tmp_path / "eval"
    with FakeVllm(tiny_causal[0], str(model_dir), flavour="llama") as server:
        rc = main(["evaluate", "--data", str(data), "--summaries", str(summaries), "--metrics", "lm-pmi",
                   "--lm-model", server.url, "--score-cache", "none", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "does not return prompt log-probs" in err, err
    assert not any(tmp_path.glob("eval*.jsonl"))
    with pytest.raises(DataError, match="does not return prompt log-probs"):
        with FakeVllm(tiny_causal[0], str(model_dir), flavour="llama") as server:
            from evenhand.evaluation.scoring.registry import get_scorer

            get_scorer("fluency", model=server.url).score(EXAMPLES[:1], ["x"])
