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
   With ``--method grpo`` the same fields drive trl's GRPOTrainer (``OUT/grpo``;
   equal generation budget: prompts x candidates per iteration), sharing the
   DPO+RR run's zero-shot ``iter_0`` when its settings match.
3. The RR baseline: best of ``candidates`` samples from the untrained model by
   the same composite (``OUT/rerank``).
4. Every system's dev summaries get the training composite, its components
   and the untrained checks (``evenhand.training.experiment``): ``OUT/eval/SYSTEM.jsonl|csv``.
5. Paired bootstrap intervals over dev articles: each iteration and the RR
   baseline against zero-shot, the last iteration against the RR baseline
   (``OUT/comparison.{csv,jsonl,md}``, ``OUT/{dpo_rr,grpo}_vs_{zero-shot,rerank}.png``), and a
   results store for ``evenhand report --results OUT/results.sqlite --out OUT/report``.

Every stage writes atomically and is skipped when its output exists, so the
same command resumes an interrupted run.

    python scripts/dpo_rr_experiment.py --config scripts/dpo_rr_cpu.yaml --out /work/exp18_runs/cpu
    python scripts/dpo_rr_experiment.py --config scripts/dpo_rr_cpu.yaml --out /work/exp18_runs/cpu \\
        --method grpo --batch-size 2 --no-rerank-baseline      # GRPO beside it, same budget
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
STAGES = ("train", "rerank", "evaluate")
#: Settings that make two runs' zero-shot dev summaries identical (iter_0 is then shared).
ZERO_SHOT_KEYS = ("model", "max_new_tokens", "generate_batch_size", "seed", "scorers", "weights",
                  "normalize", "score_source", "dev_size", "split_key", "data", "device")


@dataclass
class ExperimentConfig:
    """The experiment's own settings; every DPORRConfig field is accepted beside them."""

    words: int = field(default=0, metadata={"help": "Cut every article to its first N words (0: keep all)."})
    n_bootstrap: int = field(default=2000, metadata={"help": "Bootstrap resamples of the paired intervals."})
    rerank_baseline: bool = field(default=True, metadata={"help": "Run best-of-N reranking without training."})
    eval_iterations: str = field(
        default="all",
        metadata={"help": "Dev summaries of 'all' iterations (inside the run, as train_dpo_rr does) or only "
                          "the 'last' (after training, from its adapter; saves dev passes on a slow machine)."},
    )
    stages: str = field(
        default="train,rerank,evaluate",
        metadata={"help": "Stages to run now (finished ones are skipped): train, rerank, evaluate; run "
                          "`--stages rerank` in a second process beside `--stages train` to overlap them."},
    )

    def __post_init__(self) -> None:
        if not isinstance(self.words, int) or self.words < 0:
            raise ValueError(f"`words` must be a non-negative int, got {self.words!r}")
        if self.eval_iterations not in ("all", "last"):
            raise ValueError(f"`eval_iterations` must be 'all' or 'last', got {self.eval_iterations!r}")
        unknown = set(self.stage_list) - set(STAGES)
        if unknown or not self.stage_list:
            raise ValueError(f"`stages` must name some of {', '.join(STAGES)}, got {self.stages!r}")
        if not isinstance(self.n_bootstrap, int) or self.n_bootstrap < 100:
            raise ValueError(f"`n_bootstrap` must be an int >= 100, got {self.n_bootstrap!r}")


    @property
    def stage_list(self) -> list[str]:
        """The stages to run."""
        return [x.strip() for x in self.stages.split(",") if x.strip()]


def build_parser() -> argparse.ArgumentParser:
    from evenhand.args import add_dataclass_arguments
    from evenhand.training.config import DPORRConfig

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=None, help="YAML of ExperimentConfig and DPORRConfig fields.")
    parser.add_argument("--out", required=True, help="Experiment folder (runs go to OUT/dpo_rr, OUT/grpo).")
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
    run["out_dir"] = str(Path(args.out) / run_folder(run.get("method", "dpo-rr")))
    return experiment, DPORRConfig(**run)


def run_folder(method: str) -> str:
    """``OUT``'s subfolder of a method's run: ``dpo_rr`` or ``grpo``."""
    return method.replace("-", "_")


