"""Fair beam search on vLLM, the LM scorers on vLLM, and the shared LM passes — one run.

Prints, each measured in this process on the same model (embedded SmolLM2-135M, float32):

1. shared passes (in-process, no vLLM needed): time of ``lm-pmi`` alone against
   ``lm-pmi`` + ``lm-likelihood`` + ``fluency`` requested together, on the first
   ``--summaries`` dev controlled summaries (goal <= 1.1x); forward passes counted;
2. fair beam search (``--fair ratio --fair-beam 1``, 4 beams) on the first
   ``--examples`` FairSumm amazon gold sources: in-process (transformers
   ``fair_beam_search``) against vLLM (the step loop through ``VllmNextToken``),
   summaries/s (goal: vLLM >= 2x), the share of identical summaries, the paired
   N-gram UER difference; and its overhead against vLLM's own ``LLM.beam_search``
   on the same prompts (goal <= 1.5x);
3. ``lm-pmi`` through vLLM against in-process on the same summaries: the largest
   per-summary difference in nats/token (goal <= 1e-3) and the time of each;
4. the same through a vLLM server URL (``--server URL``, else a local server started
   with ``--max-logprobs 64``): fair beam search (``ServerNextToken``) against
   in-process — time, identical summaries — and ``lm-pmi``, ``llm-coverage`` against
   in-process — largest difference, time (``--max-concurrency``: requests in flight).

Parts 2 and 3 need vLLM (``make setup-vllm``; run this with ``.venv-vllm/bin/python``)
and are skipped with a line saying so without it.

    python -m benchmarks.bench_vllm_beam [--examples 8] [--summaries 24] [--tokens 48] [--parts 1,2,3]
    python -m benchmarks.bench_vllm_beam --parts 4 [--server http://HOST:PORT/v1] [--max-concurrency 4]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import time
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def controlled(n: int) -> tuple[list[list[str]], list[str]] | None:
    path = SHARED / "perspective_metric_eval" / "controlled_summaries_dev.json"
    if not path.exists():
        return None
    sources, summaries = [], []
    for entry in json.loads(path.read_text()):
        for item in entry["summaries"]:
            sources.append(entry["source"])
            summaries.append(item["summary"])
    return sources[:n], summaries[:n]


def lm_scorers(engine: str, name: str, model=None, tok=None) -> dict:  # noqa: ANN001
    from evenhand.evaluation.scoring.registry import get_scorer

    out = {}
    for scorer in ("lm-pmi", "lm-likelihood", "fluency"):
        s: Any = get_scorer(scorer, progress=False, engine=engine)
        out[scorer] = s.use_model(model, tok, name) if model is not None else s
    return out


def shared_passes(model, tok, sources: list, summaries: list[str]) -> None:  # noqa: ANN001
    calls: list[int] = []
    hook = model.register_forward_hook(lambda *a: calls.append(1))
    try:
        lm_scorers("transformers", "warm-up", model, tok)["lm-pmi"].score(sources[:2], summaries[:2])
        calls.clear()
        start = time.perf_counter()
        lm_scorers("transformers", "alone", model, tok)["lm-pmi"].score(sources, summaries)
        alone, alone_calls = time.perf_counter() - start, len(calls)
        calls.clear()
        start = time.perf_counter()
        together = lm_scorers("transformers", "together", model, tok)
        for scorer in together.values():
            scorer.score(sources, summaries)
        both, both_calls = time.perf_counter() - start, len(calls)
    finally:
        hook.remove()
    print(f"\n1. shared passes, {len(summaries)} dev controlled summaries, in-process")
    print(f"   lm-pmi alone: {alone:.1f} s, {alone_calls} forward passes")
    print(f"   lm-pmi + lm-likelihood + fluency: {both:.1f} s, {both_calls} forward passes "
          f"(separately: {alone_calls + alone_calls} passes)")
    print(f"   ratio {both / alone:.2f}x (goal <= 1.1x)")


def vllm_engine() -> object:
    from evenhand.rerank.lm_prefix import vllm_engine_for

    return vllm_engine_for("smollm2-135m-instruct")  # the engine the vLLM scorers of part 3 use too


def fair_beam(engine, model, tok, n: int, tokens: int) -> None:  # noqa: ANN001
    from evenhand.decoding.config import GenerateConfig
    from evenhand.decoding.engines.beam_loop import fair_beam_generate
    from evenhand.decoding.engines.transformers import encode_prompts
    from evenhand.decoding.engines.vllm_engine import VllmNextToken
    from evenhand.decoding.generate import generate
    from evenhand.evaluation.data.loaders import load_examples
    from evenhand.evaluation.scoring.registry import get_scorer

    path = SHARED / "perspectivesumm" / "amazon_gold.json"
    if not path.exists():
        print("\n2. fair beam: shared data absent, skipped")
        return
    examples = load_examples(path)[:n]
    config = GenerateConfig(max_new_tokens=tokens, num_beams=4, fairness="ratio", fair_beam=1.0, batch_size=4)
    generate(model, tok, examples[:1], GenerateConfig(max_new_tokens=2, num_beams=4), progress=False)  # warm-up
    start = time.perf_counter()
    local = generate(model, tok, examples, config, progress=False)
    t_local = time.perf_counter() - start
    nt = VllmNextToken(engine)
    fair_beam_generate(nt, tok, examples[:1], GenerateConfig(max_new_tokens=2, num_beams=4), engine.vocab_size, progress=False)
    from vllm.sampling_params import BeamSearchParams  # pyright: ignore[reportMissingImports]

    enc = encode_prompts(model, tok, examples, config)
    prompts = [{"prompt_token_ids": row[mask.bool()].tolist()} for row, mask in zip(enc["input_ids"], enc["attention_mask"])]
    # each vLLM run starts from an empty prefix cache: the one run second must not find the
    # prompts the first one prefilled (the cache then only serves each run's own steps)
    engine.llm.reset_prefix_cache()
    start = time.perf_counter()
    engine.llm.beam_search(prompts, BeamSearchParams(beam_width=4, max_tokens=tokens))
    t_plain = time.perf_counter() - start
    engine.llm.reset_prefix_cache()
    start = time.perf_counter()
    ours_plain = fair_beam_generate(nt, tok, examples, dataclasses.replace(config, fairness=None, fair_beam=0.0),
                                    engine.vocab_size, progress=False)
    t_loop = time.perf_counter() - start
    engine.llm.reset_prefix_cache()
    start = time.perf_counter()
    remote = fair_beam_generate(nt, tok, examples, config, engine.vocab_size, progress=False)
    t_vllm = time.perf_counter() - start
    fs = get_scorer("fairsumm", progress=False)
    uer_local = [-x for x in fs.score(examples, local)]
    uer_vllm = [-x for x in fs.score(examples, remote)]
    same = sum(a == b for a, b in zip(local, remote))
    diff = sum(b - a for a, b in zip(uer_local, uer_vllm)) / len(examples)
    print(f"\n2. fair beam (ratio, beta 1, 4 beams, {tokens} new tokens), {n} amazon gold sources")
    print(f"   in-process fair beam: {t_local:.1f} s ({n / t_local:.3f} summaries/s)")
    print(f"   vLLM fair beam (step loop): {t_vllm:.1f} s ({n / t_vllm:.3f} summaries/s), "
          f"speed-up {t_local / t_vllm:.2f}x (goal >= 2x)")
    print(f"   vLLM plain beam_search: {t_plain:.1f} s; fair overhead {t_vllm / t_plain:.2f}x (goal <= 1.5x)")
    print(f"   evenhand's step loop at beta 0 (plain beam search, --engine vllm --num-beams 4): {t_loop:.1f} s, "
          f"{t_loop / t_plain:.2f}x vLLM's beam_search; fair / plain step loop {t_vllm / t_loop:.2f}x")
    print(f"   identical summaries: {same}/{n}; N-gram UER vLLM − in-process: {diff:+.4f} (mean paired); "
          f"UER fair − plain on vLLM: {sum(_uer_of(fs, examples, remote)) / n - sum(_uer_of(fs, examples, ours_plain)) / n:+.4f}")


def _uer_of(fs: Any, examples: list, summaries: list[str]) -> list[float]:
    return [-x for x in fs.score(examples, summaries)]


def lm_pmi_agreement(model, tok, sources: list, summaries: list[str]) -> None:  # noqa: ANN001
    start = time.perf_counter()
    local = lm_scorers("transformers", "agree", model, tok)["lm-pmi"].score_details(sources, summaries)
    t_local = time.perf_counter() - start
    remote_scorer = lm_scorers("vllm", "smollm2-135m-instruct")["lm-pmi"]
    remote_scorer.score_details(sources[:1], summaries[:1])  # builds the engine (not timed)
    start = time.perf_counter()
    remote = remote_scorer.score_details(sources, summaries)
    t_vllm = time.perf_counter() - start
    worst = max(max(abs(a["conditional"] - b["conditional"]), abs(a["unconditional"] - b["unconditional"]))
                for a, b in zip(local, remote))
    print(f"\n3. lm-pmi on {len(summaries)} dev controlled summaries")
    print(f"   in-process {t_local:.1f} s, vLLM {t_vllm:.1f} s; largest difference {worst:.2e} nats/token (goal <= 1e-3)")


def through_server(url: str, model, tok, n: int, tokens: int, data, concurrency: int) -> None:  # noqa: ANN001
    from evenhand.decoding.config import GenerateConfig
    from evenhand.decoding.engines.http import ServerClient, ServerConfig
    from evenhand.decoding.engines.server import ServerEngine
    from evenhand.decoding.generate import generate
    from evenhand.evaluation.data.loaders import load_examples
    from evenhand.evaluation.scoring.registry import get_scorer

    print(f"\n4. through the vLLM server {url} (max concurrency {concurrency})")
    path = SHARED / "perspectivesumm" / "amazon_gold.json"
    if path.exists():
        examples = load_examples(path)[:n]
        config = GenerateConfig(max_new_tokens=tokens, num_beams=4, fairness="ratio", fair_beam=1.0, batch_size=4)
        client = ServerClient(url, ServerConfig(max_concurrency=concurrency))
        engine = ServerEngine(client)
        generate(engine, None, examples[:1], GenerateConfig(max_new_tokens=2, num_beams=4, fairness="ratio",
                                                           fair_beam=1.0), progress=False)  # probe, tokenizer
        start = time.perf_counter()
        remote = generate(engine, None, examples, config, progress=False)
        t_server = time.perf_counter() - start
        print(f"   fair beam through the server: {t_server:.1f} s ({client.stats.requests} requests)", flush=True)
        start = time.perf_counter()
        local = generate(model, tok, examples, config, progress=False)
        t_local = time.perf_counter() - start
        same = sum(a == b for a, b in zip(local, remote))
        print(f"   fair beam (ratio, beta 1, 4 beams, {tokens} new tokens), {n} amazon gold sources: "
              f"in-process {t_local:.1f} s, server {t_server:.1f} s ({t_local / t_server:.2f}x); "
              f"identical summaries {same}/{n}; {client.stats.requests} requests")
    if data is None:
        return
    sources, summaries = data
    for name, field in (("lm-pmi", "model"), ("llm-coverage", "model")):
        start = time.perf_counter()
        here = get_scorer(name, progress=False).use_model(model, tok, "here").score(sources, summaries)  # pyright: ignore[reportAttributeAccessIssue]
        t_local = time.perf_counter() - start
        served = get_scorer(name, progress=False, max_concurrency=concurrency, **{field: url})
        served.score(sources[:1], summaries[:1])  # probe and tokenizer (not timed)
        start = time.perf_counter()
        there = served.score(sources, summaries)
        t_server = time.perf_counter() - start
        worst = max(abs(a - b) for a, b in zip(here, there))
        print(f"   {name} on {len(summaries)} dev controlled summaries: in-process {t_local:.1f} s, server "
              f"{t_server:.1f} s; largest difference {worst:.2e} (goal <= 1e-3)")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--examples", type=int, default=8)
    parser.add_argument("--summaries", type=int, default=24)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--parts", default="1,2,3", help="which measurements to run (default 1,2,3; 4: a server)")
    parser.add_argument("--server", default=None, help="part 4: a vLLM server URL (default: start one here)")
    parser.add_argument("--max-concurrency", type=int, default=4, help="part 4: requests in flight")
    args = parser.parse_args()
    parts = {int(p) for p in args.parts.split(",")}
    import torch

    from evenhand.decoding.models import load_generator

    torch.manual_seed(0)
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; torch threads {torch.get_num_threads()}")
    model, tok = load_generator()
    data = controlled(args.summaries)
    if data is None:
        print("1./3.: shared data absent, skipped")
    elif 1 in parts:
        shared_passes(model, tok, *data)
    if 4 in parts and args.server:
        through_server(args.server, model, tok, args.examples, args.tokens, data, args.max_concurrency)
    if importlib.util.find_spec("vllm") is None:
        print("\n2./3./4.: vLLM is not installed here (make setup-vllm; run with .venv-vllm/bin/python): skipped")
        return 0
    if 4 in parts and not args.server:
        from evenhand.decoding.engines.launch import local_vllm_server

        with local_vllm_server("smollm2-135m-instruct", max_logprobs=64) as (url, _):
            through_server(url, model, tok, args.examples, args.tokens, data, args.max_concurrency)
    if not parts & {2, 3}:
        return 0
    engine = vllm_engine()
    if 2 in parts:
        fair_beam(engine, model, tok, args.examples, args.tokens)
    if data is not None and 3 in parts:
        lm_pmi_agreement(model, tok, *data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
