"""Judge calls per second: in-process versus a local llama.cpp server at concurrency 1 and 4.

One run measures ``llm-faithfulness`` with the embedded SmolLM2-135M-Instruct on
the same 16 summaries of one ~200-word source (``bench_scorers``' set), cache
cleared before each measurement, after one warm-up call:

- in-process (transformers, float32 de-quantized GGUF): ``batch_size=1`` (one
  judge call per forward) and ``batch_size=16`` (the shared prefix run once);
- through ``python -m llama_cpp.server`` serving the same GGUF (Q4_1, llama.cpp
  kernels) on 127.0.0.1, started and stopped by this script, with
  ``--max-concurrency`` 1 and 4.

A judge call is one (source, summary) pair scored. The client's own overhead
per call is the wall time of the scorer's ``score_details`` minus the time
spent inside HTTP round trips (``ServerClient.stats.http_seconds``), divided
by the calls, at concurrency 1: prompt building, JSON, reading top_logprobs,
cache keys. Goal: under 5% of a call.

llama-cpp-python's server holds one model context and answers one request at
a time (it has no parallel slots), so concurrency 4 cannot beat concurrency 1
there; the script says so next to the numbers when the ratio shows it. vLLM
and the C++ ``llama-server -np 4`` batch concurrent requests.

    python -m benchmarks.bench_server                      # in-process + server (~3 min on 2 cores)
    python -m benchmarks.bench_server --no-inprocess       # server only
    python -m benchmarks.bench_server --server-threads 2   # llama.cpp threads (default 1)
"""

from __future__ import annotations

import argparse
import time

from benchmarks.bench_scorers import SOURCE, SUMMARIES


def _timed(scorer, n: int) -> float:  # noqa: ANN001 - any scorer
    """Seconds to score the first ``n`` summaries (cache cleared), after a one-call warm-up."""
    scorer.score([SOURCE], [SUMMARIES[-1] + " (warm-up)"])
    scorer.cache_clear()
    start = time.perf_counter()
    scorer.score([SOURCE] * n, SUMMARIES[:n])
    return time.perf_counter() - start


def inprocess_rates(n: int) -> dict[str, float]:
    """Judge calls per second in-process at batch 1 and batch ``n``."""
    from evenhand.evaluation.scoring.registry import get_scorer

    judge = get_scorer("llm-faithfulness", batch_size=1, progress=False)
    rates = {"in-process, batch 1": n / _timed(judge, n)}
    judge.config.batch_size = n
    rates[f"in-process, batch {n}"] = n / _timed(judge, n)
    return rates


def server_rates(url: str, n: int) -> tuple[dict[str, float], float, float]:
    """Judge calls per second through ``url`` at concurrency 1 and 4; client overhead (s, share)."""
    from evenhand.evaluation.scoring.registry import get_scorer

    rates: dict[str, float] = {}
    overhead = share = 0.0
    for concurrency in (1, 4):
        judge = get_scorer(
            "llm-faithfulness", model=url, max_concurrency=concurrency, batch_size=n, progress=False
        )
        judge.model_id  # noqa: B018 - model discovery outside the timing
        judge.score([SOURCE], [SUMMARIES[-1] + " (warm-up)"])
        judge.cache_clear()
        before = judge.server.stats.http_seconds
        start = time.perf_counter()
        judge.score([SOURCE] * n, SUMMARIES[:n])
        wall = time.perf_counter() - start
        rates[f"server, concurrency {concurrency}"] = n / wall
        if concurrency == 1:
            http = judge.server.stats.http_seconds - before
            overhead = (wall - http) / n
            share = overhead / (wall / n)
    return rates, overhead, share


def main(argv: list[str] | None = None) -> None:
    """Run the measurements and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=16, help="Judge calls per measurement (<= 16).")
    parser.add_argument("--no-inprocess", action="store_true", help="Skip the in-process measurement.")
    parser.add_argument("--server-threads", type=int, default=1, help="llama.cpp threads (default 1).")
    args = parser.parse_args(argv)
    n = max(1, min(args.calls, len(SUMMARIES)))

    from evenhand.decoding.engines.launch import local_llama_server

    rates: dict[str, float] = {}
    if not args.no_inprocess:
        import torch

        rates.update(inprocess_rates(n))
        print(f"in-process: torch threads {torch.get_num_threads()}")
    with local_llama_server(n_ctx=4096, n_threads=args.server_threads) as (url, _):
        served, overhead, share = server_rates(url, n)
    rates.update(served)
    print(f"server: llama-cpp-python {_version()}, {args.server_threads} thread(s), {url}")
    print(f"\n{'llm-faithfulness, ' + str(n) + ' calls':<34} {'calls/s':>8} {'vs c=1':>7}")
    base = rates["server, concurrency 1"]
    for name, rate in rates.items():
        print(f"{name:<34} {rate:8.2f} {rate / base:7.2f}x")
    serial = rates["server, concurrency 4"] / base < 1.2
    if serial:
        print("note: the local llama.cpp server serializes requests (one slot): concurrency 4 is no faster")
    print(
        f"client overhead per call (concurrency 1): {overhead * 1000:.2f} ms = {share:.2%} of a call "
        f"({'under' if share < 0.05 else 'OVER'} the 5% goal)"
    )


def _version() -> str:
    import importlib.metadata

    return importlib.metadata.version("llama-cpp-python")


if __name__ == "__main__":
    main()
