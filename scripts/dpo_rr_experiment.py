"""DPO+RR on TheFlipSide, evaluated on held-out topics against zero-shot and best-of-N reranking.

Protocol (Ri, Deas & McKeown 2025, sizes from the YAML file):

1. TheFlipSide records (``../shared/data/theflipside/test.json``), articles cut
   to their first ``words`` words, split by topic: about ``dev_size`` dev
   articles whose topics never occur in training (``OUT/split.json``).
2. ``train_dpo_rr``: per iteration, ``candidates`` samples per training
   prompt from the nucleus / top-k / hybrid samplers, scored by the
   ``scorers`` composite against the target perspective's article, preference
   pairs (``pair_strategy``), one DPO epoch of a LoRA; greedy dev summaries
   after every iteration (``OUT/dpo_rr/iter_K``; ``iter_0`` = zero-shot).
3. The RR baseline: best of ``candidates`` samples from the untrained model by
   the same composite (``OUT/rerank``).
4. Every system's dev summaries get the training composite, its components
   and the untrained checks (``evenhand.training.experiment``): ``OUT/eval/SYSTEM.jsonl|csv``.
5. Paired bootstrap intervals over dev articles: each iteration and the RR
   baseline against zero-shot, the last iteration against the RR baseline
   (``OUT/comparison.{csv,jsonl,md}``, ``OUT/differences_vs_*.png``), and a
   results store for ``evenhand report --results OUT/results.sqlite --out OUT/report``.

Every stage writes atomically and is skipped when its output exists, so the
same command resumes an interrupted run.

    python scripts/dpo_rr_experiment.py --config scripts/dpo_rr_cpu.yaml --out /work/exp18_runs/cpu
    python scripts/dpo_rr_experiment.py --config scripts/dpo_rr_paper.yaml --out runs/paper   # a GPU
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "theflipside" / "test.json"
METHODS = ("dpo-rr", "grpo")


@dataclass
class ExperimentConfig:
    """The experiment's own settings; every DPORRConfig field is accepted beside them."""

    words: int = field(default=0, metadata={"help": "Cut every article to its first N words (0: keep all)."})
    n_bootstrap: int = field(default=2000, metadata={"help": "Bootstrap resamples of the paired intervals."})
    method: str = field(default="dpo-rr", metadata={"help": "dpo-rr, or grpo (needs evenhand.training.train_grpo)."})
    rerank_baseline: bool = field(default=True, metadata={"help": "Run best-of-N reranking without training."})

    def __post_init__(self) -> None:
        if not isinstance(self.words, int) or self.words < 0:
            raise ValueError(f"`words` must be a non-negative int, got {self.words!r}")
        if not isinstance(self.n_bootstrap, int) or self.n_bootstrap < 100:
            raise ValueError(f"`n_bootstrap` must be an int >= 100, got {self.n_bootstrap!r}")
        if self.method not in METHODS:
            raise ValueError(f"`method` must be one of {METHODS}, got {self.method!r}")


def build_parser() -> argparse.ArgumentParser:
    from evenhand.training.config import DPORRConfig

    from evenhand.args import add_dataclass_arguments

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=None, help="YAML of ExperimentConfig and DPORRConfig fields.")
    parser.add_argument("--out", required=True, help="Experiment folder (the run goes to OUT/dpo_rr).")
    add_dataclass_arguments(parser, ExperimentConfig)
    add_dataclass_arguments(parser, DPORRConfig, skip=("out_dir", "dev_data"))
    return parser


