"""``evenhand calibrate``: fit a combination of registered scorers to human scores.

    evenhand calibrate --data controlled_summaries_dev.json --target faithfulness \\
        --scorers lm-pmi,rouge-l-precision,alignscore --out faithfulness.json

Scores every summary with every scorer (cached), reports each scorer's Spearman
ρ and same-source winrate against the human target, fits the calibration
(``evenhand.evaluation.scoring.calibration``: normalized features, ridge, alpha by
grouped cross-validation) and reports its **cross-validated** ρ and winrate:
each source's predictions come from a calibration fitted without that source's
fold. 95% intervals: bootstrap over sources. The calibration JSON (with those
results in ``meta``) is written atomically; use it as ``calibrated:FILE.json``
in any ``--scorers`` option.
"""

from __future__ import annotations

import argparse

NAME = "calibrate"
HELP = (
    "Fit a calibrated combination of scorers to human scores (cross-validated by source); "
    "use it as calibrated:FILE.json in any --scorers."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Data, target, scorers, fitting and bootstrap options."""
    from evenhand.commands._scoring import add_scorer_options, scorers_help
    from evenhand.evaluation.scoring.calibration import NORMALIZATIONS

    parser.add_argument(
        "--data", required=True,
        help="Human-scored summaries: controlled-summaries .json, or .jsonl lines {source, summary, <target>}.",
    )
    parser.add_argument("--target", required=True, help="The human score to fit: faithfulness or coverage.")
    parser.add_argument(
        "--scorers", required=True,
        help=scorers_help("Comma-separated registered scorer names (the features)."),
    )
    parser.add_argument("--out", required=True, help="The calibration JSON to write.")
    parser.add_argument(
        "--normalize", default="zscore", choices=NORMALIZATIONS,
        help="Feature normalization: zscore (default) or rank (empirical CDF).",
    )
    parser.add_argument(
        "--alpha", default="auto",
        help="Ridge strength, or 'auto' to choose it by grouped cross-validation (default).",
    )
    parser.add_argument(
        "--fix", default="none",
        help="Hold weights at given values, NAME=W[,NAME=W] (weight on the normalized feature, chosen on "
        "other data, e.g. a contradiction set); the other weights are fitted to the rest (default: none).",
    )
    parser.add_argument("--folds", type=int, default=5, help="Source folds for cross-validation (default: 5).")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N sources.")
    parser.add_argument("--n-bootstrap", type=int, default=1000, help="Bootstrap draws for the intervals.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the folds and the bootstrap.")
    parser.add_argument("--device", default=None, help="cpu, cuda... for model-backed scorers.")
    add_scorer_options(parser)


def parse_fixed(text: str, names: list[str]) -> dict[str, float]:
    """``--fix NAME=W[,NAME=W]`` as {name: weight} (``none``: no weight held); every name must be
    one of ``names``.

    >>> parse_fixed("checker=0.1", ["lm-pmi", "checker"])
    {'checker': 0.1}
    """
    import math

    from evenhand.evaluation.errors import DataError

    fixed: dict[str, float] = {}
    if text.strip().lower() == "none":
        return fixed
    for item in (x.strip() for x in text.split(",") if x.strip()):
        name, _, value = item.rpartition("=")
        try:
            weight = float(value)
        except ValueError:
            weight = math.nan
        if not name or not math.isfinite(weight):
            raise DataError(f"--fix must be NAME=WEIGHT[,NAME=WEIGHT] with finite weights, got {item!r}")
        if name not in names:
            raise DataError(f"--fix names {name!r}, which is not in --scorers ({', '.join(names)})")
        if name in fixed:
            raise DataError(f"--fix names {name!r} twice")
        fixed[name] = weight
    return fixed


def _check(args: argparse.Namespace) -> tuple[list[str], float | None]:
    """Validate every flag before anything is loaded; returns (scorer names, alpha)."""
    import math
    from pathlib import Path

    from evenhand.commands._scoring import split_names
    from evenhand.decoding.models import check_device
    from evenhand.evaluation.data.checks import check_count, check_seed
    from evenhand.evaluation.errors import DataError
    from evenhand.evaluation.metrics.meta_eval import TRUTHS
    from evenhand.evaluation.scoring.registry import split_name

    if args.target not in TRUTHS:
        raise DataError(f"--target must be one of {', '.join(TRUTHS)}, got {args.target!r}")
    names = split_names(args.scorers)
    for name in names:
        if split_name(name)[0] in ("composite", "calibrated"):
            raise DataError(
                f"--scorers: {name!r} cannot be a feature (it is relative to a candidate set or "
                "already calibrated); list its component scorers instead"
            )
    if len(set(names)) != len(names):
        raise DataError(f"--scorers lists a scorer twice: {', '.join(names)}")
    alpha = None
    if args.alpha != "auto":
        try:
            alpha = float(args.alpha)
        except ValueError:
            alpha = -1.0
        if not (alpha >= 0 and math.isfinite(alpha)):
            raise DataError(f"--alpha must be 'auto' or a finite non-negative number, got {args.alpha!r}")
    parse_fixed(args.fix, names)
    check_count(args.folds, "--folds", low=2)
    check_count(args.n_bootstrap, "--n-bootstrap")
    check_count(args.limit, "--limit", high=10**9, none_ok=True)
    check_seed(args.seed, "--seed")
    check_device(args.device)
    if args.limit is not None and args.limit < args.folds:
        raise DataError(f"--limit must keep at least --folds ({args.folds}) sources, got {args.limit}")
    out, data = Path(args.out), Path(args.data)
    if out.suffix != ".json":
        raise DataError(f"--out must be a .json file, got {args.out!r}")
    if out.exists() and data.exists() and out.resolve() == data.resolve():
        raise DataError("--out is the --data file; write the calibration elsewhere")
    from evenhand.evaluation.io.locks import lock_path
    from evenhand.evaluation.io.output_checks import check_output_path

    check_output_path(out, "--out")
    check_output_path(lock_path(out), "--out")
    return names, alpha


def run(args: argparse.Namespace) -> int:
    """Score, fit, cross-validate, write the calibration and print the table."""
    from evenhand.commands._scoring import check_model_flags
    from evenhand.evaluation.io.locks import output_lock

    names, alpha = _check(args)
    check_model_flags(args)
    with output_lock(args.out, "--out"):  # a second writer on --out exits 2
        return _calibrate(args, names, alpha)


def _calibrate(args: argparse.Namespace, names: list[str], alpha: float | None) -> int:
    from pathlib import Path

    import evenhand
    from evenhand.commands._scoring import score_cache, scorer_options
    from evenhand.evaluation.io.json_file import write_json
    from evenhand.evaluation.metrics.meta_eval import check_spread, load_annotated, meta_evaluate
    from evenhand.evaluation.scoring.calibration import cross_validate, fit_calibration
    from evenhand.evaluation.scoring.registry import get_scorer

    data = load_annotated(args.data, targets=[args.target])
    if args.limit is not None:
        data.first_sources(args.limit)
    check_spread(data, [args.target], args.data)
    truth, groups = data.truth[args.target], data.source_index
    options = scorer_options(args, names)
    sources = [data.sources[i] for i in groups]
    raw: dict[str, list[float]] = {}
    stored: dict[str, dict[str, object]] = {}
    backends: dict[str, str] = {}
    versions: dict[str, int] = {}  # the code version of each feature's scores (calibrated:... checks it)
    for name in names:
        scorer = get_scorer(name, cache_dir=score_cache(args), **options[name])
        versions[name] = scorer.score_version
        raw[name] = scorer.score(sources, data.summaries)
        # the options a feature was scored with, the model named even when it was the default
        stored[name] = {k: v for k, v in options[name].items() if k not in ("batch_size", "device")}
        if getattr(scorer.config, "model", None):
            stored[name]["model"] = scorer.config.model
        if scorer.backend_label:  # the model behind the scores; a cache folder by its name (the checker's key)
            label = Path(scorer.backend_label)
            backends[name] = label.name if label.is_absolute() else scorer.backend_label

    def stats(scores: object) -> dict[str, list[float]]:
        result = meta_evaluate(scores, truth, groups, args.n_bootstrap, args.seed)  # type: ignore[arg-type]
        return {k: [v.value, v.low, v.high] for k, v in result.items()}

    single = {name: stats(raw[name]) for name in names}
    fixed = parse_fixed(args.fix, names)
    oof = cross_validate(raw, truth, groups, args.normalize, alpha, args.folds, args.seed, fixed=fixed)
    cv = stats(oof)
    calibration = fit_calibration(
        raw, truth, groups, args.target, args.normalize, alpha, seed=args.seed, fixed=fixed)
    calibration.scorer_options = stored
    calibration.meta = {
        "data": Path(args.data).name, "summaries": len(truth), "sources": len(set(groups)),
        "folds": args.folds, "seed": args.seed, "alpha_choice": args.alpha,
        **({"fixed_weights": fixed} if fixed else {}), "backends": backends, "score_versions": versions,
        "cross_validated": cv, "single_scorers": single, "evenhand": evenhand.__version__,
    }
    write_json(args.out, calibration.to_dict())

    def cell(s: list[float]) -> str:
        return f"{s[0]:.3f} [{s[1]:.3f}, {s[2]:.3f}]"

    print(f"target: {args.target}; {len(truth)} summaries of {len(set(groups))} sources")
    print(f"{'scorer':<28} {'spearman rho':>22} {'winrate':>22}")
    for name in names:
        print(f"{name:<28} {cell(single[name]['spearman']):>22} {cell(single[name]['winrate']):>22}")
    label = f"calibrated ({args.folds}-fold CV)"
    print(f"{label:<28} {cell(cv['spearman']):>22} {cell(cv['winrate']):>22}")
    weights = ", ".join(f"{n} {w:+.3f}{' (fixed)' if n in fixed else ''}" for n, w in calibration.weights.items())
    print(f"weights ({args.normalize} features, alpha {calibration.alpha:g}): {weights}; "
          f"intercept {calibration.intercept:+.3f}")
    print(f"wrote {args.out}; use it as --scorers calibrated:{args.out}")
    return 0