def share_zero_shot(out: Path, config: Any) -> None:
    """Copy another method's finished ``iter_0`` into this run when its zero-shot settings are the same.

    Zero-shot summaries depend only on the base model, the dev split and the
    generation and scoring settings (:data:`ZERO_SHOT_KEYS`), so a GRPO run
    next to a DPO+RR run (or the reverse) need not summarize the dev split again.
    """
    import shutil

    from evenhand.training.loop import finished_iterations, iteration_dir

    mine = Path(config.out_dir)
    if 0 in finished_iterations(mine) or (mine / "manifest.json").is_file():
        return
    for other in (out / run_folder(m) for m in ("dpo-rr", "grpo")):
        if other == mine or 0 not in finished_iterations(other) or not (other / "manifest.json").is_file():
            continue
        theirs = json.loads((other / "manifest.json").read_text(encoding="utf-8"))["config"]
        if all(theirs.get(k) == getattr(config, k) for k in ZERO_SHOT_KEYS):
            mine.mkdir(parents=True, exist_ok=True)
            tmp = mine / ".iter_0.shared"
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(iteration_dir(other, 0), tmp)
            tmp.replace(iteration_dir(mine, 0))
            print(f"[experiment] zero-shot dev summaries shared from {other}", flush=True)
            return


def load_split(experiment: ExperimentConfig, config: Any, out: Path) -> tuple[list, list]:
    """Truncated examples split by ``split_key``; the split is written to ``OUT/split.json``."""
    from evenhand.evaluation.data.loaders import load_examples
    from evenhand.evaluation.io.json_file import write_json
    from evenhand.training.experiment import check_split, truncate_words
    from evenhand.training.loop import split_dev

    examples = load_examples(config.data)
    if experiment.words:
        examples = [truncate_words(ex, experiment.words) for ex in examples]
    train, dev = split_dev(examples, config.dev_size, key=config.split_key, seed=config.seed)
    if config.split_key:
        check_split(train, dev, config.split_key)
    key = config.split_key
    split = {
        "words": experiment.words, "train": [ex.id for ex in train], "dev": [ex.id for ex in dev],
        "dev_groups": sorted({str(ex.meta.get(key)) for ex in dev}) if key else [],
        "train_groups": sorted({str(ex.meta.get(key)) for ex in train}) if key else [],
    }
    path = out / "split.json"
    if path.is_file():
        old = json.loads(path.read_text(encoding="utf-8"))
        if {k: old.get(k) for k in split} != split:
            raise ValueError(f"{path} holds another split or `words` ({old.get('words')}); "
                             "use the same data settings or another --out")
    write_json(path, split)
    return train, dev


def dev_after_training(out: Path, config: Any, dev: list) -> None:
    """Greedy dev summaries of the zero-shot model (unless ``iter_0`` has them) and the last adapter."""
    from evenhand.training.experiment import greedy_dev
    from evenhand.training.loop import finished_iterations, iteration_dir

    run = Path(config.out_dir)
    done = finished_iterations(run)
    if 0 not in done:
        print(f"[experiment] zero-shot greedy on {len(dev)} dev articles", flush=True)
        greedy_dev(config, dev, None, out / "dev" / "zero-shot")
    last = max([k for k in done if k > 0], default=0)
    if last:
        print(f"[experiment] {config.method}-{last} greedy on {len(dev)} dev articles", flush=True)
        greedy_dev(config, dev, str(iteration_dir(run, last) / "adapter"), out / "dev" / f"{config.method}-{last}")


def systems_of(out: Path) -> dict[str, Path]:
    """system name -> its dev.jsonl: zero-shot, dpo-rr-K and grpo-K per finished iteration, rerank."""
    from evenhand.training.loop import finished_iterations, iteration_dir

    systems = {}
    for method in ("dpo-rr", "grpo"):
        run = out / run_folder(method)
        for k in finished_iterations(run):
            name = "zero-shot" if k == 0 else f"{method}-{k}"
            inside = iteration_dir(run, k) / "dev.jsonl"
            after = out / "dev" / name / "dev.jsonl"
            if inside.is_file() and inside.stat().st_size > 0:
                systems.setdefault(name, inside)
            elif (after.parent / "summary.json").is_file():
                systems.setdefault(name, after)
    if (out / "dev" / "zero-shot" / "summary.json").is_file():
        systems.setdefault("zero-shot", out / "dev" / "zero-shot" / "dev.jsonl")
    if (out / "rerank" / "summary.json").is_file():
        systems["rerank"] = out / "rerank" / "dev.jsonl"
    return systems