def load_configs(args: argparse.Namespace) -> tuple[ExperimentConfig, Any]:
    """(experiment, DPORRConfig) from the YAML file and the flags (flags win; unknown keys are errors)."""
    import yaml
    from evenhand.training.config import DPORRConfig

    values: dict[str, Any] = {}
    if args.config is not None:
        path = Path(args.config)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such config file")
        values = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(values, dict):
            raise ValueError(f"{path}: expected a mapping of fields at the top level")
    exp_names = {f.name for f in dataclasses.fields(ExperimentConfig)}
    run_names = {f.name for f in dataclasses.fields(DPORRConfig)} - {"out_dir", "dev_data"}
    unknown = sorted(set(values) - exp_names - run_names)
    if unknown:
        raise ValueError(f"{args.config}: unknown key(s) {unknown}; valid: {', '.join(sorted(exp_names | run_names))}")
    values.update({k: v for k, v in vars(args).items() if v is not None and k in exp_names | run_names})
    experiment = ExperimentConfig(**{k: v for k, v in values.items() if k in exp_names})
    run = {k: v for k, v in values.items() if k in run_names}
    run.setdefault("data", str(DATA))
    run.setdefault("split_key", "topic")
    run["out_dir"] = str(Path(args.out) / "dpo_rr")
    return experiment, DPORRConfig(**run)


def load_split(experiment: ExperimentConfig, config: Any, out: Path) -> tuple[list, list]:
    """Truncated examples split by ``split_key``; the split is written to ``OUT/split.json``."""
    from evenhand.evaluation.jsonl import write_json
    from evenhand.evaluation.loaders import load_examples
    from evenhand.training.experiment import check_split, truncate_words
    from evenhand.training.loop import split_dev

    examples = load_examples(config.data)
    if experiment.words:
        examples = [truncate_words(ex, experiment.words) for ex in examples]
    train, dev = split_dev(examples, config.dev_size, key=config.split_key, seed=config.seed)
    if config.split_key:
        check_split(train, dev, config.split_key)
    key = config.split_key
    write_json(out / "split.json", {
        "train": [ex.id for ex in train], "dev": [ex.id for ex in dev],
        "dev_groups": sorted({str(ex.meta.get(key)) for ex in dev}) if key else [],
        "train_groups": sorted({str(ex.meta.get(key)) for ex in train}) if key else [],
    })
    return train, dev


def systems_of(out: Path, experiment: ExperimentConfig) -> dict[str, Path]:
    """system name -> its dev.jsonl: zero-shot, dpo-rr-K per finished iteration, rerank."""
    from evenhand.training.loop import finished_iterations, iteration_dir

    run = out / "dpo_rr"
    systems = {}
    for k in finished_iterations(run):
        systems["zero-shot" if k == 0 else f"{experiment.method}-{k}"] = iteration_dir(run, k) / "dev.jsonl"
    if (out / "rerank" / "summary.json").is_file():
        systems["rerank"] = out / "rerank" / "dev.jsonl"
    return systems


def evaluate_systems(out: Path, systems: dict[str, Path], dev: list) -> dict[str, list[dict]]:
    """``OUT/eval/SYSTEM.jsonl|csv`` per system (skipped when present); system -> rows."""
    from evenhand.evaluation.jsonl import read_jsonl, write_csv, write_jsonl
    from evenhand.rerank.registry import get_scorer
    from evenhand.training.experiment import evaluate_summaries

    rows: dict[str, list[dict]] = {}
    scorers: dict[str, Any] = {}
    for name, path in systems.items():
        target = out / "eval" / f"{name}.jsonl"
        if target.is_file():
            rows[name] = read_jsonl(target)
            continue
        if not scorers:
            scorers["fluency"] = get_scorer("fluency", progress=False)
            scorers["ec"] = get_scorer("equal-coverage", progress=False)
        print(f"[experiment] evaluating {name}", flush=True)
        rows[name] = evaluate_summaries(dev, read_jsonl(path), scorers["fluency"], scorers["ec"])
        write_csv(out / "eval" / f"{name}.csv", rows[name])
        write_jsonl(target, rows[name])  # last: its presence marks the system as evaluated
    return rows


