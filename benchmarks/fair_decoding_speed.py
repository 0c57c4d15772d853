"""Decoding-time cost of fairness-aware decoding, per generated token, against plain beam search.

Same process, same examples, forced to the same length (``min_new_tokens`` =
``max_new_tokens``) so every setting decodes the same number of steps; a short
prompt keeps the prefill small, so the ratio shows the per-step overhead of the
α processor and of the fair beam search (on long prompts the prefill dominates and
the ratio gets closer to 1).

Usage: nice python benchmarks/fair_decoding_speed.py [--model tiny|smollm2] [--tokens 48]
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=("tiny", "smollm2"), default="tiny")
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import torch

    from evenhand.decoding.beam.hf_loop import fair_beam_search
    from evenhand.decoding.beam.objective import FairBeamSettings
    from evenhand.decoding.models import load_generator, tiny_model
    from evenhand.decoding.processors.group_coverage import GroupCoverageProcessor
    from evenhand.decoding.processors.group_vocab import GroupTables, build_group_vocab
    from evenhand.evaluation.data.schema import Document, Example

    torch.set_num_threads(1)  # shared CPU: more threads spin-wait
    model, tok = tiny_model() if args.model == "tiny" else load_generator(device="cpu")
    examples = [
        Example("a", [Document("Great battery, lovely screen, fast delivery.", "pos"),
                      Document("Awful speaker, the battery died after a week.", "neg")]),
        Example("b", [Document("Tasty food and friendly staff.", "pos"),
                      Document("Slow service, cold soup.", "neg"), Document("Okay prices.", "neu")]),
    ]
    prompts = [f"Summarize the reviews: {' '.join(ex.texts)}" for ex in examples]
    enc = tok(prompts, return_tensors="pt", padding=True)
    vocab_size = int(model.get_output_embeddings().weight.shape[0])
    tables = GroupTables.build([build_group_vocab(ex, tok) for ex in examples], vocab_size, "ratio")
    start = enc["input_ids"].shape[1]
    base = dict(max_new_tokens=args.tokens, min_new_tokens=args.tokens, num_beams=4,
                do_sample=False, no_repeat_ngram_size=3, repetition_penalty=1.2)
    settings = {
        "plain": {},
        "alpha1": {"logits_processor": [GroupCoverageProcessor(tables, 1.0, generated_start=start)]},
        "beta1": {"custom_generate": fair_beam_search, "fair_beam": FairBeamSettings(tables, 1.0)},
        "alpha1-beta1": {
            "logits_processor": [GroupCoverageProcessor(tables, 1.0, generated_start=start)],
            "custom_generate": fair_beam_search, "fair_beam": FairBeamSettings(tables, 1.0),
        },
    }
    times: dict[str, float] = {}
    with torch.no_grad():
        model.generate(**enc, **base)  # warm-up
        for name, extra in settings.items():
            best = float("inf")
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                model.generate(**enc, **base, **extra)
                best = min(best, time.perf_counter() - t0)
            times[name] = best
    print(f"model={args.model} tokens={args.tokens} beams=4 batch=2 (best of {args.repeats})")
    for name, seconds in times.items():
        print(f"{name:14s} {seconds:7.2f} s  {seconds / times['plain']:.2f}x plain")


if __name__ == "__main__":
    main()
