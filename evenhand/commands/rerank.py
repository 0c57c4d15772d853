"""``evenhand rerank``: sample N candidates per example, score them, keep the best (resumable)."""

from __future__ import annotations

import argparse

from evenhand.args import add_dataclass_arguments, config_from_args, load_limited

NAME = "rerank"
HELP = "Best-of-N summarization: sample N candidates per example, score, keep the best (JSONL)."
_SAMPLER_FIELDS = ("do_sample", "num_beams", "top_p", "top_k", "temperature", "seed")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Data, model, scorer and sampling options."""
    from evenhand.commands._scoring import add_scorer_options
    from evenhand.decoding.generate import GenerateConfig

    parser.add_argument("--data", required=True, help="Examples: .jsonl, .csv, FairSumm or TheFlipSide .json.")
    parser.add_argument("--out", required=True, help="Output JSONL: one record per example with all candidates.")
    parser.add_argument("--candidates", type=int, default=9, help="Candidates per example, N (default: 9).")
    parser.add_argument(
        "--scorers", default="llm-coverage,alignscore",
        help="Comma-separated registered scorers, combined by `composite` (default: llm-coverage,alignscore).",
    )
    parser.add_argument("--weights", default=None, help="Comma-separated weights, one per scorer (default: equal).")
    parser.add_argument("--normalize", default="minmax", help="Per-set normalization: minmax, zscore, none.")
    parser.add_argument(
        "--recipes", default="nucleus,top-k,hybrid", help="Samplers cycled over candidates (the paper's three)."
    )
    parser.add_argument("--seed", type=int, default=0, help="Base sampling seed.")
    parser.add_argument(
        "--model", default="smollm2-135m-instruct", help="Generator: embedded alias, folder or cached HF id."
    )
    parser.add_argument("--limit", type=int, default=None, help="Only the first N examples.")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1... (default: auto).")
    parser.add_argument(
        "--no-resume", dest="resume", action="store_false",
        help="Start afresh instead of skipping examples already in --out.",
    )
    add_scorer_options(parser)
    add_dataclass_arguments(parser, GenerateConfig, skip=_SAMPLER_FIELDS)


def run(args: argparse.Namespace) -> int:
    """Rerank, appending one record per example to --out; print a summary."""
    from evenhand.commands._scoring import score_cache, scorer_options, split_names
    from evenhand.decoding.generate import GenerateConfig
    from evenhand.decoding.models import load_generator
    from evenhand.rerank.registry import get_scorer
    from evenhand.rerank.reranker import RerankConfig, Reranker

    names = split_names(args.scorers)
    scorer = get_scorer(
        "composite", cache_dir=score_cache(args), scorers=",".join(names), weights=args.weights,
        normalize=args.normalize, options=scorer_options(args, names),
    )
    config = RerankConfig(candidates=args.candidates, recipes=args.recipes, seed=args.seed)
    generate_config = config_from_args(GenerateConfig, args)
    examples = load_limited(args.data, args.limit)
    model, tokenizer = load_generator(args.model, device=args.device)
    reranker = Reranker(model, tokenizer, scorer, config, generate_config)
    records = reranker.rerank(examples, out=args.out, resume=args.resume)
    best = [r["best_score"] for r in records]
    mean_all = [sum(c["score"] for c in r["candidates"]) / len(r["candidates"]) for r in records]
    print(f"{len(records)} examples, {args.candidates} candidates each, scorers {', '.join(names)}")
    print(f"mean composite: selected {sum(best) / len(best):.3f}, all candidates {sum(mean_all) / len(mean_all):.3f}")
    print(f"wrote {args.out}")
    return 0