def write_store(out: Path, rows: dict[str, list[dict]], experiment: ExperimentConfig, config: Any) -> Path:
    """``OUT/results.sqlite``: one cell per system, for ``evenhand report``."""
    from evenhand.sweep.store import ResultRow, ResultStore

    path = out / "results.sqlite"
    tmp = path.with_name(".results.sqlite.tmp")
    tmp.unlink(missing_ok=True)
    store = ResultStore(tmp)
    store.set_meta("experiment", json.dumps({"experiment": dataclasses.asdict(experiment), "run": config.to_dict()}))

    @dataclass
    class Cell:
        id: str
        name: str
        settings: dict

    cells = []
    for name in rows:
        iteration = 0 if name == "zero-shot" else (int(name.rsplit("-", 1)[1]) if name[-1].isdigit() else None)
        settings = {"iteration": iteration, "candidates": config.candidates if name == "rerank" else 1}
        cells.append(Cell(name, name, settings))
    store.add_cells(cells)
    for name, system_rows in rows.items():
        store.write(
            ResultRow(cell_id=name, dataset="theflipside-dev", seed=config.seed, example_id=r["id"],
                      example_index=i, summary=r["summary"],
                      metrics={k: v for k, v in r.items() if k not in ("id", "summary")})
            for i, r in enumerate(system_rows)
        )
    store.close()
    tmp.replace(path)
    return path


def main(argv: list[str] | None = None) -> int:
    from evenhand.evaluation.jsonl import write_csv, write_jsonl
    from evenhand.training import train_dpo_rr
    from evenhand.training.experiment import (
        CHECKS,
        comparison_table,
        format_table,
        plot_differences,
    )

    args = build_parser().parse_args(argv)
    try:
        experiment, config = load_configs(args)
    except (ValueError, FileNotFoundError) as err:
        print(f"dpo_rr_experiment: error: {err}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    train, dev = load_split(experiment, config, out)
    print(f"[experiment] train {len(train)} / dev {len(dev)} articles, split by {config.split_key}", flush=True)
    if experiment.method == "grpo":
        try:
            from evenhand.training import train_grpo  # type: ignore[attr-defined]
        except ImportError:
            print("dpo_rr_experiment: error: --method grpo needs evenhand.training.train_grpo "
                  "(the grpo branch); use --method dpo-rr", file=sys.stderr)
            return 2
        train_grpo(config, train=train, dev=dev)
    else:
        train_dpo_rr(config, train=train, dev=dev)
    if experiment.rerank_baseline:
        from evenhand.training.experiment import rerank_baseline

        print(f"[experiment] rerank baseline: best of {config.candidates} on {len(dev)} dev articles", flush=True)
        rerank_baseline(config, dev, out / "rerank", progress=config.progress)

    systems = systems_of(out, experiment)
    rows = evaluate_systems(out, systems, dev)
    metrics = ["composite", *config.scorer_names, *CHECKS]
    trained = [s for s in systems if s not in ("zero-shot", "rerank")]
    pairs = [(s, "zero-shot") for s in trained]
    if "rerank" in systems:
        pairs.append(("rerank", "zero-shot"))
        pairs += [(s, "rerank") for s in trained]
    table = comparison_table(rows, pairs, metrics, n_resamples=experiment.n_bootstrap, seed=config.seed)
    write_jsonl(out / "comparison.jsonl", table)
    write_csv(out / "comparison.csv", table)
    (out / "comparison.md").write_text(format_table(table) + "\n", encoding="utf-8")
    order = ["zero-shot", *trained]
    reference = "rerank" if "rerank" in systems else None
    plot_differences(table, order, "zero-shot", out / "differences_vs_zero-shot.png", reference=reference)
    if reference:
        plot_differences(table, trained, "rerank", out / "differences_vs_rerank.png")
    write_store(out, rows, experiment, config)
    print(format_table([r for r in table if r["system"] in (trained[-1:] + ["rerank"])]) if trained else "")
    print(f"[experiment] tables, plots and results.sqlite in {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
