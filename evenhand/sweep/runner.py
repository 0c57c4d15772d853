"""Run a sweep: every cell × data set × seed, batch by batch, into the results store.

Work is cut into *units* (cell, data set, seed, batch of ``batch_size``
consecutive examples), always the same batches of the same example list, and
each batch is generated with seed ``seed + index of its first example`` — the
seeding ``evenhand.decoding.generate.generate`` uses over a whole list. A resumed sweep
therefore regenerates exactly the batches it lacks and gets the outputs an
uninterrupted run would have. A batch's rows are committed in one transaction.

Under ``accelerate launch`` process K of N takes units K, K+N, K+2N, ... and
writes its own shard file; the main process merges the shards at the end
(``evenhand.sweep.store``).
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evenhand.evaluation.schema import DataError, Example
from evenhand.sweep.config import Cell, SweepConfig
from evenhand.sweep.store import ResultRow, ResultStore, merge_shards, shard_path, shard_paths


@dataclass(frozen=True)
class Unit:
    """One batch of work."""

    cell: Cell
    dataset: str
    seed: int
    start: int  # index of the batch's first example in the data set
    examples: tuple[Example, ...]


@dataclass
class SweepSummary:
    """What a run did."""

    results: Path
    written: int
    skipped: int
    units: int
    process_index: int = 0
    num_processes: int = 1


def plan_units(config: SweepConfig, datasets: dict[str, list[Example]]) -> list[Unit]:
    """Every unit of the sweep in a fixed order: cell, data set, seed, batch."""
    units = []
    for cell in config.cells:
        size = cell.generate_config(0).batch_size
        for name, examples in datasets.items():
            for seed in config.seeds:
                for start in range(0, len(examples), size):
                    units.append(Unit(cell, name, seed, start, tuple(examples[start : start + size])))
    return units


def load_datasets(config: SweepConfig) -> dict[str, list[Example]]:
    """Each data set's examples (the first ``limit``); ids must be unique within a set."""
    from evenhand.evaluation.loaders import load_examples

    out = {}
    for name, path in config.datasets.items():
        examples = load_examples(path)[: config.limit]
        ids = [ex.id for ex in examples]
        if len(set(ids)) != len(ids):
            raise DataError(f"data set {name!r} ({path}): example ids are not unique")
        out[name] = examples
    return out


def has_groups(example: Example) -> bool:
    """Whether every document carries a group label and there are at least two groups."""
    return all(d.group is not None for d in example.documents) and len(example.groups) >= 2


def row_metrics(example: Example, summary: str, metrics: Sequence[str]) -> tuple[dict[str, float], str | None]:
    """The metrics' columns for one summary, and the errors of those that could not score it.

    ``fairsumm`` is left out silently for examples without two labelled groups.
    """
    return batch_metrics([example], [summary], metrics)[0]


def batch_metrics(
    examples: Sequence[Example], summaries: Sequence[str], metrics: Sequence[str]
) -> list[tuple[dict[str, float], str | None]]:
    """:func:`row_metrics` of every (example, summary), each metric scoring the batch at once.

    ``mint`` and ``fragments`` then take the corpus path (a batch's source is
    tokenized once for all its rows); when a metric cannot score some row of
    the batch, it scores the rows one by one, so the errors stay per row.
    """
    from evenhand.evaluation.report import Scored, evaluate

    values: list[dict[str, float]] = [{} for _ in examples]
    errors: list[list[str]] = [[] for _ in examples]

    def keep(i: int, row: dict) -> None:
        values[i].update({k: float(v) for k, v in row.items() if k not in ("id", "example_id")})

    for name in metrics:
        todo = [i for i, ex in enumerate(examples) if name != "fairsumm" or has_groups(ex)]
        if not todo:
            continue
        try:
            rows = evaluate([Scored(examples[i].id, examples[i], summaries[i]) for i in todo], [name]).rows
        except DataError:
            for i in todo:
                try:
                    keep(i, evaluate([Scored(examples[i].id, examples[i], summaries[i])], [name]).rows[0])
                except DataError as err:
                    errors[i].append(f"{name}: {err}")
            continue
        for i, row in zip(todo, rows):
            keep(i, row)
    return [(v, "; ".join(e) or None) for v, e in zip(values, errors)]


