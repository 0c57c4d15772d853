"""Summaries per second: transformers in-process against ``--engine vllm``, with evenhand's processors.

One run, one process, the embedded SmolLM2-135M-Instruct (float32 in both engines),
the first FairSumm gold sources with documents of two groups at least (half amazon,
half yelp; 40 by default; ``--fair-strength`` refuses one-group sources), greedy,
80 new tokens, three settings: plain, ``--abstractiveness 2`` and
``--fair-strength 3`` (``--fair ratio``). Each engine is warmed up on one example
first (the vLLM engine is built then; its prefix cache is off, so no setting
reuses the prompts another one prefilled). Printed:

- summaries/s of transformers (batched, ``--hf-batch-size``, default 8) and vLLM
  (all examples handed over at once; vLLM batches them), and their ratio
  (goal: vLLM ≥ 2× transformers with the same processor);
- each evenhand processor's cost inside vLLM: plain vLLM summaries/s divided by the
  processor's (goal: ≤ 1.10×);
- how many of the summaries differ between the engines (greedy parity).

    .venv-vllm/bin/python -m benchmarks.bench_vllm                  # needs vLLM (make setup-vllm)
    .venv-vllm/bin/python -m benchmarks.bench_vllm --limit 12 --max-new-tokens 40
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "perspectivesumm"
SETTINGS = {
    "plain": {},
    "--abstractiveness 2": {"abstractiveness": 2.0},
    "--fair-strength 3": {"fairness": "ratio", "fairness_strength": 3.0},
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--max-new-tokens", type=int, default=80)
    parser.add_argument("--hf-batch-size", type=int, default=8)
    parser.add_argument("--skip-hf", action="store_true", help="vLLM only (no transformers baseline)")
    args = parser.parse_args()

    from evenhand.decoding.engines.vllm_engine import vllm_available

    if not vllm_available():
        print("bench_vllm: vLLM is not installed (make setup-vllm; run with .venv-vllm/bin/python); skipped")
        return 0
    if not SHARED.is_dir():
        print(f"bench_vllm: {SHARED} is absent; skipped")
        return 0
    from evenhand.decoding.config import GenerateConfig
    from evenhand.decoding.engines.vllm_engine import EngineSettings, VllmEngine
    from evenhand.decoding.generate import generate
    from evenhand.decoding.models import load_generator
    from evenhand.evaluation.data.loaders import load_examples

    half = args.limit // 2

    def eligible(name: str) -> list:  # --fair-strength needs documents of two groups at least
        return [ex for ex in load_examples(str(SHARED / name)) if len({d.group for d in ex.documents}) >= 2]

    examples = eligible("amazon_gold.json")[:half] + eligible("yelp_gold.json")[: args.limit - half]
    base = GenerateConfig(num_beams=1, max_new_tokens=args.max_new_tokens, batch_size=args.hf_batch_size)
    # no prefix caching: every setting decodes the same prompts, and a cache hit would make the
    # settings after the first one look cheaper (and vLLM faster than transformers, which has none)
    engine = VllmEngine("smollm2-135m-instruct", EngineSettings(extra={"enable_prefix_caching": False}))
    generate(engine, None, examples[:1], base, progress=False)  # builds the engine
    model = tok = None
    if not args.skip_hf:
        model, tok = load_generator("smollm2-135m-instruct", device="cpu")
    # every setting once on two examples and a few tokens, in both engines: the first timed
    # setting must not pay a one-time cost (kernels picked for a new shape, tables) the others skip
    for fields in SETTINGS.values():
        warm = dataclasses.replace(base, max_new_tokens=4, **fields)
        generate(engine, None, examples[:2], warm, progress=False)
        if model is not None:
            generate(model, tok, examples[:2], warm, progress=False)

    rows = []
    for name, fields in SETTINGS.items():
        config = dataclasses.replace(base, **fields)
        start = time.perf_counter()
        ours = generate(engine, None, examples, config, progress=False)
        vllm_rate = len(examples) / (time.perf_counter() - start)
        hf_rate, differ = float("nan"), None
        if model is not None:
            start = time.perf_counter()
            theirs = generate(model, tok, examples, config, progress=False)
            hf_rate = len(examples) / (time.perf_counter() - start)
            differ = sum(a != b for a, b in zip(ours, theirs))
        rows.append((name, hf_rate, vllm_rate, differ))
        print(f"  {name}: transformers {hf_rate:.3f}/s, vllm {vllm_rate:.3f}/s", flush=True)

    plain_vllm = rows[0][2]
    print(f"\n{len(examples)} FairSumm gold sources, greedy, {args.max_new_tokens} new tokens, SmolLM2-135M float32")
    print(f"{'setting':22s} {'transformers/s':>15s} {'vllm/s':>9s} {'vllm/transf.':>13s} "
          f"{'cost vs plain vllm':>19s} {'differ':>7s}")
    for name, hf_rate, vllm_rate, differ in rows:
        print(f"{name:22s} {hf_rate:15.3f} {vllm_rate:9.3f} {vllm_rate / hf_rate:12.2f}x "
              f"{plain_vllm / vllm_rate:18.3f}x {'-' if differ is None else f'{differ}/{len(examples)}':>7s}")
    load = os.getloadavg()
    print(f"\nmachine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; load average "
          f"{load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} at the end; transformers batch {args.hf_batch_size}; "
          f"torch threads {__import__('torch').get_num_threads()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