def evaluate_systems(out: Path, systems: dict[str, Path], dev: list) -> dict[str, list[dict]]:
    """``OUT/eval/SYSTEM.jsonl|csv`` per system (skipped when present); system -> rows."""
    from evenhand.evaluation.io.csv_file import write_csv
    from evenhand.evaluation.io.jsonl import read_jsonl, write_jsonl
    from evenhand.evaluation.scoring.registry import get_scorer
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
    for stale in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        stale.unlink(missing_ok=True)  # a reader's journal of the old file must not meet the new one
    tmp.replace(path)
    return path


def main(argv: list[str] | None = None) -> int:
    from evenhand.evaluation.io.atomic import atomic_open
    from evenhand.evaluation.io.csv_file import write_csv
    from evenhand.evaluation.io.jsonl import write_jsonl
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
    try:
        train, dev = load_split(experiment, config, out)
    except ValueError as err:
        print(f"dpo_rr_experiment: error: {err}", file=sys.stderr)
        return 2
    print(f"[experiment] train {len(train)} / dev {len(dev)} articles, split by {config.split_key}", flush=True)
    stages = experiment.stage_list
    if "train" in stages:
        share_zero_shot(out, config)
        # eval_iterations=last: the run trains without dev passes; the last adapter is summarized below
        train_dpo_rr(config, train=train, dev=dev if experiment.eval_iterations == "all" else [])
        if experiment.eval_iterations == "last":
            dev_after_training(out, config, dev)
    if "rerank" in stages and experiment.rerank_baseline:
        from evenhand.training.experiment import rerank_baseline

        print(f"[experiment] rerank baseline: best of {config.candidates} on {len(dev)} dev articles", flush=True)
        rerank_baseline(config, dev, out / "rerank", progress=config.progress)
    if "evaluate" not in stages:
        return 0

    systems = systems_of(out)
    if "zero-shot" not in systems:
        print(f"dpo_rr_experiment: error: {out} has no zero-shot dev summaries yet; run the train stage first",
              file=sys.stderr)
        return 2
    rows = evaluate_systems(out, systems, dev)
    metrics = ["composite", *config.scorer_names, *CHECKS]
    trained = [s for s in systems if s not in ("zero-shot", "rerank")]
    pairs = [(s, "zero-shot") for s in trained]
    if "rerank" in systems:
        pairs.append(("rerank", "zero-shot"))
        pairs += [(s, "rerank") for s in trained]
    last = {m: max((s for s in trained if s.startswith(m + "-")), key=lambda s: int(s.rsplit("-", 1)[1]),
                   default=None) for m in ("dpo-rr", "grpo")}
    if last["dpo-rr"] and last["grpo"]:
        pairs.append((last["grpo"], last["dpo-rr"]))
    table = comparison_table(rows, pairs, metrics, n_resamples=experiment.n_bootstrap, seed=config.seed)
    write_jsonl(out / "comparison.jsonl", table)
    write_csv(out / "comparison.csv", table)
    with atomic_open(out / "comparison.md") as f:
        f.write(format_table(table) + "\n")
    reference = "rerank" if "rerank" in systems else None
    for method in ("dpo-rr", "grpo"):
        mine = [s for s in trained if s.startswith(method + "-")]
        if not mine:
            continue
        slug = run_folder(method)
        plot_differences(table, ["zero-shot", *mine], "zero-shot", out / f"{slug}_vs_zero-shot.png",
                         reference=reference, label=method)
        if reference:
            plot_differences(table, mine, "rerank", out / f"{slug}_vs_rerank.png", label=method)
    write_store(out, rows, experiment, config)
    print(format_table([r for r in table if r["system"] in [v for v in last.values() if v]]))
    print(f"[experiment] tables, plots and results.sqlite in {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
