"""The bundled demo data and the demo job behind ``evenhand demo``."""

from __future__ import annotations

import argparse
import textwrap
from importlib import resources

from evaluation.loaders import load_jsonl
from evaluation.schema import DataError, Example


def demo_path() -> str:
    """Path of the bundled demo JSONL (12 small, deliberately unbalanced example sets)."""
    return str(resources.files("evenhand") / "data" / "demo.jsonl")


def demo_examples() -> list[Example]:
    """The bundled demo examples: reviews with ratings, debates with speakers, stances, parties."""
    return load_jsonl(demo_path())


def _pick(examples: list[Example], name: str) -> list[Example]:
    if name == "all":
        return examples
    chosen = [ex for ex in examples if ex.id == name]
    if not chosen:
        ids = ", ".join(ex.id for ex in examples)
        raise DataError(f"--example: unknown demo example {name!r}; available: {ids}, all")
    return chosen


DEMO_SCORES = {
    "mint": "abstractiveness (MINT, higher = less copied)",
    "fairsumm_uer": "FairSumm UER (lower = fairer)",
    "fairsumm_unfair": "FairSumm unfair flag (BUR term)",
}


def score_summary(example: Example, summary: str) -> dict[str, float]:
    """The demo's scores of one summary (see DEMO_SCORES)."""
    from evaluation.report import Scored, evaluate

    report = evaluate([Scored(example.id, example, summary)], ["mint", "fairsumm"])
    row = report.rows[0]
    return {k: float(row[k]) for k in DEMO_SCORES}


def run_demo(args: argparse.Namespace) -> int:
    """Summarize the chosen demo example(s) with the embedded model and print the result."""
    from decoding.generate import GenerateConfig, generate
    from decoding.models import load_generator
    from evaluation.jsonl import write_jsonl

    examples = _pick(demo_examples(), args.example)
    model, tokenizer = load_generator(args.model)
    config = GenerateConfig(max_new_tokens=args.max_new_tokens, seed=args.seed)
    summaries = generate(model, tokenizer, examples, config)
    rows = []
    for ex, summary in zip(examples, summaries):
        counts = {g: ex.labels.count(g) for g in ex.groups}
        print(f"\n== {ex.id} ({ex.attribute}; documents per group: {counts})")
        print(textwrap.fill(summary, width=88))
        scores = score_summary(ex, summary)
        print("   " + "  ".join(f"{k}={v:.3f}" for k, v in scores.items()))
        rows.append({"id": ex.id, "summary": summary, **scores})
    if args.out:
        write_jsonl(args.out, rows)
        print(f"\nwrote {args.out}")
    return 0
