"""Cost of the abstractiveness processor: in generation, and per call against transformers.

Prints, in one run:

1. generation time with ``AbstractivenessProcessor`` / without it: embedded SmolLM2,
   batch 4 × 4 beams, TheFlipSide articles (~600 tokens) as sources, exactly 64 new
   tokens (aim ≤ 1.05), plus the processor's own share of the run (the sum of its
   call times, which is less noisy on a shared machine than the ratio);
2. per-call time of the processor (incremental steady state, and recomputation
   from scratch) against transformers' ``EncoderNoRepeatNGramLogitsProcessor``
   (size 3) on the same shapes: batch 4, 4 and 16 beams, 600-token sources,
   SmolLM2's 49152-token vocabulary, 64 steps (aim: ours faster at 16 beams).
   Per-call times are CPU seconds (``time.process_time``) on one torch thread,
   best of 3, so that other jobs on a shared machine disturb them less.

    nice python benchmarks/bench_abstractiveness.py [--skip-generation]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "theflipside" / "test.json"
VOCAB, SOURCE_LEN, PROMPT_LEN, STEPS, BATCH = 49152, 600, 700, 64, 4


def per_call(beams: int, repeats: int = 3) -> dict[str, float]:
    """Mean seconds per call over a 64-step decode, each processor on the same inputs."""
    import torch
    from transformers import EncoderNoRepeatNGramLogitsProcessor

    from evenhand.decoding.processors.abstractiveness import AbstractivenessProcessor

    gen = torch.Generator().manual_seed(0)
    rows = BATCH * beams
    # small id range so generated tokens do match the sources (fragments of all lengths)
    sources = torch.randint(100, 400, (BATCH, SOURCE_LEN), generator=gen)
    prompt = torch.randint(0, VOCAB, (rows, PROMPT_LEN), generator=gen)
    steps = torch.randint(100, 400, (rows, STEPS), generator=gen)
    # copy runs of the source now and then so that long fragments occur
    steps[:, 10:30] = sources.repeat_interleave(beams, 0)[:, 200:220]
    ids = torch.cat([prompt, steps], dim=1)
    scores = torch.randn(rows, VOCAB, generator=gen).log_softmax(-1)

    def run(make) -> float:  # noqa: ANN001
        best = float("inf")
        for _ in range(repeats):
            proc = make()
            start = time.process_time()
            for t in range(STEPS):
                proc(ids[:, : PROMPT_LEN + t], scores)
            best = min(best, (time.process_time() - start) / STEPS)
        return best

    def recompute() -> float:
        proc = AbstractivenessProcessor(sources, 2.0, prompt_length=PROMPT_LEN)
        start = time.process_time()
        for t in range(0, STEPS, 8):
            proc.reset()
            proc(ids[:, : PROMPT_LEN + t], scores)
        return (time.process_time() - start) / len(range(0, STEPS, 8))

    return {
        "ours": run(lambda: AbstractivenessProcessor(sources, 2.0, prompt_length=PROMPT_LEN)),
        "ours_recompute": recompute(),
        "encoder_no_repeat_3": run(lambda: EncoderNoRepeatNGramLogitsProcessor(3, sources)),
    }


class Timed:
    """Wraps a processor and sums the wall time of its calls."""

    def __init__(self, inner) -> None:  # noqa: ANN001
        self.inner, self.seconds, self.calls = inner, 0.0, 0

    def __call__(self, input_ids, scores):  # noqa: ANN001
        start = time.perf_counter()
        out = self.inner(input_ids, scores)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return out


def generation() -> dict[str, float]:
    """Seconds for one batch-4 × 4-beam, 64-token generation without and with the processor."""
    import torch
    from transformers import LogitsProcessorList

    from evenhand.decoding.config import GenerateConfig
    from evenhand.decoding.engines.transformers import encode_prompts
    from evenhand.decoding.models import load_generator
    from evenhand.decoding.processors.builders import PromptBatch, abstractiveness_builder
    from evenhand.evaluation.data.loaders import load_examples
    from evenhand.evaluation.data.schema import Document, Example

    model, tok = load_generator(device="cpu")
    examples = [
        Example(id=ex.id, documents=[Document(ex.meta["document"])])
        for ex in load_examples(DATA)[:BATCH]
    ]
    config = GenerateConfig(max_new_tokens=STEPS, num_beams=4)
    enc = encode_prompts(model, tok, examples, config)
    batch = PromptBatch(examples, enc["input_ids"], enc["attention_mask"], tok, model, config)
    kwargs = dict(**enc, **config.hf_kwargs(), min_new_tokens=STEPS, pad_token_id=tok.pad_token_id)

    def run(processors: list) -> tuple[float, float]:
        torch.manual_seed(0)
        wall, cpu = time.perf_counter(), time.process_time()
        with torch.no_grad():
            out = model.generate(**kwargs, logits_processor=LogitsProcessorList(processors))
        assert out.shape[1] == enc["input_ids"].shape[1] + STEPS
        return time.perf_counter() - wall, time.process_time() - cpu

    timed = Timed(abstractiveness_builder(2.0)(batch)[0])
    source_tokens = len(timed.inner._host[0][0])
    without = run([])
    with_proc = run([timed])
    return {
        "without": without[0], "with": with_proc[0], "without_cpu": without[1],
        "with_cpu": with_proc[1], "processor": timed.seconds, "calls": timed.calls,
        "source_tokens": source_tokens,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skip-generation", action="store_true", help="Only the per-call part.")
    args = parser.parse_args()
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    timings = {beams: per_call(beams) for beams in (4, 16)}
    torch.set_num_threads(threads)
    for beams, t in timings.items():
        print(
            f"per call, batch {BATCH} x {beams} beams, source {SOURCE_LEN}, vocab {VOCAB}: "
            f"ours {t['ours'] * 1e3:.3f} ms (recompute {t['ours_recompute'] * 1e3:.3f} ms), "
            f"EncoderNoRepeatNGram(3) {t['encoder_no_repeat_3'] * 1e3:.3f} ms, "
            f"ratio ours/theirs {t['ours'] / t['encoder_no_repeat_3']:.2f}",
            flush=True,
        )
    if args.skip_generation:
        return
    if not DATA.exists():
        print(f"generation part skipped: {DATA} is absent")
        return
    g = generation()
    print(
        f"generation, batch {BATCH} x 4 beams, {STEPS} new tokens, source {g['source_tokens']} "
        f"tokens: without {g['without']:.1f} s, with {g['with']:.1f} s, ratio "
        f"{g['with'] / g['without']:.3f} (CPU time ratio {g['with_cpu'] / g['without_cpu']:.3f}); "
        f"processor's own time {g['processor']:.2f} s over "
        f"{g['calls']} calls = {g['processor'] / g['with'] * 100:.1f}% of the run"
    )


if __name__ == "__main__":
    main()