def _distributed() -> tuple[int, int, Any]:
    """(process index, process count, accelerate state or None) for this process."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        from accelerate import PartialState

        state = PartialState()
        return state.process_index, state.num_processes, state
    return 0, 1, None


def _load(name: str, engine: str, load_model: Callable[[str], tuple[Any, Any]]) -> tuple[Any, Any]:
    """(model, tokenizer) of a cell: ``load_model`` in-process, a ``VllmEngine`` for ``engine: vllm``."""
    if engine == "vllm":
        from evenhand.decoding.vllm_engine import VllmEngine

        vllm_engine = VllmEngine(name)
        return vllm_engine, vllm_engine.tokenizer
    return load_model(name)


def run_sweep(
    config: SweepConfig,
    results: str | Path | None = None,
    load_model: Callable[[str], tuple[Any, Any]] | None = None,
    rerank_fn: Callable[..., list[dict[str, Any]]] | None = None,
    on_row: Callable[[ResultRow], None] | None = None,
    process_index: int | None = None,
    num_processes: int | None = None,
    progress: bool = True,
) -> SweepSummary:
    """Run every unfinished unit of ``config`` and store its rows.

    Args:
        config: the sweep (``load_sweep``).
        results: the results file (default ``config.results``).
        load_model: ``name -> (model, tokenizer)`` (default ``evenhand.decoding.models.load_generator``
            on ``config.device``); one model is kept loaded at a time.
        rerank_fn: best-of-N for cells with ``candidates`` > 1 (default
            ``hookups.rerank_batch``; same signature).
        on_row: called with each row after its batch is committed (progress, tests).
        process_index, num_processes: this process's share; default from ``accelerate``
            when launched with it, else 0 of 1.
        progress: show a progress bar.
    """
    from tqdm.auto import tqdm

    from evenhand.decoding.generate import generate
    from evenhand.sweep import hookups

    state = None
    if process_index is None or num_processes is None:
        process_index, num_processes, state = _distributed()
    if not 0 <= process_index < num_processes:
        raise ValueError(f"`process_index` must be in [0, {num_processes}), got {process_index}")
    datasets = load_datasets(config)  # bad data or a missing model fail before the results file is touched
    if load_model is None:
        from evenhand.decoding.models import check_local

        for name in sorted({cell.model for cell in config.cells}):
            check_local(name, "cell `model`")
    from evenhand.decoding.vllm_engine import check_engine

    for cell in config.cells:  # vLLM installed, no adapter folder: before the results file
        check_engine(cell.engine, cell.model)
    results = Path(results or config.results)
    path = results if num_processes == 1 else shard_path(results, process_index, num_processes)
    store = ResultStore(path, also_read=[results, *shard_paths(results)])
    store.set_meta("name", config.name)
    store.set_meta("config", config.text)
    store.add_cells(config.cells)

    if load_model is None:
        from evenhand.decoding.models import load_generator

        device = config.device or (str(state.device) if state is not None else None)

        def load_model(name: str) -> tuple[Any, Any]:
            return load_generator(name, device=device)

    rerank_fn = rerank_fn or hookups.rerank_batch
    factuality = hookups.build_scorer(config.factuality, config.factuality_options) if config.factuality else None
    extra = {name: hookups.build_scorer(name) for name in config.extra_scorers}

    units = plan_units(config, datasets)
    mine = [u for i, u in enumerate(units) if i % num_processes == process_index]
    todo = [
        u for u in mine
        if not all(store.done(u.cell.id, u.dataset, u.seed, ex.id) for ex in u.examples)
    ]
    skipped = sum(len(u.examples) for u in mine) - sum(len(u.examples) for u in todo)
    written = 0
    loaded: tuple[tuple[str, str], Any, Any] | None = None
    bar = tqdm(total=sum(len(u.examples) for u in todo), desc="sweep", unit="row", disable=not progress)
    try:
        for unit in todo:
            cell = unit.cell
            if loaded is None or loaded[0] != (cell.model, cell.engine):
                loaded = None  # free the previous model first
                loaded = ((cell.model, cell.engine), *_load(cell.model, cell.engine, load_model))
            _, model, tokenizer = loaded
            gen_config = dataclasses.replace(cell.generate_config(unit.seed), seed=unit.seed + unit.start)
            t0 = time.perf_counter()
            batch = list(unit.examples)
            records: list[dict[str, Any] | None]
            if cell.candidates > 1:
                records = list(rerank_fn(model, tokenizer, batch, gen_config, cell.candidates,
                                         cell.settings.get("scorers")))
                summaries = [r["summary"] for r in records]
            else:
                summaries = generate(model, tokenizer, batch, gen_config, progress=False)
                records = [None] * len(batch)
            rows = []
            scored = batch_metrics(batch, summaries, config.metrics)
            for offset, (ex, summary, record, (metrics, error)) in enumerate(
                zip(batch, summaries, records, scored)
            ):
                rows.append(ResultRow(
                    cell.id, unit.dataset, unit.seed, ex.id, unit.start + offset, summary, metrics,
                    error=error,
                    rerank=None if record is None else {k: v for k, v in record.items() if k != "summary"},
                ))
            _score(rows, batch, factuality, extra)
            seconds = (time.perf_counter() - t0) / len(rows)
            for row in rows:
                row.seconds = seconds
            written += store.write(rows)
            for row in rows:
                bar.update(1)
                if on_row is not None:
                    on_row(row)
    finally:
        bar.close()
        store.close()
    if num_processes > 1 and state is not None:
        state.wait_for_everyone()
        if state.is_main_process:
            merge_shards(results)
    elif num_processes == 1 and shard_paths(results):
        merge_shards(results)  # rows an earlier multi-process run left in shards
    return SweepSummary(results, written, skipped, len(todo), process_index, num_processes)


def _score(rows: list[ResultRow], batch: list[Example], factuality: Any, extra: dict[str, Any]) -> None:
    """Fill factuality and extra scorer columns of rows with non-empty summaries."""
    from evenhand.sweep import hookups

    keep = [i for i, r in enumerate(rows) if r.summary.strip()]
    if not keep:
        return
    examples = [batch[i] for i in keep]
    summaries = [rows[i].summary for i in keep]
    if factuality is not None:
        for i, (score, details) in zip(keep, hookups.score_rows(factuality, examples, summaries)):
            rows[i].factuality = score
            rows[i].factuality_scorer = factuality.name
            rows[i].factuality_backend = hookups.backend_name(factuality, details)
    for name, scorer in extra.items():
        for i, (score, details) in zip(keep, hookups.score_rows(scorer, examples, summaries)):
            rows[i].metrics[name] = score
            for key, value in details.items():
                if isinstance(value, (int, float)) and key != "score":
                    rows[i].metrics[f"{name}.{key}"] = float(value)
