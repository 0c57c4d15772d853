"""``evenhand rerank``: sample N candidates per example, score them, keep the best (resumable)."""

from __future__ import annotations

import argparse

from evenhand.args import (
    add_common_options,
    add_dataclass_arguments,
    config_from_args,
    load_limited,
)

NAME = "rerank"
HELP = "Best-of-N summarization: sample N candidates per example, score, keep the best (JSONL)."
_SAMPLER_FIELDS = ("do_sample", "num_beams", "top_p", "top_k", "temperature", "seed")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Data, model, scorer and sampling options."""
    from evenhand.commands._scoring import add_scorer_options, scorers_help
    from evenhand.decoding.config import GenerateConfig

    add_common_options(parser, "data")
    parser.add_argument("--out", required=True, help="Output JSONL: one record per example with all candidates.")
    parser.add_argument("--candidates", type=int, default=9, help="Candidates per example, N (default: 9).")
    from evenhand.rerank.reranker import DEFAULT_FLOORS, DEFAULT_SCORERS

    parser.add_argument(
        "--scorers", default=DEFAULT_SCORERS,
        help=scorers_help(
            f"Comma-separated registered scorers, combined by `composite` (default: {DEFAULT_SCORERS})."
        ),
    )
    floors = ",".join(f"{k}={v:g}" for k, v in DEFAULT_FLOORS.items())
    parser.add_argument(
        "--floors", default=floors,
        help="NAME=MARGIN,...: a candidate below the plain beam-search summary (added as a candidate) "
        f"by more than MARGIN on scorer NAME cannot win; 'none' turns floors off (default: {floors}).",
    )
    parser.add_argument("--weights", default=None, help="Comma-separated weights, one per scorer (default: equal).")
    parser.add_argument("--normalize", default="minmax", help="Per-set normalization: minmax, zscore, none.")
    parser.add_argument(
        "--recipes", default="nucleus,top-k,hybrid", help="Samplers cycled over candidates (the paper's three)."
    )
    parser.add_argument("--seed", type=int, default=0, help="Base sampling seed.")
    parser.add_argument(
        "--quote", action="store_true",
        help="Add the plain summary followed by one source sentence quoted verbatim, its writer's group named, "
        "chosen to lower FairSumm's UER (recipe beam+quote; needs --floors; default: off).",
    )
    add_common_options(
        parser, "model", "engine", "limit", "device", "no_resume", "force_resume",
        model="Generator: embedded alias, local folder, LoRA adapter folder, cached HF id, or server URL http://HOST:PORT/v1[#MODEL] (docs/serving.md).",
    )
    add_scorer_options(parser)
    from evenhand.commands._scoring import add_server_processors_option

    add_server_processors_option(parser)
    add_dataclass_arguments(parser, GenerateConfig, skip=_SAMPLER_FIELDS)


def run(args: argparse.Namespace) -> int:
    """Rerank, appending one record per example to --out; print a summary."""
    import dataclasses

    from evenhand.commands._outputs import check_results_path, locked, open_results
    from evenhand.commands._scoring import (
        check_model_flags,
        open_generator,
        score_cache,
        scorer_options,
        split_names,
    )
    from evenhand.decoding.config import GenerateConfig, check_examples
    from evenhand.decoding.prompts.templates import describe_kinds
    from evenhand.evaluation.errors import DataError
    from evenhand.evaluation.io.output_checks import check_output
    from evenhand.evaluation.scoring.registry import get_scorer
    from evenhand.rerank.reranker import RerankConfig, Reranker, build_floor_scorers, parse_floors
    from evenhand.rerank.selection import selection_lines
    from evenhand.rerank.sharing import share_model

    names = split_names(args.scorers)
    check_model_flags(args)
    try:
        floors = parse_floors(args.floors)
    except ValueError as err:
        raise DataError(f"--floors: {err}") from None
    if floors:
        split_names(",".join(floors), "--floors")  # the floor scorers must exist too
    try:  # every option is checked here, before any file is read or model loaded
        scorer = get_scorer(
            "composite", cache_dir=score_cache(args), scorers=names, weights=args.weights,
            normalize=args.normalize, options=scorer_options(args, names),
        )
        config = RerankConfig(candidates=args.candidates, recipes=args.recipes, seed=args.seed, floors=floors,
                              quote=args.quote)
    except ValueError as err:
        raise DataError(" ".join(str(err).split())) from None
    generate_config = config_from_args(GenerateConfig, args)
    if generate_config.beam_search and not floors:
        raise DataError(
            "--fair-beam/--fair-meaning shape beam search, which in rerank runs only for the floors' "
            "reference candidate (recipe 'beam'); with --floors none there is none: set --floors, or use "
            "`evenhand generate --fair-beam` (--fairness-strength steers the sampled candidates)"
        )
    check_output(args.out, {"--data": args.data})
    check_results_path(args.out)
    engine = open_generator(args, generate_config)  # what the engine cannot do raises here, before any file
    examples = load_limited(args.data, args.limit, args.attribute)
    check_examples(examples, generate_config.parts()["fairness"])  # group labels, before any model loads
    print(describe_kinds(examples, generate_config.prompt_kind), flush=True)
    options = {
        "rerank": dataclasses.asdict(config), "generate": dataclasses.asdict(generate_config),
        **({"engine": args.engine} if args.engine != "transformers" else {}),
        "scorers": names, "weights": args.weights, "normalize": args.normalize,
        "scorer_options": {  # batch size and device do not change scores
            n: {k: v for k, v in o.items() if k not in ("batch_size", "device")}
            for n, o in scorer_options(args, sorted({*names, *floors})).items()
        },
    }
    with locked(args.out):  # a second writer on --out exits 2
        store = open_results(args, "rerank", options)
        floor_scorers = build_floor_scorers(scorer, floors, score_cache(args), scorer_options(args, list(floors)))
        shared = engine.shared_model()  # in-process: LM scorers of the generator's model share it
        if shared is not None:
            model, tokenizer = shared
            for each in (scorer, *floor_scorers.values()):
                share_model(each, model, tokenizer, args.model)
        engine.check_prompts([ex for ex in examples if not store.done(ex.id)], generate_config)  # before the bar
        reranker = Reranker(engine, None, scorer, config, generate_config, floor_scorers)
        records = reranker.rerank(examples, out=store)
    plain = " + the plain beam-search summary" if floors else ""
    print(f"{len(records)} examples, {args.candidates} candidates each{plain}, scorers {', '.join(names)}")
    for line in selection_lines(records, config.record_recipes()):
        print(line)
    print(f"wrote {args.out}")
    return 0
